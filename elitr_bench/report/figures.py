"""PNG figures of the report (matplotlib, Agg backend: no display needed).

Each function plots from the records of a :class:`~elitr_bench.report.tables.Table` (or
the agreement data), so a figure shows exactly the numbers of its table.

Conventions, so figures of different reports can be compared at a glance: settings in the
paper's order (single-turn QA, multi-turn QA, multi-turn Conv), score axes fixed to the
metric's scale (1-10 for judge scores) instead of auto-scaled, and legends outside the
plotting area so they never cover a bar, point or error bar.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from elitr_bench.report.agreement import GOLD, RELEASED_GPT4, RELEASED_PROMETHEUS, SILVER
from elitr_bench.report.tables import FIG3_SETTINGS, SETTINGS, SPLITS, Table, setting_title

_DPI = 120
#: Axis limits and ticks per metric: judge scores on the paper's 1-10 scale (half a unit
#: of margin so points at 1 or 10 and their error bars stay visible), F1/ROUGE on 0-1.
_SCALES: dict[str, tuple[tuple[float, float], list[float]]] = {
    "judge_score": ((0.5, 10.5), list(range(1, 11))),
    "f1": ((0.0, 1.02), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    "rouge_l": ((0.0, 1.02), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
}


def _yerr(points: list[tuple[float, float | None, float | None]]) -> Any:
    """Matplotlib's 2xN asymmetric error bars from (centre, low, high); a missing bound is 0."""
    return np.array(
        [
            [c - lo if lo is not None else 0.0, hi - c if hi is not None else 0.0]
            for c, lo, hi in points
        ]
    ).T


