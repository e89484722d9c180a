"""The QA judge's plan: calls, tokens and cost before the first request.

The expected numbers are not worked out from the plan's formula: the same items are
judged for real against a loopback judge scripted to cost the most (each sample's reply
is cut off until its last allowed ask, then prose with no score, so it is restated), and
the plan must equal what that run sent, read off the server's request log: its requests,
their prompts counted as characters / 4 (the server reports the same as usage, so the
run's own cost is the plan's most), every reply reporting ``max_tokens``. The last test
runs the real ``lm_eval`` and checks the line is out before the judge is first asked.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.judges.qa.plan import QAPlan, plan_items
from elitr_bench.judges.rubrics import RUBRICS
from tests.conftest import run_lm_eval
from tests.judges.conftest import chat_qa_args
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply

ITEMS = [
    JudgeItem("Who chairs the meeting?", "PERSON3 does.", "PERSON3"),
    JudgeItem("When is the deadline?", "Next Friday, at noon.", "On Friday"),
    JudgeItem("What was decided about the demo?", "To postpone it.", "It is postponed a week"),
]
#: The judges' seed (the spec's default); sample i's ask j is sent with seed + i + samples * j.
SEED = 2023
MAX_TOKENS = 100
#: A reply of exactly ``MAX_TOKENS`` tokens at characters / 4, with no score in it.
PROSE = ("The response is close to the reference but not quite the same. " * 8)[: 4 * MAX_TOKENS]


def prompts(rubric: str = "gpt4-rubric") -> list[str]:
    """The prompts the judge will send, one per item."""
    return [RUBRICS[rubric].build_prompt(i.question, i.response, i.reference) for i in ITEMS]


def chars_4(request: RecordedRequest) -> int:
    """Tokens of a request as sent: all its messages' characters / 4 (no tokenizer at hand)."""
    return sum(len(m["content"]) for m in request.body["messages"]) // 4


def is_restatement(request: RecordedRequest) -> bool:
    return request.body["messages"][-1]["content"].startswith("Restate your final")


@dataclass(frozen=True)
class Sent:
    """What a worst-case run sent, read off the server's log, and the run's own usage."""

    calls: int
    requests: int
    reasks: int
    restated: int
    prompt_tokens: int
    prompt_tokens_all: int
    usage: dict[str, object]


def worst_case(spec: str, samples: int = 1, last_ask: int = 1) -> Sent:
    """Judge ITEMS with a loopback judge scripted to cost the most; what was sent.

    Each sample's asks before ``last_ask`` get a reply cut off at ``max_tokens``; its ask
    ``last_ask`` gets a full-length reply with no score (so it is restated); a
    restatement gets ``{"score": 7}``.
    """

    def reply(request: RecordedRequest) -> Reply:
        tokens = {"prompt_tokens": chars_4(request), "completion_tokens": MAX_TOKENS}
        if is_restatement(request):
            return Reply('{"score": 7}', **tokens)
        ask = (request.body["seed"] - SEED) // samples
        cut = "length" if ask < last_ask else "stop"
        return Reply(PROSE, finish_reason=cut, **tokens)

    with LoopbackOpenAI(reply) as loop:
        config = parse_judge_spec(f"{spec},base_url={loop.base_url},cache=memory,progress=false")
        usage = judge_items(ITEMS, config).usage
        log = loop.snapshot()
    asked = [r for r in log if not is_restatement(r)]
    first = [r for r in asked if r.body["seed"] - SEED < samples]
    return Sent(
        calls=len(first),
        requests=len(log),
        reasks=len(asked) - len(first),
        restated=len(log) - len(asked),
        prompt_tokens=sum(map(chars_4, first)),
        prompt_tokens_all=sum(map(chars_4, log)),
        usage=dict(usage),
    )


