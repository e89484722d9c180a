"""PNG figures of the report (matplotlib's object API with the Agg canvas: no display).

Each ``draw_*`` function builds a :class:`~matplotlib.figure.Figure` from the records of a
:class:`~elitr_bench.report.tables.Table` (or the agreement data), so a figure shows
exactly the numbers of its table; the function without ``draw_`` writes it as a PNG.
Tests read the drawn figures' axes, ticks and colour limits instead of pixels.

Conventions, so that every figure reads at a glance with one system or with nine: axes
named in words (never a metric key), every tick label horizontal and centred under its
bar or group (wrapped to the room it has), settings in the paper's order (single-turn QA,
multi-turn QA, multi-turn Conv), score axes fixed to the metric's scale (1-10 for judge
scores) instead of auto-scaled, a missing bar marked "no run" rather than left as a gap,
and legends outside the plotting area so they never cover a bar, point or error bar.
With a single system the bars stand for the settings themselves, each named under it.
"""

from __future__ import annotations

import textwrap
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from elitr_bench.markdown import fixed
from elitr_bench.report.agreement import GOLD, RELEASED_GPT4, RELEASED_PROMETHEUS, SILVER
from elitr_bench.report.tables import (
    FIG3_SETTINGS,
    SETTINGS,
    SPLITS,
    Table,
    setting_title,
)

