"""MESA pieces without a server: prompts vs the paper, error-type files, validation, Eq. 1-2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.mesa.aggregate import overall, quality_from_impact
from elitr_bench.judges.mesa.error_types import ErrorTypesError, load_error_types
from elitr_bench.judges.mesa.guidance import Guidance, GuidanceError, load_guidance
from elitr_bench.judges.mesa.parsing import (
    IDENTIFICATION,
    SCORING,
    VERIFICATION,
)
from elitr_bench.judges.mesa.prompts import TEMPLATES, fill, step_prompt
from elitr_bench.judges.mesa.selftrain import SplitError, split_meetings
from elitr_bench.judges.reading import read_reply
from elitr_bench.judges.spec import parse_judge_spec
from tests.support.papers import paper_text


def _norm(text: str) -> str:
    return " ".join(text.replace("’", "'").split())


def test_step_templates_are_the_papers_figures_3_to_5() -> None:
    paper = _norm(paper_text("004"))  # fails, never skips, without the paper
    # The placeholders as the paper prints them (braces only in Fig. 4's transcript).
    printed = {
        "criteria": "self.criteria[criteria]",
        "summary": "data['summary']",
        "transcript": "data['transcript']",
        "list_of_instances": "list_of_instances",
    }
    for step, template in TEMPLATES.items():
        slots = dict(printed)
        if step == "verification":
            slots["transcript"] = "{data['transcript']}"
        assert _norm(fill(template, slots)) in paper, step


def test_prompt_fills_each_slot_once_and_appends_guidance() -> None:
    rep = load_error_types().get("REP")
    prompt = step_prompt(
        "scoring",
        rep,
        summary="S {transcript}",
        transcript="T",
        list_of_instances="[]",
        guidance="count paraphrases",
    )
    assert "*** criteria: Repetition: The summary contains repeated" in prompt
    assert "** S {transcript} **" in prompt  # slot text inside a value stays as is
    assert prompt.endswith("take it into account in this step:\ncount paraphrases")
    prefix = step_prompt("scoring", rep, summary="S", transcript="T", layout="prefix")
    assert prefix.startswith("Consider the original meeting transcript: * T *.\n")
    assert prefix.count("* T *") == 1 and prefix.count("** S **") == 1


def test_packaged_error_types_and_red_alias() -> None:
    types = load_error_types()
    assert types.codes == ("OM", "REP", "INC", "COR", "HAL", "LAN", "STR", "IRR")
    assert types.weights() == {
        "OM": 1.1,
        "REP": 0.9,
        "INC": 0.9,
        "COR": 1.0,
        "HAL": 1.1,
        "LAN": 0.9,
        "STR": 1.0,
        "IRR": 1.1,
    }
    assert types.get("red").code == "REP"
    assert "Total omission" in types.get("OM").definition


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("types:\n  OM: {name: O, definition: d, weight: 1, weigth: 2}\n", "unknown key(s) weigth"),
        ("types:\n  OM: {name: O, definition: d, weight: 0}\n", "weight 0 must be a number > 0"),
        ("types:\n  OM: {name: O, definition: d, weight: -1.5}\n", "weight -1.5"),
        ("kinds: {}\n", "top-level 'types:'"),
        ("types:\n  OM: {name: O, weight: 1}\n", "lacks 'definition'"),
    ],
)
def test_bad_error_type_file_is_one_line(tmp_path: Path, body: str, needle: str) -> None:
    path = tmp_path / "types.yaml"
    path.write_text(body)
    with pytest.raises(ErrorTypesError) as err:
        load_error_types(path)
    assert needle in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(JudgeConfigError) as spec_err:
        parse_judge_spec(f"openai:m,method=mesa,error_types={path}")
    assert str(path) in str(spec_err.value)


def test_custom_error_types_change_metrics(tmp_path: Path) -> None:
    path = tmp_path / "types.yaml"
    path.write_text("types:\n  ACT: {name: Action items, definition: Missing owners., weight: 2}\n")
    from elitr_bench.judges.summary.registry import get_method

    method = get_method(parse_judge_spec(f"openai:m,method=mesa,error_types={path}"))
    assert method.metrics == ("mesa_quality", "mesa_ACT")


def test_mesa_options_are_checked_in_the_spec() -> None:
    with pytest.raises(JudgeConfigError, match="applies to MESA only"):
        parse_judge_spec("openai:m,rubric=gpt-afgr,layout=prefix")
    with pytest.raises(JudgeConfigError, match="debate=mixed needs pool"):
        parse_judge_spec("openai:m,method=mesa,debate=mixed")
    with pytest.raises(JudgeConfigError, match="overlength="):
        parse_judge_spec("openai:m,method=mesa,overlength=cut")


def test_identification_validation() -> None:
    ok = read_reply(IDENTIFICATION, '[{"instance": "a", "reasoning": "r", "certainty": "85"}]')
    assert ok.value("instances") is not None and ok.value("instances")[0].certainty == 85.0
    wrapped = read_reply(
        IDENTIFICATION, '{"instances": [{"instance": "a", "reasoning": "r", "certainty": 5}]}'
    )
    assert wrapped.value("instances") is not None and len(wrapped.value("instances")) == 1
    assert read_reply(IDENTIFICATION, "[]").value("instances") == ()
    for bad, why in [
        ('[{"instance": "a", "reasoning": "r", "certainty": 101}]', "outside [0, 100]"),
        ('[{"instance": "a", "reasoning": "r", "certainty": true}]', "boolean"),
        ('[{"instance": "a", "certainty": 5}]', "missing 'reasoning'"),
        ("I think there are no errors.", "no JSON"),
    ]:
        parsed = read_reply(IDENTIFICATION, bad)
        assert parsed.value("instances") is None and why in parsed.reason


def test_verification_validation() -> None:
    reply = (
        "Here you go:\n```json\n[{'instance': 'a', 'reasoning': 'r', 'certainty': '9', "
        "'error_exists': 'true', 'severity': 7},]\n```"
    )
    parsed = read_reply(VERIFICATION, reply)
    found = parsed.value("instances")
    assert found is not None
    assert found[0].error_exists is True and found[0].severity == 7.0
    bad = read_reply(
        VERIFICATION,
        '[{"instance": "a", "reasoning": "r", "certainty": 9, "error_exists": "maybe"}]',
    )
    assert bad.value("instances") is None and "true or false" in bad.reason
    sev = read_reply(
        VERIFICATION,
        '[{"instance": "a", "reasoning": "r", "certainty": 9, "error_exists": true, '
        '"severity": 11}]',
    )
    assert sev.value("instances") is None and "severity" in sev.reason


def test_scoring_validation() -> None:
    parsed = read_reply(SCORING, '{ "reasoning": "fine", "confidence": 8, "rating": 2 }')
    assert (parsed.value("rating"), parsed.value("confidence")) == (2, 8)
    for bad, why in [
        ('{"reasoning": "x", "confidence": 8, "rating": 6}', "rating=6 outside 0-5"),
        ('{"reasoning": "x", "confidence": 11, "rating": 1}', "confidence=11 outside 0-10"),
        ('{"reasoning": "x", "rating": 1}', "no confidence in the asked format"),
        ('{"reasoning": "x", "confidence": 0.85, "rating": 1}', "looks like a 0-1 value"),
        ('{"reasoning": "x", "confidence": "high", "rating": 1}', "no confidence in the asked"),
        ('{"confidence": 8, "rating": 3}\n{"confidence": 8, "rating": 3}', "2 times"),
        ("Rating: 3, confidence: 8.", "no rating in the asked format"),
    ]:
        result = read_reply(SCORING, bad)
        assert not result.complete and why in result.reason, result.reason
        assert result.restate  # asked to restate both as JSON, never guessed
    for two in (  # two values of the rating: unscored, and no restatement could choose
        '{"confidence": 8, "rating": 3}\nFinal rating: 2',
        '{"reasoning": "Overall I rate this a 2.", "rating": 3, "confidence": 7}',
    ):
        result = read_reply(SCORING, two)
        assert result.reasons["rating"] == "the judge gave 3 and 2 for rating"
        assert result.final == {"rating"} and not result.restate


def test_equations_1_and_2() -> None:
    weights = {"OM": 1.1, "REP": 0.9, "COR": 1.0}
    ratings = {"OM": (4.0, 8.0), "REP": (1.0, 10.0), "COR": None}
    result = overall(ratings, weights)
    impact = (4 * 0.8 * 1.1 + 1 * 1.0 * 0.9) / (0.8 * 1.1 + 1.0 * 0.9)
    assert result.impact == pytest.approx(impact, abs=1e-12)
    assert result.quality == pytest.approx(1 + (5 - impact) / 5 * 9, abs=1e-12)
    assert result.used == ("OM", "REP")
    assert quality_from_impact(0) == 10 and quality_from_impact(5) == 1
    assert overall({"OM": (3.0, 0.0)}, weights).quality is None


def test_feedback_and_evaluation_meetings_are_disjoint(tmp_path: Path) -> None:
    fb, ev = split_meetings(["m1", "m2", "m3"], ["m2"])
    assert (fb, ev) == (["m2"], ["m1", "m3"])
    with pytest.raises(SplitError, match="m2"):
        split_meetings(["m1", "m2"], ["m2"], ["m1", "m2"])
    guidance = Guidance({"OM": "weigh decisions more"}, ("m2",), {"summaries": 3})
    path = guidance.save(tmp_path / "g.yaml")
    loaded = load_guidance(path, load_error_types())
    assert loaded.texts["OM"] == "weigh decisions more" and loaded.feedback_meetings == ("m2",)
    loaded.check_disjoint(["m1", "m3"])
    with pytest.raises(GuidanceError, match="m2"):
        loaded.check_disjoint(["m1", "m2"])
    path.write_text(path.read_text().replace("OM:", "XX:"))
    with pytest.raises(GuidanceError, match="unknown error type 'XX'"):
        load_guidance(path, load_error_types())


def test_guidance_file_is_plain_reviewable_yaml(tmp_path: Path) -> None:
    text = Guidance({"OM": "line one\nline two"}, ("m9",)).to_yaml()
    assert text.startswith("# MESA self-training guidance")
    assert "OM: |" in text and json.dumps("m9") not in text