def assert_plan_is_what_was_sent(plan: QAPlan, sent: Sent) -> None:
    assert (plan.calls, plan.calls_max) == (sent.calls, sent.requests)
    assert (plan.reasks_max, plan.restated_max) == (sent.reasks, sent.restated)
    assert (plan.prompt_tokens, plan.prompt_tokens_max) == (
        sent.prompt_tokens,
        sent.prompt_tokens_all,
    )
    assert plan.completion_tokens_max == sent.calls * MAX_TOKENS
    assert plan.completion_tokens_all_max == sent.usage["completion_tokens"]
    assert sent.usage["prompt_tokens"] == sent.prompt_tokens_all


def test_first_and_most_calls_tokens_and_cost_of_a_sampling_judge() -> None:
    # An unknown model (no tokenizer, no window) priced in the spec; temperature 0.6
    # (the default) samples, so a cut-off reply is asked again (reask=1).
    spec = f"openai:judge-model,price=20:80,max_tokens={MAX_TOKENS}"
    plan = plan_items(ITEMS, parse_judge_spec(spec))
    sent = worst_case(spec)
    assert (sent.calls, sent.requests, sent.reasks, sent.restated) == (3, 9, 3, 3)
    assert_plan_is_what_was_sent(plan, sent)
    # the run priced what it sent as the plan prices its most
    assert plan.cost_max_usd == pytest.approx(sent.usage["estimated_cost_usd"], abs=1e-6)
    first_cost = (sent.prompt_tokens * 20 + sent.calls * MAX_TOKENS * 80) / 1e6
    assert plan.cost_usd == pytest.approx(first_cost, abs=1e-6)
    line = plan.line()
    assert line.startswith("elitr judge openai:judge-model (gpt4-rubric): 3 calls (3 answers x 1")
    assert "up to 9 with 3 restatements and 3 re-asks" in line
    assert f"estimated cost ${plan.cost_usd:.2f}, at most ${plan.cost_max_usd:.2f}" in line
    assert line.endswith("(cache hits are free)")


def test_samples_multiply_every_call_and_token() -> None:
    spec = f"openai:judge-model,price=2:8,max_tokens={MAX_TOKENS},samples=3,reask=2"
    plan = plan_items(ITEMS, parse_judge_spec(spec))
    sent = worst_case(spec, samples=3, last_ask=2)
    # 9 samples; each at most 3 asks (reask=2) and a restatement
    assert (sent.calls, sent.requests, sent.reasks, sent.restated) == (9, 36, 18, 9)
    assert_plan_is_what_was_sent(plan, sent)
    assert plan.cost_max_usd == pytest.approx(sent.usage["estimated_cost_usd"], abs=1e-6)
    assert "9 calls (3 answers x 3 samples)" in plan.line()


@pytest.mark.parametrize("spec", ["temperature=0", "reask=0"])
def test_a_greedy_judge_or_reask_0_is_never_asked_again(spec: str) -> None:
    full = f"openai:judge-model,price=2:8,max_tokens={MAX_TOKENS},{spec}"
    plan = plan_items(ITEMS, parse_judge_spec(full))
    assert worst_case(full, last_ask=99).requests == 3  # cut off every time: never asked again
    sent = worst_case(full, last_ask=0)  # prose at once: restated
    assert (sent.requests, sent.reasks, sent.restated) == (6, 0, 3)
    assert_plan_is_what_was_sent(plan, sent)
    assert "up to 6 with 3 restatements and 0 re-asks" in plan.line()


def test_the_price_table_the_override_and_the_tokenizer_of_a_known_model() -> None:
    import bpe_openai

    from elitr_bench.llm.context_window import CHAT_TOKENS_PER_MESSAGE, CHAT_TOKENS_PER_REPLY

    enc = bpe_openai.get_encoding("o200k_base")  # gpt-4o's
    exact = sum(
        len(enc.encode_ordinary(p)) + CHAT_TOKENS_PER_MESSAGE + CHAT_TOKENS_PER_REPLY
        for p in prompts()
    )
    listed = plan_items(ITEMS, parse_judge_spec("openai:gpt-4o,max_tokens=10"))
    assert listed.prompt_tokens == exact and "o200k" in listed.counted
    # gpt-4o lists at $2.50 / $10 per 1M tokens
    assert listed.cost_usd == pytest.approx((exact * 2.5 + 30 * 10) / 1e6, abs=1e-6)
    given = plan_items(ITEMS, parse_judge_spec("openai:gpt-4o,max_tokens=10,price=1:1"))
    assert given.cost_usd == pytest.approx((exact + 30) / 1e6, abs=1e-6)


