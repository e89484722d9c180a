"""A server that refuses an optional extra never costs an item, whatever its words (issue 45).

The loopback speaks each server's own refusal of a ``response_format`` (vLLM's xgrammar and
guidance backends, llama.cpp's server, a 422 validator, Azure OpenAI, OpenAI refusing one
schema keyword) and OpenAI's ``max_tokens is too large``. The judges go through the real
transport (spec, engine, client, OpenAI SDK, HTTP); two of them through the real
``lm_eval`` CLI, one wording each.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.llm.base import CompletionRequest, ResponseFormat
from elitr_bench.llm.cache import open_cache
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.endpoint import Endpoint
from elitr_bench.llm.openai_backend import OpenAIBackend
from tests.conftest import run_lm_eval
from tests.judges.conftest import chat_qa_args, minutes_replay_args
from tests.support.openai_server import DIALECTS, LoopbackOpenAI, RecordedRequest, dialect

ITEMS = [
    JudgeItem(question="When do they meet?", response="On 3 May.", reference="On 3 May."),
    JudgeItem(question="Who comes?", response="Anna.", reference="Anna and Ben."),
    JudgeItem(question="Where?", response="In Prague.", reference="In Prague."),
]


def restating(request: RecordedRequest) -> bool:
    """Whether a request is a restatement turn (the judge's reply, then the message)."""
    messages = request.body["messages"]
    return len(messages) >= 3 and messages[-1]["content"].startswith("Restate your final")


def qa_judge(request: RecordedRequest) -> str:
    """Prose first (no value in the asked format), the value as JSON when restating."""
    return '{"score": 8}' if restating(request) else "Looks right: 8 of 10."


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_every_wording_of_a_refused_schema_costs_one_request_and_no_item(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with LoopbackOpenAI(qa_judge, model="judge-model", rules=dialect(name)) as loop:
        spec = f"openai:judge-model,base_url={loop.base_url},cache=memory,progress=false"
        run = judge_items(ITEMS, parse_judge_spec(spec + ",concurrency=4"), on_error="record")
        restatements = [r for r in loop.requests if restating(r)]
        refused = list(loop.refused)
    assert [(j.status, j.score) for j in run.judgements] == [("scored", 8.0)] * 3
    # one restatement tried with the schema (the others waited for its answer), refused once
    assert [("response_format" in r.body) for r in restatements] == [True, False, False, False]
    assert refused == restatements[:1]
    usage = run.usage
    assert (usage["structured_refused"], usage["unstructured"], usage["refused"]) == (1, 3, 1)
    assert usage["requests"] == usage["answered"] + 1
    err = capsys.readouterr().err
    assert err.count("refuses response_format json_schema") == 1
    assert "refuses max_tokens" not in err and "reasoning model" not in err


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_gpt_art_through_every_wording_scores_every_meeting(name: str) -> None:
    """AutoMin's GPT-ART judge (its own schema, the minutes engine) at each server."""
    from elitr_bench.judges.minutes import assess_items
    from tests.judges.test_minutes_gpt import item

    restated = {"adequacy": 7, "relevance": 8, "topicality": 9}

    def art(request: RecordedRequest) -> str:
        if restating(request):
            return json.dumps(restated)
        return "Seven for adequacy, eight for relevance and nine for topicality."

    with LoopbackOpenAI(art, model="judge-model", rules=dialect(name)) as loop:
        spec = (
            f"openai:judge-model,rubric=gpt-art,base_url={loop.base_url},cache=memory,"
            "filler=false,progress=false"
        )
        items = [item("gpt4"), item("bart", "- Ship it on Monday.")]
        results = asyncio.run(assess_items(items, parse_judge_spec(spec)))
        refused = len(loop.refused)
    assert refused == 1
    for result in results:
        assert result.status == "ok", result.reason
        assert dict(result.scores) == {f"art_{k}": float(v) for k, v in restated.items()}


def test_a_server_that_takes_the_schema_is_never_said_to_refuse_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The control: OpenAI's rules for a model with Structured Outputs refuse nothing."""
    with LoopbackOpenAI(qa_judge, model="gpt-4o") as loop:
        spec = f"openai:gpt-4o,base_url={loop.base_url},cache=memory,progress=false"
        run = judge_items(ITEMS, parse_judge_spec(spec), on_error="record")
        sent = [("response_format" in r.body) for r in loop.requests if restating(r)]
        assert loop.refused == []
    assert sent == [True] * 3 and run.usage["unstructured"] == 0
    assert "refuses" not in capsys.readouterr().err


def _fmt(name: str, minimum: bool) -> ResponseFormat:
    value: dict[str, Any] = {"type": "integer", **({"minimum": 1} if minimum else {})}
    schema = {
        "type": "object",
        "properties": {name: value},
        "required": [name],
        "additionalProperties": False,
    }
    return ResponseFormat.json_schema("final_values", schema)


def test_a_refused_schema_keyword_is_learnt_for_that_schema_only() -> None:
    """OpenAI refusing ``minimum`` in one schema says nothing of a schema without it."""
    rules = dialect("openai-keyword", schemas=("minimum",))
    with LoopbackOpenAI(lambda r: '{"x": 1}', model="gpt-4o", rules=rules) as loop:
        backend = OpenAIBackend(Endpoint("openai", "gpt-4o", base_url=loop.base_url))
        client = JudgeClient(backend, open_cache("memory"))

        async def ask(fmt: ResponseFormat, prompt: str) -> str:
            request = CompletionRequest(prompt, 0.0, 1.0, 16, None, response_format=fmt)
            return (await client.complete(request)).text

        async def run() -> list[str]:
            texts = [
                await ask(_fmt("score", True), "first"),
                await ask(_fmt("score", True), "second"),
                await ask(_fmt("adequacy", False), "third"),
            ]
            await client.aclose()
            return texts

        assert asyncio.run(run()) == ['{"x": 1}'] * 3
        carried = [r.body.get("response_format") is not None for r in loop.requests]
        refused = len(loop.refused)
    # refused once with `minimum`, then never sent again; the other schema is sent with it
    assert carried == [True, False, False, True] and refused == 1
    assert client.usage.structured_refused == 1 and client.usage.unstructured == 2


def test_max_tokens_too_large_is_the_users_setting_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No resend as ``max_completion_tokens``, no note of a refusal: the setting and the limit."""
    with LoopbackOpenAI(qa_judge, model="gpt-4o-2024-05-13") as loop:
        spec = (
            f"openai:gpt-4o-2024-05-13,base_url={loop.base_url},max_tokens=10000,"
            "cache=memory,progress=false"
        )
        run = judge_items(ITEMS[:1], parse_judge_spec(spec), on_error="record")
        sent = [r.body for r in loop.requests]
    (judgement,) = run.judgements
    assert judgement.status == "error"
    reason = judgement.reason
    assert "max_tokens=10000" in reason and "at most 4096" in reason and "\n" not in reason
    assert len(sent) == 1 and "max_completion_tokens" not in sent[0]
    err = capsys.readouterr().err
    assert "refuses max_tokens" not in err and "reasoning model" not in err


@pytest.mark.slow
def test_lm_eval_qa_through_vllm_xgrammar_wording_loses_no_item(tmp_path: Path) -> None:
    """``lm_eval --tasks elitr_qa_dev`` judged by a server refusing the schema as vLLM does."""

    def server(request: RecordedRequest) -> str:
        if "### Response to evaluate:" not in json.dumps(request.body):  # the tested model
            return "They were [PERSON3] and [PERSON6]."
        return qa_judge(request)

    out = tmp_path / "out"
    with LoopbackOpenAI(server, model="judge-model", rules=dialect("vllm-xgrammar")) as loop:
        judge = f"openai:judge-model,base_url={loop.base_url},cache={tmp_path / 'c.sqlite'}"
        proc = run_lm_eval(chat_qa_args(loop.chat_url, judge, out), env={"OPENAI_API_KEY": "k"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        refused = list(loop.refused)
    assert len(refused) == 1 and proc.stderr.count("refuses response_format json_schema") == 1
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    assert results["results"]["elitr_qa_dev"]["judge_score,openai:judge-model"] == 8.0
    usage = results["configs"]["elitr_qa_dev"]["metadata"]["judge_usage"]
    assert usage["structured_refused"] == 1 and usage["unstructured"] == usage["restated"] >= 2
    rows = [json.loads(x) for p in out.rglob("samples_*.jsonl") for x in p.read_text().splitlines()]
    judged = [json.loads(r["filtered_resps"][0][0])["judge"] for r in rows]
    assert judged and all(j["samples"][0]["score"] == 8.0 for j in judged)


@pytest.mark.slow
def test_lm_eval_gpt_art_through_a_422_validator_loses_no_item(tmp_path: Path) -> None:
    """AutoMin's GPT-ART judged by a server that answers 422 naming a schema keyword only."""
    from elitr_bench.judges.metrics import parse_filtered

    def server(request: RecordedRequest) -> str:
        if restating(request):
            return json.dumps({"adequacy": 7, "relevance": 8, "topicality": 9})
        if "on a scale 0 to 10" not in request.prompt:  # a readiness probe of the endpoint
            return "OK"
        return "Seven for adequacy, eight for relevance and nine for topicality."

    out = tmp_path / "run"
    with LoopbackOpenAI(server, model="judge-model", rules=dialect("validator-422")) as loop:
        spec = f"openai:judge-model,rubric=gpt-art,base_url={loop.base_url},filler=false,reask=0"
        proc = run_lm_eval(minutes_replay_args(spec, out), env={"OPENAI_API_KEY": "k"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        refused = list(loop.refused)
    assert len(refused) == 1 and refused[0].body["response_format"]["type"] == "json_schema"
    text = next(out.rglob("samples_*.jsonl")).read_text()
    samples = [json.loads(x) for x in text.split("\n") if x.strip()]
    judged = [parse_filtered(s["filtered_resps"])["judge"] for s in samples]  # type: ignore[index]
    assert len(judged) == 2
    for j in judged:
        assert j["status"] == "ok" and j["details"]["restated"] == [True]
        assert (j["scores"]["art_adequacy"], j["scores"]["art_topicality"]) == (7.0, 9.0)


def test_a_max_tokens_the_served_window_cannot_hold_stops_at_the_preflight() -> None:
    """VLLM names its window (``max_model_len``): the preflight tells before any item."""
    from elitr_bench.judges.errors import JudgeNotReadyError
    from elitr_bench.judges.readiness import check_judge_ready

    with LoopbackOpenAI(qa_judge, model="judge-model", max_model_len=2048) as loop:
        spec = f"openai:judge-model,base_url={loop.base_url},max_tokens=4096,cache=memory"
        with pytest.raises(JudgeNotReadyError) as err:
            check_judge_ready(parse_judge_spec(spec), network=True)
        sent = list(loop.requests)
    line = str(err.value)
    assert "max_tokens=4096" in line and "2048" in line and "\n" not in line
    assert sent == []  # nothing generated or judged, not even the preflight's completion


@pytest.mark.parametrize(
    ("status", "words", "param", "code", "outcome"),
    [
        (429, "Rate limit reached", None, "rate_limit_exceeded", ("RetryableError", None)),
        (503, "overloaded", None, None, ("RetryableError", None)),
        (401, "Incorrect API key", None, "invalid_api_key", ("AuthenticationRejected", None)),
        (404, "The model `x` does not exist", None, "model_not_found", ("RequestRefused", None)),
        (302, "Found", None, None, ("FatalBackendError", None)),
        (400, "The provided JSON schema contains features not supported by xgrammar.", None, 400,
         ("RequestRefused", None)),
        (422, '{"detail": [{"loc": ["body", "minimum"]}]}', None, None, ("RequestRefused", None)),
        (400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
         "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter",
         ("RequestRefused", "max_tokens")),
        (400, "max_tokens is too large: 10000. This model supports at most 4096 completion "
         "tokens, whereas you provided 10000.", "max_tokens", None, ("SettingOutOfRange", "4096")),
        (400, "'max_tokens' or 'max_completion_tokens' is too large: 10000. This model's maximum "
         "context length is 2048 tokens and your request has 50 input tokens (10000 > 2048 - "
         "50).", None, 400, ("SettingOutOfRange", "2048")),
        (400, "This model's maximum context length is 8192 tokens. However, your messages "
         "resulted in 9000 tokens.", "messages", "context_length_exceeded",
         ("PromptTooLong", None)),
        (400, "The response was filtered due to the prompt triggering Azure OpenAI's content "
         "management policy.", "prompt", "content_filter", ("FatalBackendError", None)),
    ],
)  # fmt: skip
def test_each_answer_is_one_typed_outcome(
    status: int, words: str, param: str | None, code: Any, outcome: tuple[str, str | None]
) -> None:
    """The OpenAI-compatible backend's one classification, in the servers' own words."""
    from elitr_bench.llm.openai_backend import classify

    got = classify(status, words, param, code, None)
    detail = getattr(got, "param", None) or getattr(got, "limit", None)
    assert (type(got).__name__, detail) == outcome
    assert getattr(got, "unsupported", False) is (code == "unsupported_parameter")
