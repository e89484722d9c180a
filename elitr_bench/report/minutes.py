"""The minutes part of ``elitr-bench report``: AutoMin-style tables and figures for minutes runs.

For every lm-eval run of a minutes task (``automin23_en``, ``elitr_minutes_dev``,
``elitr_minutes_test``) found below the report's RUN_DIRs:

* **Table 7 layout**: one row per task and system/model with the reference metrics
  (ROUGE-1/2/L, BERTScore, BARTScore when logged), the Table 5 output statistics and the
  judge's metrics, mean ± std over meetings;
* **judge token savings**: what AutoMin's filler compression (Sec. 6.3) removed from the
  transcripts the judge read, per run, with the judge's usage and cost;
* **metric vs human scatter plots**: for runs that replay a released AutoMin system on
  ``automin23_en`` (``elitr-replay``), each metric against the release's document-level
  human Adequacy/Fluency/Grammaticality/Relevance, one point per meeting.

Runs are read with :func:`elitr_bench.metaeval.minutes_inputs.read_run`, the reader
``minutes-check`` uses, so the report and the meta-evaluation see the same values.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from elitr_bench.data.errors import DataError
from elitr_bench.data.run_files import task_of
from elitr_bench.markdown import fixed
from elitr_bench.report.runs import read_samples
from elitr_bench.report.tables import Table

if TYPE_CHECKING:
    from elitr_bench.metaeval.minutes_inputs import RunValues
    from elitr_bench.report.records import Report, ReportInputs

#: Table 7's column order (ROUGE-1/2/L, BART-F1, BERT-F1).
REFERENCE_METRICS = ("rouge1", "rouge2", "rougeL", "bartscore", "bertscore_f1")
STAT_METRICS = ("lines", "words", "words_per_line")
#: Scatter plots are drawn for at most this many metrics (reference first, then judges):
#: the five reference metrics and GPT-AFGR's four criteria; the table lists every metric.
MAX_SCATTER_METRICS = 9


def minutes_samples(paths: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """Samples files of minutes tasks below the given RUN_DIRs, and notes.

    A rescoring (``elitr-bench score``) replaces the file it re-judged, so each run is
    read once; the notes name the files left out.
    """
    from elitr_bench.data.minutes import minutes_candidates
    from elitr_bench.data.run_files import current_samples

    found: list[Path] = []
    for root in paths:
        found += [p for p in minutes_candidates(root)[0] if p not in found]
    return current_samples(found)


def _label(metric: str) -> str:
    from elitr_bench.metaeval.minutes_tables import metric_label

    return metric_label(metric)


def table7_layout(runs: Sequence[RunValues]) -> Table:
    """Mean ± std over meetings per task and system/model, AutoMin Table 7 style."""
    present = {m for r in runs for m in r.values}
    judge = sorted(m for m in present if m not in REFERENCE_METRICS and m not in STAT_METRICS)
    metrics = [
        *(m for m in REFERENCE_METRICS if m in present),
        *(m for m in STAT_METRICS if m in present),
        *judge,
    ]
    from elitr_bench.metaeval.minutes import system_spread

    rows, records = [], []
    for run in sorted(runs, key=lambda r: (r.tasks, -_first_mean(r, metrics))):
        cells = []
        for metric in metrics:
            # Mean and population std over meetings, as AutoMin's tables (and minutes-check).
            spread = system_spread(run.values.get(metric, {})).get(run.name)
            if spread is None:
                cells.append("-")
                continue
            mean, std, n = spread
            digits = 3 if metric in REFERENCE_METRICS else 2
            cells.append(f"{fixed(mean, digits)} ± {fixed(std, digits)}")
            records.append(
                {
                    "task": ",".join(run.tasks),
                    "system": run.name,
                    "metric": metric,
                    "mean": mean,
                    "std": std,
                    "n": n,
                    "judge": _judge_label(run) if metric in judge else "",
                    "run": run.path,
                }
            )
        meetings = {k[1] for cells_ in run.values.values() for k in cells_}
        rows.append(
            (
                ",".join(run.tasks),
                _system_label(run.name),
                _judge_label(run),
                *cells,
                str(len(meetings)),
            )
        )
    return Table(
        key="minutes_table7",
        title="Minutes: automatic metrics per system/model (AutoMin Table 7 layout)",
        columns=("Task", "System / model", "Judge", *(_label(m) for m in metrics), "meetings"),
        rows=tuple(rows),
        records=tuple(records),
        notes=(
            "mean ± population std over meetings (as AutoMin); rows sorted by decreasing "
            "ROUGE-1 within a task, as AutoMin sorts Table 7; judge metrics are on the judge's "
            "own scale (GPT: 0-10)",
        ),
    )


def _first_mean(run: RunValues, metrics: Sequence[str]) -> float:
    for metric in metrics:
        values = list(run.values.get(metric, {}).values())
        if values:
            return statistics.fmean(values)
    return 0.0


def _judge_label(run: RunValues) -> str:
    """``model method`` of the run's minutes judge, ``none`` without one."""
    if not run.judge:
        return "none"
    method = run.judge.get("method") or run.judge.get("rubric") or ""
    return f"{run.judge.get('model', '')} {method}".strip()