_DPI = 120
_TICK_FONT = 8
#: Axis limits and ticks per metric: judge scores on the paper's 1-10 scale (half a unit
#: of margin so points at 1 or 10 and their error bars stay visible), F1/ROUGE on 0-1.
_SCALES: dict[str, tuple[tuple[float, float], list[float]]] = {
    "judge_score": ((0.5, 10.5), list(range(1, 11))),
    "f1": ((0.0, 1.02), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    "rouge_l": ((0.0, 1.02), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
}
#: What a score axis says for each per-sample metric (a reader does not know our keys).
_AXIS_WORDS = {
    "judge_score": "judge score (1-10, mean)",
    "f1": "token F1 with the reference (0-1, mean)",
    "rouge_l": "ROUGE-L F1 with the reference (0-1, mean)",
}
#: Markers cycled with the colours, so ten or more lines stay apart (also in greyscale).
_MARKERS = "osD^v<>ph*"


def axis_label(metric: str) -> str:
    """The words a score axis shows for ``metric`` (an unknown key loses its underscores)."""
    return _AXIS_WORDS.get(metric, metric.replace("_", " "))


def _yerr(points: list[tuple[float, float | None, float | None]]) -> Any:
    """Matplotlib's 2xN asymmetric error bars from (centre, low, high); a missing bound is 0."""
    return np.array(
        [
            [c - lo if lo is not None else 0.0, hi - c if hi is not None else 0.0]
            for c, lo, hi in points
        ]
    ).T


def _legend(ax: Axes) -> None:
    """Legend to the right of the axes, outside the data area."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def _score_axis(ax: Axes, metric: str, axis: str = "y") -> None:
    """Fix a score axis to the metric's scale (unknown metrics keep matplotlib's)."""
    if metric not in _SCALES:
        return
    limits, ticks = _SCALES[metric]
    if axis == "y":
        ax.set_ylim(*limits)
        ax.set_yticks(ticks)
    else:
        ax.set_xlim(*limits)
        ax.set_xticks(ticks)


#: The released evaluators keep their colour in every report; other judges take the rest.
_EVALUATOR_COLOURS = {RELEASED_GPT4: "C0", RELEASED_PROMETHEUS: "C1", SILVER: "C2", GOLD: "C3"}


def _evaluator_colours(names: Sequence[str]) -> dict[str, str]:
    spare = iter(f"C{i}" for i in range(4, 10))
    return {n: _EVALUATOR_COLOURS.get(n) or next(spare, "black") for n in names}


def _fit(label: str, inches: float, fontsize: float = _TICK_FONT) -> str:
    """A tick label wrapped to ``inches`` of width, its judge (``[...]``) on its own line.

    Horizontal, wrapped labels stay centred under their bar; rotated ones drift sideways
    by half their length, which is what put long model names under the neighbour's bars.
    """
    chars = max(6, int(inches * 72 / (0.6 * fontsize)))
    lines = label.replace(" [", "\n[").split("\n")
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=True) for line in lines)


def _metric(records: Sequence[Mapping[str, Any]]) -> str:
    return str(records[0]["metric"]) if records else "judge_score"


def _setting_rank(setting: str, mode: str) -> int:
    order = [(s, m) for s, m, _ in SETTINGS]
    return order.index((setting, mode)) if (setting, mode) in order else len(order)


def _split_rank(split: str) -> int:
    return SPLITS.index(split) if split in SPLITS else len(SPLITS)


def _figure(width: float, height: float) -> Figure:
    """A figure on its own Agg canvas: no pyplot state, nothing to close, drawable in tests."""
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # a table beside a plot is laid out by bbox_inches
        warnings.filterwarnings("ignore", message=".*not compatible with tight_layout")
        fig.tight_layout()
    # bbox_inches="tight" grows the canvas to hold the legend placed outside the axes.
    fig.savefig(path, dpi=_DPI, bbox_inches="tight")
    return path


@dataclass(frozen=True)
class _Series:
    """One kind of bar (a setting, or setting and split) in a grouped bar chart."""

    label: str
    colour: Any


@dataclass(frozen=True)
class _Cell:
    """One bar: the value, its interval (None: none drawn) and whether it is partial."""

    value: float
    low: float | None = None
    high: float | None = None
    partial: bool = False


def _bars(
    groups: Sequence[str],
    series: Sequence[_Series],
    cells: Mapping[tuple[int, int], _Cell],
    *,
    metric: str,
    title: str,
    errors: bool,
    values: bool,
    partial_note: str = "",
) -> Figure:
    """Bars of ``series`` per group (model); one group: one bar per series, each named.

    With several groups the series are told apart by colour (legend outside) and each
    group's name sits centred under its bars; with one group the x axis names the series
    under their own bars and the group goes into the title, so a lone model does not get
    three unlabelled bars.
    """
    series, cells, title = _without_unrun(series, cells, title)
    single = len(groups) == 1
    n_series = max(1, len(series))
    if single:
        per_group = 1.1
        width_in = max(4.2, per_group * n_series + 1.6)
    else:
        per_group = max(1.15, 0.22 * n_series)
        width_in = max(6.0, per_group * len(groups) + 2.2)
    fig = _figure(width_in, 4.4)
    ax = fig.subplots()
    if single:
        width = 0.6
        positions = {(0, j): float(j) for j in range(len(series))}
    else:
        width = 0.8 / n_series
        positions = {
            (i, j): i + (j - (n_series - 1) / 2) * width
            for i in range(len(groups))
            for j in range(len(series))
        }
    _score_axis(ax, metric)
    for j, kind in enumerate(series):
        column = [
            (positions[(i, j)], cell)
            for i in range(len(groups))
            if (cell := cells.get((i, j))) is not None
        ]
        label = None if single else kind.label
        upright = width * per_group >= 0.3
        _draw_series(ax, column, kind.colour, label, width, errors, values, upright)
    _mark_no_run(ax, [x for key, x in positions.items() if key not in cells])
    if single:
        ax.set_xticks(range(len(series)), [_fit(s.label, per_group) for s in series])
        ax.set_xlim(-0.6, len(series) - 0.4)
        ax.set_xlabel("setting")
        title = f"{title}\n{groups[0]}"
    else:
        ax.set_xticks(range(len(groups)), [_fit(g, per_group) for g in groups])
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set_xlabel("model")
    ax.tick_params(axis="x", labelsize=_TICK_FONT, length=0)
    ax.set_ylabel(axis_label(metric))
    ax.set_title(title, fontsize=10)
    partial = bool(partial_note) and any(c.partial for c in cells.values())
    _bars_legend(ax, [] if single else list(series), partial_note if partial else "")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return fig


def _without_unrun(
    series: Sequence[_Series], cells: Mapping[tuple[int, int], _Cell], title: str
) -> tuple[Sequence[_Series], Mapping[tuple[int, int], _Cell], str]:
    """Drop the series no model was run in: said in the title, not as n empty slots."""
    used = [j for j in range(len(series)) if any(j == jj for _, jj in cells)]
    missing = [series[j].label for j in range(len(series)) if j not in used]
    if not missing:
        return series, cells, title
    kept = [series[j] for j in used]
    renumbered = {(i, used.index(j)): c for (i, j), c in cells.items()}
    return kept, renumbered, title + f"\nno runs of {', '.join(missing)}"


def _draw_series(
    ax: Any,
    column: Sequence[tuple[float, _Cell]],
    colour: Any,
    label: str | None,
    width: float,
    errors: bool,
    values: bool,
    upright: bool,
) -> None:
    """One series' bars at their x positions: error bars, partial hatching, value labels."""
    if not column:
        return
    xs = [x for x, _ in column]
    ys = [c.value for _, c in column]
    yerr = _yerr([(c.value, c.low, c.high) for _, c in column]) if errors else None
    bars = ax.bar(
        xs,
        ys,
        width,
        yerr=yerr,
        capsize=2 if errors else 0,
        color=colour,
        label=label,
        edgecolor="white",
        linewidth=0.5,
    )
    for patch, (_, cell) in zip(bars.patches, column, strict=True):
        if cell.partial:
            patch.set_hatch("///")
    if values:
        ax.bar_label(
            bars,
            labels=[f"{y:.2f}" for y in ys],
            fontsize=7,
            padding=2,
            rotation=0 if upright else 90,
        )


def _mark_no_run(ax: Any, xs: Sequence[float]) -> None:
    """Write "no run" up the empty slots of a model that lacks a setting."""
    low_edge = ax.get_ylim()[0]
    for x in xs:
        ax.text(
            x,
            low_edge,
            " no run",
            rotation=90,
            fontsize=7,
            color="0.35",
            ha="center",
            va="bottom",
        )


def _bars_legend(ax: Any, series: Sequence[_Series], partial_note: str) -> None:
    """Legend outside the axes: the series' colours, and the hatching when it is used."""
    # Plain swatches: a series whose first bar is hatched must not look all "partial".
    handles: list[Any] = [Patch(facecolor=k.colour) for k in series]
    labels = [k.label for k in series]
    if partial_note:
        handles.append(Patch(facecolor="white", edgecolor="0.3", hatch="///"))
        labels.append(partial_note)
    if handles:
        ax.legend(
            handles,
            labels,
            fontsize=8,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
        )


def _lines(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Records grouped into one named line per model (and setting and split, when mixed).

    Lines follow the table's (paper) row order, then setting and split; a name carries
    the setting and split only when the table holds more than one of them.
    """
    lines: dict[tuple[int, int, str], list[Mapping[str, Any]]] = defaultdict(list)
    combos = {(r["setting"], r["mode"], r["split"]) for r in records}
    rows = list(dict.fromkeys(r["row"] for r in records))  # the table's (paper) order
    for rec in records:
        name = rec["row"]
        if len(combos) > 1:
            split = "test" if rec["split"] == "test2" else rec["split"]
            name += f" ({setting_title(rec['setting'], rec['mode'])}, {split})"
        rank = _setting_rank(rec["setting"], rec["mode"]) * 10 + _split_rank(rec["split"])
        lines[(rows.index(rec["row"]), rank, name)].append(rec)
    return [(name, recs) for (_, _, name), recs in sorted(lines.items())]


def draw_figure1(table: Table) -> Figure:
    """Score vs target WER and vs effective WER, one line per model (and setting)."""
    fig = _figure(11, 4.2)
    axes = fig.subplots(1, 2, sharey=True)
    for k, (name, recs) in enumerate(_lines(table.records)):
        style = {"color": f"C{k % 10}", "marker": _MARKERS[k % len(_MARKERS)]}
        for ax, xkey in zip(axes, ("target_wer", "effective_wer"), strict=True):
            pts = sorted(((r[xkey], r) for r in recs if r[xkey] is not None), key=lambda x: x[0])
            if not pts:
                continue
            xs = [x for x, _ in pts]
            ys = [r["value"] for _, r in pts]
            err = _yerr([(r["value"], r["ci_low"], r["ci_high"]) for _, r in pts])
            ax.errorbar(xs, ys, yerr=err, capsize=3, label=name, **style)
    axes[0].set_xlabel("target word error rate of the transcript")
    axes[1].set_xlabel("effective word error rate (mean over meetings)")
    metric = _metric(table.records)
    axes[0].set_ylabel(axis_label(metric))
    _score_axis(axes[0], metric)
    for ax in axes:
        ax.grid(alpha=0.3)
    _legend(axes[1])
    fig.suptitle("Score vs transcript noise (Fig. 1 layout; bars: 95% CI)")
    return fig


def figure1(table: Table, path: Path) -> Path:
    """Write :func:`draw_figure1` as a PNG."""
    return _save(draw_figure1(table), path)


def draw_figure3(table: Table) -> Figure:
    """Bars of single-turn QA, multi-turn QA and multi-turn Conv per model, values on top."""
    models = [row[0] for row in table.rows]
    index = {name: i for i, name in enumerate(models)}
    cells = {
        (index[r["row"]], FIG3_SETTINGS.index((r["setting"], r["mode"]))): _Cell(
            r["value"], partial=len(r.get("splits", ())) == 1
        )
        for r in table.records
        if r["row"] in index and (r["setting"], r["mode"]) in FIG3_SETTINGS
    }
    series = [_Series(setting_title(s, m), f"C{i}") for i, (s, m) in enumerate(FIG3_SETTINGS)]
    return _bars(
        models,
        series,
        cells,
        metric=_metric(table.records),
        title="QA/Conv-differing questions (mean of dev and test; Fig. 3 layout)",
        errors=False,
        values=True,
        partial_note="one split only (dev or test)",
    )


def figure3(table: Table, path: Path) -> Path:
    """Write :func:`draw_figure3` as a PNG."""
    return _save(draw_figure3(table), path)


def draw_figure2a(plot: Mapping[str, Any], reference: str) -> Figure:
    """Other evaluators' mean and 95% CI per reference score bin, N per bin under the axis.

    Args:
        plot: ``{"bins": {bin: N}, "series": {evaluator: {bin: {"mean", "low", "high"}}}}``
            from :func:`elitr_bench.report.agreement.bin_tables`.
        reference: The evaluator whose scores define the bins.
    """
    sizes: Mapping[int, int] = plot["bins"]
    series: Mapping[str, Mapping[int, Mapping[str, Any]]] = plot["series"]
    fig = _figure(8, 4.8)
    ax = fig.subplots()
    clipped = False
    step = 0.12
    colours = _evaluator_colours(list(series))
    for k, (name, bins) in enumerate(series.items()):
        pts = [(b, v) for b, v in sorted(bins.items()) if v["mean"] is not None]
        if not pts:
            continue
        offset = (k - (len(series) - 1) / 2) * step
        xs = np.array([b for b, _ in pts], dtype=float) + offset
        ys = [v["mean"] for _, v in pts]
        err = _yerr([(v["mean"], v["low"], v["high"]) for _, v in pts])
        clipped |= any(
            v["low"] is not None and (v["low"] < 0.5 or v["high"] > 10.5) for _, v in pts
        )
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name, color=colours[name])
    ax.plot([1, 10], [1, 10], color="grey", linestyle=":", linewidth=1, label="y = x")
    _score_axis(ax, "judge_score", "y")
    ax.set_xlim(0.5, 10.5)
    ax.set_xticks(range(1, 11), [f"{b}\nN={sizes.get(b, 0)}" for b in range(1, 11)])
    ax.tick_params(axis="x", labelsize=_TICK_FONT)
    total = sum(sizes.values())
    ax.set_xlabel(f"{reference} score bin (N = items in the bin; {total} items in all)")
    ax.set_ylabel("evaluator's score, 1-10 (mean, 95% CI)")
    title = "Score distribution per reference bin (Fig. 2a layout)"
    if clipped:
        title += "\n(intervals of small bins cut at the axis; exact values in the table)"
    ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i] == "y = x")  # diagonal last
    ax.legend(
        [handles[i] for i in order],
        [labels[i] for i in order],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
    )
    ax.grid(alpha=0.3)
    return fig


def figure2a(plot: Mapping[str, Any], reference: str, path: Path) -> Path:
    """Write :func:`draw_figure2a` as a PNG."""
    return _save(draw_figure2a(plot, reference), path)


def draw_figure2b(
    records: Sequence[Mapping[str, Any]], names: Sequence[str], n_items: int
) -> Figure:
    """Heat map of the Pearson correlation between evaluators, all on the same items.

    The colour scale is Pearson's whole range, -1 to 1, centred on 0 (no correlation):
    every possible value has its own colour and none is clipped.
    """
    idx = {n: i for i, n in enumerate(names)}
    matrix = np.full((len(names), len(names)), np.nan)
    for rec in records:
        if rec["pearson"] is not None and rec["a"] in idx and rec["b"] in idx:
            matrix[idx[rec["a"]], idx[rec["b"]]] = rec["pearson"]
    size = 1.2 + 0.9 * len(names)
    fig = _figure(size + 1.5, size + 0.6)
    ax = fig.subplots()
    image = ax.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(names)), [_fit(n, 0.85) for n in names])
    ax.set_yticks(range(len(names)), list(names))
    ax.tick_params(labelsize=_TICK_FONT)
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(matrix[i, j]):
                colour = "white" if abs(matrix[i, j]) > 0.6 else "black"
                ax.text(
                    j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=9, color=colour
                )
    fig.colorbar(image, ax=ax, shrink=0.8, label="Pearson r")
    ax.set_title(f"Pearson correlation between evaluators\n(Fig. 2b layout; N = {n_items} items)")
    return fig


def figure2b(
    records: Sequence[Mapping[str, Any]], names: Sequence[str], n_items: int, path: Path
) -> Path:
    """Write :func:`draw_figure2b` as a PNG."""
    return _save(draw_figure2b(records, names, n_items), path)


def draw_table2(table: Table) -> Figure:
    """Bar chart of Table 2 (dev and test per setting) with the CIs, for a quick look."""
    records = [r for r in table.records if r["split"] != "mean"]
    rows = list(dict.fromkeys(r["row"] for r in records))
    cols = sorted(
        {(r["setting"], r["mode"], r["split"]) for r in records},
        key=lambda c: (_setting_rank(c[0], c[1]), c[0], c[1], _split_rank(c[2])),
    )
    # One colour per setting, light for dev and dark for test, so pairs read together.
    palette = matplotlib.colormaps["tab20"]  # 20 colours: pairs of dark and light
    series = [
        _Series(
            f"{setting_title(s, m)} {'test' if sp == 'test2' else sp}",
            palette((2 * _setting_rank(s, m) + (1 if sp == "dev" else 0)) % palette.N),
        )
        for s, m, sp in cols
    ]
    cells = {
        (rows.index(r["row"]), cols.index((r["setting"], r["mode"], r["split"]))): _Cell(
            r["value"], r["ci_low"], r["ci_high"]
        )
        for r in records
    }
    return _bars(
        rows,
        series,
        cells,
        metric=_metric(records),
        title="Table 2 (bars: 95% CI clustered by meeting)",
        errors=True,
        values=False,
    )


def table2_figure(table: Table, path: Path) -> Path:
    """Write :func:`draw_table2` as a PNG."""
    return _save(draw_table2(table), path)


def _tokens_tick(tokens: float) -> str:
    return f"{tokens / 1024:g}k" if tokens >= 1024 and tokens % 256 == 0 else f"{tokens:g}"


def _context_cell(record: Mapping[str, Any]) -> str:
    """``budget 1024: 985``: the point's kind, nominal tokens and (if other) tokens kept."""
    what = {"budget": "budget", "full": "full", "retrieval": "BM25"}[record["kind"]]
    nominal, kept = record.get("budget", record["tokens"]), record["tokens"]
    if not nominal:
        return f"{what} ?"
    return f"{what} {nominal}" + (f": {kept}" if kept and kept != nominal else "")


def draw_context(table: Table) -> Figure:
    """Score vs transcript tokens: a line per model over its budgets, retrieval as stars.

    A point sits at the transcript tokens its prompts held (what the budget's cut kept,
    the retrieved passages' tokens), not at the nominal budget, which the table beside
    names. The full-context run ends each line at the model's window; a retrieval run is
    a star of the line's colour, so a star above the line at the same
    tokens says retrieval beats the middle cut there. The table beside the plot holds
    the numbers (the report's table, shortened to what fits).
    """
    fig = _figure(13, 4.6)
    grid = fig.add_gridspec(1, 2, width_ratios=(1.25, 1.0), wspace=0.05)
    ax = fig.add_subplot(grid[0, 0])
    ticks: set[float] = set()
    cells: list[list[str]] = []
    for k, (name, recs) in enumerate(_lines(table.records)):
        colour, marker = f"C{k % 10}", _MARKERS[k % len(_MARKERS)]
        curve = sorted(
            (r for r in recs if r["kind"] != "retrieval" and r["tokens"]),
            key=lambda r: r["tokens"],
        )
        if curve:
            ax.errorbar(
                [r["tokens"] for r in curve],
                [r["value"] for r in curve],
                yerr=_yerr([(r["value"], r["ci_low"], r["ci_high"]) for r in curve]),
                capsize=3, color=colour, marker=marker, label=f"{name}: middle cut",
            )  # fmt: skip
        rag = [r for r in recs if r["kind"] == "retrieval" and r["tokens"]]
        if rag:
            ax.errorbar(
                [r["tokens"] for r in rag],
                [r["value"] for r in rag],
                yerr=_yerr([(r["value"], r["ci_low"], r["ci_high"]) for r in rag]),
                capsize=3, color=colour, marker="*", markersize=13, linestyle="none",
                label=f"{name}: BM25 retrieval",
            )  # fmt: skip
        # ticks at the budgets (round numbers), the points at the tokens kept just below
        ticks.update(float(r.get("budget") or r["tokens"]) for r in recs if r["tokens"])
        for r in sorted(recs, key=lambda r: (r["kind"] == "retrieval", r["tokens"] or 0)):
            score = f"{fixed(r['value'])} [{fixed(r['ci_low'])}, {fixed(r['ci_high'])}]"
            cells.append([_fit(name, 1.6, 7), _context_cell(r), score])
    ax.set_xscale("log", base=2)
    full = {float(r["tokens"]) for r in table.records if r["kind"] == "full" and r["tokens"]}
    if ticks:
        labels = [_tokens_tick(t) + ("\n(full)" if t in full else "") for t in sorted(ticks)]
        ax.set_xticks(sorted(ticks), labels)
        ax.minorticks_off()
        low = min([*ticks, *(float(r["tokens"]) for r in table.records if r["tokens"])])
        ax.set_xlim(low / 1.4, max(ticks) * 1.4)
    ax.set_xlabel("transcript tokens in the prompt (kept by the cut; full = model window)")
    metric = _metric(table.records)
    judges = {r.get("judge") for r in table.records}
    judge = judges.pop() if len(judges) == 1 else None
    ax.set_ylabel(axis_label(metric) + (f"\njudge: {judge}" if judge else ""))
    _score_axis(ax, metric)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # under the plot: never over a point
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    side = fig.add_subplot(grid[0, 1])
    side.axis("off")
    shown = cells[:24]
    drawn = side.table(
        cellText=shown,
        colLabels=["Model", "Context: tokens kept", "Score [95% CI]"],
        colWidths=[0.38, 0.28, 0.34],
        loc="upper center",
        cellLoc="left",
    )
    drawn.auto_set_font_size(False)
    drawn.set_fontsize(7)
    drawn.scale(1.0, 1.25)
    if len(cells) > len(shown):
        side.set_title(f"first {len(shown)} of {len(cells)} points (all in the report)", fontsize=7)
    fig.suptitle("Score vs context: middle cut at each budget, BM25 retrieval (bars: 95% CI)")
    return fig


def context_figure(table: Table, path: Path) -> Path:
    """Write :func:`draw_context` as a PNG."""
    return _save(draw_context(table), path)
