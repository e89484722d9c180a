"""Meeting-clustered mean and standard error: one definition for the tasks and the report.

All questions of a meeting are answered from one transcript, so their scores are not
independent draws; the independent units are the meetings. The standard error here is
the cluster-robust (CR1) one, which both the lm-eval results file (``<metric>_stderr``
of our tasks, see :mod:`elitr_bench.tasks.metrics`) and the report's intervals
(:mod:`elitr_bench.metaeval.stats`) use, so the two never disagree. It depends on numpy
only, so every layer may import it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ClusteredMean:
    """Mean of observations with its CR1 cluster-robust standard error.

    Attributes:
        mean: Mean of all observations.
        se: Cluster-robust standard error, None with fewer than 2 clusters.
        n: Number of observations.
        n_clusters: Number of distinct clusters.
    """

    mean: float
    se: float | None
    n: int
    n_clusters: int


def clustered_mean(values: Sequence[float], clusters: Sequence[Hashable]) -> ClusteredMean:
    """Mean and cluster-robust (CR1) standard error of the mean.

    The variance is ``G/(G-1) * sum_g (sum_{i in g} (y_i - ybar))^2 / N^2``: the sandwich
    estimator of an intercept-only OLS with statsmodels' default small-sample correction
    (its ``(N-1)/(N-K)`` factor is 1 for K=1). With one observation per cluster it is
    exactly ``sample_stddev / sqrt(N)``, lm-eval's closed form for a mean.

    Raises:
        ValueError: Lengths differ or there are no values.
    """
    y = np.asarray(values, dtype=float)
    if len(y) != len(clusters):
        raise ValueError(f"{len(y)} values but {len(clusters)} cluster labels")
    if len(y) == 0:
        raise ValueError("no values to average")
    mean = float(y.mean())
    _, codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    n_clusters = int(codes.max()) + 1
    if n_clusters < 2:
        return ClusteredMean(mean=mean, se=None, n=len(y), n_clusters=n_clusters)
    sums = np.bincount(codes, weights=y - mean, minlength=n_clusters)
    var = n_clusters / (n_clusters - 1) * float(np.sum(sums**2)) / len(y) ** 2
    return ClusteredMean(mean=mean, se=math.sqrt(var), n=len(y), n_clusters=n_clusters)
