"""What an arena writes: leaderboard, Table 3 matrix, key facts per pair, ratings for minutes-check.

Files in the arena folder (rewritten from all comparisons after every run):

* ``leaderboard.md`` / ``.csv`` / ``.png``: Elo and Bradley-Terry per metric with bootstrap
  intervals (meetings resampled), wins/draws/losses and the mean raw score;
* ``pairwise.md`` / ``.csv``: raw pairwise scores in the paper's Table 3 layout (row system's
  mean score against the column system);
* ``keyfacts.md``: for every meeting and pair, each order's key facts and which summary
  captured (with its lines) or missed each one; ``comparisons.jsonl`` holds the same as data;
* ``matches.csv``: every match with both orders' outcomes (position bias);
* ``ratings.csv``: ``system,meeting_id,metric,value`` for ``elitr-bench minutes-check
  --metric-file`` (``cream_elo_<metric>``, ``cream_bt_<metric>``, system level);
* ``summary.json``: counts, position bias, Elo-vs-BT agreement, parameters, judge usage,
  the unit and every summary's lines and sentences.

Only scored matches are rated, and only systems that played one. A metric without any
scored match gets no ratings, and an arena without any gets no ratings at all: no
``ratings.csv``, ``leaderboard.csv``/``.png`` or ``pairwise`` files (stale ones from an
earlier run are removed), and ``leaderboard.md`` says why. Ratings that never moved from
the initial value would read as a tie between systems, and ``minutes-check
--metric-file`` would compare human scores with it.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from elitr_bench.data.folder import write_atomic
from elitr_bench.judges.cream.arena import ArenaState
from elitr_bench.judges.cream.matches import (
    DEFAULT_TOLERANCE,
    Match,
    PositionBias,
    build_matches,
    pairwise_matrix,
    position_bias,
)
from elitr_bench.judges.cream.ratings import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_ORDERS,
    Agreement,
    EloParams,
    Ratings,
    agreement,
    rate,
)
from elitr_bench.judges.cream.scoring import METRICS, Comparison
from elitr_bench.judges.cream.segment import Summary
from elitr_bench.markdown import fixed, markdown_table


def unscored_reasons(comparisons: Iterable[Comparison], metric: str | None = None) -> Counter[str]:
    """Why comparisons were not (fully) scored: one count per failed extraction or side.

    A comparison without key facts (or whose judge failed) counts its own reason once;
    otherwise each side that left ``metric`` (any metric when None) unscored counts its
    reason.
    """
    reasons: Counter[str] = Counter()
    for comp in comparisons:
        if comp.status == "ok":
            continue
        if comp.status == "error" or not comp.key_facts:
            reasons[comp.reason or comp.status] += 1
            continue
        for side in comp.sides:
            missing = [v for k, v in side.scores.items() if metric in (None, k) and v is None]
            if missing and side.reason:
                reasons[side.reason] += 1
    return reasons


def _top_reason(reasons: Counter[str]) -> str:
    if not reasons:
        return "no comparison to score"
    reason, count = reasons.most_common(1)[0]
    return f"most common reason ({count} of {sum(reasons.values())}): {reason}"


@dataclass(frozen=True)
class ArenaResult:
    """Everything computed from an arena's comparisons.

    ``ratings`` and ``agreements`` hold only the metrics with at least one scored match,
    each over the systems that played one; ``unrated`` says why a metric has none, and
    ``unrated_systems`` which systems a rated metric left out. ``sizes`` is every
    summary's (lines, sentences) by system and meeting.
    """

    systems: tuple[str, ...]
    meetings: tuple[str, ...]
    comparisons: tuple[Comparison, ...]
    matches: tuple[Match, ...]
    ratings: Mapping[str, Ratings]
    agreements: Mapping[str, Agreement]
    bias: Mapping[str, PositionBias]
    tolerance: float
    params: EloParams
    orders: int
    bootstrap: int
    unit: str = "sentence"
    unrated: Mapping[str, str] = field(default_factory=dict)
    unrated_systems: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sizes: Mapping[str, Mapping[str, tuple[int, int]]] = field(default_factory=dict)

    def no_ratings_reason(self, hint: str = "") -> str:
        """One line on why the arena has no ratings at all (``hint``: what to do about it)."""
        statuses = Counter(c.status for c in self.comparisons)
        counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
        return (
            f"none of the {len(self.comparisons)} comparisons was scored "
            f"({counts or 'none'}); {hint + '; ' if hint else ''}"
            f"{_top_reason(unscored_reasons(self.comparisons))}"
        )

    def size_totals(self) -> dict[str, dict[str, Any]]:
        """Per system: lines and sentences over the arena's meetings, sentences per line."""
        out: dict[str, dict[str, Any]] = {}
        for system in self.systems:
            per = self.sizes.get(system, {})
            lines = sum(n for n, _ in per.values())
            sentences = sum(n for _, n in per.values())
            out[system] = {
                "lines": lines,
                "sentences": sentences,
                "sentences_per_line": sentences / lines if lines else None,
            }
        return out