def _system_label(name: str) -> str:
    from elitr_bench.metaeval.minutes_tables import label

    return label(name)


def savings_table(runs: Sequence[RunValues]) -> Table | None:
    """Tokens the judge's filler compression removed, per run (None if no run compressed)."""
    rows, records = [], []
    for run in runs:
        if not run.filler:
            continue
        stats = list(run.filler.values())
        before = sum(int(s.get("tokens_before", 0)) for s in stats)
        after = sum(int(s.get("tokens_after", 0)) for s in stats)
        saved = before - after
        turns = sum(int(s.get("turns", 0)) for s in stats)
        filler = sum(int(s.get("filler_turns", 0)) for s in stats)
        cost = run.usage.get("estimated_cost_usd")
        record: dict[str, Any] = {
            "task": ",".join(run.tasks),
            "system": run.name,
            "judge": _judge_label(run),
            "meetings": len(stats),
            "tokens_before": before,
            "tokens_after": after,
            "tokens_saved": saved,
            "saved_per_meeting": saved / len(stats),
            "saved_fraction": saved / before if before else 0.0,
            "turns": turns,
            "filler_turns": filler,
            "judge_requests": run.usage.get("requests"),
            "judge_cost_usd": cost,
        }
        records.append(record)
        rows.append(
            (
                str(record["task"]),
                _system_label(run.name),
                record["judge"] or "-",
                str(len(stats)),
                str(before),
                str(after),
                f"{saved} ({fixed(record['saved_fraction'], 1, percent=True)})",
                fixed(record["saved_per_meeting"], 0),
                f"{filler}/{turns}",
                "-" if cost is None else f"${cost:.4f}",
            )
        )
    if not rows:
        return None
    return Table(
        key="minutes_filler_savings",
        title="Minutes judge: tokens saved by filler compression (AutoMin Sec. 6.3)",
        columns=(
            "Task",
            "System / model",
            "Judge",
            "meetings",
            "tokens before",
            "tokens after",
            "saved",
            "saved per meeting",
            "filler turns",
            "judge cost",
        ),
        rows=tuple(rows),
        records=tuple(records),
        notes=(
            "tokens are whitespace-separated words of the transcript (before) and of the "
            "compressed transcript the judge read (after); 'eh', non-speech tags and the text "
            "of filler turns are removed, their speaker labels kept",
            *_flag_notes(runs),
        ),
    )


def _flag_notes(runs: Sequence[RunValues]) -> list[str]:
    """One note per meeting whose classifier left turns unread (its scores are kept)."""
    from elitr_bench.judges.minutes.filler import filler_flag

    return [
        f"flagged: {_system_label(run.name)}, {meeting}: {note}; its judge scores are kept"
        for run in runs
        for meeting, stats in sorted(run.filler.items())
        if (note := filler_flag(stats))
    ]


