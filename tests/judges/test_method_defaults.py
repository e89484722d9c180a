"""A minutes method implements two methods; every other hook has a default that means none."""

from __future__ import annotations

import pytest

from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.judges.summary.base import MinutesAssessment, MinutesItem, MinutesMethod
from elitr_bench.judges.summary.run import context_over, identity_of, plan
from elitr_bench.llm.client import JudgeClient


class _Minimal(MinutesMethod):
    name = "minimal"
    metrics = ("minimal_score",)

    def planned_calls(self, item: MinutesItem) -> int:
        return 2

    async def assess(self, item: MinutesItem, client: JudgeClient) -> MinutesAssessment:
        raise NotImplementedError


def test_the_defaults_plan_transcript_and_minutes_per_call() -> None:
    config = parse_judge_spec("openai:gpt-4o,rubric=gpt-art,max_tokens=100,price=1:1")
    item = MinutesItem("m1", "sys", "t" * 400, "m" * 400)
    method = _Minimal()
    out = plan([item], method, config)
    assert out["calls"] == 2 and out["prompt_tokens"] == 2 * 800 // 4
    assert out["completion_tokens_max"] == 2 * 100 and "side" not in out
    assert context_over([item, item], method) == [None, None]
    assert "prompt_hash" not in identity_of(config, method)


def test_a_method_without_its_two_methods_cannot_be_built() -> None:
    class _Half(MinutesMethod):
        name = "half"
        metrics = ()

        def planned_calls(self, item: MinutesItem) -> int:
            return 1

    with pytest.raises(TypeError, match="assess"):
        _Half()  # type: ignore[abstract]
