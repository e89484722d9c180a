"""``elitr-bench score`` for minutes runs: judge logged minutes again, later or with another judge.

Reached from :func:`elitr_bench.cli.score._cmd_score` when the judge spec names a
minutes method (``rubric=gpt-afgr``, ``method=mesa``, ...). The logged minutes are never
regenerated: they are read from the samples (the judge filter's ``response`` when the
run was judged, else the raw response), judged through the shared client (the cache
makes a repeat free), and written as QA rescorings are
(:func:`elitr_bench.scoring.qa.write_rescoring`): ``samples_<task>_<date>.jsonl`` and
``results_rescored_<date>.json``, the run's complete results as lm-eval would have
written them with this judge (:mod:`elitr_bench.scoring.rescore`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from elitr_bench.judges.batching import BatchPlan
from elitr_bench.judges.filtering import judged_json
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.metrics import JUDGE_ERRORS, JUDGE_UNSCORED, judge_filter_name
from elitr_bench.judges.summary.base import MinutesMethod
from elitr_bench.judges.summary.batching import assess_in_batches
from elitr_bench.judges.summary.lm_eval_filter import (
    assessment_of,
    item_from_doc,
    run_sync,
)
from elitr_bench.judges.summary.registry import get_method
from elitr_bench.judges.summary.run import plan


def minutes_text(sample: Mapping[str, Any]) -> str:
    """The minutes a sample logged (judge filter's ``response``, else the raw response)."""
    found = assessment_of(sample.get("filtered_resps"))
    if found is not None:
        return found[0]
    from elitr_bench.data.minutes import minutes_text_of

    return minutes_text_of(sample) or ""


def judge_keys(method: MinutesMethod) -> frozenset[str]:
    """Per-sample metrics a minutes judge produces (never kept from the log).

    Its scores, the counts and the fields the method declares itself (the AutoMin judges'
    filler compression, when on).
    """
    own = (str(entry["metric"]) for entry in method.extra_metric_entries())
    return frozenset({*method.metrics, JUDGE_UNSCORED, JUDGE_ERRORS, *own})


def check_minutes_fit(paths: Iterable[str | Path], config: JudgeConfig) -> None:
    """Stop before any request when a logged minutes' judge prompt cannot fit the window.

    Raises:
        ContextWindowError: One line naming the meetings, their tokens and the way out.
    """
    from elitr_bench.data.minutes import run_results, run_system_name
    from elitr_bench.judges.summary.run import check_context
    from elitr_bench.scoring.qa import find_samples, read_samples

    method = get_method(config)
    items = []
    for path in find_samples(paths):
        system = run_system_name(run_results(path), path.parent.name)
        items += [item_from_doc(s["doc"], minutes_text(s), system) for s in read_samples(path)]
    check_context(items, method, config, "score")


def plan_line(task: str, minutes: int, preview: Mapping[str, Any]) -> str:
    """The line ``score`` prints per minutes task before its first judge call."""
    cost = preview["estimated_cost_usd"]
    shown_cost = "$" + str(cost) if cost is not None else "unknown (unpriced model)"
    if cost is not None and preview.get("batch"):
        shown_cost += " at the batch price"
    return (
        f"{task}: {minutes} minutes, up to {preview['calls']} judge calls, "
        f"estimated cost {shown_cost} ({preview['restated_max']} restatements "
        "included; cache hits are free)"
    )


def plan_minutes_files(
    paths: Iterable[str | Path], config: JudgeConfig
) -> list[tuple[str, int, dict[str, Any]]]:
    """Per samples file: its task, its minutes and the minutes judge's plan for them.

    The plan is :func:`elitr_bench.judges.summary.run.plan`, the one the lm_eval
    filter logs; ``score`` prints it and checks ``--max-cost`` and ``--dry-run`` against
    it before any request (the preflight included).
    """
    from elitr_bench.data.minutes import run_results, run_system_name
    from elitr_bench.data.run_files import task_of
    from elitr_bench.scoring.qa import find_samples, read_samples

    method = get_method(config)
    out = []
    for path in find_samples(paths):
        system = run_system_name(run_results(path), path.parent.name)
        items = [item_from_doc(s["doc"], minutes_text(s), system) for s in read_samples(path)]
        out.append((task_of(path), len(items), plan(items, method, config)))
    return out


def score_minutes_samples(
    paths: Iterable[str | Path],
    config: JudgeConfig,
    output: Path | None = None,
    include_path: Sequence[str] = (),
    batch: BatchPlan | None = None,
) -> list[tuple[Path, dict[str, Any]]]:
    """Judge the minutes of logged samples; per lm-eval run its results file and content.

    ``include_path``: folders of tasks outside our package (``lm_eval --include_path``).

    ``batch``: judge through batches (:mod:`elitr_bench.judges.summary.batching`), one
    per pass for all the run's tasks; a judge with ``batch=on`` does so through its
    endpoint's Batch API without it.

    Raises:
        BatchParked: The judging waits for batches (``--no-wait``, ``--batch-write``):
            nothing is written yet.
    """
    from elitr_bench.data.minutes import run_results, run_system_name
    from elitr_bench.data.run_files import run_results_of, task_of
    from elitr_bench.scoring.qa import (
        BatchParked,
        read_samples,
        rescoring_payload,
        runs_to_rescore,
        spec_of,
        write_rescoring,
    )
    from elitr_bench.scoring.rescore import JudgedTask, check_tasks, read_run_results, rebuild

    method = get_method(config)
    written: list[tuple[Path, dict[str, Any]]] = []
    for stamp, files in runs_to_rescore(paths, output):
        usage: dict[str, Any] = {}
        identity: dict[str, Any] = {}
        judged: list[JudgedTask] = []
        tasks = {task_of(path): path for path in files}
        check_tasks(tasks, include_path=include_path)  # before any judge call is paid
        prepared = []
        for path in files:
            samples = read_samples(path)
            system = run_system_name(run_results(path), path.parent.name)
            items = [item_from_doc(s["doc"], minutes_text(s), system) for s in samples]
            prepared.append((path, samples, items))
        batched = None
        if batch is not None or config.batch:
            groups = [(f"score {task_of(path)}", items) for path, _, items in prepared]
            batched = assess_in_batches(groups, config, method, batch or BatchPlan())
            if batched.parked:
                raise BatchParked(batched)
        for n, (path, samples, items) in enumerate(prepared):
            task = task_of(path)
            run = batched.runs[n] if batched is not None else run_sync(items, config, method)
            identity = run.identity
            usage[task] = {**run.usage, "seconds": round(run.elapsed_s, 3), **run.summary}
            if run.flagged:
                usage[task][run.flag_key] = dict(run.flagged)
            filtered = []
            for item, assessment in zip(items, run.assessments, strict=True):
                entry = assessment.to_dict()
                entry["identity"] = run.identity
                filtered.append([judged_json(item.minutes, entry)])
            judged.append(JudgedTask(task, path, tuple(samples), tuple(filtered)))
        rebuilt = rebuild(
            read_run_results(run_results_of(files[0])),
            judged,
            judge_spec=spec_of(config),
            identity=identity,
            filter_name=judge_filter_name(config.identity()),
            judge_keys=judge_keys(method),
            usage=usage,
            include_path=include_path,
        )
        payload = rescoring_payload(rebuilt, judged, identity, usage, stamp)
        written.append((write_rescoring(rebuilt, judged, stamp, output), payload))
    return written
