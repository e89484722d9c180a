"""AutoMin 2023 Tables 6, 7, 8 and 9 from our numbers, next to the printed ones.

A table is a header plus rows of strings (ready for Markdown and CSV) built by pure
functions; the heatmap is the only I/O besides writing files. Each table says where our
value differs from the paper's and by how much (``Δ`` = ours - printed).
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elitr_bench.data.folder import write_atomic
from elitr_bench.data.records import HumanScores, SystemHumanScore
from elitr_bench.markdown import fixed, markdown_table
from elitr_bench.metaeval.minutes import (
    MetaRow,
    MetricValues,
    bound_violations,
    column_bounds,
    human_system_means,
    lower_is_better,
    system_spread,
)
from elitr_bench.metaeval.minutes_paper import (
    HUMAN_COLUMNS,
    METRIC_LABELS,
    SYSTEM_LABELS,
    TABLE6_EN,
    TABLE7_EN_ROWS,
    TABLE7_METRICS,
    TABLE8_EN,
    TABLE8_MEETINGS,
    TABLE8_METRICS,
    TABLE9,
    TABLE9_SYSTEMS,
)

#: The dash the paper prints for a missing value.
DASH = "–"


@dataclass
class AutoMinTable:
    """A titled table of strings, with notes printed under it."""

    name: str
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        """GitHub Markdown with the title as a heading and notes as a list."""
        lines = [f"### {self.title}", "", *markdown_table(self.header, self.rows)]
        if self.notes:
            lines.append("")
            lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines) + "\n"

    def write_csv(self, path: Path) -> Path:
        """Header and rows as CSV."""
        handle = io.StringIO(newline="")
        writer = csv.writer(handle)
        writer.writerow(self.header)
        writer.writerows(self.rows)
        write_atomic(path, handle.getvalue())
        return path


def label(system: str) -> str:
    """The paper's name of a released system (our run names unchanged)."""
    return SYSTEM_LABELS.get(system, system)


def metric_label(metric: str) -> str:
    """The paper's name of a metric (``ROUGE-1``), else ours."""
    base, at, tag = metric.partition("@")
    return METRIC_LABELS.get(base, base) + (f"@{tag}" if at else "")


def _delta(ours: float | None, paper: float | None, digits: int = 2) -> str:
    if ours is None or paper is None:
        return "–"
    return f"{round(ours - paper, digits) + 0.0:+.{digits}f}"  # + 0.0: no "-0.00"


def table6(
    overall: Sequence[SystemHumanScore], human: Sequence[HumanScores], systems: Sequence[str]
) -> AutoMinTable:
    """Table 6 (English): the release's human means ± std, our recomputation, the paper's.

    Cells: released TSV mean ± std; ``Δ`` columns: TSV mean - printed mean. A note gives
    the largest gap between the TSV and the means recomputed from the per-meeting files.
    """
    tsv: dict[tuple[str, str, str], tuple[float, float]] = {
        (o.system, o.level, o.criterion): (o.mean, o.stdev) for o in overall
    }
    header = ["System"]
    for *_, col in HUMAN_COLUMNS:
        header += [col, f"Δ {col}"]
    table = AutoMinTable("table6", "Table 6 (ELMI EN): human scores from the release", header)
    worst_recomputed = 0.0
    worst_paper: tuple[float, str] = (0.0, "")
    for system in systems:
        row = [label(system)]
        printed = TABLE6_EN.get(system)
        for i, (level, criterion, col) in enumerate(HUMAN_COLUMNS):
            cell = tsv.get((system, level, criterion))
            recomputed = human_system_means(human, level, criterion).get(system)
            if cell is not None and recomputed is not None:
                worst_recomputed = max(worst_recomputed, abs(recomputed - cell[0]))
            paper = printed[i] if printed else None
            row.append("–" if cell is None else f"{cell[0]:.2f} ± {cell[1]:.2f}")
            delta = None if cell is None or paper is None else cell[0] - paper[0]
            row.append(_delta(cell[0] if cell else None, paper[0] if paper else None))
            if delta is not None and abs(delta) > worst_paper[0] + 1e-9:
                worst_paper = (abs(delta), f"{label(system)} {col}")
        table.rows.append(row)
    table.notes.append(
        "cells: the release's overall TSV (mean ± std); Δ: minus the paper's printed mean"
    )
    table.notes.append(
        f"largest |recomputed from per-meeting files - TSV| = {worst_recomputed:.3f} "
        "(TSV values are rounded to 2 decimals)"
    )
    table.notes.append(
        "largest |TSV - printed| = "
        + (f"{worst_paper[0]:.2f} ({worst_paper[1]})" if worst_paper[1] else "0.00")
        + "; GPT-4's H Relev is unreadable in the paper text"
    )
    return table