def analyse(
    state: ArenaState,
    tolerance: float = DEFAULT_TOLERANCE,
    params: EloParams | None = None,
    orders: int = DEFAULT_ORDERS,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ArenaResult:
    """Matches, ratings, agreement and position bias of the arena's comparisons."""
    params = params or EloParams()
    systems = tuple(sorted(state.systems))
    wanted = set(state.meetings)
    comps = tuple(
        c
        for c in state.comparisons.values()
        if c.meeting_id in wanted and c.first in state.systems and c.second in state.systems
    )
    matches = tuple(build_matches(comps, tolerance))
    ratings: dict[str, Ratings] = {}
    unrated: dict[str, str] = {}
    left_out: dict[str, tuple[str, ...]] = {}
    for metric in METRICS:
        scored = [m for m in matches if m.metric == metric and m.result is not None]
        if not scored:
            unrated[metric] = (
                f"no scored {metric} match; {_top_reason(unscored_reasons(comps, metric))}"
            )
            continue
        played = {s for m in scored for s in (m.a, m.b)}
        rated = tuple(s for s in systems if s in played)
        left_out[metric] = tuple(s for s in systems if s not in played)
        ratings[metric] = rate(matches, rated, metric, params, orders, bootstrap, seed=seed)
    sizes: dict[str, dict[str, tuple[int, int]]] = {}
    for system in systems:
        for meeting in state.meetings:
            text = state.systems[system].minutes.get(meeting)
            if text is not None:
                summary = Summary.of(text)
                sizes.setdefault(system, {})[meeting] = (
                    len(summary.lines),
                    len(summary.sentences),
                )
    return ArenaResult(
        systems=systems,
        meetings=tuple(state.meetings),
        comparisons=comps,
        matches=matches,
        ratings=ratings,
        agreements={metric: agreement(r) for metric, r in ratings.items()},
        bias=position_bias(comps, matches),
        tolerance=tolerance,
        params=params,
        orders=orders,
        bootstrap=bootstrap,
        unit=str(state.judge.get("unit", "line")),
        unrated=unrated,
        unrated_systems=left_out,
        sizes=sizes,
    )


def _record(result: ArenaResult, metric: str, system: str) -> dict[str, Any]:
    ms = [m for m in result.matches if m.metric == metric and m.result is not None]
    wins = draws = losses = 0
    scores: list[float] = []
    for m in ms:
        if system not in (m.a, m.b):
            continue
        mine = m.result if system == m.a else 1.0 - (m.result or 0.0)
        wins += mine == 1.0
        draws += mine == 0.5
        losses += mine == 0.0
        value = m.score_a if system == m.a else m.score_b
        if value is not None:
            scores.append(value)
    r = result.ratings[metric]
    i = r.systems.index(system)
    return {
        "metric": metric,
        "system": system,
        "elo": r.elo[i],
        "elo_low": r.elo_low[i],
        "elo_high": r.elo_high[i],
        "elo_order_sd": r.elo_order_sd[i],
        "bt": r.bt[i],
        "bt_low": r.bt_low[i],
        "bt_high": r.bt_high[i],
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "mean_score": sum(scores) / len(scores) if scores else None,
    }


def leaderboard_rows(result: ArenaResult) -> list[dict[str, Any]]:
    """One row per rated metric and rated system, ranked by Elo within each metric."""
    rows: list[dict[str, Any]] = []
    for metric in METRICS:
        if metric not in result.ratings:
            continue
        records = sorted(
            (_record(result, metric, s) for s in result.ratings[metric].systems),
            key=lambda r: -r["elo"],
        )
        for rank, rec in enumerate(records, start=1):
            rows.append({"rank": rank, **rec})
    return rows


def _pct(value: float | None) -> str:
    return fixed(value, 1, percent=True)


def _unit_sentence(result: ArenaResult) -> str:
    if result.unit == "sentence":
        return (
            "Conciseness = cited summary sentences / sentences (App. A.1; sentences split "
            "with pysbd, line by line)."
        )
    return "Conciseness = cited summary lines / lines (--unit line; the paper counts sentences)."


def _size_table(result: ArenaResult) -> list[str]:
    lines = [
        "## Summary size",
        "",
        f"Over the arena's meetings; the alignment step numbered {result.unit}s.",
        "",
    ]
    rows = [
        (system, str(total["lines"]), str(total["sentences"]), fixed(total["sentences_per_line"]))
        for system, total in result.size_totals().items()
    ]
    header = ("system", "lines", "sentences", "sentences per line")
    return [*lines, *markdown_table(header, rows, "lrrr"), ""]


def leaderboard_markdown(result: ArenaResult, rows: Sequence[Mapping[str, Any]]) -> str:
    """The leaderboard as Markdown, one table per metric, with the arena's parameters."""
    head = [
        "# CREAM arena leaderboard",
        "",
    ]
    if not result.ratings:
        return "\n".join(
            [
                *head,
                f"{len(result.systems)} systems, {len(result.meetings)} meetings, "
                f"{len(result.comparisons)} comparisons (both orders).",
                "",
                f"**No ratings**: {result.no_ratings_reason()}. Every comparison and its "
                "reason is in keyfacts.md and comparisons.jsonl.",
                "",
                *_size_table(result),
            ]
        )
    level = round(100 * next(iter(result.ratings.values())).level)
    lines = [
        *head,
        f"{len(result.systems)} systems, {len(result.meetings)} meetings, "
        f"{len(result.comparisons)} comparisons (both orders). Elo: initial "
        f"{result.params.initial:g}, K={result.params.k:g}, scale {result.params.scale:g}, "
        f"mean over {result.orders} random match orders (meeting by meeting). "
        f"Bradley-Terry on the same scale. [low, high] = {level}% bootstrap interval "
        f"over meetings ({result.bootstrap} replicates). Draw tolerance {result.tolerance:g}. "
        f"{_unit_sentence(result)}",
        "",
    ]
    for metric in METRICS:
        if metric not in result.ratings:
            lines += [f"## {metric}", "", f"No ratings: {result.unrated[metric]}.", ""]
            continue
        ag = result.agreements[metric]
        r = result.ratings[metric]
        lines += [
            f"## {metric}",
            "",
            f"{r.matches} scored matches on {r.meetings} meetings; Elo vs BT: "
            f"{ag.pairs_agree}/{ag.pairs} pairs ordered alike, Spearman "
            f"{fixed(ag.spearman, 3)}, Kendall {fixed(ag.kendall, 3)}.",
            "",
        ]
        header: tuple[str, ...] = (
            "rank",
            "system",
            "Elo",
            "Elo interval",
            "BT",
            "BT interval",
            "W-D-L",
        )
        cells = [
            (
                str(row["rank"]),
                row["system"],
                fixed(row["elo"], 0),
                f"[{fixed(row['elo_low'], 0)}, {fixed(row['elo_high'], 0)}]",
                fixed(row["bt"], 0),
                f"[{fixed(row['bt_low'], 0)}, {fixed(row['bt_high'], 0)}]",
                f"{row['wins']}-{row['draws']}-{row['losses']}",
                _pct(row["mean_score"]),
            )
            for row in rows
            if row["metric"] == metric
        ]
        lines += markdown_table((*header, "mean score"), cells, "rlrlrllr")
        left_out = result.unrated_systems.get(metric, ())
        if left_out:
            lines += ["", f"Unrated (no scored {metric} match): {', '.join(left_out)}."]
        lines.append("")
    lines += ["## Position bias", ""]
    header = ("metric", "pairs with both orders", "outcome changed by order")
    bias = []
    for metric in METRICS:
        b = result.bias[metric]
        gain = None if b.first_gain is None else 100 * b.first_gain
        changed = f"{b.changed} ({_pct(b.changed_share)})"
        bias.append((metric, str(b.pairs), changed, f"{fixed(gain, 1)} points"))
    lines += markdown_table((*header, "mean gain of going first"), bias, "lrrr")
    lines += ["", *_size_table(result)]
    return "\n".join(lines)


def matrix_markdown(result: ArenaResult) -> str:
    """Raw pairwise scores in Table 3's layout (rows vs columns, both metrics side by side)."""
    systems = list(result.systems)
    mats = {m: pairwise_matrix(result.matches, systems, m) for m in METRICS}
    lines = [
        "# Raw pairwise scores (layout of the CREAM paper's Table 3)",
        "",
        "Cell = the ROW system's mean score (both orders, over meetings) when compared with",
        "the COLUMN system.",
        "",
    ]
    header = ["VS", *(f"{m[:5]}. {s}" for m in METRICS for s in systems)]
    cells = [
        [
            row,
            *(
                "-" if row == col else _pct(mats[m][row].get(col))
                for m in METRICS
                for col in systems
            ),
        ]
        for row in systems
    ]
    lines += markdown_table(header, cells, "l" + "r" * (len(header) - 1))
    return "\n".join(lines) + "\n"


def _size_of(side: Any) -> str:
    sentences = "" if side.n_sentences is None else f", {side.n_sentences} sentences"
    return f"{side.system}: {side.n_lines} lines{sentences}"


def keyfacts_markdown(result: ArenaResult) -> str:
    """For every meeting, pair and order: each key fact, captured (where) or missed."""
    lines = ["# Key facts per pair", ""]
    comps = sorted(result.comparisons, key=lambda c: c.key)
    for comp in comps:
        one, two = comp.sides
        lines += [
            f"## {comp.meeting_id}: {comp.first} (first) vs {comp.second} (second)",
            "",
            f"status {comp.status}" + (f": {comp.reason}" if comp.reason else ""),
            "",
            f"numbered by {one.unit}; {_size_of(one)}; {_size_of(two)}",
            "",
        ]
        if not comp.key_facts:
            continue

        def mark(side: Any, i: int) -> str:
            if not side.alignments:
                return "unscored"
            a = side.alignments[i]
            if not a.supported:
                return "missed"
            if not a.lines:
                return "captured"
            cited = ", ".join(map(str, a.lines))
            return f"captured ({side.unit}{'s' if len(a.lines) > 1 else ''} {cited})"

        facts = [
            (str(i + 1), fact, mark(one, i), mark(two, i)) for i, fact in enumerate(comp.key_facts)
        ]
        lines += markdown_table(("#", "key fact", comp.first, comp.second), facts, "r")
        scores = ", ".join(
            f"{s.system}: completeness {_pct(s.scores.get('completeness'))}, "
            f"conciseness {_pct(s.scores.get('conciseness'))}"
            for s in comp.sides
        )
        lines += ["", scores, ""]
    return "\n".join(lines) + "\n"


def _write_csv(path: Path, rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> None:
    """One CSV file in one rename; a column named twice is written once."""
    fields = list(dict.fromkeys(fields))
    handle = io.StringIO(newline="")
    writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in fields})
    write_atomic(path, handle.getvalue())


