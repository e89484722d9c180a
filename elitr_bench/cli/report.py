"""``elitr-bench report``: tables and figures of the paper from lm-eval run directories."""

from __future__ import annotations

import argparse
from typing import Any

from elitr_bench.metaeval.stats import CI_METHODS


def _cmd_report(args: argparse.Namespace) -> int:
    from elitr_bench.report.build import build_report
    from elitr_bench.report.errors import ReportError

    if args.resamples < 100:
        raise ReportError(f"--resamples {args.resamples}: use at least 100 (default 10000)")
    report = build_report(
        args.runs,
        args.out,
        judge_checks=args.judge_check or (),
        metric=args.metric,
        ci=args.ci,
        n_resamples=args.resamples,
        seed=args.seed,
        reference=args.reference,
    )

    def runs(n: int, kind: str) -> str:
        return f"{n} {kind} run{'s' if n != 1 else ''}"

    counted = runs(len(report.runs), "task")
    if report.options.get("minutes_runs"):  # the QA count alone read "0 task runs"
        counted = (
            f"{runs(len(report.runs), 'QA/Conv task')}, "
            f"{runs(report.options['minutes_runs'], 'minutes')}"
        )
    print(
        f"report: {counted}, {len(report.tables)} tables, "
        f"{len(report.figures)} figures -> {args.out}/report.md"
    )
    for note in report.notes:
        print(f"note: {note}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``report`` to the ``elitr-bench`` command line."""
    parser = subparsers.add_parser(
        "report",
        help=(
            "Markdown/CSV/PNG report (Tables 2, 3, 4, 9, 10; Figs. 1-3; score vs context) "
            "from lm-eval runs"
        ),
        description=(
            "Build the paper's tables and figures from lm-eval output directories of elitr_* "
            "tasks (run with --log_samples), with 95% CIs clustered by meeting."
        ),
    )
    parser.add_argument(
        "runs", nargs="*", metavar="RUN_DIR", help="lm-eval --output_path dirs or results files"
    )
    parser.add_argument("--out", required=True, help="output directory for report.md etc.")
    parser.add_argument(
        "--judge-check",
        action="append",
        metavar="FILE",
        help="`elitr-bench judge-check --output` JSON (repeatable) for the agreement section",
    )
    parser.add_argument(
        "--metric",
        default="judge_score",
        choices=("judge_score", "f1", "rouge_l"),
        help="main per-sample metric (default judge_score; F1 is used if no run has it)",
    )
    parser.add_argument(
        "--ci",
        default="cluster-t",
        choices=CI_METHODS,
        help="cluster-t: CR1 SE by meeting with t(G-1) (default); bootstrap: meeting bootstrap",
    )
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument(
        "--reference",
        default=None,
        help="evaluator to bin by in the agreement section (default: Gold Human)",
    )
    parser.set_defaults(handler=_cmd_report)
