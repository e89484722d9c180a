"""Rebuild a run's lm-eval results from re-judged samples, the way lm-eval builds them.

``elitr-bench score`` judges logged answers again (to finish a run whose judge failed,
with another judge, or after ``--predict_only``). Its results file must be what lm-eval
would have written had that judge run with the model, so that every lm-eval client reads
it like any other (``make_table``, W&B, the Hub logger, leaderboards): all the task's
metrics with their standard errors, the groups aggregated with their own weighting,
``n-samples``, the task's real ``higher_is_better``. Rather than imitate lm-eval, this
module lets lm-eval do it:

* lm-eval's ``TaskManager`` builds the run's tasks and groups by name, with the run's
  ``--metadata`` and the new judge (so metric lists and names are those of a run with
  that judge). No module of ``elitr_bench.tasks`` is imported here: lm-eval finds the
  tasks as it does for ``lm_eval --tasks``.
* Each logged answer, with its new judgement as the judge filter's output, goes through
  the task's own ``process_results``.
* lm-eval's ``evaluator_utils._process_results`` (what ``evaluate()`` ends with; its
  docstring shows this use) aggregates the per-sample values into the results dict.

A log cannot replay everything a task measured while the model ran (prompt token counts,
prompts skipped or cut for being over-long): for every metric the task lists and the
judge does not produce, the value the run logged is kept. A ``--predict_only`` run logged
none (lm-eval's ``bypass`` replaced them), so its metrics are computed here; its
over-length counters are then those of prompts that all fit, which is what its
``overlength`` setting guaranteed unless it was ``skip`` or ``truncate_middle``
(:func:`rebuild` notes that case).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elitr_bench.data.run_files import results_payload
from elitr_bench.judges.conceal import scrub
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.tasks.tidy import tidy_results

#: Sections of a results file that the rebuild computes (the rest is the run's own).
_REBUILT = (
    "results",
    "groups",
    "group_subtasks",
    "configs",
    "versions",
    "n-shot",
    "higher_is_better",
    "n-samples",
    "task_hashes",
)
#: Metadata keys our tasks write into their config (not options to build a task with).
_WRITTEN_METADATA = ("judge_identity", "judge_usage", "version", "config_source")
#: Config fields the lm_eval command line changes in a run (kept from the run's config).
_RUN_CONFIG_FIELDS = ("generation_kwargs", "num_fewshot")
STDERR = "_stderr"


@dataclass(frozen=True)
class JudgedTask:
    """One task's logged samples and their new judgements.

    Attributes:
        task: lm-eval task name.
        source: The samples file the answers come from.
        samples: Logged samples, one per document, in file order.
        filtered: Per sample, the judge filter's output for its request (what lm-eval
            would hold in ``filtered_resps`` and hand to ``process_results``).
    """

    task: str
    source: Path
    samples: tuple[Mapping[str, Any], ...]
    filtered: tuple[Any, ...]


@dataclass(frozen=True)
class Rebuilt:
    """A rebuilt run: the results dict and the rescored sample rows per task.

    Attributes:
        results: The results file's content (lm-eval's layout plus the run's own keys).
        rows: Per task, the samples as lm-eval would log them with this judge.
        notes: What the rebuild could not recover from the log (one line each).
    """

    results: dict[str, Any]
    rows: dict[str, list[dict[str, Any]]]
    notes: list[str] = field(default_factory=list)


def read_run_results(path: Path | None) -> dict[str, Any]:
    """The run's own results file ({} without one, or for an unreadable one).

    Scrubbed of credentials: a results file written before they were concealed may hold
    a ``base_url`` with user info, which the rescored file must not copy.
    """
    payload = {} if path is None else results_payload(path)
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), dict):
        return {}
    return dict(scrub(payload))


def _run_metadata(run: Mapping[str, Any], tasks: Iterable[str], judge_spec: str) -> dict[str, Any]:
    """The ``--metadata`` (and merged ``--model_args``) the run's tasks were built with."""
    configs = run.get("configs") or {}
    metadata: dict[str, Any] = {}
    for task in tasks:
        found = (configs.get(task) or {}).get("metadata")
        if isinstance(found, Mapping):
            metadata = {k: v for k, v in found.items() if k not in _WRITTEN_METADATA}
            break
    return {**metadata, "judge": judge_spec}


