"""``elitr-bench score`` and ``elitr-bench judge-check`` (second-stage judging).

``score`` judges the responses logged by ``lm_eval --log_samples`` without loading
the generating model, so a run can be judged later, by another judge, or finished after
a judge outage: items already judged by the same judge (same identity) are kept as
they are, and only the others (status ``error`` or ``skipped``, or another judge) are
sent, so a finished run costs nothing more. The results file it writes is the run's own
``results_<date>.json`` with the judge metrics of the re-judged tasks (and their
groups) recomputed over every item. ``judge-check`` meta-evaluates a judge against the
released human scores.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from elitr_bench.cli_errors import debug_enabled
from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.data.run_files import parse_samples_name, results_file_of, stamp_of
from elitr_bench.judges.client import usage_line
from elitr_bench.judges.config import (
    KEYLESS_JUDGE,
    JudgeConfig,
    check_judge_ready,
    keyless_alternatives,
    parse_judge_spec,
    resolve_judge_spec,
    with_options,
)
from elitr_bench.judges.engine import (
    Judge,
    JudgeItem,
    Judgement,
    check_items_fit,
    judge_items,
    summarize,
)
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.metrics import judge_metrics, parse_filtered
from elitr_bench.judges.redact import scrub
from elitr_bench.judges.rubrics import RUBRICS

_FALLBACK_FILTER = "elitr_judge"


def judge_config_from_args(judge: str | None, rubric: str | None) -> JudgeConfig:
    """The judge for a command: ``--judge`` (else ``ELITR_JUDGE``/default) and ``--rubric``."""
    text = resolve_judge_spec(judge)
    if text.strip().lower() == "none":
        raise JudgeConfigError(
            "--judge none: these commands need a judge; pick e.g. --judge replay (QA runs) "
            "or --judge openai:gpt-4o,rubric=gpt-afgr (minutes runs)"
        )
    config = parse_judge_spec(text)
    if rubric:
        if rubric not in RUBRICS:
            raise JudgeConfigError(
                f"--rubric {rubric}: unknown rubric; use one of {', '.join(RUBRICS)}"
            )
        config = with_options(config, rubric=rubric)
    return config


def find_samples(paths: Iterable[str | Path]) -> list[Path]:
    """Expand files and directories into lm-eval ``samples_*.jsonl`` files (rescores excluded)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(p for p in path.rglob("samples_*.jsonl") if "_rescored_" not in p.name)
        elif path.is_file():
            found.append(path)
        else:
            raise JudgeConfigError(
                f"score: {path} does not exist; pass samples_*.jsonl files or a results dir"
            )
    if not found:
        raise JudgeConfigError(
            "score: no samples_*.jsonl found; run lm_eval with --log_samples --output_path DIR"
        )
    return found


def task_name_of(path: Path) -> str:
    """Task name from a ``samples_<task>[_rescored]_<date>.jsonl`` name, else the stem's rest."""
    name = parse_samples_name(path)
    return name.task if name is not None else path.stem.removeprefix("samples_")


def response_of(sample: dict[str, Any]) -> str:
    """The response text of one logged sample (judge-filter dict, else first raw response)."""
    filtered = sample.get("filtered_resps")
    judged = parse_filtered(filtered)
    if judged is not None and "response" in judged:
        return str(judged["response"])
    entry = filtered
    while isinstance(entry, list) and entry:
        entry = entry[0]
    if isinstance(entry, str):
        return entry
    resps = sample.get("resps")
    while isinstance(resps, list) and resps:
        resps = resps[0]
    if isinstance(resps, str):
        return resps
    raise JudgeConfigError(f"score: sample doc_id={sample.get('doc_id')} has no response text")