def test_an_unpriced_model_says_so_and_has_no_cost() -> None:
    plan = plan_items(ITEMS, parse_judge_spec("openai:judge-model"))
    assert plan.calls == 3 and plan.cost_usd is None and plan.cost_max_usd is None
    assert not plan.priced and plan.to_dict()["priced"] is False
    assert "estimated cost unknown (unpriced: add price=IN:OUT" in plan.line()


@pytest.mark.parametrize("spec", ["replay", "lexical"])
def test_replay_and_lexical_plan_no_call(spec: str) -> None:
    plan = plan_items(ITEMS, parse_judge_spec(spec))
    assert (plan.calls, plan.calls_max, plan.prompt_tokens, plan.cost_usd) == (0, 0, 0, 0.0)


def test_a_local_hf_judge_calls_but_costs_no_money(tmp_path: Path) -> None:
    plan = plan_items(ITEMS, parse_judge_spec(f"hf:{tmp_path / 'judge'}"))
    assert plan.calls == 3 and plan.local and plan.cost_usd == 0.0
    assert "no API cost (a local model)" in plan.line()


def test_the_prometheus_rubric_is_planned_from_its_own_prompt() -> None:
    spec = f"openai:judge-model,rubric=prometheus-rubric,max_tokens={MAX_TOKENS}"
    plan = plan_items(ITEMS, parse_judge_spec(spec))
    assert_plan_is_what_was_sent(plan, worst_case(spec))
    gpt4 = plan_items(ITEMS, parse_judge_spec(f"openai:judge-model,max_tokens={MAX_TOKENS}"))
    assert plan.prompt_tokens != gpt4.prompt_tokens


# --- the lm_eval path: the line is out before the first judge request ------------------------
@pytest.mark.slow
def test_lm_eval_prints_the_plan_before_the_first_judge_request(tmp_path: Path) -> None:
    log = tmp_path / "stderr.txt"
    seen_then: list[str] = []
    lock = threading.Lock()

    def server(request: RecordedRequest) -> str:
        if "### Response to evaluate:" not in request.prompt:  # the tested model
            return "They were [PERSON3] and [PERSON6]."
        with lock:
            if not seen_then:  # what lm_eval had written when the judge was first asked
                seen_then.append(log.read_text("utf-8"))
        return "Feedback: fine.\n\\boxed{8}"

    out = tmp_path / "out"
    with LoopbackOpenAI(server) as loop:
        judge = f"openai:judge-model,price=10:30,base_url={loop.base_url},preflight=false"
        args = chat_qa_args(loop.chat_url, judge, out)
        env = {"OPENAI_API_KEY": "sk-test", "ELITR_JUDGE_CACHE": str(tmp_path / "c")}
        proc = run_lm_eval(args, env=env, stderr_path=log)  # the judge reads it meanwhile
        assert proc.returncode == 0, proc.stderr[-3000:]
        judged = [r for r in loop.requests if "### Response to evaluate:" in r.prompt]
        assert len(judged) == 2
    expected = "elitr judge openai:judge-model (gpt4-rubric): 2 calls (2 answers x 1 sample)"
    assert seen_then and expected in seen_then[0], seen_then[:1] or log.read_text("utf-8")[-2000:]
    assert "estimated cost $" in seen_then[0] and "(cache hits are free)" in seen_then[0]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    plan = results["configs"]["elitr_qa_dev"]["metadata"]["judge_usage"]["plan"]
    assert (plan["calls"], plan["calls_max"], plan["priced"]) == (2, 6, True)