def _to_load(run: Mapping[str, Any], tasks: Sequence[str]) -> list[str]:
    """Names to hand lm-eval: the run's groups made only of re-judged tasks, else tasks.

    lm-eval aggregates a group only when it is loaded as one, with its own weighting; a
    group with a task that is not re-judged here is left out (its number would mix
    judges), and its re-judged tasks are loaded alone.
    """
    subtasks: Mapping[str, Sequence[str]] = run.get("group_subtasks") or {}
    wanted = set(tasks)

    def leaves(name: str) -> set[str]:
        out: set[str] = set()
        for child in subtasks.get(name, []):
            out |= leaves(child) if child in subtasks else {child}
        return out

    children = {c for kids in subtasks.values() for c in kids}
    names: list[str] = []
    covered: set[str] = set()

    def visit(name: str) -> None:
        if name not in subtasks:
            if name in wanted and name not in covered:
                names.append(name)
                covered.add(name)
            return
        group_leaves = leaves(name)
        if group_leaves and group_leaves <= wanted and not group_leaves & covered:
            names.append(name)
            covered.update(group_leaves)
            return
        for child in subtasks[name]:
            visit(child)

    for top in (g for g in subtasks if g not in children):
        visit(top)
    names += [t for t in tasks if t not in covered]
    return names


def _task_manager(metadata: dict[str, Any] | None = None, include_path: Sequence[str] = ()) -> Any:
    """lm-eval's task index with our tasks, and those of ``include_path`` folders.

    The plugin hook is installed first, as ``elitr-bench run`` does, so the tasks are
    found also where ``.pth`` start-up files are off (``ELITR_BENCH_NO_HOOK=1``). Folders
    given as ``lm_eval --include_path`` gave them come after ours (their tasks win).
    """
    from elitr_bench._hook import install, tasks_dir

    install(force=True)
    from lm_eval.tasks import TaskManager

    folders = [tasks_dir(), *include_path] if include_path else None
    return TaskManager(include_defaults=False, include_path=folders, metadata=metadata)


def check_tasks(
    files: Mapping[str, Path | str], manager: Any = None, include_path: Sequence[str] = ()
) -> None:
    """Refuse samples of anything but our tasks, before a judge is paid for them.

    Args:
        files: Task name -> the samples file it comes from (named in the error).
        manager: A task index to use (default: a fresh one).
        include_path: Folders of further tasks (``lm_eval --include_path``), for a fresh
            index.

    Raises:
        JudgeConfigError: A name that is no task of ours (or a group: lm-eval writes
            samples per task).
    """
    manager = manager or _task_manager(include_path=include_path)
    for task, path in files.items():
        if task not in manager.all_subtasks:
            kind = (
                "a group, whose samples lm-eval writes per task"
                if task in manager.all_groups
                else "not an ELITR-Bench task"
            )
            raise JudgeConfigError(
                f"score: {path} holds samples of {task}, which is {kind}; score judges the "
                "samples lm-eval wrote for elitr_* and automin23_en tasks, and for tasks of "
                "an --include_path folder (pass it to score as to lm_eval)"
            )


def _load_tasks(
    names: list[str],
    metadata: dict[str, Any],
    tasks: Sequence[str],
    include_path: Sequence[str] = (),
) -> dict[str, Any]:
    """lm-eval's tasks and groups for ``names`` (``{"tasks": ..., "groups": ...}``)."""
    manager = _task_manager(metadata, include_path)
    check_tasks({task: task for task in tasks}, manager)
    loaded: dict[str, Any] = manager.load(names)
    for task in loaded["tasks"].values():
        if task.get_config("num_fewshot") is None:  # what simple_evaluate does
            task.set_config(key="num_fewshot", value=0)
    return loaded


def _judge_derived(key: str, judge_keys: frozenset[str]) -> bool:
    return key in judge_keys or (key.endswith(STDERR) and key[: -len(STDERR)] in judge_keys)


def _task_rows(
    judged: JudgedTask, task: Any, filter_name: str, judge_keys: frozenset[str]
) -> tuple[list[dict[str, Any]], dict[tuple[str, str], list[Any]]]:
    """The task's rescored sample rows and lm-eval's per-(metric, filter) value lists."""
    aggregated = set(task.aggregation())
    raw: dict[tuple[str, str], list[Any]] = defaultdict(list)
    rows: list[dict[str, Any]] = []
    for sample, filtered in zip(judged.samples, judged.filtered, strict=True):
        values = dict(task.process_results(sample["doc"], [filtered]))
        logged = [str(k) for k in sample.get("metrics") or []]
        for key in logged:  # measured while the model ran: the run's value stands
            if key in aggregated and key in sample and not _judge_derived(key, judge_keys):
                values[key] = sample[key]
        stale = {*logged, "bypass", *judge_keys} | {k + STDERR for k in judge_keys}
        row = {k: v for k, v in sample.items() if k not in stale}
        row["filtered_resps"] = [filtered]
        row["filter"] = filter_name
        row["metrics"] = list(values)
        row.update(values)
        rows.append(row)
        for metric, value in values.items():
            raw[(metric, filter_name)].append(value)
    return rows, raw


