"""Agreement and interval statistics of the meta-evaluation and the report, in one place.

Everything here is a pure function of in-memory values: correlations (Pearson, Spearman,
Kendall tau-b with p-values, from scipy), AutoMin's pairwise accuracy, meeting-clustered
intervals, a plain t interval, the seed spread and Welch's test. ``judge-check``,
``minutes-check`` and the report all call these, so one definition (e.g. when a
correlation is undefined) holds for every number they print.

Why cluster by meeting: all questions of a meeting are answered from one transcript, so
their scores share whatever makes that transcript easy or hard for a model (length,
speaker labels, topic). Treating 141 dev questions as 141 independent draws understates
the uncertainty; the independent units are the 10 dev / 8 test meetings.

Default interval (``cluster-t``): the mean with a cluster-robust (CR1) standard error,
i.e. the sandwich estimator of an intercept-only regression with the small-sample factor
G/(G-1), and a Student t quantile with G-1 degrees of freedom. This is what statsmodels'
``OLS(...).fit(cov_type="cluster", use_t=True)`` reports, it is deterministic (a report
rebuilt from the same runs prints the same digits), and with only 8-10 clusters the
t(G-1) reference is the usual guard against the too-narrow intervals that a percentile
cluster bootstrap gives when clusters are this few. The cluster bootstrap is offered as
an alternative (``--ci bootstrap``) for readers who prefer a resampling interval.
The standard error is :func:`elitr_bench.clustered.clustered_mean`'s, the one our tasks
write as ``<metric>_stderr`` in lm-eval's results file (that function stays in the
bottom module :mod:`elitr_bench.clustered` because the tasks, below this layer, use it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from elitr_bench.clustered import clustered_mean

CIMethod = Literal["cluster-t", "bootstrap"]
CI_METHODS: tuple[CIMethod, ...] = ("cluster-t", "bootstrap")

#: A group of observations (one value per question) with the cluster of each.
Stratum = tuple[Sequence[float], Sequence[Hashable]]


@dataclass(frozen=True)
class Interval:
    """A mean with its confidence interval.

    Attributes:
        estimate: The point estimate (mean of the strata means).
        low: Lower bound, or None when it cannot be computed (fewer than 2 clusters).
        high: Upper bound, or None.
        se: Standard error (cluster-robust, or the bootstrap standard deviation).
        df: Degrees of freedom of the t quantile (cluster-t only).
        n: Number of observations.
        n_clusters: Number of clusters (meetings) over all strata.
        method: ``cluster-t`` or ``bootstrap``.
    """

    estimate: float
    low: float | None
    high: float | None
    se: float | None
    df: float | None
    n: int
    n_clusters: int
    method: str


def cluster_t_interval(
    strata: Sequence[Stratum], level: float = 0.95, center: float | None = None
) -> Interval:
    """Interval for the mean of the strata means (e.g. dev and test) by CR1 and t.

    One stratum: mean ± t(G-1) * SE. Several (independent, disjoint meetings): the
    estimate is the unweighted mean of the strata means, as the paper's Mean column is,
    its SE combines the strata SEs, and the degrees of freedom follow Welch-Satterthwaite.

    Args:
        strata: ``(values, clusters)`` per stratum.
        level: Confidence level.
        center: Point estimate to centre on instead of the mean of strata means (the
            report passes the mean of per-run means, the paper's definition).
    """
    from scipy import stats

    parts = [clustered_mean(v, c) for v, c in strata]
    estimate = sum(p.mean for p in parts) / len(parts) if center is None else center
    n = sum(p.n for p in parts)
    n_clusters = sum(p.n_clusters for p in parts)
    if any(p.se is None for p in parts):
        return Interval(estimate, None, None, None, None, n, n_clusters, "cluster-t")
    weights = [(p.se or 0.0) ** 2 / len(parts) ** 2 for p in parts]
    se = math.sqrt(sum(weights))
    if len(parts) == 1:
        df = float(parts[0].n_clusters - 1)
    else:
        denom = sum(w**2 / (p.n_clusters - 1) for w, p in zip(weights, parts, strict=True))
        df = sum(weights) ** 2 / denom if denom > 0 else float(n_clusters - len(parts))
    if se == 0.0:
        return Interval(estimate, estimate, estimate, 0.0, df, n, n_clusters, "cluster-t")
    half = float(stats.t.ppf(0.5 + level / 2, df)) * se
    return Interval(estimate, estimate - half, estimate + half, se, df, n, n_clusters, "cluster-t")


def cluster_bootstrap_interval(
    strata: Sequence[Stratum],
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    center: float | None = None,
) -> Interval:
    """Percentile interval from resampling whole meetings within each stratum.

    Each resample draws G meetings with replacement per stratum (all questions of a drawn
    meeting come along) and recomputes the mean of the strata means.
    """
    rng = np.random.default_rng(seed)
    stats_per_stratum = []
    n = n_clusters = 0
    for values, clusters in strata:
        y = np.asarray(values, dtype=float)
        _, codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
        g = int(codes.max()) + 1
        sums = np.bincount(codes, weights=y, minlength=g)
        counts = np.bincount(codes, minlength=g).astype(float)
        n += len(y)
        n_clusters += g
        draws = rng.integers(0, g, size=(n_resamples, g))
        stats_per_stratum.append(sums[draws].sum(axis=1) / counts[draws].sum(axis=1))
        del draws
    boot = np.mean(np.vstack(stats_per_stratum), axis=0)
    point = (
        center
        if center is not None
        else float(np.mean([np.mean(np.asarray(v, dtype=float)) for v, _ in strata]))
    )
    alpha = (1 - level) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    if n_clusters - len(strata) < 1:
        return Interval(point, None, None, None, None, n, n_clusters, "bootstrap")
    return Interval(
        point,
        float(low),
        float(high),
        float(np.std(boot, ddof=1)),
        None,
        n,
        n_clusters,
        "bootstrap",
    )


def interval(
    strata: Sequence[Stratum],
    method: CIMethod = "cluster-t",
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    center: float | None = None,
) -> Interval:
    """Dispatch to :func:`cluster_t_interval` or :func:`cluster_bootstrap_interval`."""
    if method == "bootstrap":
        return cluster_bootstrap_interval(strata, level, n_resamples, seed, center)
    return cluster_t_interval(strata, level, center)


def mean_sd(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (ddof=1; None for one value), as Table 9."""
    if not values:
        raise ValueError("no values")
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), (float(arr.std(ddof=1)) if len(arr) > 1 else None)


