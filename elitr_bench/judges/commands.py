"""``elitr-bench score`` and ``elitr-bench judge-check`` (second-stage judging).

``score`` re-judges the responses logged by ``lm_eval --log_samples`` without loading
the generating model, so a run can be judged later, by another judge, or again after a
judge outage (the cache makes the repeat free). ``judge-check`` meta-evaluates a judge
against the released human scores.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.judges.config import (
    JudgeConfig,
    check_judge_ready,
    parse_judge_spec,
    resolve_judge_spec,
    with_options,
)
from elitr_bench.judges.engine import Judge, JudgeItem, JudgeRun, judge_items
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.metrics import judge_metrics, parse_filtered
from elitr_bench.judges.rubrics import RUBRICS

_SAMPLES_RE = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")
_FALLBACK_FILTER = "elitr_judge"


def judge_config_from_args(judge: str | None, rubric: str | None) -> JudgeConfig:
    """The judge for a command: ``--judge`` (else ``ELITR_JUDGE``/default) and ``--rubric``."""
    text = resolve_judge_spec(judge)
    if text.strip().lower() == "none":
        raise JudgeConfigError(
            "--judge none: these commands need a judge; pick e.g. --judge replay"
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
    """Task name from lm-eval's ``samples_<task>_<date>.jsonl`` file name."""
    match = _SAMPLES_RE.match(path.name)
    return match.group("task") if match else path.stem.removeprefix("samples_")


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


def _lm_eval_metrics(run: JudgeRun, filter_key: str) -> dict[str, Any]:
    summary = run.summary
    return {
        f"judge_score,{filter_key}": summary["judge_score"]
        if summary["judge_score"] is not None
        else "N/A",
        f"judge_score_stderr,{filter_key}": (
            summary["judge_score_stderr"] if summary["judge_score_stderr"] is not None else "N/A"
        ),
        f"judge_unscored,{filter_key}": summary["judge_unscored"],
        f"judge_unscored_stderr,{filter_key}": "N/A",
    }


def score_samples(
    paths: Iterable[str | Path],
    config: JudgeConfig,
    output: Path | None = None,
    judge: Judge | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Re-judge logged samples and write an lm-eval-shaped results file (and rescored samples).

    Returns:
        The results file path and its content.
    """
    files = find_samples(paths)
    stamp = datetime.now().isoformat().replace(":", "-")
    results: dict[str, Any] = {}
    n_samples: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    sources: dict[str, str] = {}
    identity: dict[str, Any] = config.identity()
    for path in files:
        task = task_name_of(path)
        samples = read_samples(path)
        filter_key = (
            str(samples[0].get("filter") or _FALLBACK_FILTER) if samples else _FALLBACK_FILTER
        )
        items = [JudgeItem.from_doc(s["doc"], response_of(s)) for s in samples]
        run = judge_items(items, config, judge=judge, desc=f"score {task}")
        identity = run.identity
        results[task] = {"alias": task, **_lm_eval_metrics(run, filter_key)}
        n_samples[task] = {"original": len(samples), "effective": len(samples)}
        usage[task] = run.usage
        sources[task] = str(path)
        rescored = path.with_name(f"samples_{task}_rescored_{stamp}.jsonl")
        with rescored.open("w", encoding="utf-8") as fh:
            for sample, item, judgement in zip(samples, items, run.judgements, strict=True):
                judged = judgement.to_dict()
                judged["identity"] = run.identity
                row = dict(sample)
                row["filtered_resps"] = [{"response": item.response, "judge": judged}]
                row["filter"] = filter_key
                for stale in ("judge_score", "judge_unscored"):
                    row.pop(stale, None)
                metrics = judge_metrics(row["filtered_resps"])
                row.update(metrics)
                row["metrics"] = list(metrics)
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    payload: dict[str, Any] = {
        "results": results,
        "configs": {},
        "versions": {},
        "n-shot": {},
        "higher_is_better": {t: {"judge_score": True, "judge_unscored": False} for t in results},
        "n-samples": n_samples,
        "judge": identity,
        "judge_usage": usage,
        "rescored_from": sources,
        "date": stamp,
    }
    target = output or files[0].with_name(f"results_rescored_{stamp}.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    return target, payload


def _cmd_score(args: argparse.Namespace) -> int:
    config = judge_config_from_args(args.judge, args.rubric)
    check_judge_ready(config)
    target, payload = score_samples(args.paths, config, Path(args.output) if args.output else None)
    for task, metrics in payload["results"].items():
        shown = {k.split(",")[0]: v for k, v in metrics.items() if k != "alias"}
        print(f"{task}: {shown}")
    print(f"wrote {target}")
    return 0


def _cmd_judge_check(args: argparse.Namespace) -> int:
    from elitr_bench.judges.judge_check import format_report, run_judge_check

    config = judge_config_from_args(args.judge, args.rubric)
    check_judge_ready(config)
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
        help="(re)judge responses logged by lm_eval --log_samples",
        description="Re-judge lm-eval samples_*.jsonl files without loading the generating model.",
    )
    score.add_argument(
        "paths", nargs="+", help="samples_*.jsonl files or lm-eval output directories"
    )
    score.add_argument("--judge", default=None, help=judge_help)
    score.add_argument(
        "--rubric", default=None, choices=sorted(RUBRICS), help="override the judge's rubric"
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
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
