"""``elitr-bench score`` for minutes runs: judge logged minutes again, later or with another judge.

Reached from :func:`elitr_bench.judges.commands._cmd_score` when the judge spec names a
minutes method (``rubric=gpt-afgr``, ``method=mesa``, ...). The logged minutes are never
regenerated: they are read from the samples (the judge filter's ``response`` when the
run was judged, else the raw response), judged through the shared client (the cache
makes a repeat free), and written as ``samples_<task>_rescored_<date>.jsonl`` plus a
``results_rescored_<date>.json`` with lm-eval-shaped means over scored samples.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from elitr_bench.judges.client import usage_line
from elitr_bench.judges.config import JudgeConfig
from elitr_bench.judges.lm_eval_filter import judged_json
from elitr_bench.judges.metrics import JUDGE_ERRORS, JUDGE_UNSCORED
from elitr_bench.judges.minutes.check import lower_is_better
from elitr_bench.judges.minutes.lm_eval_filter import (
    FILLER_FLAGGED,
    FILLER_METRICS,
    FILLER_UNCLASSIFIED,
    FILTER_NAME,
    TOKENS_SAVED,
    assessment_of,
    flagged_meetings,
    item_from_doc,
    minutes_judge_metrics,
    run_sync,
)
from elitr_bench.judges.minutes.registry import get_method, plan


def minutes_text(sample: Mapping[str, Any]) -> str:
    """The minutes a sample logged (judge filter's ``response``, else the raw response)."""
    found = assessment_of(sample.get("filtered_resps"))
    if found is not None:
        return found[0]
    from elitr_bench.data.minutes import minutes_text_of

    return minutes_text_of(sample) or ""


def _means(rows: list[dict[str, float]], metrics: Iterable[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric in metrics:
        values = [r[metric] for r in rows if metric in r]
        out[f"{metric},none"] = statistics.fmean(values) if values else "N/A"
        out[f"{metric}_stderr,none"] = (
            statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else "N/A"
        )
    for counted in (JUDGE_UNSCORED, JUDGE_ERRORS):
        out[f"{counted},none"] = sum(r.get(counted, 0.0) for r in rows)
    for counted in (FILLER_UNCLASSIFIED, FILLER_FLAGGED):  # only when compression ran
        if any(counted in r for r in rows):
            out[f"{counted},none"] = sum(r.get(counted, 0.0) for r in rows)
    return out


def check_minutes_fit(paths: Iterable[str | Path], config: JudgeConfig) -> None:
    """Stop before any request when a logged minutes' judge prompt cannot fit the window.

    Raises:
        ContextWindowError: One line naming the meetings, their tokens and the way out.
    """
    from elitr_bench.data.minutes import run_results
    from elitr_bench.judges.commands import find_samples, read_samples
    from elitr_bench.judges.minutes.inputs import run_system_name
    from elitr_bench.judges.minutes.registry import check_context

    method = get_method(config)
    items = []
    for path in find_samples(paths):
        system = run_system_name(run_results(path), path.parent.name)
        items += [item_from_doc(s["doc"], minutes_text(s), system) for s in read_samples(path)]
    check_context(items, method, config, "score")


def score_minutes_samples(
    paths: Iterable[str | Path], config: JudgeConfig, output: Path | None = None
) -> tuple[Path, dict[str, Any]]:
    """Judge the minutes of logged samples; returns the results file and its content."""
    from elitr_bench.data.minutes import run_results
    from elitr_bench.judges.commands import find_samples, read_samples, task_name_of
    from elitr_bench.judges.minutes.inputs import run_system_name

    method = get_method(config)
    files = find_samples(paths)
    stamp = datetime.now().isoformat().replace(":", "-")
    results: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    identity: dict[str, Any] = {}
    for path in files:
        task = task_name_of(path)
        samples = read_samples(path)
        system = run_system_name(run_results(path), path.parent.name)
        items = [item_from_doc(s["doc"], minutes_text(s), system) for s in samples]
        preview = plan(items, method, config)
        cost = preview["estimated_cost_usd"]
        print(
            f"{task}: {len(items)} minutes, up to {preview['calls']} judge calls, estimated "
            f"cost {'$' + str(cost) if cost is not None else 'unknown (unpriced model)'} "
            "(cache hits are free)",
            file=sys.stderr,
        )
        run = run_sync(items, config, method)
        identity = run.identity
        usage[task] = {**run.usage, "seconds": round(run.elapsed_s, 3), **run.summary}
        flagged = flagged_meetings(run.assessments)
        if flagged:
            usage[task]["filler_flagged"] = flagged
        rows: list[dict[str, float]] = []
        rescored = path.with_name(f"samples_{task}_rescored_{stamp}.jsonl")
        with rescored.open("w", encoding="utf-8") as handle:
            for sample, item, assessment in zip(samples, items, run.assessments, strict=True):
                entry = assessment.to_dict()
                entry["identity"] = run.identity
                row = dict(sample)
                row["filtered_resps"] = [judged_json(item.minutes, entry)]
                row["filter"] = FILTER_NAME
                for stale in (*method.metrics, JUDGE_UNSCORED, JUDGE_ERRORS, *FILLER_METRICS):
                    row.pop(stale, None)
                metrics = minutes_judge_metrics(row["filtered_resps"])
                kept = [m for m in row.get("metrics") or [] if m not in metrics]
                row.update(metrics)
                row["metrics"] = [*kept, *metrics]
                rows.append(metrics)
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        results[task] = {"alias": task, **_means(rows, [*method.metrics, TOKENS_SAVED])}
    payload: dict[str, Any] = {
        "results": results,
        "configs": {},
        "versions": {},
        "n-shot": {},
        "higher_is_better": {
            t: {
                **{m: not lower_is_better(m) for m in method.metrics},
                JUDGE_UNSCORED: False,
                JUDGE_ERRORS: False,
                **{
                    m: False
                    for m in (FILLER_UNCLASSIFIED, FILLER_FLAGGED)
                    if f"{m},none" in results[t]
                },
            }
            for t in results
        },
        "judge": identity,
        "judge_usage": usage,
        "rescored_from": {task_name_of(p): str(p) for p in files},
        "date": stamp,
    }
    target = output or files[0].with_name(f"results_rescored_{stamp}.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    return target, payload


def cmd_score_minutes(args: argparse.Namespace, config: JudgeConfig) -> int:
    """``elitr-bench score`` with a minutes judge; exit 3 when the judge failed on some."""
    target, payload = score_minutes_samples(
        args.paths, config, Path(args.output) if args.output else None
    )
    errors = 0
    for task, metrics in payload["results"].items():
        shown = {
            k.split(",")[0]: v for k, v in metrics.items() if k != "alias" and "_stderr" not in k
        }
        print(f"{task}: {shown}")
        print(f"{task}: {usage_line(payload['judge_usage'][task])}")
        errors += int(payload["judge_usage"][task].get("error", 0))
        for meeting, note in payload["judge_usage"][task].get("filler_flagged", {}).items():
            print(f"{task}: {meeting} flagged: {note}; its judge scores are kept")
    print(f"wrote {target}")
    if errors:
        print(
            f"elitr-bench: error: the minutes judge failed on {errors} item(s) (status 'error' "
            f"in the rescored samples); run the same command again (finished calls are cached)",
            file=sys.stderr,
        )
        return 3
    return 0
