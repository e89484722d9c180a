"""``elitr-bench minutes-check``: meta-evaluate minutes metrics and judges (AutoMin 2023 Sec. 7).

Reads metric values from three places (released minutes, our lm-eval runs of
``automin23_en``, ``--metric-file``), compares them with the release's human
Adequacy/Fluency/Grammaticality/Relevance at document and hunk level, and prints the
paper's Tables 6, 7, 8 (GPT judges' means, when GPT-ART/AFGR scores are given) and 9 next
to the printed values, and why Table 9 as printed cannot be reproduced. ``--out DIR`` also
writes Markdown, one CSV per table, every statistic (``meta.csv``) and a heatmap PNG.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from elitr_bench.data.errors import DataError
from elitr_bench.data.folder import write_atomic


def parse_systems(spec: str, available: Sequence[str]) -> list[str]:
    """``table9`` (the paper's 7), ``all`` (every released system but the reference) or a list.

    Raises:
        DataError: A named system that no input has.
    """
    from elitr_bench.metaeval.minutes_paper import TABLE9_SYSTEMS

    text = spec.strip().lower()
    if text == "table9":
        return list(TABLE9_SYSTEMS)
    if text == "all":
        return [s for s in available if s != "annot"]
    chosen = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in available]
    if unknown:
        raise DataError(
            f"--systems: unknown {', '.join(unknown)}; choose from {', '.join(available)} "
            "(or table9 / all)"
        )
    return chosen


def parse_run(spec: str) -> tuple[str, str]:
    """``DIR`` or ``DIR:LABEL`` (a label keeps metrics of several judges apart)."""
    path, colon, tag = spec.rpartition(":")
    if colon and path and not Path(spec).exists() and "/" not in tag:
        return path, tag
    return spec, ""


def run_check(args: argparse.Namespace) -> dict[str, Any]:
    """Gather inputs, compute every table, print them, write files; returns a summary."""
    from elitr_bench.data.minutes import (
        AUTOMIN_MEETINGS,
        AUTOMIN_SYSTEMS,
        load_automin_human_scores,
        load_automin_overall_scores,
        select_meetings,
    )
    from elitr_bench.metaeval import minutes as check
    from elitr_bench.metaeval import minutes_inputs as inputs
    from elitr_bench.metaeval import minutes_tables as tables

    meetings = select_meetings(args.meetings, AUTOMIN_MEETINGS) if args.meetings else None
    # Runs, metric files and --systems are read and checked first: a bad one is reported
    # before the released minutes' metrics are computed (seconds of ROUGE, minutes of BERT).
    given, runs = _given_values(args)
    named = {s for source, _ in given for cells in source.values() for s, _ in cells}
    parse_systems(args.systems, sorted(named | set(AUTOMIN_SYSTEMS)))
    values: inputs.Values = {}
    metrics = [m.strip() for m in (args.metrics or "").split(",") if m.strip()]
    if metrics and metrics != ["none"]:
        inputs.merge_values(
            values, inputs.released_metric_values(metrics, meetings=meetings), "released minutes"
        )
    for source, origin in given:
        inputs.merge_values(values, source, origin)
    if not values:
        raise DataError(
            "minutes-check: no metric values; use --metrics rouge1,rouge2,rougeL, --run DIR or "
            "--metric-file PATH"
        )
    values = check.add_derived(values)
    available = sorted({s for cells in values.values() for s, _ in cells} | set(AUTOMIN_SYSTEMS))
    systems = parse_systems(args.systems, available)
    human = load_automin_human_scores()
    overall = load_automin_overall_scores()
    rows = check.meta_evaluate(values, human, systems, meetings)
    scored_systems = [s for s in available if s != "annot"]
    gpt_means = tables.table8(values, meetings)
    built = [
        tables.table6(overall, human, list(tables.TABLE6_EN)),
        tables.table7(values, scored_systems, meetings, extra_metrics=sorted(values)),
        tables.table7_vs_paper(values, [s for s in scored_systems if s in AUTOMIN_SYSTEMS]),
        *([gpt_means] if gpt_means is not None else []),
        tables.table9(rows, systems),
        tables.table9_bound(human),
        tables.correlation_table(rows),
    ]
    for table in built:
        print(table.markdown())
    _print_filler(runs)
    summary: dict[str, Any] = {
        "systems": systems,
        "metrics": sorted(values),
        "runs": [{"path": r.path, "system": r.name, "judge": r.judge} for r in runs],
        "meetings": meetings or "all",
    }
    if args.out:
        _write_outputs(Path(args.out), built, rows, systems, summary)
    return summary


def _given_values(args: argparse.Namespace) -> tuple[list[tuple[Any, str]], list[Any]]:
    """The metric values of ``--run`` folders and ``--metric-file`` files, each with its origin.

    Their notes are printed as they are read; the runs are returned too (their judges and
    filler statistics go into the summary).
    """
    from elitr_bench.metaeval import minutes_inputs as inputs

    given: list[tuple[inputs.Values, str]] = []
    runs: list[Any] = []
    for spec in args.run or []:
        run_path, tag = parse_run(spec)
        run = inputs.read_run(run_path, tag)
        for note in run.notes:
            print(f"--run {run_path}: {note}", file=sys.stderr)
        runs.append(run)
        given.append((run.values, f"--run {run_path}"))
    for metric_file in args.metric_file or []:
        origin = f"--metric-file {metric_file}"
        read, notes = inputs.usable_metric_values(inputs.read_metric_file(metric_file), origin)
        for note in [*notes, *inputs.check_metric_file_keys(read, origin)]:
            print(note, file=sys.stderr)
        given.append((read, f"--metric-file {metric_file}"))
    return given, runs


def _print_filler(runs: list[Any]) -> None:
    """What filler compression removed per run, and the meetings it flagged."""
    from elitr_bench.judges.minutes.filler import filler_flag

    for run in runs:
        if run.filler:
            saved = [f["tokens_saved"] for f in run.filler.values()]
            print(
                f"judge filler compression ({run.name}): {sum(saved)} tokens saved over "
                f"{len(saved)} meetings (mean {sum(saved) / len(saved):.0f} per meeting)"
            )
            for meeting, stats in sorted(run.filler.items()):
                note = filler_flag(stats)
                if note:  # the scores are in the tables above, judged on this transcript
                    print(f"flagged ({run.name}, {meeting}): {note}; judge scores kept")


def _write_outputs(
    out: Path, built: list[Any], rows: Any, systems: list[str], summary: dict[str, Any]
) -> None:
    """The tables, the meta-evaluation rows, the heatmap and the summary under ``--out``."""
    from elitr_bench.metaeval import minutes_tables as tables
    from elitr_bench.metaeval.minutes_paper import TABLE9_SYSTEMS

    written = tables.write_tables(built, out)
    written.append(tables.meta_rows_csv(rows, out / "meta.csv"))
    written.append(
        tables.heatmap(
            rows,
            out / "table9_heatmap.png",
            f"Pairwise accuracy, {len(systems)} system{'s' if len(systems) != 1 else ''}",
            show_paper=sorted(systems) == sorted(TABLE9_SYSTEMS),
        )
    )
    write_atomic(out / "summary.json", json.dumps(summary, indent=2))
    written.append(out / "summary.json")
    for path in written:
        print(f"wrote {path}")


def _cmd_minutes_check(args: argparse.Namespace) -> int:
    run_check(args)
    return 0


def register(subparsers: Any) -> None:
    """Add ``minutes-check`` to the ``elitr-bench`` sub-commands."""
    parser = subparsers.add_parser(
        "minutes-check",
        help="minutes metrics/judges vs AutoMin 2023 human scores",
        description=(
            "Pairwise accuracy (AutoMin Sec. 7.1) and Pearson/Spearman/Kendall at system and "
            "document level against the released document- and hunk-level human scores; "
            "prints Tables 6, 7, 8 (for GPT-ART/AFGR scores) and 9 next to the paper's values, "
            "and the bounds that show why Table 9 as printed cannot be reproduced. A metric "
            "file's metric whose values are all equal or missing is left out (a file with no "
            "other metric is refused)."
        ),
    )
    parser.add_argument(
        "--metrics",
        default="rouge1,rouge2,rougeL",
        help="metrics computed on the released minutes: rouge1,rouge2,rougeL,bertscore_f1,"
        "bartscore, or none (default: %(default)s)",
    )
    parser.add_argument(
        "--run",
        action="append",
        metavar="DIR[:LABEL]",
        help="lm-eval output of an automin23_en run (repeatable; elitr-replay runs count "
        "for the replayed system; LABEL suffixes its metric names)",
    )
    parser.add_argument(
        "--metric-file",
        action="append",
        metavar="PATH",
        help="CSV system,meeting_id,metric,value or JSONL (MESA) metric values (repeatable)",
    )
    parser.add_argument(
        "--systems",
        default="table9",
        help="systems compared: table9 (the paper's 7), all, or a comma list "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--meetings",
        default=None,
        help="meetings whose metric values count: N (first N), ids, or 1-based indices",
    )
    parser.add_argument("--out", default=None, help="write Markdown, CSV and PNG here")
    parser.set_defaults(handler=_cmd_minutes_check)