def table7(
    values: MetricValues,
    systems: Sequence[str],
    meetings: Sequence[str] | None = None,
    extra_metrics: Sequence[str] = (),
) -> AutoMinTable:
    """Table 7 layout: mean ± std per system of the reference metrics (and any extras)."""
    metrics = [m for m in TABLE7_METRICS if m in values] + [
        m for m in extra_metrics if m in values and m not in TABLE7_METRICS
    ]
    spreads = {m: system_spread(values[m], meetings) for m in metrics}
    # System-level values (empty meeting id: CREAM ratings, --metric-file rows) have no
    # spread over meetings; they are shown as they are, with n = "system".
    level = {
        m: {s: v for (s, meeting), v in values[m].items() if not meeting and s not in spreads[m]}
        for m in metrics
    }
    for m in metrics:
        spreads[m].update({s: (v, math.nan, 0) for s, v in level[m].items()})
    order = sorted(
        (s for s in systems if any(s in spreads[m] for m in metrics)),
        key=lambda s: -spreads[metrics[0]].get(s, (-math.inf, 0.0, 0))[0] if metrics else 0.0,
    )
    table = AutoMinTable(
        "table7",
        "Table 7 (ELMI EN): automatic metrics per system (mean ± population std over meetings)",
        ["System", *(metric_label(m) for m in metrics), "n"],
    )
    for system in order:
        cells = [spreads[m].get(system) for m in metrics]
        n = max((c[2] for c in cells if c), default=0)
        table.rows.append(
            [
                label(system),
                *(
                    "–"
                    if c is None
                    else f"{c[0]:.3f}"
                    if math.isnan(c[1])
                    else f"{c[0]:.3f} ± {c[1]:.3f}"
                    for c in cells
                ),
                str(n) if n else "system",
            ]
        )
    table.notes.append("sorted by decreasing first metric, as the paper sorts by ROUGE-1")
    if any(level.values()):
        table.notes.append("a value without ± is system-level (one value per system)")
    return table


def table7_vs_paper(values: MetricValues, systems: Sequence[str]) -> AutoMinTable:
    """Our ROUGE system means sorted by ROUGE-1, next to the printed rows of the same rank.

    The paper's Table 7 lost its system names in the text we have, and prints 9 English
    rows (one, Zoom's text-davinci-003, is not released), so rows are aligned by rank, and
    each system's nearest printed row (smallest summed |Δ| over ROUGE-1/2/L) is shown too.
    """
    rouge = [m for m in ("rouge1", "rouge2", "rougeL") if m in values]
    table = AutoMinTable(
        "table7_paper",
        "Table 7 (ELMI EN) ROUGE: ours vs the printed rows (by rank; names lost in the paper text)",
        [
            "Rank",
            "System (ours)",
            *(f"{metric_label(m)} ours" for m in rouge),
            *(f"{metric_label(m)} paper" for m in rouge),
            *(f"Δ {metric_label(m)}" for m in rouge),
            "nearest printed row",
        ],
    )
    if not rouge:
        table.notes.append("no ROUGE values (compute them with --metrics rouge1,rouge2,rougeL)")
        return table
    means = {m: {s: v[0] for s, v in system_spread(values[m]).items()} for m in rouge}
    ours = sorted((s for s in systems if s in means[rouge[0]]), key=lambda s: -means[rouge[0]][s])
    index = {m: TABLE7_METRICS.index(m) for m in rouge}
    for rank, system in enumerate(ours):
        mine = [means[m].get(system) for m in rouge]
        printed = (
            [TABLE7_EN_ROWS[rank][index[m]][0] for m in rouge]
            if rank < len(TABLE7_EN_ROWS)
            else [None] * len(rouge)
        )

        def distance(
            row: tuple[tuple[float, float], ...], mine: list[float | None] = mine
        ) -> float:
            return sum(abs((v or 0.0) - row[index[m]][0]) for m, v in zip(rouge, mine, strict=True))

        nearest = min(range(len(TABLE7_EN_ROWS)), key=lambda r: distance(TABLE7_EN_ROWS[r]))
        table.rows.append(
            [
                str(rank + 1),
                label(system),
                *(fixed(v, 3, missing=DASH) for v in mine),
                *(fixed(v, missing=DASH) for v in printed),
                *(_delta(a, b) for a, b in zip(mine, printed, strict=True)),
                f"row {nearest + 1} (Σ|Δ| {distance(TABLE7_EN_ROWS[nearest]):.3f})",
            ]
        )
    table.notes.append(
        "printed rows are rounded to 2 decimals; the paper has 9 English rows (incl. Zoom's "
        "unreleased text-davinci-003), so rank alignment can shift by one row"
    )
    return table