def scatter_figures(runs: Sequence[RunValues], out: Path) -> tuple[list[Path], Table | None]:
    """Metric vs document-level human scores for replayed AutoMin systems (one PNG per metric)."""
    from elitr_bench.data.minutes import AUTOMIN_SYSTEMS, load_automin_human_scores

    automin = [r for r in runs if "automin23_en" in r.tasks and r.name in AUTOMIN_SYSTEMS]
    if not automin:
        return [], None
    human: dict[tuple[str, str, str], float] = {
        (h.system, h.meeting_id, h.criterion): h.value
        for h in load_automin_human_scores("document")
    }
    values: dict[str, dict[tuple[str, str], float]] = {}
    for run in automin:
        for metric, cells in run.values.items():
            if metric not in STAT_METRICS:
                values.setdefault(metric, {}).update(cells)
    from elitr_bench.judges.summary.base import lower_is_better

    # Overall judge scores (mesa_quality, afgr_*) before MESA's per-type error ratings, so
    # the plotted ones are the headline metrics.
    order = [m for m in REFERENCE_METRICS if m in values] + sorted(
        (m for m in values if m not in REFERENCE_METRICS), key=lambda m: (lower_is_better(m), m)
    )
    criteria = ("adequacy", "fluency", "grammaticality", "relevance")
    systems = sorted({s for cells in values.values() for s, _ in cells})
    paths: list[Path] = []
    records: list[dict[str, Any]] = []
    unplotted: list[str] = []
    plotted: list[str] = []
    for metric in order:
        cells = values[metric]
        pointless = not any((k[0], k[1], c) in human for k in cells for c in criteria)
        if pointless:  # no document with a human score (e.g. --limit): an empty figure
            unplotted.append(metric)
        if pointless or len(paths) == MAX_SCATTER_METRICS:  # the table lists every metric
            for criterion in criteria:
                keys = [k for k in sorted(cells) if (k[0], k[1], criterion) in human]
                xs = [human[(k[0], k[1], criterion)] for k in keys]
                records.append(_vs_human(metric, criterion, keys, xs, [cells[k] for k in keys]))
            continue
        fig, metric_records = draw_scatter(metric, cells, human, systems)
        records += metric_records
        path = out / "figures" / f"minutes_scatter_{metric.replace('@', '_at_')}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110, bbox_inches="tight")
        paths.append(path)
        plotted.append(metric)
    capped = [m for m in order if m not in plotted and m not in unplotted]
    return paths, _vs_human_table(records, capped, unplotted)


def _vs_human_table(
    records: list[dict[str, Any]], capped: Sequence[str], unplotted: Sequence[str]
) -> Table:
    """Each metric's correlations with the human scores; notes on the metrics not plotted."""
    rows = tuple(
        (
            _label(str(r["metric"])),
            str(r["criterion"]),
            str(r["n"]),
            fixed(r["pearson"], 3),
            fixed(r["spearman"], 3),
            fixed(r["kendall"], 3),
        )
        for r in records
    )
    return Table(
        key="minutes_vs_human",
        title="Minutes metrics vs human document scores (replayed AutoMin systems)",
        columns=("Metric", "Human", "n", "Pearson", "Spearman", "Kendall"),
        rows=rows,
        records=tuple(records),
        notes=(
            "one point per (meeting, system) with a released document-level score; "
            "elitr-bench minutes-check gives pairwise accuracy and system-level statistics",
            *(
                [
                    f"scatter plots for the first {MAX_SCATTER_METRICS} metrics only; "
                    "this table also has "
                    f"{', '.join(_label(m) for m in capped)}"
                ]
                if capped
                else []
            ),
            *(
                [
                    "no scatter plot without a document that has a human score: "
                    + ", ".join(_label(m) for m in unplotted)
                ]
                if unplotted
                else []
            ),
        ),
    )


#: Markers cycled with the colours, so that nine systems stay apart (also in greyscale).
_MARKERS = "osD^v<>ph*"


