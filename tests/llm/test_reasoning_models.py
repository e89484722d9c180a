"""OpenAI's reasoning models as judges, against a loopback that refuses what the API refuses.

o1, o3, o4-mini and the gpt-5 family refuse ``max_tokens`` and any ``temperature`` or
``top_p`` other than 1 (HTTP 400). Known names at OpenAI's own API or Azure are sent
``max_completion_tokens`` (plus headroom for hidden reasoning) and no sampling from the
first request; any other endpoint is asked once more as each refusal says, and remembers it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.judges.reading import REASONED_OUT, TRUNCATED
from elitr_bench.llm import memory
from elitr_bench.llm.base import REASONING_HEADROOM, CompletionRequest
from elitr_bench.llm.cache import Completion, NullCache, SQLiteCache, cache_key
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.endpoint import Endpoint
from elitr_bench.llm.memory import Scope
from elitr_bench.llm.openai_backend import OpenAIBackend
from elitr_bench.llm.reasoning import known
from tests.conftest import run_lm_eval
from tests.judges.conftest import TEST_KEY, chat_qa_args, response_in
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply

REPLY_BUDGET = 512


class _Recording:
    """A backend at OpenAI's own endpoint (or Azure) that records what it would send."""

    kind = "openai"

    def __init__(self, model: str, endpoint: str = "") -> None:
        self.model = model
        self.endpoint = endpoint
        self.sent: list[dict[str, Any]] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.sent.append(request.sent_params())
        return Completion("Fine. \\boxed{7}", 1, 1, finish_reason="stop")

    async def aclose(self) -> None:
        return None