def read_samples(path: Path) -> list[dict[str, Any]]:
    """Samples of one file, one per doc (lm-eval repeats a doc once per filter)."""
    seen: set[Any] = set()
    out = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
            except ValueError:
                raise JudgeConfigError(
                    f"score: {path}:{number} is not JSON; is this an lm-eval samples file?"
                ) from None
            if not isinstance(sample, dict) or "doc" not in sample:
                raise JudgeConfigError(
                    f"score: {path}:{number} has no 'doc'; is this an lm-eval samples file?"
                )
            key = sample.get("doc_id", number)
            if key in seen:
                continue
            seen.add(key)
            out.append(sample)
    return out


_JUDGE_METRICS = ("judge_score", "judge_unscored", "judge_errors")
#: Statuses that are a judge's final word on an item (kept when the judge is the same).
_FINAL = ("scored", "unscored")


def _lm_eval_metrics(summary: dict[str, Any], filter_key: str) -> dict[str, Any]:
    """A task's judge metrics, named and shaped as lm-eval names and shapes them."""

    def value(name: str) -> Any:
        return summary[name] if summary.get(name) is not None else "N/A"

    return {
        f"judge_score,{filter_key}": value("judge_score"),
        f"judge_score_stderr,{filter_key}": value("judge_score_stderr"),
        f"judge_unscored,{filter_key}": float(summary["judge_unscored"]),
        f"judge_unscored_stderr,{filter_key}": "N/A",
        f"judge_errors,{filter_key}": float(summary["judge_errors"]),
        f"judge_errors_stderr,{filter_key}": "N/A",
    }


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def reusable_judgement(sample: dict[str, Any], identity: dict[str, Any]) -> Judgement | None:
    """The logged judgement of a sample if this judge already gave its final word on it."""
    judged = parse_filtered(sample.get("filtered_resps"))
    judge = judged.get("judge") if judged is not None else None
    if not isinstance(judge, dict) or judge.get("status") not in _FINAL:
        return None
    if _canonical(judge.get("identity")) != _canonical(identity):
        return None
    return Judgement.from_dict(judge)


def original_results(samples_path: Path) -> Path | None:
    """The ``results_<date>.json`` lm-eval wrote next to a ``samples_<task>_<date>.jsonl``.

    None for a rescoring's samples file (its ``results_rescored_*`` is no lm-eval file).
    """
    name = parse_samples_name(samples_path)
    return results_file_of(samples_path) if name is not None and not name.rescored else None


