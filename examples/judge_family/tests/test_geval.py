"""The G-Eval family through elitr_bench's own spec parser, reader and ask loop."""

import asyncio
import re

import pytest
from elitr_bench.judges.config import parse_judge_spec
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.summary.base import MinutesItem
from elitr_bench.judges.summary.registry import get_method
from elitr_bench.llm.cache import Completion
from elitr_bench.llm.client import Usage

import elitr_geval.family  # noqa: F401 -- registers the family (the entry point does too)
from elitr_geval.family import GEvalOptions
from elitr_geval.method import GEvalMethod, build_prompt, read_score


def test_method_geval_selects_the_family_with_its_typed_option() -> None:
    config = parse_judge_spec("openai:gpt-4o,method=geval,steps=3")
    assert config.family == "geval"
    assert config.options_of(GEvalOptions) == GEvalOptions(steps=3)
    assert config.temperature == 0.0  # the family's defaults
    assert parse_judge_spec("openai:gpt-4o,method=geval").options_of(GEvalOptions).steps == 5
    assert isinstance(get_method(config), GEvalMethod)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai:m,method=geval,steps=five", "steps='five' is not a valid int"),
        ("openai:m,method=geval,steps=9", "steps=9 must be in 1-5"),
        ("openai:m,steps=3", "steps=3 applies to the G-Eval judge only; add method=geval"),
    ],
)
def test_bad_specs_are_refused(spec: str, message: str) -> None:
    with pytest.raises(JudgeConfigError, match=re.escape(message)):
        parse_judge_spec(spec)


def test_the_prompt_lists_the_chosen_number_of_steps() -> None:
    prompt = build_prompt("T", "M", 2)
    assert "2. Read the minutes" in prompt and "3." not in prompt


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("Score: 4", 4.0),
        (" 4", 4.0),
        ("Score: 4/5", None),
        ("Score: 9", None),
        ("Score: 3 or Score: 4", None),
        ("Score: 4\nOn reflection, a 3.", None),
    ],
)
def test_replies_are_read_under_the_core_policy(reply: str, value: float | None) -> None:
    assert read_score(reply).value("geval_score") == value


class _Client:
    """Answers each request from a script (what the shared client would return)."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.seeds: list[int | None] = []
        self.usage = Usage()

    async def complete(self, request, draw):  # type: ignore[no-untyped-def]
        self.seeds.append(request.seed)
        return Completion(self.texts.pop(0), finish_reason="stop")


def test_assess_restates_a_reply_without_the_form() -> None:
    config = parse_judge_spec("openai:m,method=geval,steps=3,reask=1")
    method = get_method(config)
    client = _Client("The minutes are good, I think.", '{"geval_score": 5}')
    item = MinutesItem("m1", "sys", "A: hello\nB: hi", "- greetings")
    assessment = asyncio.run(method.assess(item, client))  # type: ignore[arg-type]
    assert assessment.status == "ok" and assessment.scores == {"geval_score": 5.0}
    assert client.seeds == [2023, 2023]  # the restatement follows in the same chat


def test_the_report_reads_its_scale_and_direction_from_the_family() -> None:
    from elitr_bench.judges.summary.base import lower_is_better, metric_scale

    assert metric_scale("geval_score@mine") == (1.0, 5.0)
    assert not lower_is_better("geval_score")
