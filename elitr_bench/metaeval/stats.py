"""Agreement statistics of the meta-evaluation, in one place.

Every comparison of a judge or metric with human scores goes through these functions:
``judge-check`` (QA), ``minutes-check`` (AutoMin) and the report's agreement figures. A
correlation is None where it is undefined (fewer than 3 pairs, or a constant side),
never a number computed from a degenerate input. Clustered intervals of a mean are in
:mod:`elitr_bench.clustered` (the tasks' stderr) and :mod:`elitr_bench.report.stats`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def sign(x: float) -> int:
    """-1, 0 or 1: the direction of a difference (a tie is 0)."""
    return (x > 0) - (x < 0)


@dataclass(frozen=True)
class Pairwise:
    """Pairwise accuracy of one metric against one human column.

    Attributes:
        agree: Pairs whose metric and human differences have the same sign.
        pairs: Pairs compared (both systems have a metric and a human score).
        metric_ties: Pairs the metric scores equally.
        human_ties: Pairs the humans score equally.
        missing: Systems left out for lack of a metric or human score.
    """

    agree: int
    pairs: int
    metric_ties: int
    human_ties: int
    missing: tuple[str, ...] = ()

    @property
    def accuracy(self) -> float | None:
        """Share of agreeing pairs (None without pairs)."""
        return self.agree / self.pairs if self.pairs else None


def pairwise_accuracy(
    metric: Mapping[str, float], human: Mapping[str, float], systems: Sequence[str]
) -> Pairwise:
    """AutoMin Eq. 5 over all pairs of ``systems`` that have both scores."""
    usable = [s for s in systems if s in metric and s in human]
    missing = tuple(s for s in systems if s not in usable)
    agree = pairs = metric_ties = human_ties = 0
    for a, b in itertools.combinations(usable, 2):
        m, h = sign(metric[a] - metric[b]), sign(human[a] - human[b])
        pairs += 1
        agree += m == h
        metric_ties += m == 0
        human_ties += h == 0
    return Pairwise(agree, pairs, metric_ties, human_ties, missing)


def correlations(xs: Sequence[float], ys: Sequence[float]) -> dict[str, float | None]:
    """Pearson, Spearman and Kendall tau-b (None when undefined)."""
    out: dict[str, float | None] = {"pearson": None, "spearman": None, "kendall": None, "n": None}
    out["n"] = float(len(xs))
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return out
    from scipy import stats

    out["pearson"] = float(stats.pearsonr(xs, ys)[0])
    out["spearman"] = float(stats.spearmanr(xs, ys)[0])
    out["kendall"] = float(stats.kendalltau(xs, ys)[0])
    return out