def _predict_only_note(run: Mapping[str, Any], judged: JudgedTask) -> str | None:
    logged = {str(k) for s in judged.samples for k in s.get("metrics") or []}
    if logged - {"bypass"}:
        return None
    config = (run.get("configs") or {}).get(judged.task) or {}
    option = (config.get("metadata") or {}).get("overlength", "error")
    if option in (None, "error"):
        return None
    return (
        f"{judged.task}: the run was --predict_only with overlength={option}, which logs "
        "no per-prompt status: its overlength counters count nothing skipped or cut"
    )


def rebuild(
    run: Mapping[str, Any],
    judged: Sequence[JudgedTask],
    *,
    judge_spec: str,
    identity: Mapping[str, Any],
    filter_name: str,
    judge_keys: Iterable[str],
    usage: Mapping[str, Any],
    include_path: Sequence[str] = (),
) -> Rebuilt:
    """The results and samples lm-eval would have written with this judge.

    Args:
        run: The run's own results file ({} if missing: then no groups, no model config).
        judged: The re-judged tasks of the run.
        judge_spec: The judge, as ``--metadata judge=`` takes it.
        identity: The judge's identity as logged in the samples.
        filter_name: The judge's filter name (the ``,<filter>`` of every metric key).
        judge_keys: Per-sample metric names the judge produces (never kept from the log).
        usage: Per task, the judge's usage and cost for the results file.
        include_path: Folders of further tasks, as ``lm_eval --include_path`` took them.

    Raises:
        JudgeConfigError: A task lm-eval does not know as one of ours.
    """
    from lm_eval.evaluator_utils import _process_results

    keys = frozenset(judge_keys)
    names = [j.task for j in judged]
    metadata = _run_metadata(run, names, judge_spec)
    loaded = _load_tasks(_to_load(run, names), metadata, names, include_path)
    accumulators: dict[str, Any] = {}
    rows: dict[str, list[dict[str, Any]]] = {}
    notes: list[str] = []
    for item in judged:
        task = loaded["tasks"][item.task]
        rows[item.task], raw = _task_rows(item, task, filter_name, keys)
        accumulators[item.task] = {"task": task, "raw_metrics": raw, "logged_samples": []}
        note = _predict_only_note(run, item)
        if note:
            notes.append(note)
    config = run.get("config") or {}
    bootstrap = config.get("bootstrap_iters", 100000) if isinstance(config, Mapping) else 100000
    built = _process_results(accumulators, loaded["groups"], bootstrap)._to_eval_results()
    results: dict[str, Any] = {k: v for k, v in run.items() if k not in _REBUILT}
    results.update(built)
    hashes = run.get("task_hashes") or {}
    results["task_hashes"] = {t: hashes[t] for t in names if t in hashes}
    for task in names:
        results["configs"][task] = _task_config(run, task, built["configs"][task], identity, usage)
    tidy_results(results)
    return Rebuilt(results=results, rows=rows, notes=notes)


def _task_config(
    run: Mapping[str, Any],
    task: str,
    rebuilt: Mapping[str, Any],
    identity: Mapping[str, Any],
    usage: Mapping[str, Any],
) -> dict[str, Any]:
    """The task's config as a run with this judge dumps it (the run's CLI overrides kept)."""
    original = (run.get("configs") or {}).get(task) or {}
    config = dict(rebuilt)
    for key in _RUN_CONFIG_FIELDS:
        if key in original:
            config[key] = original[key]
    metadata = dict(config.get("metadata") or {})
    metadata["judge_identity"] = dict(identity)
    metadata["judge_usage"] = usage.get(task, {})
    config["metadata"] = metadata
    return config


def dump(payload: Mapping[str, Any]) -> str:
    """JSON of a results dict, serialised as lm-eval's CLI serialises it."""
    from lm_eval.utils import handle_non_serializable

    return json.dumps(payload, indent=2, default=handle_non_serializable, ensure_ascii=False)


def dump_row(row: Mapping[str, Any]) -> str:
    """One samples-file line, serialised as lm-eval's tracker serialises samples."""
    from lm_eval.utils import handle_non_serializable

    return json.dumps(row, default=handle_non_serializable, ensure_ascii=False)


__all__ = [
    "JudgedTask",
    "Rebuilt",
    "check_tasks",
    "dump",
    "dump_row",
    "read_run_results",
    "rebuild",
]