Cell8 = tuple[float, float | None, int]
"""Mean, sample std (None for one value) and number of meetings (0 = system-level value)."""


def _gpt_cells(
    values: Mapping[tuple[str, str], float], meetings: Sequence[str] | None
) -> dict[str, Cell8]:
    """System -> mean, sample std and n of its per-meeting values (or its system value)."""
    per: dict[str, list[float]] = defaultdict(list)
    level: dict[str, float] = {}
    for (system, meeting), value in values.items():
        if not math.isfinite(value):
            continue
        if not meeting:
            level[system] = value
        elif meetings is None or meeting in meetings:
            per[system].append(value)
    cells: dict[str, Cell8] = {
        s: (statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else None, len(v))
        for s, v in per.items()
    }
    for system, value in level.items():
        cells.setdefault(system, (value, None, 0))
    return cells


def _cell8(cell: Cell8 | None) -> str:
    if cell is None:
        return "–"
    mean, std, _ = cell
    return f"{mean:.2f}" if std is None else f"{mean:.2f} ± {std:.2f}"


def table8(values: MetricValues, meetings: Sequence[str] | None = None) -> AutoMinTable | None:
    """Table 8: GPT-AFGR / GPT-ART means per system, ours next to the printed ones.

    Ours are the mean and SAMPLE std over the meetings a system was judged on, as the paper's
    (see :data:`~.minutes_paper.TABLE8_EN`). Systems are in Table 8's order, then any others (our
    runs, systems the paper did not judge with GPT); each printed system also gets its
    printed row and ``Δ`` = ours - printed mean. A note per metric says how many pairs of
    Table 8's systems our means order as the printed ones do.

    Returns:
        None when ``values`` holds no GPT-ART/AFGR metric.
    """
    metrics = [m for base in TABLE8_METRICS for m in sorted(values) if m.partition("@")[0] == base]
    if not metrics:
        return None
    cells = {m: _gpt_cells(values[m], meetings) for m in metrics}
    systems = {s for per in cells.values() for s in per}
    order = [s for s in TABLE8_EN if s in systems] + sorted(systems - set(TABLE8_EN))
    table = AutoMinTable(
        "table8",
        "Table 8 (ELMI EN): GPT judges' means per system (0-10), ours vs printed",
        ["System", "source", *(metric_label(m) for m in metrics), "meetings"],
    )
    column = {m: TABLE8_METRICS.index(m.partition("@")[0]) for m in metrics}
    for system in order:
        mine = [cells[m].get(system) for m in metrics]
        counts = sorted({c[2] for c in mine if c is not None})
        shown = "/".join(str(n) if n else "system" for n in counts)
        table.rows.append([label(system), "ours", *(_cell8(c) for c in mine), shown])
        printed = TABLE8_EN.get(system)
        if printed is None:
            continue
        paper = [printed[column[m]] for m in metrics]
        printed_cells = [f"{a:.2f} ± {b:.2f}" for a, b in paper]
        table.rows.append([label(system), "paper", *printed_cells, str(TABLE8_MEETINGS)])
        deltas = [
            _delta(None if c is None else c[0], p[0]) for c, p in zip(mine, paper, strict=True)
        ]
        table.rows.append([label(system), "Δ", *deltas, ""])
    table.notes.append(
        f"paper: mean ± sample std over the {TABLE8_MEETINGS} ELMI EN test meetings (the "
        "printed stds are sample stds of 12 integer scores); ours: mean ± sample std over "
        "the meetings column; Δ = ours - printed mean"
    )
    for metric in metrics:
        common = [s for s in TABLE8_EN if s in cells[metric]]
        pairs = same = 0
        for i, a in enumerate(common):
            for b in common[i + 1 :]:
                ours = cells[metric][a][0] - cells[metric][b][0]
                printed_gap = TABLE8_EN[a][column[metric]][0] - TABLE8_EN[b][column[metric]][0]
                pairs += 1
                same += (ours > 0) - (ours < 0) == (printed_gap > 0) - (printed_gap < 0)
        if pairs:
            table.notes.append(
                f"{metric_label(metric)}: {same} of {pairs} pairs of Table 8's systems ordered "
                "as printed (a tie is its own order)"
            )
    missing = [label(s) for s in TABLE8_EN if s not in systems]
    if missing:
        table.notes.append(f"Table 8 systems without our scores: {', '.join(missing)}")
    extra = [label(s) for s in order if s not in TABLE8_EN]
    if extra:
        table.notes.append(
            f"no printed row for {', '.join(extra)} (the paper judged 7 systems with GPT)"
        )
    short = sorted(
        {
            label(s)
            for per in cells.values()
            for s, c in per.items()
            if s in TABLE8_EN and 0 < c[2] < TABLE8_MEETINGS
        }
    )
    if short:
        table.notes.append(
            f"fewer meetings than the paper's {TABLE8_MEETINGS} for {', '.join(short)}: "
            "their means are not the same quantity"
        )
    return table