def draw_scatter(
    metric: str,
    cells: Mapping[tuple[str, str], float],
    human: Mapping[tuple[str, str, str], float],
    systems: Sequence[str],
) -> tuple[Figure, list[dict[str, Any]]]:
    """One metric against the four document-level human criteria, one point per meeting.

    Every system keeps its colour and marker (from its place in ``systems``) in every
    figure, and the panels share the metric axis, so a point is read the same way in all.

    Returns:
        The figure and one metric-vs-human record per criterion.
    """
    criteria = ("adequacy", "fluency", "grammaticality", "relevance")
    fig = Figure(figsize=(15, 3.9))
    FigureCanvasAgg(fig)  # its own canvas: no pyplot state, drawable in tests
    axes = fig.subplots(1, 4, sharey=True)
    records = []
    for ax, criterion in zip(axes, criteria, strict=True):
        keys = [k for k in sorted(cells) if (k[0], k[1], criterion) in human]
        xs = [human[(k[0], k[1], criterion)] for k in keys]
        ys = [cells[k] for k in keys]
        for rank, system in enumerate(systems):
            pts = [(x, y) for k, x, y in zip(keys, xs, ys, strict=True) if k[0] == system]
            if pts:
                ax.scatter(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    s=28,
                    alpha=0.8,
                    color=f"C{rank % 10}",
                    marker=_MARKERS[rank % len(_MARKERS)],
                    label=_system_label(system),
                )
        record = _vs_human(metric, criterion, keys, xs, ys)
        records.append(record)
        pearson = record["pearson"]
        r_text = f"Pearson r = {fixed(pearson, 2)}" if pearson is not None else "r undefined"
        ax.set_title(f"{criterion.capitalize()}: n={len(keys)}, {r_text}", fontsize=9)
        ax.set_xlabel(f"human {criterion}, document level (1-5)")
        ax.set_xlim(0.8, 5.2)
        ax.set_xticks([1, 2, 3, 4, 5])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(_label(metric))
    scale = _judge_scale(metric)
    if scale is not None:  # a judge's whole scale, so 4-8 does not look like 0-10
        axes[0].set_ylim(scale[0] - 0.3, scale[1] + 0.3)
    fig.suptitle(f"{_label(metric)} vs AutoMin 2023 document-level human scores")
    fig.tight_layout(rect=(0.0, 0.0, 0.9, 1.0))
    legend: dict[str, Any] = {}  # every system once, even one missing from a panel
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    if legend:
        fig.legend(
            list(legend.values()),
            list(legend),
            loc="center left",
            bbox_to_anchor=(0.9, 0.5),
            fontsize=8,
        )
    return fig, records


def _judge_scale(metric: str) -> tuple[float, float] | None:
    """The fixed score range of a judge metric, as its family declares it (None: none)."""
    from elitr_bench.judges.summary.base import metric_scale

    return metric_scale(metric)


def _vs_human(
    metric: str, criterion: str, keys: Sequence[tuple[str, str]], xs: list[float], ys: list[float]
) -> dict[str, Any]:
    """One row of the metric-vs-human table: correlations over (meeting, system) points."""
    from elitr_bench.metaeval.stats import correlations

    corr = correlations(xs, ys)
    return {
        "metric": metric,
        "criterion": criterion,
        "level": "document",
        "n": len(keys),
        "pearson": corr.pearson,
        "spearman": corr.spearman,
        "kendall": corr.kendall,
        "systems": " ".join(sorted({k[0] for k in keys})),
    }


def minutes_sections(inputs: ReportInputs, report: Report) -> None:
    """Add the minutes sections for the minutes runs below ``inputs.run_paths``."""
    from elitr_bench.metaeval.minutes_inputs import read_run

    files, notes = minutes_samples(list(inputs.run_paths))
    if not files:
        return
    for path in files:  # an empty or cut-off file is refused, not counted as a run
        for _ in read_samples(path, task_of(path)):
            pass
    report.notes.extend(notes)
    runs: list[RunValues] = []
    for path in files:  # a samples file that is not a minutes run is refused, not skipped
        runs.append(read_run(path))
    report.options["minutes_runs"] = len(runs)
    parts: list[str | Table] = [table7_layout(runs)]
    savings = savings_table(runs)
    if savings is not None:
        parts.append(savings)
    report.section("Meeting minutes (AutoMin Task A)", *parts)
    try:
        paths, versus = scatter_figures(runs, inputs.out)
    except DataError as exc:
        report.notes.append(f"minutes scatter plots skipped: no AutoMin human scores ({exc})")
        return
    if versus is not None:
        report.section("Minutes metrics vs AutoMin 2023 human scores", versus)
        report.figures.extend(paths)
