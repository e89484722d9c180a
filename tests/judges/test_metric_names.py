"""Metric keys say who scored: the score's name and the filter name of each judge."""

from __future__ import annotations

import json

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.metrics import judge_filter_name, judge_metrics, with_score_metric


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("replay", "replay"),
        ("lexical", "lexical"),
        ("openai:gpt-4-0613", "openai:gpt-4-0613"),
        ("openai:gpt-4o,temperature=0,samples=3", "openai:gpt-4o"),
        (
            "hf:/models/prometheus-7b-v2.0/,rubric=prometheus-rubric",
            "hf:prometheus-7b-v2.0:prometheus-rubric",
        ),
        ("openai:gpt-4o,rubric=gpt-afgr", "openai:gpt-4o:gpt-afgr"),
        ("openai:gpt-4o,method=mesa", "openai:gpt-4o:mesa"),
    ],
)
def test_filter_names_name_the_judge_without_key_separators(spec: str, name: str) -> None:
    got = judge_filter_name(parse_judge_spec(spec).identity())
    assert got == name and "," not in got and "/" not in got


def test_no_judge_keeps_lm_evals_none() -> None:
    assert judge_filter_name(None) == judge_filter_name({"backend": "none"}) == "none"


def test_lexical_writes_lexical_score_and_never_judge_score() -> None:
    def judged(backend: str) -> str:
        identity = parse_judge_spec(backend).identity()
        judge = {"status": "scored", "score": 4.0, "identity": identity}
        return json.dumps({"response": "x", "judge": judge})

    assert judge_metrics([judged("lexical")]) == {
        "lexical_score": 4.0,
        "judge_unscored": 0.0,
        "judge_errors": 0.0,
        "judge_format_in_answer": 0.0,
    }
    assert "judge_score" in judge_metrics([judged("replay")])
    listed = [{"metric": "judge_score", "aggregation": "mean"}, {"metric": "f1"}]
    assert [m["metric"] for m in with_score_metric(listed, "lexical")] == ["lexical_score", "f1"]
    assert with_score_metric(listed, "openai") == listed