def table9_bound(human: Sequence[HumanScores]) -> AutoMinTable:
    """Why Table 9 as printed cannot be reproduced, from the release's human scores.

    For two human columns A and B, one metric's pairwise accuracies against them differ by
    at most (pairs that A and B order differently) / pairs (:func:`.minutes.column_bounds`).
    Each printed row is checked against every such bound over Table 9's seven systems; the
    table lists how often it breaks them and its worst case.
    """
    bounds = column_bounds(human, TABLE9_SYSTEMS)
    columns = [col for *_, col in HUMAN_COLUMNS]
    table = AutoMinTable(
        "table9_bound",
        "Table 9 as printed cannot be reproduced: bounds from the human scores (its 7 systems)",
        ["Metric (printed row)", "violations", "worst: columns", "printed", "gap", "bound"],
    )
    counts: list[int] = []
    for metric, row in TABLE9.items():
        broken = bound_violations(dict(zip(columns, row, strict=True)), bounds)
        counts.append(len(broken))
        if not broken:
            table.rows.append([metric_label(metric), "0", "–", "–", "–", "–"])
            continue
        worst = max(broken, key=lambda v: v.gap - v.bound.points)
        table.rows.append(
            [
                metric_label(metric),
                str(len(broken)),
                f"{worst.bound.first} vs {worst.bound.second}",
                f"{worst.first:.1f} vs {worst.second:.1f}",
                f"{worst.gap:.1f}",
                f"{worst.bound.disagree}/{worst.bound.pairs} = {worst.bound.points:.1f}",
            ]
        )
    pairs = max((b.pairs for b in bounds), default=0)
    table.notes.append(
        "a metric agrees with both columns or with neither on every system pair that two "
        "human columns order alike, so its pairwise accuracies against them differ by at most "
        f"(pairs the columns order differently) / {pairs}; human scores: the release's system "
        "means (they equal Table 6 as printed)"
    )
    example = next((b for b in bounds if (b.first, b.second) == ("D Adeq", "D Fluency")), None)
    if example is not None and "rouge1" in TABLE9:
        one, two = TABLE9["rouge1"][0], TABLE9["rouge1"][1]
        table.notes.append(
            f"e.g. D Adeq and D Fluency order {example.disagree} of {example.pairs} system "
            f"pairs differently, so any metric's two accuracies differ by at most "
            f"{example.points:.1f} points; the printed ROUGE-1 row differs by "
            f"{abs(one - two):.1f} ({one:.1f} vs {two:.1f})"
        )
    if counts:
        table.notes.append(
            f"every printed row breaks such a bound at least {min(counts)} times "
            f"({sum(counts)} violations in {len(counts)} rows): no metric gives these rows, "
            "so the Δ against them in Table 9 cannot all be 0"
        )
    table.notes.append(
        "bounds (pairs ordered differently): "
        + ", ".join(f"{b.first}/{b.second} {b.disagree}" for b in bounds)
    )
    return table


