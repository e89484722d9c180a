"""The QA judge's plan: calls, tokens and cost before the first request.

The expected numbers are worked out here from the rubric prompt, the spec's options and
the price, not by the planning code: first calls are answers x samples; a sample may
add re-asks (``reask``, never for a greedy judge) and one restatement turn, which resends
the prompt with a reply of up to ``max_tokens``; every reply counts ``max_tokens``.
The last test runs the real ``lm_eval`` and checks the line is out before the judge is
first asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem
from elitr_bench.judges.qa.plan import plan_items
from elitr_bench.judges.rubrics import RUBRICS
from tests.judges.conftest import chat_qa_args
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

ITEMS = [
    JudgeItem("Who chairs the meeting?", "PERSON3 does.", "PERSON3"),
    JudgeItem("When is the deadline?", "Next Friday, at noon.", "On Friday"),
    JudgeItem("What was decided about the demo?", "To postpone it.", "It is postponed a week"),
]
MESSAGE = RUBRICS["gpt4-rubric"].grammar.restatement.message  # type: ignore[union-attr]


def prompts(rubric: str = "gpt4-rubric") -> list[str]:
    """The prompts the judge will send, one per item."""
    return [RUBRICS[rubric].build_prompt(i.question, i.response, i.reference) for i in ITEMS]


def by_chars(text: str) -> int:
    """Tokens as characters / 4 (a judge with no tokenizer at hand)."""
    return len(text) // 4


def test_first_and_most_calls_tokens_and_cost_of_a_sampling_judge() -> None:
    # An unknown model (no tokenizer, no window) priced in the spec; temperature 0.6
    # (the default) samples, so a cut-off reply is asked again (reask=1).
    plan = plan_items(ITEMS, parse_judge_spec("openai:judge-model,price=20:80,max_tokens=100"))
    first = sum(by_chars(p) for p in prompts())
    restated = sum(by_chars(p + MESSAGE) + 100 for p in prompts())
    assert (plan.calls, plan.calls_max, plan.reasks_max, plan.restated_max) == (3, 9, 3, 3)
    assert plan.prompt_tokens == first
    assert plan.prompt_tokens_max == 2 * first + restated
    assert (plan.completion_tokens_max, plan.completion_tokens_all_max) == (300, 900)
    assert plan.cost_usd == pytest.approx((first * 20 + 300 * 80) / 1e6, abs=1e-6)
    assert plan.cost_max_usd == pytest.approx(
        ((2 * first + restated) * 20 + 900 * 80) / 1e6, abs=1e-6
    )
    line = plan.line()
    assert line.startswith("elitr judge openai:judge-model (gpt4-rubric): 3 calls (3 answers x 1")
    assert "up to 9 with 3 restatements and 3 re-asks" in line
    assert f"estimated cost ${plan.cost_usd:.2f}, at most ${plan.cost_max_usd:.2f}" in line
    assert line.endswith("(cache hits are free)")


def test_samples_multiply_every_call_and_token() -> None:
    spec = "openai:judge-model,price=2:8,max_tokens=100,samples=3,reask=2"
    plan = plan_items(ITEMS, parse_judge_spec(spec))
    first = sum(by_chars(p) for p in prompts())
    restated = sum(by_chars(p + MESSAGE) + 100 for p in prompts())
    # 9 samples; each at most 3 asks (reask=2) and a restatement
    assert (plan.calls, plan.calls_max, plan.reasks_max, plan.restated_max) == (9, 36, 18, 9)
    assert plan.prompt_tokens == 3 * first
    assert plan.prompt_tokens_max == 3 * (3 * first + restated)
    assert plan.completion_tokens_all_max == 3600
    assert "9 calls (3 answers x 3 samples)" in plan.line()


@pytest.mark.parametrize("spec", ["temperature=0", "reask=0"])
def test_a_greedy_judge_or_reask_0_is_never_asked_again(spec: str) -> None:
    plan = plan_items(ITEMS, parse_judge_spec(f"openai:judge-model,price=2:8,{spec}"))
    assert (plan.calls, plan.calls_max, plan.reasks_max, plan.restated_max) == (3, 6, 0, 3)
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
    plan = plan_items(ITEMS, parse_judge_spec("openai:judge-model,rubric=prometheus-rubric"))
    assert plan.prompt_tokens == sum(by_chars(p) for p in prompts("prometheus-rubric"))
    assert plan.prompt_tokens != sum(by_chars(p) for p in prompts())


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
        exe = Path(sys.executable).with_name("lm_eval")
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "lm_eval"]
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "ELITR_JUDGE_CACHE": str(tmp_path / "c")}
        with log.open("w", encoding="utf-8") as err:
            proc = subprocess.run(
                [*cmd, *args], stdout=subprocess.PIPE, stderr=err, text=True, env=env, timeout=600
            )
        assert proc.returncode == 0, log.read_text("utf-8")[-3000:]
        judged = [r for r in loop.requests if "### Response to evaluate:" in r.prompt]
        assert len(judged) == 2
    expected = "elitr judge openai:judge-model (gpt4-rubric): 2 calls (2 answers x 1 sample)"
    assert seen_then and expected in seen_then[0], seen_then[:1] or log.read_text("utf-8")[-2000:]
    assert "estimated cost $" in seen_then[0] and "(cache hits are free)" in seen_then[0]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    plan = results["configs"]["elitr_qa_dev"]["metadata"]["judge_usage"]["plan"]
    assert (plan["calls"], plan["calls_max"], plan["priced"]) == (2, 6, True)
