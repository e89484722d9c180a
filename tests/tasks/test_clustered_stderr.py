"""``<metric>_stderr`` in the results file is the meeting-clustered SE the report uses."""

from __future__ import annotations

import math
import random
import statistics
from types import SimpleNamespace
from typing import Any

import pytest

from elitr_bench.metaeval.stats import cluster_t_interval
from elitr_bench.tasks import metrics
from tests.support.evaluate import evaluate


def _stratum(rows: list[dict[str, Any]], metric: str) -> tuple[list[float], list[str]]:
    kept = [r for r in rows if r[metric] is not None]
    return [float(r[metric]) for r in kept], [r["doc"]["meeting_id"] for r in kept]


@pytest.mark.parametrize("group", ["elitr_qa", "elitr_conv"])
def test_results_stderr_is_the_reports_clustered_se(group: str) -> None:
    from lm_eval.utils import make_table

    result = evaluate("elitr-replay", "system=gpt-4", [group], metadata={"judge": "replay"})
    dev, test = f"{group}_dev", f"{group}_test"
    for metric in ("judge_score", "f1", "rouge_l"):
        strata = {t: _stratum(result["samples"][t], metric) for t in (dev, test)}
        for task, (values, clusters) in strata.items():
            reported = result["results"][task][f"{metric}_stderr,replay"]
            report = cluster_t_interval([(values, clusters)])
            assert reported == pytest.approx(report.se, rel=1e-9), (task, metric)
            assert result["results"][task][f"{metric},replay"] == pytest.approx(report.estimate)
        # The group (unweighted mean of dev and test) gets sqrt(se_dev^2 + se_test^2) / 2
        # through lm-eval's own group aggregation; the report's interval says the same.
        both = cluster_t_interval(list(strata.values()))
        assert result["results"][group][f"{metric}_stderr,replay"] == pytest.approx(both.se)
    # Not the independent-questions value lm-eval would write for a plain mean.
    values, _ = _stratum(result["samples"][dev], "judge_score")
    independent = statistics.stdev(values) / math.sqrt(len(values))
    clustered = result["results"][dev]["judge_score_stderr,replay"]
    assert abs(clustered - independent) > 0.02
    assert f"{clustered:.4f}" in make_table(result)


def test_clustered_se_is_statsmodels_cluster_robust_se() -> None:
    import statsmodels.api as statsmodels  # the dev extra: a failure, never a skip

    rng = random.Random(3)
    clusters = [f"m{i % 7}" for i in range(60)]
    values = [rng.randint(1, 10) + (i % 7) * 0.5 for i in range(60)]
    codes = [int(c[1:]) for c in clusters]
    fit = statsmodels.OLS(values, [[1.0]] * 60).fit(
        cov_type="cluster", cov_kwds={"groups": codes}, use_t=True
    )
    carriers = [{"cluster": c, "value": v} for c, v in zip(clusters, values, strict=True)]
    assert metrics.cluster_stderr(carriers) == pytest.approx(float(fit.bse[0]))


@pytest.mark.parametrize("bootstrap_iters", [100000, 0])
def test_clustered_value_lands_on_the_stderr_key_whatever_the_samples(
    bootstrap_iters: int,
) -> None:
    """Through lm-eval's own aggregation loop, with an unscored sample first."""
    from lm_eval.api.registry import get_aggregation
    from lm_eval.evaluator_utils import _compute_task_aggregations

    listed = ["judge_score", "f1", "overlength_skipped"]
    rows = [
        ("m1", {"judge_score": None, "f1": 0.2, "overlength_skipped": 0.0}),  # unscored first
        ("m1", {"judge_score": 8.0, "f1": 0.4, "overlength_skipped": 0.0}),
        ("m2", {"judge_score": None, "f1": None, "overlength_skipped": 1.0}),  # skipped
        ("m2", {"judge_score": 4.0, "f1": 0.1, "overlength_skipped": 0.0}),
        ("m3", {"judge_score": 9.0, "f1": 0.9, "overlength_skipped": 0.0}),
    ]
    raw: dict[tuple[str, str], list[Any]] = {}
    for meeting, values in rows:  # exactly what lm_eval.evaluator does per document
        out = metrics.complete_sample(values, listed, ["judge_score", "f1"], meeting)
        for metric, value in out.items():
            raw.setdefault((metric, "none"), []).append(value)
    entries = [metrics.score("judge_score"), metrics.score("f1")]
    assert all(e["aggregation"] == "mean" for e in entries)  # lm-eval's name, as listed
    aggregations = metrics.none_skipping(  # what the task's aggregation() returns
        {
            "judge_score": get_aggregation("mean"),
            "f1": get_aggregation("mean"),
            "overlength_skipped": get_aggregation(metrics.TOTAL),
            "judge_score_stderr": get_aggregation(metrics.CLUSTER_STDERR),
            "f1_stderr": get_aggregation(metrics.CLUSTER_STDERR),
        },
        entries,
    )
    task = SimpleNamespace(task_name="t", aggregation=lambda: aggregations)
    agg, n = _compute_task_aggregations(task, raw, bootstrap_iters=bootstrap_iters)
    assert n == 5
    scores = [8.0, 4.0, 9.0]
    assert agg["judge_score,none"] == pytest.approx(statistics.fmean(scores))
    expected = cluster_t_interval([(scores, ["m1", "m2", "m3"])]).se
    assert agg["judge_score_stderr,none"] == pytest.approx(expected)
    f1 = cluster_t_interval([([0.2, 0.4, 0.1, 0.9], ["m1", "m1", "m2", "m3"])])
    assert agg["f1,none"] == pytest.approx(f1.estimate)
    assert agg["f1_stderr,none"] == pytest.approx(f1.se)
    assert agg["overlength_skipped,none"] == 1.0


def test_minutes_stderr_is_lm_evals_own_with_one_document_per_meeting() -> None:
    from lm_eval.api.metrics import mean_stderr

    result = evaluate(
        "elitr-replay", "system=gpt4", ["automin23_en"], limit=6, metadata={"judge": "none"}
    )
    rows = result["samples"]["automin23_en"]
    for metric in ("rouge1", "rouge2", "rougeL"):
        values = [r[metric] for r in rows]
        assert result["results"]["automin23_en"][f"{metric}_stderr,none"] == pytest.approx(
            mean_stderr(values)
        )
