"""PNG figures of the report (matplotlib, Agg backend: no display needed).

Each function plots from the records of a :class:`~elitr_bench.report.tables.Table` (or
the agreement data), so a figure shows exactly the numbers of its table.
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

from elitr_bench.report.tables import FIG3_SETTINGS, Table, setting_title

_DPI = 120


def _yerr(points: list[tuple[float, float | None, float | None]]) -> Any:
    """Matplotlib's 2xN asymmetric error bars from (centre, low, high); a missing bound is 0."""
    return np.array(
        [
            [c - lo if lo is not None else 0.0, hi - c if hi is not None else 0.0]
            for c, lo, hi in points
        ]
    ).T


def _legend(ax: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)
    return path


def figure1(table: Table, path: Path) -> Path:
    """Score vs target WER and vs effective WER, one line per model (and setting)."""
    lines: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    combos = {(r["setting"], r["mode"], r["split"]) for r in table.records}
    for rec in table.records:
        name = rec["row"]
        if len(combos) > 1:
            name += f" ({setting_title(rec['setting'], rec['mode'])}, {rec['split']})"
        lines[name].append(rec)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for name, recs in sorted(lines.items()):
        for ax, xkey in zip(axes, ("target_wer", "effective_wer"), strict=True):
            pts = sorted((r[xkey], r) for r in recs if r[xkey] is not None)
            if not pts:
                continue
            xs = [x for x, _ in pts]
            ys = [r["value"] for _, r in pts]
            err = _yerr([(r["value"], r["ci_low"], r["ci_high"]) for _, r in pts])
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name)
    axes[0].set_xlabel("target WER")
    axes[1].set_xlabel("effective WER (mean over meetings)")
    axes[0].set_ylabel(table.records[0]["metric"] if table.records else "score")
    for ax in axes:
        ax.grid(alpha=0.3)
    _legend(axes[0])
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
    ax.set_xticklabels(models, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(table.records[0]["metric"] if table.records else "score")
    ax.set_title("QA/Conv-differing questions (mean of dev and test; Fig. 3 layout)")
    _legend(ax)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def figure2a(
    plot: Mapping[str, Mapping[int, Mapping[str, Any]]], reference: str, path: Path
) -> Path:
    """Other evaluators' mean and 95% CI per reference score bin."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, (name, bins) in enumerate(sorted(plot.items())):
        pts = [(b, v) for b, v in sorted(bins.items()) if v["mean"] is not None]
        if not pts:
            continue
        xs = np.array([b for b, _ in pts], dtype=float) + (k - len(plot) / 2) * 0.06
        ys = [v["mean"] for _, v in pts]
        err = _yerr([(v["mean"], v["low"], v["high"]) for _, v in pts])
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name)
    ax.plot([1, 10], [1, 10], color="grey", linestyle=":", linewidth=1)
    ax.set_ylim(0, 10.5)  # small bins have huge t intervals; keep the score scale readable
    ax.set_xlabel(f"{reference} score bin")
    ax.set_ylabel("score (mean, 95% CI)")
    ax.set_xticks(range(1, 11))
    ax.set_title("Score distribution per reference bin (Fig. 2a layout)")
    _legend(ax)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def figure2b(records: Sequence[Mapping[str, Any]], names: Sequence[str], path: Path) -> Path:
    """Heat map of the Pearson correlation between evaluators."""
    idx = {n: i for i, n in enumerate(names)}
    matrix = np.full((len(names), len(names)), np.nan)
    for rec in records:
        if rec["pearson"] is not None:
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
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title("Pearson correlation between evaluators (Fig. 2b layout)")
    return _save(fig, path)


def table2_figure(table: Table, path: Path) -> Path:
    """Bar chart of Table 2 (dev and test per setting) with the CIs, for a quick look."""
    records = [r for r in table.records if r["split"] != "mean"]
    rows = list(dict.fromkeys(r["row"] for r in records))
    cols = sorted({(r["setting"], r["mode"], r["split"]) for r in records})
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(rows) + 2), 4.2))
    width = 0.8 / max(1, len(cols))
    x = np.arange(len(rows))
    lookup = {(r["row"], r["setting"], r["mode"], r["split"]): r for r in records}
    for i, (s, m, sp) in enumerate(cols):
        recs = [lookup.get((row, s, m, sp)) for row in rows]
        ys = [r["value"] if r else np.nan for r in recs]
        err = np.array(
            [
                [r["value"] - r["ci_low"], r["ci_high"] - r["value"]]
                if r and r["ci_low"] is not None
                else [0.0, 0.0]
                for r in recs
            ]
        ).T
        offset = (i - (len(cols) - 1) / 2) * width
        label = f"{setting_title(s, m)} {'test' if sp == 'test2' else sp}"
        ax.bar(x + offset, ys, width, yerr=err, capsize=2, label=label)
    ax.set_xticks(x)
    ax.set_xticklabels(rows, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(records[0]["metric"] if records else "score")
    ax.set_title("Table 2 (bars: 95% CI clustered by meeting)")
    _legend(ax)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)