def _leaves(name: str, subtasks: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    for child in subtasks.get(name, []):
        out += _leaves(child, subtasks) if child in subtasks else [child]
    return out


def _regroup(payload: dict[str, Any], original: dict[str, Any], filter_key: str) -> None:
    """Recompute the groups' ``judge_score`` from their re-judged tasks, as lm-eval does.

    lm-eval weights subtasks by size or not per group (``weight_by_size``), which the
    results file does not record; the choice that reproduces the original group value is
    kept (our groups use the unweighted mean, Table 2's Mean column).
    """
    from lm_eval.api.metrics import (
        aggregate_subtask_metrics,
        pooled_sample_stderr,
        unweighted_mean_stderr,
    )

    key, err = f"judge_score,{filter_key}", f"judge_score_stderr,{filter_key}"
    subtasks: dict[str, list[str]] = payload.get("group_subtasks") or {}
    for group in subtasks:
        leaves = _leaves(group, subtasks)
        if group not in payload["results"] or not leaves:
            continue
        if not all(t in payload["results"] for t in leaves):
            continue
        new = [payload["results"][t] for t in leaves]
        old = [original["results"].get(t, {}) for t in leaves]
        sizes = [int(r.get("sample_len", 0) or 0) for r in new]
        weighted = False
        old_values = [r.get(key) for r in old]
        if all(isinstance(v, (int, float)) for v in old_values):
            old_group = original["results"].get(group, {}).get(key)
            by_size = aggregate_subtask_metrics(old_values, sizes, True)
            plain = aggregate_subtask_metrics(old_values, sizes, False)
            if isinstance(old_group, (int, float)):
                weighted = abs(by_size - old_group) < abs(plain - old_group)
        values = [r.get(key) for r in new]
        entry = payload["results"][group]
        if not all(isinstance(v, (int, float)) for v in values):
            entry[key], entry[err] = "N/A", "N/A"
            continue
        entry[key] = aggregate_subtask_metrics(values, sizes, weighted)
        stderrs = [r.get(err) for r in new]
        if all(isinstance(v, (int, float)) for v in stderrs):
            entry[err] = (
                pooled_sample_stderr(stderrs, sizes)
                if weighted
                else unweighted_mean_stderr(stderrs)
            )
        else:
            entry[err] = "N/A"
        if isinstance(payload.get("groups"), dict) and group in payload["groups"]:
            payload["groups"][group].update({key: entry[key], err: entry[err]})


def _complete_results(
    original_path: Path | None, scored: dict[str, dict[str, Any]], filter_key: str
) -> dict[str, Any]:
    """The run's results file with the re-judged tasks' judge metrics replaced.

    Only the re-judged tasks and the groups made of them are kept, so that every number
    in the file is about items this command saw. Without the original results file the
    payload holds the judge metrics alone.
    """
    original: dict[str, Any] = {}
    if original_path is not None:
        try:
            original = json.loads(original_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            original = {}
    if not isinstance(original.get("results"), dict):
        original = {}
    # Scrubbed: results written before credentials were concealed may hold them.
    payload = scrub(json.loads(json.dumps(original))) if original else {}
    tasks = list(scored)
    subtasks = {
        g: kids
        for g, kids in (payload.get("group_subtasks") or {}).items()
        if all(t in tasks for t in _leaves(g, payload.get("group_subtasks") or {}))
    }
    keep = set(tasks) | set(subtasks)
    results: dict[str, Any] = {}
    for name, entry in (payload.get("results") or {}).items():
        if name in keep:
            results[name] = entry
    for task, metrics in scored.items():
        n = metrics.pop("_n")
        results.setdefault(task, {"alias": task, "sample_len": n})
        results[task].update(metrics)
    payload["results"] = results
    payload["group_subtasks"] = subtasks
    if isinstance(payload.get("groups"), dict):
        payload["groups"] = {g: v for g, v in payload["groups"].items() if g in subtasks}
    for section in ("configs", "versions", "n-shot", "higher_is_better", "n-samples"):
        if isinstance(payload.get(section), dict):
            payload[section] = {k: v for k, v in payload[section].items() if k in keep}
    if original:
        _regroup(payload, original, filter_key)
    return payload


def _score_run(
    files: list[Path],
    config: JudgeConfig,
    stamp: str,
    target: Path,
    judge: Judge | None,
) -> dict[str, Any]:
    """Judge the samples files of one lm-eval run and write its results file to ``target``."""
    identity: dict[str, Any] = config.identity()
    scored: dict[str, dict[str, Any]] = {}
    n_samples: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    sources: dict[str, str] = {}
    filter_key = _FALLBACK_FILTER
    for path in files:
        task = task_name_of(path)
        samples = read_samples(path)
        filter_key = (
            str(samples[0].get("filter") or _FALLBACK_FILTER) if samples else _FALLBACK_FILTER
        )
        items = [JudgeItem.from_doc(s["doc"], response_of(s)) for s in samples]
        judgements: list[Judgement | None] = [reusable_judgement(s, identity) for s in samples]
        todo = [i for i, j in enumerate(judgements) if j is None]
        run = judge_items(
            [items[i] for i in todo], config, judge=judge, desc=f"score {task}", on_error="record"
        )
        for i, judgement in zip(todo, run.judgements, strict=True):
            judgements[i] = judgement
        final = [j for j in judgements if j is not None]
        summary = summarize(final)
        scored[task] = {**_lm_eval_metrics(summary, filter_key), "_n": len(samples)}
        n_samples[task] = {"original": len(samples), "effective": len(samples)}
        usage[task] = {**run.usage, "judged_now": len(todo), "kept": len(samples) - len(todo)}
        sources[task] = str(path)
        rescored = path.with_name(f"samples_{task}_rescored_{stamp}.jsonl")
        with rescored.open("w", encoding="utf-8") as fh:
            for sample, item, judgement in zip(samples, items, final, strict=True):
                judged = judgement.to_dict()
                judged["identity"] = identity
                row = dict(sample)
                row["filtered_resps"] = [{"response": item.response, "judge": judged}]
                row["filter"] = filter_key
                for stale in _JUDGE_METRICS:
                    row.pop(stale, None)
                metrics = judge_metrics(row["filtered_resps"])
                kept = [m for m in row.get("metrics") or [] if m not in _JUDGE_METRICS]
                row.update(metrics)
                row["metrics"] = [*kept, *metrics]
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    payload = _complete_results(original_results(files[0]), scored, filter_key)
    payload.setdefault("configs", {})
    payload.setdefault("versions", {})
    payload.setdefault("n-shot", {})
    better = payload.get("higher_is_better") or {}
    for task in scored:
        better[task] = {
            **better.get(task, {}),
            "judge_score": True,
            "judge_unscored": False,
            "judge_errors": False,
        }
    payload["higher_is_better"] = better
    payload["n-samples"] = {**(payload.get("n-samples") or {}), **n_samples}
    for task in scored:
        config_entry = payload["configs"].get(task)
        if isinstance(config_entry, dict) and isinstance(config_entry.get("metadata"), dict):
            config_entry["metadata"]["judge_identity"] = identity
            config_entry["metadata"]["judge_usage"] = usage[task]
    payload["judge"] = identity
    payload["judge_usage"] = usage
    errors = [v.get(f"judge_errors,{filter_key}", 0) for v in scored.values()]
    payload["judge_errors"] = int(sum(errors))
    payload["rescored_from"] = sources
    payload["date"] = stamp
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    return payload


def score_runs(
    paths: Iterable[str | Path],
    config: JudgeConfig,
    output: Path | None = None,
    judge: Judge | None = None,
) -> list[tuple[Path, dict[str, Any]]]:
    """Judge logged samples; one results file (and rescored samples) per lm-eval run.

    A run is the samples files lm-eval wrote together (one folder, one date stamp); its
    ``results_rescored_<date>.json`` completes that run's own results file. Items this
    judge already judged (same identity, status scored/unscored) are kept; only the
    rest is sent. Failed items get status ``error`` (``judge_errors`` counts them) and the
    files are written anyway, so a second call finishes the job.

    Raises:
        JudgeConfigError: ``output`` names one file but the samples come from several runs.
    """
    runs: dict[tuple[Path, str], list[Path]] = {}
    for path in find_samples(paths):
        runs.setdefault((path.parent, stamp_of(path)), []).append(path)
    if output is not None and len(runs) > 1:
        raise JudgeConfigError(
            f"score: --output names one file but the samples come from {len(runs)} runs; "
            "drop --output (each run gets its own results_rescored_<date>.json)"
        )
    now = datetime.now().isoformat().replace(":", "-")
    written: list[tuple[Path, dict[str, Any]]] = []
    per_folder: dict[Path, int] = {}
    for (folder, _), files in runs.items():
        count = per_folder[folder] = per_folder.get(folder, 0) + 1
        stamp = now if count == 1 else f"{now}-{count}"
        target = output or folder / f"results_rescored_{stamp}.json"
        written.append((target, _score_run(files, config, stamp, target, judge)))
    return written


def score_samples(
    paths: Iterable[str | Path],
    config: JudgeConfig,
    output: Path | None = None,
    judge: Judge | None = None,
) -> tuple[Path, dict[str, Any]]:
    """:func:`score_runs` for callers that expect one run: its results path and content."""
    return score_runs(paths, config, output, judge)[0]


def _split_by_kind(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """Samples files of QA tasks and of minutes tasks (``make demo`` writes both)."""
    from elitr_bench.data.minutes import MINUTES_TASKS

    minutes = [f for f in files if task_name_of(f) in MINUTES_TASKS]
    return [f for f in files if f not in minutes], minutes


def _model_of(samples: Path) -> str:
    """The ``--model`` of the lm-eval run that wrote a samples file ("" if unknown)."""
    from elitr_bench.data.minutes import run_results

    config = run_results(samples).get("config")
    return str(config.get("model") or "") if isinstance(config, dict) else ""


def _generated_runs(files: list[Path]) -> list[Path]:
    """Samples files whose answers a model generated (replay has no scores for them).

    A file whose run cannot be told (no lm-eval results file next to it) is not counted.
    """
    return [f for f in files if _model_of(f) not in ("elitr-replay", "")]


def _tasks_of(files: list[Path]) -> str:
    return ", ".join(sorted({task_name_of(f) for f in files}))


def _check_qa_fit(files: list[Path], config: JudgeConfig) -> None:
    """Stop before any request when an answer still to judge has a prompt over the window.

    Raises:
        ContextWindowError: One line naming the items, their tokens and the way out.
    """
    identity = config.identity()
    items = [
        JudgeItem.from_doc(s["doc"], response_of(s))
        for path in files
        for s in read_samples(path)
        if reusable_judgement(s, identity) is None
    ]
    check_items_fit(items, config, "score")


def _cmd_score(args: argparse.Namespace) -> int:
    from elitr_bench.judges.minutes.registry import method_name

    config = judge_config_from_args(args.judge, args.rubric)
    judge = config.spec or config.backend
    minutes_judge = method_name(config) is not None
    qa_files, minutes_files = _split_by_kind(find_samples(args.paths))
    # Each judge scores the runs it fits and skips the others with a note; it refuses
    # only when nothing fits. A QA judge used to mark every minutes item 'error' and
    # then say "run it again", which could never succeed.
    if not minutes_judge and not qa_files:
        raise JudgeConfigError(
            f"--judge {judge}: a QA judge cannot score minutes ({_tasks_of(minutes_files)}); "
            "use a minutes judge, e.g. --judge openai:gpt-4o,rubric=gpt-afgr (or "
            "rubric=gpt-art, method=mesa)"
        )
    if minutes_judge and not minutes_files:
        raise JudgeConfigError(
            f"--judge {judge}: a minutes judge cannot score QA answers "
            f"({_tasks_of(qa_files)}); use a QA judge, e.g. --judge replay, lexical or "
            "openai:gpt-4-0613"
        )
    # Suggest only judges that can score these runs: replay has scores for the released
    # systems' answers alone, and neither replay nor lexical scores minutes.
    generated = [] if minutes_judge else _generated_runs(qa_files)
    if config.backend == "replay" and generated:
        raise JudgeConfigError(
            f"--judge replay scores only the released systems' answers (lm_eval --model "
            f"elitr-replay); {generated[0]} holds answers of --model "
            f"{_model_of(generated[0])}. Use an LLM judge, or "
            f"{keyless_alternatives('qa', 'elitr-bench')}"
        )
    # Judge prompts that cannot fit the judge's window stop here, before any request.
    if minutes_judge:
        from elitr_bench.judges.minutes.score import check_minutes_fit

        check_minutes_fit([str(f) for f in minutes_files], config)
    else:
        _check_qa_fit(qa_files, config)
    check_judge_ready(
        config,
        network=True,
        command="elitr-bench",
        alternative=(
            KEYLESS_JUDGE
            if minutes_judge
            else keyless_alternatives("qa", "elitr-bench", replay=bool(qa_files) and not generated)
        ),
    )

    if minutes_judge:  # a minutes judge (issue 11): minutes runs
        from elitr_bench.judges.minutes.score import cmd_score_minutes

        if qa_files:
            print(
                f"score: skipping {len(qa_files)} QA samples file(s) ({_tasks_of(qa_files)}): "
                f"the minutes judge {judge} scores minutes only; score them with a QA judge "
                "(--judge replay, lexical or openai:gpt-4-0613)",
                file=sys.stderr,
            )
        paths = [str(f) for f in minutes_files]
        return cmd_score_minutes(argparse.Namespace(**{**vars(args), "paths": paths}), config)
    if minutes_files:
        print(
            f"score: skipping {len(minutes_files)} minutes samples file(s) "
            f"({_tasks_of(minutes_files)}): the QA judge {judge} scores QA answers only; "
            "score them with a minutes judge (--judge openai:gpt-4o,rubric=gpt-afgr)",
            file=sys.stderr,
        )
    output = Path(args.output) if args.output else None
    failed = 0
    for target, payload in score_runs(qa_files, config, output):
        for task in payload["judge_usage"]:
            metrics = payload["results"].get(task, {})
            shown = {
                k.split(",")[0]: v
                for k, v in metrics.items()
                if k.startswith("judge_") and "_stderr" not in k
            }
            print(f"{task}: {shown}")
            print(f"{task}: {usage_line(payload['judge_usage'][task])}")
        print(f"wrote {target}")
        failed += payload["judge_errors"]
    if failed:
        print(
            f"elitr-bench: error: the judge failed on {failed} item(s) (status 'error' in "
            "the files written); run the same command again to judge only those (finished "
            "items are kept)",
            file=sys.stderr,
        )
        return 3
    return 0


def _cmd_judge_check(args: argparse.Namespace) -> int:
    from elitr_bench.judges.judge_check import format_report, run_judge_check

    config = judge_config_from_args(args.judge, args.rubric)
    alternative = keyless_alternatives("qa", "elitr-bench", replay=True)  # released answers
    check_judge_ready(config, network=True, command="elitr-bench", alternative=alternative)
    report = run_judge_check(config)
    print(format_report(report))
    if args.output:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    return 0


def register(subparsers: Any) -> None:
    """Add the ``score`` and ``judge-check`` subcommands to an argparse subparsers object.

    Each sets ``handler`` (``args -> exit code``) as its default.
    """
    judge_help = (
        "judge spec, e.g. openai:gpt-4-0613, hf:/path, replay, lexical "
        "(default: $ELITR_JUDGE or openai:gpt-4-0613)"
    )
    score = subparsers.add_parser(
        "score",
        help="judge responses logged by lm_eval --log_samples (finishes a run whose judge failed)",
        description=(
            "Judge lm-eval samples_*.jsonl files without loading the generating model. Answers "
            "this judge already scored are kept; only failed, skipped or differently judged "
            "ones are sent. Writes the run's results file with complete judge metrics. "
            "Prompts that do not fit the judge's context window (known for OpenAI models "
            "and hf judges, context=N in the spec for others) stop the command before any "
            "request."
        ),
    )
    score.add_argument(
        "paths", nargs="+", help="samples_*.jsonl files or lm-eval output directories"
    )
    score.add_argument(
        "--judge",
        default=None,
        help=judge_help + "; minutes runs need a minutes judge, e.g. "
        "openai:gpt-4o,rubric=gpt-afgr (or rubric=gpt-art, method=mesa)",
    )
    score.add_argument(
        "--rubric",
        default=None,
        choices=sorted(RUBRICS),
        help="override the judge's QA rubric (minutes: rubric= in --judge)",
    )
    score.add_argument(
        "--output",
        default=None,
        help="results file (default: results_rescored_<date>.json next to the samples)",
    )
    score.set_defaults(handler=_cmd_score)

    check = subparsers.add_parser(
        "judge-check",
        help="correlate a judge with the released human scores (paper Sec. 6)",
        description="Judge the 390 human-scored qa/test2/st responses; compare with humans.",
    )
    check.add_argument("--judge", default=None, help=judge_help)
    check.add_argument(
        "--rubric", default=None, choices=sorted(RUBRICS), help="override the judge's rubric"
    )
    check.add_argument("--output", default=None, help="also write the report as JSON here")
    check.set_defaults(handler=_cmd_judge_check)


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (the project CLI calls :func:`register` instead)."""
    parser = argparse.ArgumentParser(prog="elitr-bench")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except ElitrBenchError as exc:
        if debug_enabled():
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
