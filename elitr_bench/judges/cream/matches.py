"""From comparisons to matches: both concatenation orders, tolerance draws, position bias.

Each pair of systems is compared on each meeting twice, once with each summary first in
the extraction paragraph. A system's score in the pair is the mean of its two scores, which
cancels a first-position advantage; the match on a metric is won by the higher score, and a
difference within ``tolerance`` is a draw. How often the two orders alone would have given
different outcomes is the measured position bias.

The raw pairwise matrix is laid out as the paper's Table 3. Its Sec. 4.2.1 sentence says
the cell in row GPT-4o, column GPT-3.5 is GPT-3.5's score, but with that reading Table 3's
conciseness gives GPT-4o > GPT-3.5 > GPT-4, the reverse of Table 5 (GPT-4 > GPT-3.5 >
GPT-4o). Reading each cell as the *row* system's score against the column system gives
Table 5's order, so that is the layout used here (tests/judges/test_cream_ratings.py
checks it on the printed numbers).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from elitr_bench.judges.cream.scoring import METRICS, Comparison

DEFAULT_TOLERANCE = 0.0
"""Score difference (on the 0-1 scale) that still counts as a draw: 0, exact ties only, as
the paper scores a match (Sec. 4.1.1: S = 0.5 only for a draw). A tolerance is our option
(``arena --tolerance``)."""


def outcome(score_a: float, score_b: float, tolerance: float = DEFAULT_TOLERANCE) -> float:
    """1.0 if a wins, 0.0 if b wins, 0.5 for a difference within the tolerance."""
    if abs(score_a - score_b) <= tolerance + 1e-12:
        return 0.5
    return 1.0 if score_a > score_b else 0.0


@dataclass(frozen=True)
class Match:
    """One match of a pair on a meeting and a metric, after both orders.

    Attributes:
        meeting_id: The meeting.
        a: First system of the pair (alphabetical).
        b: Second system of the pair.
        metric: ``completeness`` or ``conciseness``.
        score_a: a's score, mean of both orders (None = unscored).
        score_b: b's score, mean of both orders.
        result: a's result (1 win, 0.5 draw, 0 loss), None when unscored.
        result_a_first: a's result in the order with a's summary first alone.
        result_b_first: a's result in the order with b's summary first alone.
        reason: Why the match is unscored.
    """

    meeting_id: str
    a: str
    b: str
    metric: str
    score_a: float | None
    score_b: float | None
    result: float | None
    result_a_first: float | None = None
    result_b_first: float | None = None
    reason: str = ""

    @property
    def order_changed(self) -> bool | None:
        """Whether the two orders alone disagree on the outcome (None if one is missing)."""
        if self.result_a_first is None or self.result_b_first is None:
            return None
        return self.result_a_first != self.result_b_first

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "meeting_id": self.meeting_id,
            "a": self.a,
            "b": self.b,
            "metric": self.metric,
            "score_a": self.score_a,
            "score_b": self.score_b,
            "result": self.result,
            "result_a_first": self.result_a_first,
            "result_b_first": self.result_b_first,
            "order_changed": self.order_changed,
            "reason": self.reason,
        }


def _score(comp: Comparison | None, system: str, metric: str) -> float | None:
    if comp is None or comp.status == "error":
        return None
    return comp.side(system).scores.get(metric)


def build_matches(
    comparisons: Iterable[Comparison], tolerance: float = DEFAULT_TOLERANCE
) -> list[Match]:
    """One match per (meeting, pair, metric) from the comparisons of both orders.

    A match needs the metric in both orders for both systems; otherwise it is unscored
    (kept with its reason, never rated), because one order alone would bring the position
    bias back.
    """
    by_key: dict[tuple[str, str, str], Comparison] = {c.key: c for c in comparisons}
    pairs = sorted({(m, *sorted((f, s))) for (m, f, s) in by_key})
    out: list[Match] = []
    for meeting, a, b in pairs:
        a_first = by_key.get((meeting, a, b))
        b_first = by_key.get((meeting, b, a))
        for metric in METRICS:
            sa1, sb1 = _score(a_first, a, metric), _score(a_first, b, metric)
            sa2, sb2 = _score(b_first, a, metric), _score(b_first, b, metric)
            r1 = None if sa1 is None or sb1 is None else outcome(sa1, sb1, tolerance)
            r2 = None if sa2 is None or sb2 is None else outcome(sa2, sb2, tolerance)
            if sa1 is None or sb1 is None or sa2 is None or sb2 is None:
                missing = [
                    f"{first} first"
                    for first, comp, x, y in ((a, a_first, sa1, sb1), (b, b_first, sa2, sb2))
                    if x is None or y is None
                ]
                reasons = [c.reason for c in (a_first, b_first) if c is not None and c.reason]
                reason = f"{metric} unscored in order(s): {', '.join(missing)}"
                if reasons:
                    reason += f" ({'; '.join(reasons)})"
                out.append(Match(meeting, a, b, metric, None, None, None, r1, r2, reason))
                continue
            score_a, score_b = (sa1 + sa2) / 2, (sb1 + sb2) / 2
            result = outcome(score_a, score_b, tolerance)
            out.append(Match(meeting, a, b, metric, score_a, score_b, result, r1, r2))
    return out


@dataclass(frozen=True)
class PositionBias:
    """How much the concatenation order mattered, for one metric.

    Attributes:
        metric: The metric.
        pairs: Matches with both orders scored.
        changed: Of those, how many had different outcomes in the two orders.
        first_gain: Mean score gain of a summary from being first (second-position
            score subtracted), over both systems of every such match; None if no pairs.
    """

    metric: str
    pairs: int
    changed: int
    first_gain: float | None

    @property
    def changed_share(self) -> float | None:
        """Share of pairs whose outcome the order changed."""
        return self.changed / self.pairs if self.pairs else None


def position_bias(
    comparisons: Iterable[Comparison], matches: Sequence[Match]
) -> dict[str, PositionBias]:
    """Position bias per metric from the matches and the per-order comparisons."""
    by_key = {c.key: c for c in comparisons}
    out: dict[str, PositionBias] = {}
    for metric in METRICS:
        both = [m for m in matches if m.metric == metric and m.order_changed is not None]
        gains: list[float] = []
        for m in both:
            a_first, b_first = by_key[(m.meeting_id, m.a, m.b)], by_key[(m.meeting_id, m.b, m.a)]
            for system in (m.a, m.b):
                when_first = _score(a_first if system == m.a else b_first, system, metric)
                when_second = _score(b_first if system == m.a else a_first, system, metric)
                if when_first is not None and when_second is not None:
                    gains.append(when_first - when_second)
        out[metric] = PositionBias(
            metric,
            len(both),
            sum(bool(m.order_changed) for m in both),
            statistics.fmean(gains) if gains else None,
        )
    return out


def pairwise_matrix(
    matches: Sequence[Match], systems: Sequence[str], metric: str
) -> dict[str, dict[str, float | None]]:
    """Table 3 layout: ``matrix[row][col]`` = row system's mean score against col system.

    Means are over the meetings where the match was scored; the diagonal is absent.
    """
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for m in matches:
        if m.metric != metric or m.score_a is None or m.score_b is None:
            continue
        values[(m.a, m.b)].append(m.score_a)
        values[(m.b, m.a)].append(m.score_b)
    return {
        row: {
            col: (statistics.fmean(values[(row, col)]) if values.get((row, col)) else None)
            for col in systems
            if col != row
        }
        for row in systems
    }


def matches_from_matrix(
    matrix: Mapping[str, Mapping[str, float]],
    metric: str,
    tolerance: float = DEFAULT_TOLERANCE,
    meeting_id: str = "aggregate",
) -> list[Match]:
    """Matches from a Table 3-style matrix of aggregate scores (one match per pair).

    Used to check the rating code on the paper's printed numbers; cells are read as the
    row system's score against the column system (see the module docstring).
    """
    systems = sorted(matrix)
    out: list[Match] = []
    for i, a in enumerate(systems):
        for b in systems[i + 1 :]:
            sa, sb = float(matrix[a][b]), float(matrix[b][a])
            out.append(Match(meeting_id, a, b, metric, sa, sb, outcome(sa, sb, tolerance)))
    return out