def _ask(client: JudgeClient, prompts: list[str], temperature: float = 0.0) -> list[Completion]:
    async def run() -> list[Completion]:
        try:
            requests = [CompletionRequest(p, temperature, 1.0, REPLY_BUDGET, 7) for p in prompts]
            return [await client.complete(r) for r in requests]
        finally:
            await client.aclose()

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("model", "endpoint", "reasoning"),
    [("o4-mini", "", True), ("o3-2025-04-16", "", True), ("o1", "", True),
     ("gpt-5-mini", "", True), ("ft:o4-mini-2025-04-16:org::abc", "", True),
     ("o3", "azure+https://res.openai.azure.com", True), ("gpt-4o", "", False),
     ("gpt-4-0613", "", False), ("o4-mini", "http://127.0.0.1:8000/v1", False)],
)  # fmt: skip
def test_known_reasoning_models_get_the_completion_limit_and_no_sampling_at_once(
    model: str, endpoint: str, reasoning: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = _Recording(model, endpoint)
    client = JudgeClient(backend, NullCache(), concurrency=1)
    _ask(client, ["a", "b"])
    if reasoning:
        limit = {"max_completion_tokens": REPLY_BUDGET + REASONING_HEADROOM}
        assert backend.sent == [limit, limit]
        err = capsys.readouterr().err
        assert err.count("samples at temperature 1") == 1 and model in err
    else:  # the table holds at OpenAI and Azure only: elsewhere a refusal teaches it
        plain = {"temperature": 0.0, "top_p": 1.0, "max_tokens": REPLY_BUDGET}
        assert backend.sent == [plain, plain]
    assert known(Scope("openai", endpoint, model)) is reasoning


def _client(server: LoopbackOpenAI, model: str, cache: Any) -> JudgeClient:
    backend = OpenAIBackend(Endpoint("openai", model, base_url=server.base_url), {})
    return JudgeClient(backend, cache, concurrency=1, retries=0)


@pytest.mark.parametrize(
    ("temperature", "refused"), [(0.0, ["max_tokens", "temperature"]), (1.0, ["max_tokens"])]
)
def test_an_unknown_endpoint_is_taught_once_by_each_refusal_and_reruns_hit_the_cache(
    tmp_path: Path, temperature: float, refused: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A reasoning model behind another server: each refused parameter is refused once."""
    with LoopbackOpenAI(lambda r: "Fine. \\boxed{7}") as server:
        cache = SQLiteCache(tmp_path / "c.sqlite")
        replies = _ask(_client(server, "o4-mini", cache), ["a", "b", "c"], temperature)
        assert [r.text for r in replies] == ["Fine. \\boxed{7}"] * 3
        assert [_param(r) for r in server.refused] == refused
        taken = server.taken()
        assert len(taken) == 3
        for request in taken:
            assert request.body["max_completion_tokens"] == REPLY_BUDGET + REASONING_HEADROOM
            assert "max_tokens" not in request.body
            assert ("temperature" in request.body) is (temperature == 1.0)
        err = capsys.readouterr().err
        assert err.count("refuses max_tokens") == 1
        assert err.count("samples at temperature 1") == (1 if temperature == 0.0 else 0)
        # A new process: learnt again from the same refusals, then its own replies are hit.
        memory.forget()
        server.reset()
        again = _client(server, "o4-mini", SQLiteCache(tmp_path / "c.sqlite"))
        rerun = _ask(again, ["a", "b", "c"], temperature)
        assert [r.cached for r in rerun] == [True] * 3
        assert server.taken() == [] and [_param(r) for r in server.refused] == refused
        cache.close()


def _param(request: RecordedRequest) -> str:
    """The parameter the loopback's refusal of ``request`` named (recomputed from its body)."""
    if "max_tokens" in request.body:
        return "max_tokens"
    return "temperature" if request.body.get("temperature", 1) != 1 else "top_p"


def test_the_cache_key_records_what_was_sent() -> None:
    """A reasoning model's reply is keyed by what went out, never by the asked temperature.

    A greedy reply cached under the same model name (a server that took temperature 0) is
    not served for it; every spec of the model, whatever temperature it asks, shares its
    replies; a rerun computes the same key.
    """
    at_openai = JudgeClient(_Recording("o3"), NullCache())
    elsewhere = JudgeClient(_Recording("o3", "http://127.0.0.1:9/v1"), NullCache())
    greedy = CompletionRequest("p", 0.0, 1.0, REPLY_BUDGET, 7)
    sent = replace(greedy, completion_limit=True, sampling=False)
    assert at_openai.key_for(sent, 0) != at_openai.key_for(greedy, 0)
    assert at_openai.key_for(sent, 0) != elsewhere.key_for(sent, 0)
    hot = replace(sent, temperature=0.6, top_p=0.9)
    assert at_openai.key_for(hot, 0) == at_openai.key_for(sent, 0)
    # The plain request's key is what it always was (existing caches stay valid).
    params = {"temperature": 0.0, "top_p": 1.0, "max_tokens": REPLY_BUDGET, "seed": 7, "draw": 0}
    assert at_openai.key_for(greedy, 0) == cache_key("openai", "o3", "p", params)


def test_the_preflight_sends_what_the_model_takes_and_teaches_the_run() -> None:
    """``max_tokens=1`` to o3 fails; the preflight learns it, and the run sends it right."""
    with LoopbackOpenAI(lambda r: "OK") as server:  # lists "loopback": a completion decides
        backend = OpenAIBackend(Endpoint("openai", "o3", base_url=server.base_url), {})

        async def preflight() -> str | None:
            try:
                return await backend.preflight()
            finally:
                await backend.aclose()

        assert asyncio.run(preflight()) is None
        assert [_param(r) for r in server.refused] == ["max_tokens", "temperature"]
        [ok] = server.taken()
        assert ok.body["max_completion_tokens"] == 1 + REASONING_HEADROOM
        assert "temperature" not in ok.body and "top_p" not in ok.body
        server.reset()
        _ask(_client(server, "o3", NullCache()), ["a"])
        assert server.refused == [] and len(server.taken()) == 1


def test_a_reply_cut_off_by_hidden_reasoning_stays_unscored_and_says_so() -> None:
    """An empty ``length`` reply is never a value; its reason names the reasoning."""

    def server_script(request: RecordedRequest) -> Reply:
        if response_in(request).endswith("0"):  # reasoning ate the whole limit
            limit = request.body["max_completion_tokens"]
            return Reply("", finish_reason="length", completion_tokens=0, reasoning_tokens=limit)
        if response_in(request).endswith("1"):  # a visible reply cut off
            return Reply("Feedback: good, so", finish_reason="length", reasoning_tokens=300)
        return Reply("Feedback: fine.\n\\boxed{8}", reasoning_tokens=200)

    with LoopbackOpenAI(server_script) as server:
        spec = (
            f"openai:o4-mini,base_url={server.base_url},cache=memory,progress=false,"
            "preflight=false,temperature=0,top_p=1,reask=0"
        )
        items = [JudgeItem(f"Q{i}?", f"answer {i}", "ref") for i in range(3)]
        run = judge_items(items, parse_judge_spec(spec), on_error="record")
    first, second, third = run.judgements
    assert first.status == "unscored" and first.reason == REASONED_OUT
    assert second.status == "unscored" and second.reason == TRUNCATED
    assert third.status == "scored" and third.score == 8


@pytest.mark.slow
def test_a_reasoning_judge_scores_qa_items_through_lm_eval_with_no_refused_request(
    tmp_path: Path,
) -> None:
    """``openai:o4-mini`` on Azure (the loopback): known, so nothing is refused, end to end."""

    def server(request: RecordedRequest) -> str:
        if request.body.get("model") == "loopback":  # the tested model
            return f"Answer number {len(request.prompt) % 7}."
        if "### Response to evaluate:" not in json.dumps(request.body):  # preflight probe
            return "OK"
        return f"Feedback: fine.\n\\boxed{{{3 + int(response_in(request)[-2])}}}"

    out = tmp_path / "out"
    with LoopbackOpenAI(server) as loop:
        judge = f"openai:o4-mini,azure=true,cache={tmp_path / 'c.sqlite'}"
        args = chat_qa_args(loop.chat_url, judge, out, limit=3)
        env = {"OPENAI_API_KEY": TEST_KEY, "AZURE_OPENAI_ENDPOINT": f"http://127.0.0.1:{loop.port}"}
        proc = run_lm_eval(args, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        judged = [r for r in loop.requests if r.body.get("model") == "o4-mini"]
        refused = list(loop.refused)
    assert refused == []
    assert len(judged) == 4  # the preflight, then one judgement per item
    for request in judged:
        assert "max_tokens" not in request.body and "temperature" not in request.body
        assert "top_p" not in request.body and request.path.startswith("/openai/deployments/")
    assert proc.stderr.count("samples at temperature 1") == 1
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    metrics = results["results"]["elitr_qa_dev"]
    assert metrics["judge_errors,openai:o4-mini"] == 0.0
    assert metrics["judge_unscored,openai:o4-mini"] == 0.0
    rows = [json.loads(x) for p in out.rglob("samples_*.jsonl") for x in p.read_text().splitlines()]
    scores = []
    for row in rows:
        judgement = json.loads(row["filtered_resps"][0][0])["judge"]
        assert judgement["status"] == "scored"
        scores.append(judgement["samples"][0]["native"])
    answers = [int(row["resps"][0][0].rsplit(" ", 1)[1].rstrip(".")) for row in rows]
    assert scores == [3 + a for a in answers]
    identity = json.loads(rows[0]["filtered_resps"][0][0])["judge"]["identity"]
    effective = identity["sampling"]["effective"]
    assert effective["temperature"] == 1.0
    budget = identity["sampling"]["max_tokens"] + REASONING_HEADROOM
    assert effective["max_completion_tokens"] == budget