def table9(rows: Sequence[MetaRow], systems: Sequence[str]) -> AutoMinTable:
    """Table 9: pairwise accuracy (%) per metric and human column, with the printed values.

    The printed values are shown (with ``Δ``) only when the compared systems are the
    paper's seven: on other systems they are not the same quantity.
    """
    same_systems = sorted(systems) == sorted(TABLE9_SYSTEMS)
    columns = [col for *_, col in HUMAN_COLUMNS]
    header = ["Metric", "source", *columns, "ties (metric/human)", "pairs"]
    table = AutoMinTable(
        "table9",
        f"Table 9: system-level pairwise accuracy ({len(systems)} systems)",
        header,
    )
    by_metric: dict[str, dict[str, MetaRow]] = {}
    for row in rows:
        by_metric.setdefault(row.metric, {})[row.column] = row
    diffs: list[float] = []
    pairless: list[str] = []
    for metric, cells in by_metric.items():
        accs = [cells[c].pairwise.accuracy if c in cells else None for c in columns]
        if all(a is None for a in accs) and not any(c.pairwise.pairs for c in cells.values()):
            pairless.append(metric_label(metric))  # e.g. one run's lines/words: no pair
            continue
        ties = [
            f"{cells[c].pairwise.metric_ties}/{cells[c].pairwise.human_ties}"
            for c in columns
            if c in cells
        ]
        pairs = {cells[c].pairwise.pairs for c in columns if c in cells}
        table.rows.append(
            [
                metric_label(metric),
                "ours",
                *(fixed(None if a is None else 100 * a, 1, missing=DASH) for a in accs),
                " ".join(ties),
                "/".join(str(p) for p in sorted(pairs)),
            ]
        )
        printed = TABLE9.get(metric.partition("@")[0]) if same_systems else None
        if printed is not None:
            table.rows.append(
                [metric_label(metric), "paper", *(f"{v:.1f}" for v in printed), "", ""]
            )
            delta = [None if a is None else 100 * a - p for a, p in zip(accs, printed, strict=True)]
            diffs += [abs(d) for d in delta if d is not None]
            table.rows.append(
                [metric_label(metric), "Δ", *(_delta(d, 0.0, 1) for d in delta), "", ""]
            )
    n_pairs = len(systems) * (len(systems) - 1) // 2
    if diffs:
        table.notes.append(
            f"|ours - paper| over {len(diffs)} cells: mean {sum(diffs) / len(diffs):.1f} points, "
            f"max {max(diffs):.1f}; one system pair of {n_pairs} is {100 / n_pairs:.1f} points"
        )
    elif not same_systems:
        table.notes.append(
            "the paper's values are not shown: they compare its 7 systems (--systems table9)"
        )
    if not diffs and n_pairs:  # the resolution of every accuracy above
        table.notes.append(
            f"{len(systems)} systems = {n_pairs} pair{'s' if n_pairs > 1 else ''}: one pair "
            "moves an accuracy by "
            f"{100 / n_pairs:.1f} points"
        )
    table.notes.append(
        "systems: " + ", ".join(label(s) for s in systems) + "; a tie agrees only with a tie"
    )
    if pairless:
        table.notes.append(
            f"not shown, known for fewer than two of these systems: {', '.join(pairless)}"
        )
    negated = _negated_note(rows)
    if negated:
        table.notes.append(negated)
    return table