def _legend(ax: Any) -> None:
    """Legend to the right of the axes, outside the data area."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def _score_axis(ax: Any, metric: str, axis: str = "y") -> None:
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


def _wrap(label: str) -> str:
    """Row label with its judge (``model [judge]``) on a second line, to keep ticks short."""
    return label.replace(" [", "\n[")


def _metric(records: Sequence[Mapping[str, Any]]) -> str:
    return str(records[0]["metric"]) if records else "judge_score"


def _setting_rank(setting: str, mode: str) -> int:
    order = [(s, m) for s, m, _ in SETTINGS]
    return order.index((setting, mode)) if (setting, mode) in order else len(order)


def _split_rank(split: str) -> int:
    return SPLITS.index(split) if split in SPLITS else len(SPLITS)


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    # bbox_inches="tight" grows the canvas to hold the legend placed outside the axes.
    fig.savefig(path, dpi=_DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def figure1(table: Table, path: Path) -> Path:
    """Score vs target WER and vs effective WER, one line per model (and setting)."""
    lines: dict[tuple[int, int, str], list[Mapping[str, Any]]] = defaultdict(list)
    combos = {(r["setting"], r["mode"], r["split"]) for r in table.records}
    rows = list(dict.fromkeys(r["row"] for r in table.records))  # the table's (paper) order
    for rec in table.records:
        name = rec["row"]
        if len(combos) > 1:
            split = "test" if rec["split"] == "test2" else rec["split"]
            name += f" ({setting_title(rec['setting'], rec['mode'])}, {split})"
        rank = _setting_rank(rec["setting"], rec["mode"]) * 10 + _split_rank(rec["split"])
        lines[(rows.index(rec["row"]), rank, name)].append(rec)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for (_, _, name), recs in sorted(lines.items()):
        for ax, xkey in zip(axes, ("target_wer", "effective_wer"), strict=True):
            pts = sorted(((r[xkey], r) for r in recs if r[xkey] is not None), key=lambda x: x[0])
            if not pts:
                continue
            xs = [x for x, _ in pts]
            ys = [r["value"] for _, r in pts]
            err = _yerr([(r["value"], r["ci_low"], r["ci_high"]) for _, r in pts])
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name)
    axes[0].set_xlabel("target WER")
    axes[1].set_xlabel("effective WER (mean over meetings)")
    metric = _metric(table.records)
    axes[0].set_ylabel(metric)
    _score_axis(axes[0], metric)
    for ax in axes:
        ax.grid(alpha=0.3)
    _legend(axes[1])
    fig.suptitle("Score vs transcript noise (Fig. 1 layout; bars: 95% CI)")
    return _save(fig, path)


def figure3(table: Table, path: Path) -> Path:
    """Grouped bars: single-turn QA, multi-turn QA, multi-turn Conv per model."""
    models = [row[0] for row in table.rows]
    values = {(r["row"], r["setting"], r["mode"]): r["value"] for r in table.records}
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(models) + 2), 4.2))
    width = 0.8 / len(FIG3_SETTINGS)
    x = np.arange(len(models))
    for i, (s, m) in enumerate(FIG3_SETTINGS):
        ys = [values.get((name, s, m), np.nan) for name in models]
        ax.bar(x + (i - 1) * width, ys, width, label=setting_title(s, m))
    ax.set_xticks(x)
    ax.set_xticklabels([_wrap(m) for m in models], rotation=30, ha="right", fontsize=8)
    metric = _metric(table.records)
    ax.set_ylabel(metric)
    _score_axis(ax, metric)
    ax.set_title("QA/Conv-differing questions (mean of dev and test; Fig. 3 layout)")
    _legend(ax)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def figure2a(plot: Mapping[str, Any], reference: str, path: Path) -> Path:
    """Other evaluators' mean and 95% CI per reference score bin, N per bin under the axis.

    Args:
        plot: ``{"bins": {bin: N}, "series": {evaluator: {bin: {"mean", "low", "high"}}}}``
            from :func:`elitr_bench.report.agreement.bin_tables`.
        reference: The evaluator whose scores define the bins.
        path: Where to write the PNG.
    """
    sizes: Mapping[int, int] = plot["bins"]
    series: Mapping[str, Mapping[int, Mapping[str, Any]]] = plot["series"]
    fig, ax = plt.subplots(figsize=(8, 4.8))
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
    ax.set_xticks(range(1, 11))
    ax.set_xticklabels([f"{b}\nN={sizes.get(b, 0)}" for b in range(1, 11)], fontsize=8)
    total = sum(sizes.values())
    ax.set_xlabel(f"{reference} score bin (N = items in the bin; {total} items in all)")
    ax.set_ylabel("score (mean, 95% CI)")
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
    return _save(fig, path)


def figure2b(
    records: Sequence[Mapping[str, Any]], names: Sequence[str], n_items: int, path: Path
) -> Path:
    """Heat map of the Pearson correlation between evaluators, all on the same items."""
    idx = {n: i for i, n in enumerate(names)}
    matrix = np.full((len(names), len(names)), np.nan)
    for rec in records:
        if rec["pearson"] is not None and rec["a"] in idx and rec["b"] in idx:
            matrix[idx[rec["a"]], idx[rec["b"]]] = rec["pearson"]
    size = 1.2 + 0.9 * len(names)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    image = ax.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(names)))
    ax.set_yticks(range(len(names)))
    ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
    ax.set_yticklabels(names, fontsize=8)
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(matrix[i, j]):
                colour = "white" if abs(matrix[i, j]) > 0.6 else "black"
                ax.text(
                    j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=9, color=colour
                )
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(f"Pearson correlation between evaluators (Fig. 2b layout), N = {n_items} items")
    return _save(fig, path)


def table2_figure(table: Table, path: Path) -> Path:
    """Bar chart of Table 2 (dev and test per setting) with the CIs, for a quick look."""
    records = [r for r in table.records if r["split"] != "mean"]
    rows = list(dict.fromkeys(r["row"] for r in records))
    cols = sorted(
        {(r["setting"], r["mode"], r["split"]) for r in records},
        key=lambda c: (_setting_rank(c[0], c[1]), c[0], c[1], _split_rank(c[2])),
    )
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(rows) + 2), 4.2))
    width = 0.8 / max(1, len(cols))
    x = np.arange(len(rows))
    lookup = {(r["row"], r["setting"], r["mode"], r["split"]): r for r in records}
    # One colour per setting, light for dev and dark for test, so pairs read together.
    palette = plt.get_cmap("tab20")  # 20 colours: pairs of dark and light
    for i, (s, m, sp) in enumerate(cols):
        recs = [lookup.get((row, s, m, sp)) for row in rows]
        ys = [r["value"] if r else np.nan for r in recs]
        err = _yerr(
            [(r["value"], r["ci_low"], r["ci_high"]) if r else (0.0, None, None) for r in recs]
        )
        offset = (i - (len(cols) - 1) / 2) * width
        label = f"{setting_title(s, m)} {'test' if sp == 'test2' else sp}"
        colour = palette((2 * _setting_rank(s, m) + (1 if sp == "dev" else 0)) % palette.N)
        ax.bar(x + offset, ys, width, yerr=err, capsize=2, label=label, color=colour)
    ax.set_xticks(x)
    ax.set_xticklabels([_wrap(r) for r in rows], rotation=30, ha="right", fontsize=8)
    metric = _metric(records)
    ax.set_ylabel(metric)
    _score_axis(ax, metric)
    ax.set_title("Table 2 (bars: 95% CI clustered by meeting)")
    _legend(ax)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)