@dataclass(frozen=True)
class WelchResult:
    """One-tailed Welch t-test of ``mean(x) < mean(y)``."""

    t: float | None
    df: float | None
    p: float | None
    n_x: int
    n_y: int
    mean_x: float | None
    mean_y: float | None


def welch_less(x: Sequence[float], y: Sequence[float]) -> WelchResult:
    """Welch's unequal-variance t-test with alternative ``mean(x) < mean(y)`` (Table 10)."""
    from scipy import stats

    mean_x = float(np.mean(x)) if len(x) else None
    mean_y = float(np.mean(y)) if len(y) else None
    if len(x) < 2 or len(y) < 2:
        return WelchResult(None, None, None, len(x), len(y), mean_x, mean_y)
    res = stats.ttest_ind(x, y, equal_var=False, alternative="less")
    t, p = float(res.statistic), float(res.pvalue)
    df = float(res.df) if hasattr(res, "df") else None
    if not math.isfinite(t):
        return WelchResult(None, None, None, len(x), len(y), mean_x, mean_y)
    return WelchResult(t, df, p, len(x), len(y), mean_x, mean_y)


def mean_t_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Plain t interval of a mean (Fig. 2a bins, where items are not clustered)."""
    from scipy import stats

    n = len(values)
    if n == 0:
        return Interval(math.nan, None, None, None, None, 0, 0, "t")
    mean = float(np.mean(values))
    if n < 2:
        return Interval(mean, None, None, None, None, n, n, "t")
    se = float(stats.sem(values))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * se
    return Interval(mean, mean - half, mean + half, se, float(n - 1), n, n, "t")


@dataclass(frozen=True)
class Correlation:
    """Pearson, Spearman and Kendall (tau-b) correlations of paired values, with p-values.

    Attributes:
        n: Number of pairs.
        pearson: Pearson's r, None where undefined (fewer than 3 pairs or a constant side).
        spearman: Spearman's rho, None where undefined.
        kendall: Kendall's tau-b, None where undefined.
        pearson_p: Two-sided p-value of ``pearson``.
        spearman_p: Two-sided p-value of ``spearman``.
        kendall_p: Two-sided p-value of ``kendall``.
    """

    n: int
    pearson: float | None = None
    spearman: float | None = None
    kendall: float | None = None
    pearson_p: float | None = None
    spearman_p: float | None = None
    kendall_p: float | None = None


def correlations(xs: Sequence[float], ys: Sequence[float]) -> Correlation:
    """Pearson, Spearman and Kendall tau-b of ``xs`` and ``ys``.

    They are left None, not 0 or NaN, with fewer than 3 pairs or a constant side: a
    correlation there says nothing, and a printed number would read as a finding.
    """
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return Correlation(n=len(xs))
    from scipy import stats

    pearson = stats.pearsonr(xs, ys)
    spearman = stats.spearmanr(xs, ys)
    kendall = stats.kendalltau(xs, ys)
    return Correlation(
        n=len(xs),
        pearson=float(pearson.statistic),
        spearman=float(spearman.statistic),
        kendall=float(kendall.statistic),
        pearson_p=float(pearson.pvalue),
        spearman_p=float(spearman.pvalue),
        kendall_p=float(kendall.pvalue),
    )


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def same_order(one: float, two: float, other_one: float, other_two: float) -> bool:
    """Whether ``one - two`` and ``other_one - other_two`` have the same sign (0 its own)."""
    return _sign(one - two) == _sign(other_one - other_two)


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
    """AutoMin Eq. 5 over all pairs of ``systems`` that have both scores.

    A tie (difference exactly 0) is its own sign, so a metric tie agrees only with a
    human tie; ties are counted so that tables can show them.
    """
    usable = [s for s in systems if s in metric and s in human]
    missing = tuple(s for s in systems if s not in usable)
    agree = pairs = metric_ties = human_ties = 0
    for a, b in itertools.combinations(usable, 2):
        m, h = _sign(metric[a] - metric[b]), _sign(human[a] - human[b])
        pairs += 1
        agree += m == h
        metric_ties += m == 0
        human_ties += h == 0
    return Pairwise(agree, pairs, metric_ties, human_ties, missing)