def leaderboard_figure(result: ArenaResult, rows: Sequence[Mapping[str, Any]]) -> Any:
    """Elo and BT ratings with their intervals, one panel per metric, one row per system.

    Every panel lists the systems in one order (by the first metric's Elo, best on top),
    so a row is the same system across panels; each panel writes its own rank at the
    right. The panels share the rating axis, so distances compare across metrics.

    Returns:
        The :class:`matplotlib.figure.Figure`.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    metrics = [m for m in METRICS if m in result.ratings]  # a metric with no scored match: none
    first = metrics[0]
    by_first = {r["system"]: r["elo"] for r in rows if r["metric"] == first}
    systems = sorted(result.systems, key=lambda s: (-by_first.get(s, float("-inf")), s))
    height = {s: len(systems) - 1 - i for i, s in enumerate(systems)}  # best on top
    fig = Figure(figsize=(5.5 * len(metrics) + 1.0, 0.45 * len(systems) + 2.4))
    FigureCanvasAgg(fig)  # its own canvas: no pyplot state, drawable in tests
    axes = fig.subplots(1, len(metrics), sharex=True, sharey=True, squeeze=False)
    for index, (ax, metric) in enumerate(zip(axes[0], metrics, strict=True)):
        mine = sorted(
            (r for r in rows if r["metric"] == metric and r["system"] in height),
            key=lambda r: -height[r["system"]],
        )
        for offset, key, label, color in (
            (0.15, "elo", "Elo (mean over match orders)", "tab:blue"),
            (-0.15, "bt", "Bradley-Terry", "tab:orange"),
        ):
            err = [
                [max(0.0, r[key] - r[f"{key}_low"]) for r in mine],
                [max(0.0, r[f"{key}_high"] - r[key]) for r in mine],
            ]
            ax.errorbar(
                [r[key] for r in mine],
                [height[r["system"]] + offset for r in mine],
                xerr=err,
                fmt="o",
                color=color,
                capsize=3,
                label=label if index == 0 else None,
            )
        ax.axvline(
            result.params.initial,
            color="grey",
            lw=0.8,
            ls=":",
            label=f"initial rating ({result.params.initial:g})" if index == 0 else None,
        )
        for r in mine:  # this metric's own rank, beside the panel
            ax.annotate(
                f"#{r['rank']}",
                xy=(1.0, height[r["system"]]),
                xycoords=("axes fraction", "data"),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
            )
        ax.set_yticks([height[s] for s in systems], systems)
        ax.tick_params(axis="y", labelleft=index == 0)
        ax.set_ylim(-0.6, len(systems) - 0.4)
        ax.set_title(f"CREAM {metric} (#: rank by Elo)", fontsize=10)
        ax.set_xlabel("rating (Elo scale)")
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_ylabel("system")
    level = round(100 * next(iter(result.ratings.values())).level)
    fig.suptitle(
        f"{len(result.systems)} systems, {len(result.meetings)} meetings; bars: {level}% "
        f"bootstrap over meetings; rows in order of {first} Elo",
        fontsize=9,
    )
    fig.tight_layout(rect=(0.0, 0.07, 1.0, 1.0))
    fig.legend(loc="lower center", ncol=3, fontsize=8, frameon=False)
    return fig


def plot_leaderboard(result: ArenaResult, rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Write :func:`leaderboard_figure` as a PNG (in one rename, like every output file)."""
    buffer = io.BytesIO()
    leaderboard_figure(result, rows).savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    write_atomic(path, buffer.getvalue())


