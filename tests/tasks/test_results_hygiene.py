"""One value per name in our results (issue 25, point 7).

lm-eval writes a standard error of every per-sample key, so the carrier of our clustered
standard error (``judge_score_stderr``) used to get a ``judge_score_stderr_stderr`` of
"N/A" in every results file; and ``metadata.judge_usage.judge_score_stderr`` was the
independent-answers s/sqrt(n) beside the clustered value of the same name in ``results``.
"""

from __future__ import annotations

import math
import statistics

import pytest

from elitr_bench.tasks.tidy import is_stderr_of_stderr, tidy_results
from tests.support.evaluate import evaluate


def test_results_hold_one_value_per_name() -> None:
    result = evaluate("elitr-replay", "system=gpt-4", ["elitr_qa"], metadata={"judge": "replay"})
    for section in ("results", "groups"):
        for name, entries in result.get(section, {}).items():
            doubled = [k for k in entries if "_stderr_stderr" in k]
            assert not doubled, (section, name, doubled)
    dev = result["results"]["elitr_qa_dev"]
    assert isinstance(dev["judge_score_stderr,replay"], float)  # the clustered one stays

    usage = result["configs"]["elitr_qa_dev"]["metadata"]["judge_usage"]
    assert "judge_score_stderr" not in usage
    scores = [r["judge_score"] for r in result["samples"]["elitr_qa_dev"]]
    independent = statistics.stdev(scores) / math.sqrt(len(scores))
    assert usage["judge_score_stderr_independent"] == pytest.approx(independent)
    assert abs(usage["judge_score_stderr_independent"] - dev["judge_score_stderr,replay"]) > 0.02


def test_tidy_leaves_other_tasks_alone() -> None:
    results = {
        "results": {
            "elitr_qa_dev": {"f1,none": 1.0, "f1_stderr,none": 0.1, "f1_stderr_stderr,none": "N/A"},
            "their_task": {"x_stderr_stderr,none": "N/A"},
        },
        "groups": {"elitr_qa": {"f1_stderr_stderr,none": "N/A", "f1_stderr,none": 0.2}},
    }
    tidy_results(results)
    assert results["results"]["elitr_qa_dev"] == {"f1,none": 1.0, "f1_stderr,none": 0.1}
    assert results["results"]["their_task"] == {"x_stderr_stderr,none": "N/A"}
    assert results["groups"]["elitr_qa"] == {"f1_stderr,none": 0.2}
    assert is_stderr_of_stderr("judge_score_stderr_stderr,openai:gpt-4o")
    assert not is_stderr_of_stderr("judge_score_stderr,openai:gpt-4o")
