"""Statistical functions against scipy and statsmodels on fixed inputs."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import stats

from elitr_bench.clustered import clustered_mean
from elitr_bench.metaeval.stats import (
    cluster_bootstrap_interval,
    cluster_t_interval,
    correlations,
    mean_sd,
    mean_t_interval,
    welch_less,
)


def _clustered_data(seed: int = 7) -> tuple[np.ndarray, list[str]]:
    """Scores 1-10 for 8 meetings of uneven size with a meeting effect (like ELITR test)."""
    rng = np.random.default_rng(seed)
    sizes = [12, 20, 9, 17, 25, 14, 18, 15]
    values, clusters = [], []
    for g, size in enumerate(sizes):
        effect = rng.normal(0, 1.2)
        values += list(np.clip(np.round(7 + effect + rng.normal(0, 2, size)), 1, 10))
        clusters += [f"meeting_{g}"] * size
    return np.asarray(values), clusters


def test_clustered_se_and_ci_match_statsmodels_ols_cluster() -> None:
    import statsmodels.api as sm  # the dev extra: a failure, never a skip

    y, clusters = _clustered_data()
    groups = np.unique(clusters, return_inverse=True)[1]
    fit = sm.OLS(y, np.ones((len(y), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    mine = clustered_mean(y, clusters)
    assert mine.mean == pytest.approx(fit.params[0], abs=1e-12)
    assert mine.se == pytest.approx(fit.bse[0], rel=1e-10)
    iv = cluster_t_interval([(y, clusters)])
    low, high = fit.conf_int(alpha=0.05)[0]
    assert (iv.low, iv.high) == (pytest.approx(low, rel=1e-10), pytest.approx(high, rel=1e-10))
    assert iv.df == 7 and iv.n_clusters == 8 and iv.n == len(y)


def test_singleton_clusters_reduce_to_the_standard_error_of_the_mean() -> None:
    y = np.array([3.0, 9, 8, 7, 1, 10, 6, 6, 8, 2, 9, 5])
    res = clustered_mean(y, [str(i) for i in range(len(y))])
    assert res.se == pytest.approx(stats.sem(y), rel=1e-12)


def test_clustering_widens_the_interval_when_meetings_differ() -> None:
    y, clusters = _clustered_data()
    clustered = cluster_t_interval([(y, clusters)])
    naive = cluster_t_interval([(y, [str(i) for i in range(len(y))])])
    assert clustered.se is not None and naive.se is not None
    assert clustered.se > naive.se


def test_mean_column_combines_two_splits_with_satterthwaite_df() -> None:
    dev, dev_c = _clustered_data(1)
    test, test_c = _clustered_data(2)
    a, b = clustered_mean(dev, dev_c), clustered_mean(test, test_c)
    assert a.se is not None and b.se is not None
    iv = cluster_t_interval([(dev, dev_c), (test, test_c)])
    se = 0.5 * math.hypot(a.se, b.se)
    wa, wb = (a.se / 2) ** 2, (b.se / 2) ** 2
    df = (wa + wb) ** 2 / (wa**2 / 7 + wb**2 / 7)
    assert iv.estimate == pytest.approx((a.mean + b.mean) / 2)
    assert iv.se == pytest.approx(se) and iv.df == pytest.approx(df)
    half = stats.t.ppf(0.975, df) * se
    assert iv.high == pytest.approx(iv.estimate + half)
    centred = cluster_t_interval([(dev, dev_c), (test, test_c)], center=7.0)
    assert centred.low == pytest.approx(7.0 - half)


def test_cluster_bootstrap_with_singletons_agrees_with_scipy_bootstrap() -> None:
    y = np.asarray(_clustered_data(3)[0][:60])
    mine = cluster_bootstrap_interval(
        [(y, [str(i) for i in range(len(y))])], n_resamples=20_000, seed=1
    )
    ref = stats.bootstrap(
        (y,),
        np.mean,
        n_resamples=20_000,
        method="percentile",
        random_state=np.random.default_rng(5),
    ).confidence_interval
    assert mine.low == pytest.approx(ref.low, abs=0.03)
    assert mine.high == pytest.approx(ref.high, abs=0.03)
    again = cluster_bootstrap_interval(
        [(y, [str(i) for i in range(len(y))])], n_resamples=20_000, seed=1
    )
    assert (again.low, again.high) == (mine.low, mine.high)


def test_cluster_bootstrap_resamples_whole_meetings() -> None:
    y, clusters = _clustered_data()
    boot = cluster_bootstrap_interval([(y, clusters)], n_resamples=4000, seed=0)
    naive = cluster_bootstrap_interval(
        [(y, [str(i) for i in range(len(y))])], n_resamples=4000, seed=0
    )
    assert boot.low is not None and naive.low is not None
    assert boot.high - boot.low > naive.high - naive.low  # type: ignore[operator]
    assert boot.low < float(np.mean(y)) < boot.high  # type: ignore[operator]


def test_welch_less_matches_scipy_and_the_welch_formulas() -> None:
    middle = [4.0, 9, 2, 5, 8, 3, 6, 1, 7, 5, 4]
    other = [8.0, 9, 7, 10, 6, 9, 8, 7, 9, 10, 5, 8, 9, 6, 9]
    res = welch_less(middle, other)
    ref = stats.ttest_ind(middle, other, equal_var=False, alternative="less")
    assert res.p == pytest.approx(ref.pvalue, rel=1e-12)
    va, vb = np.var(middle, ddof=1) / len(middle), np.var(other, ddof=1) / len(other)
    t = (np.mean(middle) - np.mean(other)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(middle) - 1) + vb**2 / (len(other) - 1))
    assert res.t == pytest.approx(t) and res.df == pytest.approx(df)
    assert res.p == pytest.approx(stats.t.cdf(t, df))
    assert welch_less([5.0], other).p is None


def test_mean_sd_is_the_sample_standard_deviation() -> None:
    runs = [8.38, 8.31, 8.45]
    mean, sd = mean_sd(runs)
    assert mean == pytest.approx(statistics.fmean(runs))
    assert sd == pytest.approx(statistics.stdev(runs))
    assert mean_sd([7.0]) == (7.0, None)


def test_correlation_and_t_interval_match_scipy() -> None:
    xs = [1.0, 2, 3, 5, 8, 9, 10, 4]
    ys = [2.0, 1, 4, 6, 7, 9, 10, 3]
    corr = correlations(xs, ys)
    assert corr.n == len(xs)
    assert corr.pearson == pytest.approx(stats.pearsonr(xs, ys).statistic)
    assert corr.spearman == pytest.approx(stats.spearmanr(xs, ys).statistic)
    assert corr.kendall == pytest.approx(stats.kendalltau(xs, ys).statistic)
    assert corr.pearson_p == pytest.approx(stats.pearsonr(xs, ys).pvalue)
    assert corr.spearman_p == pytest.approx(stats.spearmanr(xs, ys).pvalue)
    assert corr.kendall_p == pytest.approx(stats.kendalltau(xs, ys).pvalue)
    undefined = correlations([1.0, 1, 1], [1.0, 2, 3])
    assert (undefined.pearson, undefined.spearman, undefined.kendall) == (None, None, None)
    assert correlations([1.0, 2], [1.0, 2]).pearson is None
    iv = mean_t_interval(xs)
    low, high = stats.t.interval(0.95, len(xs) - 1, loc=np.mean(xs), scale=stats.sem(xs))
    assert (iv.low, iv.high) == (pytest.approx(low), pytest.approx(high))