def write_outputs(
    result: ArenaResult, out: Path, usage: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """Write the output files of the arena; returns name -> path of those written.

    Without any scored match only ``leaderboard.md`` (saying why), ``keyfacts.md``,
    ``matches.csv`` and ``summary.json`` are written, and rating files of an earlier run
    are removed, so that no file of the folder holds ratings that were never earned.
    """
    out.mkdir(parents=True, exist_ok=True)
    rows = leaderboard_rows(result)
    paths = {
        "leaderboard_md": out / "leaderboard.md",
        "leaderboard_csv": out / "leaderboard.csv",
        "leaderboard_png": out / "leaderboard.png",
        "pairwise_md": out / "pairwise.md",
        "pairwise_csv": out / "pairwise.csv",
        "keyfacts_md": out / "keyfacts.md",
        "matches_csv": out / "matches.csv",
        "ratings_csv": out / "ratings.csv",
        "summary_json": out / "summary.json",
    }
    if not result.ratings:
        stale = ("leaderboard_csv", "leaderboard_png", "pairwise_md", "pairwise_csv")
        for name in (*stale, "ratings_csv"):
            paths.pop(name).unlink(missing_ok=True)
    write_atomic(paths["leaderboard_md"], leaderboard_markdown(result, rows))
    if result.ratings:
        _write_csv(paths["leaderboard_csv"], rows, ["rank", *rows[0].keys()])
        plot_leaderboard(result, rows, paths["leaderboard_png"])
        write_atomic(paths["pairwise_md"], matrix_markdown(result))
        pair_rows = _pairwise_rows(result)
        _write_csv(paths["pairwise_csv"], pair_rows, ["metric", "system", "vs", "score"])
    write_atomic(paths["keyfacts_md"], keyfacts_markdown(result))
    _write_csv(
        paths["matches_csv"],
        [m.to_dict() for m in result.matches],
        [*Match.__dataclass_fields__, "order_changed"],
    )
    rating_rows = [
        {
            "system": r["system"],
            "meeting_id": "",
            "metric": f"cream_{kind}_{r['metric']}",
            "value": r[kind],
        }
        for kind in ("elo", "bt")
        for r in rows
    ]
    if result.ratings:
        _write_csv(paths["ratings_csv"], rating_rows, ["system", "meeting_id", "metric", "value"])
    summary = _summary_json(result, usage)
    write_atomic(paths["summary_json"], json.dumps(summary, indent=2) + "\n")
    return paths


def _pairwise_rows(result: ArenaResult) -> list[dict[str, Any]]:
    """``pairwise.csv``: each metric's mean score of every system against every other."""
    pair_rows = []
    for metric in METRICS:
        mat = pairwise_matrix(result.matches, result.systems, metric)
        for row, cols in mat.items():
            for col, value in cols.items():
                pair_rows.append({"metric": metric, "system": row, "vs": col, "score": value})
    return pair_rows


def _summary_json(result: ArenaResult, usage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``summary.json``: counts, settings, agreement, reasons unscored, sizes and usage."""
    statuses: dict[str, int] = {}
    for comp in result.comparisons:
        statuses[comp.status] = statuses.get(comp.status, 0) + 1
    summary = {
        "systems": list(result.systems),
        "meetings": list(result.meetings),
        "comparisons": len(result.comparisons),
        "comparison_status": statuses,
        "matches": len(result.matches),
        "unscored_matches": sum(m.result is None for m in result.matches),
        "tolerance": result.tolerance,
        "elo": asdict(result.params) | {"orders": result.orders},
        "bootstrap": result.bootstrap,
        "position_bias": {
            k: asdict(v) | {"changed_share": v.changed_share} for k, v in result.bias.items()
        },
        "elo_vs_bt": {k: asdict(v) for k, v in result.agreements.items()},
        "rated_metrics": sorted(result.ratings),
        "unrated": dict(result.unrated),
        "unrated_systems": {k: list(v) for k, v in result.unrated_systems.items() if v},
        "no_ratings_reason": None if result.ratings else result.no_ratings_reason(),
        "unscored_reasons": dict(unscored_reasons(result.comparisons).most_common()),
        "unit": result.unit,
        "summary_size": {
            system: {
                **total,
                "meetings": {
                    m: {"lines": n_lines, "sentences": n_sentences}
                    for m, (n_lines, n_sentences) in sorted(result.sizes.get(system, {}).items())
                },
            }
            for system, total in result.size_totals().items()
        },
        "usage": dict(usage or {}),
    }
    return summary
