"""A real OpenAI-compatible server in the suite: vLLM serving SmolLM2 on the CPU.

The loopback server of tests/support answers what a test tells it to; this one is the
server users run (``vllm serve``, here ``python -m vllm.entrypoints.openai.api_server``
from ``make install-vllm``'s venv), started once per session (``vllm_server`` fixture) and
driven from this venv as a user would: lm-eval's ``local-chat-completions`` on the
multi-turn task, and our ``openai:`` judge with ``base_url=`` on QA items.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_lm_eval
from tests.support.lm_eval_runs import lm_eval_args
from tests.support.vllm_server import VLLMServer

pytestmark = pytest.mark.slow

#: The two first turns of Conv on meeting_en_dev_006, whose transcript (4,824 SmolLM2
#: tokens) fits the server's 8,192-token window whole: API models get no over-length cut.
CONV_DOCS = [73, 74]


def _samples(out: Path, task: str) -> list[dict[str, Any]]:
    path = next(out.rglob(f"samples_{task}_*.jsonl"))
    return sorted(
        (json.loads(line) for line in path.read_text().splitlines()), key=lambda s: s["doc_id"]
    )


def _messages(sample: dict[str, Any]) -> list[dict[str, str]]:
    """The chat lm-eval sent for a sample (logged as the JSON text of the message list)."""
    logged = sample["arguments"]["gen_args_0"]["arg_0"]
    text = logged[0] if isinstance(logged, list) else logged
    messages: list[dict[str, str]] = json.loads(text)
    return messages


def test_local_chat_completions_turns_carry_the_models_own_answers(
    vllm_server: VLLMServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    model_args = (
        f"model={vllm_server.model},base_url={vllm_server.chat_url},"
        "num_concurrent=2,max_retries=1,tokenized_requests=False"
    )
    args = lm_eval_args(
        "local-chat-completions", model_args, "elitr_conv_dev",
        limit=None, out=out, max_gen_toks=24, chat=True, metadata={"judge": "none"},
        extra=["--samples", json.dumps({"elitr_conv_dev": CONV_DOCS})],
    )  # fmt: skip
    proc = run_lm_eval(args, env={"OPENAI_API_KEY": "EMPTY"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, second = sorted(_samples(out, "elitr_conv_dev"), key=lambda s: int(s["doc"]["turn"]))
    turn1, turn2 = _messages(first), _messages(second)
    assert [m["role"] for m in turn1] == ["user"]
    assert [m["role"] for m in turn2] == ["user", "assistant", "user"]
    answer = first["resps"][0][0]
    assert answer.strip()
    # turn 2 resends turn 1 verbatim, then what the server answered to it, then its question
    assert turn2[0] == turn1[0]
    assert turn2[1]["content"].strip() == answer.strip()
    assert turn2[2]["content"].endswith(second["doc"]["question"])
    # the answers are the server's: vLLM logged each as the output of one of its requests
    for sample in (first, second):
        assert f"output: {sample['resps'][0][0]!r}" in vllm_server.log_text()


#: vLLM's request log (``--enable-log-requests --enable-log-outputs``): a request with a
#: JSON schema (its structured-output parameters), and each request's output.
_SCHEMA_REQUEST = re.compile(
    r"Received request (\S+): params: .*"
    r"structured_outputs=StructuredOutputsParams\(json=(\{.*?\}), regex="
)
_OUTPUT = re.compile(r"Generated response (\S+): output: (.*), finish_reason: (\w+)")


def _schema_replies(log: str) -> list[tuple[dict[str, Any], str]]:
    """(schema, output) of every request the server decoded under a JSON schema."""
    outputs = {m[1]: ast.literal_eval(m[2]) for m in _OUTPUT.finditer(log)}
    return [(ast.literal_eval(m[2]), outputs[m[1]]) for m in _SCHEMA_REQUEST.finditer(log)]


def test_vllm_judges_qa_items_with_schema_restatements(
    vllm_server: VLLMServer, tmp_path: Path
) -> None:
    r"""The paper's QA judge prompt on a real server: no item lost, every restatement parses.

    SmolLM2 (135M) rarely ends its reply with the asked ``\boxed{N}``, so the judge asks it
    to restate in one more turn, with the value's JSON schema as ``response_format``; vLLM
    decodes that turn under the schema (xgrammar), so every restatement must parse.
    """
    out = tmp_path / "out"
    judge = (
        f"openai:{vllm_server.model},base_url={vllm_server.base_url},max_tokens=96,"
        "reask=0,concurrency=4,cache=off,preflight=false"
    )
    args = [
        "--model", "elitr-replay",
        "--model_args", "system=gpt-4",
        "--tasks", "elitr_qa_dev",
        "--limit", "6",
        "--log_samples",
        "--output_path", str(out),
        "--metadata", json.dumps({"judge": judge}),
    ]  # fmt: skip
    log_before = len(vllm_server.log_text())
    proc = run_lm_eval(args, env={"OPENAI_API_KEY": "EMPTY"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    samples = _samples(out, "elitr_qa_dev")
    assert len(samples) == 6
    judged = [json.loads(s["filtered_resps"][0][0])["judge"] for s in samples]
    # no item lost: each one scored, or unscored with its reason; none an error
    for item in judged:
        assert item["status"] in ("scored", "unscored"), item
        if item["status"] == "unscored":
            assert all(s["reason"] for s in item["samples"]), item
    restated = [s for item in judged for s in item["samples"] if s.get("restated")]
    assert restated, judged  # the point of the test: restatement turns happened
    # each restatement went out with the score's schema; vLLM's reply to it is that JSON
    replies = _schema_replies(vllm_server.log_text()[log_before:])
    assert len(replies) == len(restated), replies
    for schema, output in replies:
        assert schema["required"] == ["score"], schema
        value = json.loads(output)["score"]
        assert isinstance(value, int) and 1 <= value <= 10, output
    # and the judge read it: scored, unless it disagrees with the reply it restates
    for sample in restated:
        assert sample["score"] is not None or "disagree" in sample["reason"], sample


def test_a_schema_vllm_cannot_compile_costs_one_refusal_and_no_reply(
    vllm_server: VLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A schema no vLLM backend compiles costs one refusal (its own 400 words), no reply.

    The turn is sent once more without it and answered; another schema still goes with it.
    """
    import asyncio

    from elitr_bench.llm.base import CompletionRequest, ResponseFormat
    from elitr_bench.llm.cache import open_cache
    from elitr_bench.llm.client import JudgeClient
    from elitr_bench.llm.endpoint import Endpoint
    from elitr_bench.llm.openai_backend import OpenAIBackend

    def fmt(minimum: Any) -> ResponseFormat:
        value = {"type": "integer", "minimum": minimum, "maximum": 10}
        schema = {"type": "object", "properties": {"score": value}, "required": ["score"]}
        return ResponseFormat.json_schema("final_values", schema, strict=False)

    endpoint = Endpoint("openai", vllm_server.model, base_url=vllm_server.base_url)
    client = JudgeClient(OpenAIBackend(endpoint, {}), open_cache("memory"))

    async def run() -> list[str]:
        texts = []
        for minimum, prompt in (("one", "Rate 7 as JSON."), ("one", "Rate 8."), (1, "Rate 9.")):
            request = CompletionRequest(prompt, 0.0, 1.0, 12, None, response_format=fmt(minimum))
            texts.append((await client.complete(request)).text)
        await client.aclose()
        return texts

    texts = asyncio.run(run())
    assert len(texts) == 3 and json.loads(texts[2])["score"] in range(1, 11), texts
    usage = client.usage
    assert (usage.refused, usage.structured_refused, usage.unstructured) == (1, 1, 2), usage
    assert capsys.readouterr().err.count("refuses response_format json_schema (HTTP 400)") == 1
