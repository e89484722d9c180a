"""The strict 4-point rubric through elitr_bench's own spec parser, reader and registry."""

import re

import pytest
from elitr_bench.judges.config import parse_judge_spec
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.reading import read_reply
from elitr_bench.judges.rubrics import RUBRICS, Rubric, register_rubric

from elitr_rubric_strict.rubric import NAME, RUBRIC, TEMPLATE


def test_rubric_selects_it_and_the_prompt_holds_the_item() -> None:
    config = parse_judge_spec(f"openai:gpt-4o,rubric={NAME}")
    assert config.family == "qa" and config.rubric_obj is RUBRIC
    assert NAME in RUBRICS
    prompt = RUBRIC.build_prompt("Who chairs?", "Anna {braces}", "Anna chairs.")
    assert "Who chairs?" in prompt and "Anna {braces}" in prompt and "Grading scale:\n4: " in prompt


def test_replies_are_read_with_the_result_format_and_mapped_to_ten_points() -> None:
    reading = read_reply(RUBRIC.grammar, "Most facts are there.\n[RESULT] 3")
    assert reading.value("score") == 3
    assert RUBRIC.to_ten_point(3) == 7.5
    assert read_reply(RUBRIC.grammar, "[RESULT] 5").value("score") is None  # off the scale


def test_a_malformed_rubric_is_refused_when_it_registers() -> None:
    bad = Rubric("strict4-copy", TEMPLATE, "x", 1, 4, to_ten=2.0, marker="result")
    with pytest.raises(JudgeConfigError, match=re.escape("maps its top score 4 to 8")):
        register_rubric(bad)