def correlation_table(rows: Sequence[MetaRow]) -> AutoMinTable:
    """Pearson / Spearman / Kendall at system and document level for every cell."""
    table = AutoMinTable(
        "correlations",
        "Correlation with human scores (system level over systems, document level over "
        "(meeting, system))",
        [
            "Metric",
            "Human",
            "sys Pearson",
            "sys Spearman",
            "sys Kendall",
            "sys n",
            "doc Pearson",
            "doc Spearman",
            "doc Kendall",
            "doc n",
        ],
    )
    for row in rows:
        cells = [metric_label(row.metric), row.column]
        for level in (row.system, row.document):
            cells += [
                fixed(level.get(k), 3, missing=DASH) for k in ("pearson", "spearman", "kendall")
            ]
            cells.append(fixed(level.get("n"), 0, missing=DASH))
        table.rows.append(cells)
    negated = _negated_note(rows)
    if negated:
        table.notes.append(negated)
    return table


def _negated_note(rows: Sequence[MetaRow]) -> str:
    """Name the error metrics that were negated, so their signs are read correctly."""
    names = list(dict.fromkeys(metric_label(r.metric) for r in rows if lower_is_better(r.metric)))
    if not names:
        return ""
    return (
        f"negated, as lower is better (error ratings): {', '.join(names)}; their accuracies "
        "and correlations read like the others'"
    )


#: Pairwise accuracy of a metric that orders pairs at random (AutoMin Sec. 7.1).
CHANCE = 50.0


def heatmap_norm(*panels: Any) -> Any:
    """One colour scale for every panel, over the data's range and centred on chance.

    The limits lie symmetrically around 50%, as far out as the value farthest from it
    (both panels, so one colour is one value everywhere): red means below chance and
    green above, a cell just under 50% is pale rather than alarming, and nothing is
    clipped, so 0% and 30% no longer share a colour.
    """
    import numpy as np
    from matplotlib.colors import Normalize

    values = np.concatenate([np.ravel(p) for p in panels]) if panels else np.array([])
    values = values[~np.isnan(values)]
    reach = float(np.abs(values - CHANCE).max()) if values.size else CHANCE
    reach = max(reach, 1.0)
    return Normalize(vmin=CHANCE - reach, vmax=CHANCE + reach)


def _tick_label(level: str, criterion: str) -> str:
    """``adequacy`` over ``(document)``: the human column in words, two short lines."""
    return f"{criterion}\n({level})"


