"""The one request builder and the one ask result every family shares (issue 41, item 5)."""

from __future__ import annotations

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.asking import Asked, Sampling, Turn, draws
from elitr_bench.judges.reading import Reading
from elitr_bench.llm.base import CompletionRequest


def test_each_sample_and_reask_is_its_own_draw_and_seed() -> None:
    config = parse_judge_spec("openai:gpt-4o,seed=100,samples=3,reask=2,temperature=0.7")
    sent = {
        draw: request
        for index in range(3)
        for attempt in range(3)
        for request, draw in [draws(config, "P", index=index, samples=3)(attempt)]
    }
    assert sorted(sent) == list(range(9))  # 3 samples x 3 attempts, no draw shared
    assert all(r.seed == 100 + d and r.temperature == 0.7 for d, r in sent.items())
    assert draws(config, "P", index=1, samples=3)(2)[1] == 7  # sample 1, second re-ask


def test_a_step_can_fix_its_own_sampling_and_keep_the_chat() -> None:
    greedy = Sampling(temperature=0.0, top_p=1.0, max_tokens=8, seed=None)
    request, draw = draws(greedy, "Filler or content?", (("user", "u"), ("assistant", "a")))(1)
    assert (draw, request.seed, request.temperature, request.max_tokens) == (1, None, 0.0, 8)
    assert request.messages == (("user", "u"), ("assistant", "a"))


def _asked(values: list[int | None], restated: bool = False) -> Asked:
    """Turns ``reply 0``, ``reply 1``, ...; ``restated``: the last answers the restatement."""
    request = CompletionRequest("P", 0.0, 1.0, 8, None)
    readings = [Reading({"score": v}, {} if v is not None else {"score": "x"}) for v in values]
    turns = tuple(
        Turn(request, f"reply {i}", "stop", r, restatement=restated and i == len(values) - 1)
        for i, r in enumerate(readings)
    )
    if restated:  # the reading restates the reply before the restatement turn
        return Asked(readings[-1], turns, len(turns) - 2)
    best = max(range(len(values)), key=lambda i: values[i] is not None)
    return Asked(readings[best], turns, best)


def test_a_record_keeps_the_reply_read_else_the_last_attempt() -> None:
    assert _asked([None, 7, None]).kept == "reply 1"  # the one read
    assert _asked([None, None]).kept == "reply 1"  # none read: the last asked
    restated = _asked([None, 7], restated=True)  # reply 0 restated by turn 1
    assert restated.kept == "reply 0" and restated.restatement == "reply 1"
    assert restated.answer == "reply 0\n\nFinal values (restated): reply 1"
    assert restated.reply == "reply 0" and restated.attempts == 2 and restated.restated
    assert restated.raws == ("reply 0", "reply 1") and restated.finish_reasons == ("stop",) * 2