def heatmap_figure(rows: Sequence[MetaRow], title: str, show_paper: bool = True) -> Any:
    """Pairwise-accuracy heatmap (metrics x human columns), next to the paper's where printed.

    ``show_paper`` is False when the compared systems are not the paper's seven. A cell
    without a value (fewer than two systems: no pair to order) is grey and says ``n/a``.

    Returns:
        The :class:`matplotlib.figure.Figure`.
    """
    import matplotlib
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    columns = [col for *_, col in HUMAN_COLUMNS]
    cell = {(r.metric, r.column): r.pairwise.accuracy for r in rows}
    # A metric known for fewer than two systems (e.g. the Table 5 statistics of one run) has
    # no pair to compare; an empty row would read as a failure, so it is left out.
    metrics = [
        m
        for m in dict.fromkeys(r.metric for r in rows)
        if any(cell.get((m, col)) is not None for *_, col in HUMAN_COLUMNS)
    ] or list(dict.fromkeys(r.metric for r in rows))

    def percent(metric: str, column: str) -> float:
        value = cell.get((metric, column))
        return math.nan if value is None else 100.0 * value

    ours = np.array([[percent(m, c) for c in columns] for m in metrics], dtype=float)
    ours = ours.reshape(len(metrics), len(columns))
    printed = [m for m in metrics if m.partition("@")[0] in TABLE9] if show_paper else []
    panels: list[tuple[str, Any, list[str]]] = [(f"{title}: ours", ours, metrics)]
    if printed:
        paper = np.array([list(TABLE9[m.partition("@")[0]]) for m in printed], dtype=float)
        panels.append(("AutoMin 2023 paper, Table 9 (as printed)", paper, printed))
    # Rows over fewer pairs than the others (a metric missing for some systems) and error
    # metrics that were negated say so, or their cells would read like the full ones.
    pairs = {m: max(r.pairwise.pairs for r in rows if r.metric == m) for m in metrics}
    full = max(pairs.values(), default=0)

    def row_label(metric: str) -> str:
        notes = ["negated"] if lower_is_better(metric) else []
        if pairs[metric] < full:
            notes.append(f"{pairs[metric]} pair{'s' if pairs[metric] != 1 else ''}")
        return metric_label(metric) + (f" ({', '.join(notes)})" if notes else "")

    norm = heatmap_norm(*(data for _, data, _ in panels))
    cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="0.88")
    height = 1.9 + 0.42 * max(len(metrics), 2)
    fig = Figure(figsize=(8.8 * len(panels) + 1.0, height))
    FigureCanvasAgg(fig)  # its own canvas: no pyplot state, drawable in tests
    axes = fig.subplots(1, len(panels), squeeze=False)
    image = None
    labels_x = [_tick_label(level, criterion) for level, criterion, _ in HUMAN_COLUMNS]
    for index, (ax, (name, data, names)) in enumerate(zip(axes[0], panels, strict=True)):
        image = ax.imshow(data, cmap=cmap, norm=norm, aspect="auto")
        ax.set_xticks(range(len(columns)), labels_x, fontsize=7)
        labels = [row_label(m) if index == 0 else metric_label(m) for m in names]
        ax.set_yticks(range(len(names)), labels)
        ax.set_xlabel("human score the metric is compared with")
        if not (~np.isnan(data)).any():
            name += "\n(no pair of systems to compare: pairwise accuracy needs two or more)"
        ax.set_title(name, fontsize=10)
        _write_cells(ax, data, cmap, norm)
    if image is not None:
        bar = fig.colorbar(image, ax=list(axes[0]), label="pairwise accuracy (%)", shrink=0.8)
        bar.ax.axhline(CHANCE, color="black", linewidth=0.8)
    return fig


def _write_cells(ax: Any, data: Any, cmap: Any, norm: Any) -> None:
    """Each cell's percentage in a colour readable on it; ``n/a`` where there is none."""
    import numpy as np

    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            value = data[i, j]
            if np.isnan(value):
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=8, color="0.35")
                continue
            red, green, blue, _ = cmap(norm(value))
            light = 0.299 * red + 0.587 * green + 0.114 * blue > 0.5
            ax.text(
                j,
                i,
                f"{value:.1f}",
                ha="center",
                va="center",
                fontsize=8,
                color="black" if light else "white",
            )


def heatmap(rows: Sequence[MetaRow], path: Path, title: str, show_paper: bool = True) -> Path:
    """Write :func:`heatmap_figure` as a PNG."""
    fig = heatmap_figure(rows, title, show_paper)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def write_tables(
    tables: Sequence[AutoMinTable], out: Path, stem: str = "minutes_check"
) -> list[Path]:
    """One Markdown file with every table, and one CSV per table."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / f"{stem}.md"]
    write_atomic(written[0], "\n".join(t.markdown() for t in tables))
    for table in tables:
        written.append(table.write_csv(out / f"{table.name}.csv"))
    return written


def meta_rows_csv(rows: Sequence[MetaRow], path: Path) -> Path:
    """Every statistic of every (metric, human column) cell as CSV."""
    dicts: list[Mapping[str, Any]] = [r.to_dict() for r in rows]
    handle = io.StringIO(newline="")
    if dicts:
        writer = csv.DictWriter(handle, fieldnames=list(dicts[0]))
        writer.writeheader()
        writer.writerows(dicts)
    write_atomic(path, handle.getvalue())
    return path
