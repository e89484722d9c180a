"""The judge conversation against a server that refuses what OpenAI's API refuses (issue 39).

The paper's judge, ``openai:gpt-4-0613``, takes no ``response_format`` of type
``json_schema``: its restatement turns are sent once with it (refused with the API's HTTP
400), then without it, and no item is lost. The logged record keeps the judge's reply
apart from its restatement, later steps read both, and every unscored item says why.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.asking import with_restatement
from elitr_bench.judges.mesa.prompts import challenge_prompt
from elitr_bench.judges.qa.engine import JudgeItem, Judgement, judge_items
from elitr_bench.llm.base import CompletionRequest, RequestRefused
from elitr_bench.llm.cache import Completion, open_cache
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.errors import JudgeRequestRefused
from elitr_bench.llm.memory import Scope
from elitr_bench.llm.structured import known_refusal
from tests.conftest import run_lm_eval
from tests.judges.conftest import chat_qa_args, response_in
from tests.judges.test_mesa_loopback import ITEM, run
from tests.judges.test_mesa_script import classify, make_script
from tests.judges.test_restatement_e2e import restating
from tests.support.judge_filter import after_run_errors
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply, api_refusal

# --- the proof: the paper's judge through the real lm_eval ---------------------------------
#: Items from this index on are restated to another value than their reply stated.
CONTRADICTED = 12


def _kind(index: int) -> str:
    if index >= CONTRADICTED:
        return "contradicted"
    return ("prose", "asked", "conflicting")[index % 3]


def _score(index: int) -> int:
    return 2 + index % 8


def _first_reply(index: int) -> str:
    s = _score(index)
    if _kind(index) in ("prose", "contradicted"):
        return f"Feedback: it names the right people and day. I would give it a {s} out of 10."
    if _kind(index) == "asked":
        return f"Feedback: correct and concise.\n\\boxed{{{s}}}"
    return f"Feedback: mostly right.\n\\boxed{{{s - 1}}}\nOn reflection, more.\n\\boxed{{{s}}}"


@pytest.mark.slow
def _restated(index: int) -> int:
    return _score(index) - 1 if _kind(index) == "contradicted" else _score(index)


def test_the_papers_judge_loses_no_item_on_a_server_that_refuses_structured_output(
    tmp_path: Path,
) -> None:
    """12 QA items judged by gpt-4-0613 at a loopback that refuses json_schema like the API.

    Three more items are restated to another value than the reply stated ("a 7 out of 10",
    then ``{"score": 6}``); the four whose reply gives two boxes are never restated (it
    could only choose, issue 46). Only they stay unscored, with the reason, the reply logged.
    """
    lock = threading.Lock()
    answered: list[str] = []

    def server(request: RecordedRequest) -> str:
        if request.body.get("model") == "loopback":  # the tested model: one answer per item
            with lock:
                answered.append(f"Answer number {len(answered)}.")
                return answered[-1]
        if "### Response to evaluate:" not in json.dumps(request.body):  # preflight probe
            return "OK"
        if restating(request):
            assert "response_format" not in request.body  # the API refuses it: never here
            index = int(response_in_chat(request).rsplit(" ", 1)[1].rstrip("."))
            return json.dumps({"score": _restated(index)})
        index = int(response_in(request).rsplit(" ", 1)[1].rstrip("."))
        return _first_reply(index)

    out = tmp_path / "out"
    with LoopbackOpenAI(server) as loop:
        judge = f"openai:gpt-4-0613,base_url={loop.base_url},cache={tmp_path / 'c.sqlite'}"
        args = chat_qa_args(loop.chat_url, judge, out, limit=CONTRADICTED + 3)
        proc = run_lm_eval(args, env={"OPENAI_API_KEY": "sk-test"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        judged = [r for r in loop.requests if "### Response to evaluate:" in json.dumps(r.body)]
        refused = list(loop.refused)
    restated = [r for r in judged if restating(r)]
    # 15 first replies; 7 restated (prose, contradicted); the first restatement was tried
    # with its schema and refused, every later one was sent once
    assert len(judged) == 15 + 7 + 1 and len(restated) == 8
    assert [r.body["response_format"]["type"] for r in refused] == ["json_schema"]
    assert refused[0] is restated[0]
    assert proc.stderr.count("refuses response_format json_schema") == 1
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    metrics = results["results"]["elitr_qa_dev"]
    assert metrics["judge_errors,openai:gpt-4-0613"] == 0.0  # no item lost, no breaker
    assert metrics["judge_unscored,openai:gpt-4-0613"] == 7.0  # contradicted, two boxes
    rows = [json.loads(x) for p in out.rglob("samples_*.jsonl") for x in p.read_text().splitlines()]
    assert len(rows) == 15
    for row in rows:
        judgement = json.loads(row["filtered_resps"][0][0])["judge"]
        index = int(row["resps"][0][0].rsplit(" ", 1)[1].rstrip("."))
        [sample] = judgement["samples"]
        if _kind(index) == "contradicted":  # the restatement never overrides the reply
            said, got = _score(index), _restated(index)
            assert judgement["status"] == "unscored" and sample["native"] is None
            why = f"restatement disagrees with the reply ({said} in the reply, {got} restated)"
            assert sample["reason"] == why and judgement["reason"] == why
        elif _kind(index) == "conflicting":  # two boxes: unscored, both named, no restatement
            s = _score(index)
            assert judgement["status"] == "unscored" and sample["native"] is None
            assert sample["reason"] == f"the judge gave {s - 1} and {s} for score"
        else:
            assert judgement["status"] == "scored" and sample["native"] == _score(index)
        assert sample["raw"] == _first_reply(index)  # the judge's feedback is logged
        assert sample["restated"] == (_kind(index) in ("prose", "contradicted"))
        restatement = json.dumps({"score": _restated(index)}) if sample["restated"] else ""
        assert sample["restatement"] == restatement
    usage = results["configs"]["elitr_qa_dev"]["metadata"]["judge_usage"]
    assert usage["restated"] == 7 and usage["structured_refused"] == 1
    assert usage["unstructured"] == 7 and usage["refused"] == 1 and usage["failed"] == 0


def response_in_chat(request: RecordedRequest) -> str:
    """The response under judgement in a restatement turn (its first message)."""
    first = request.body["messages"][0]["content"]
    return response_in(RecordedRequest("POST", "", {}, {"prompt": first}, 0.0, 0))


# --- the table of OpenAI's models, at OpenAI's own endpoint --------------------------------
class _Recording:
    """A backend at OpenAI's own endpoint that records what it is sent."""

    kind = "openai"
    endpoint = ""

    def __init__(self, model: str, refuse: str = "") -> None:
        self.model = model
        self.sent: list[CompletionRequest] = []
        self.refuse = refuse

    async def complete(self, request: CompletionRequest) -> Completion:
        self.sent.append(request)
        if self.refuse:
            raise RequestRefused(self.refuse, 400, "seed")
        if len(request.messages) > 1:
            return Completion('{"score": 6}', 1, 1, finish_reason="stop")
        return Completion("Partly right, a 6 out of 10.", 1, 1, finish_reason="stop")

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize(
    ("model", "json_schema", "json_object"),
    [("gpt-4-0613", True, True), ("gpt-4", True, True), ("gpt-4-32k-0613", True, True),
     ("gpt-4-turbo-2024-04-09", True, False), ("gpt-4o-2024-05-13", True, False),
     ("chatgpt-4o-latest", True, False), ("gpt-3.5-turbo-0125", True, False),
     ("gpt-3.5-turbo-0613", True, True), ("gpt-4o", False, False),
     ("gpt-4o-2024-08-06", False, False), ("gpt-4o-mini", False, False), ("gpt-4.1", False, False)],
)  # fmt: skip
def test_the_table_agrees_with_the_loopback_api(
    model: str, json_schema: bool, json_object: bool
) -> None:
    scope = Scope("openai", "", model)
    assert known_refusal(scope, "json_schema") is json_schema
    assert known_refusal(scope, "json_object") is json_object
    for kind, refused in (("json_schema", json_schema), ("json_object", json_object)):
        fmt: dict[str, Any] = {"type": kind}
        if kind == "json_schema":
            schema = {
                "type": "object",
                "properties": {},
                "required": [],
                "additionalProperties": False,
            }
            fmt["json_schema"] = {"name": "x", "strict": True, "schema": schema}
        body = {
            "model": model,
            "messages": [{"role": "user", "content": "json"}],
            "response_format": fmt,
        }
        reply = api_refusal(RecordedRequest("POST", "", {}, body, 0.0, 0))
        assert (reply is not None) is refused
    assert not known_refusal(Scope("openai", "http://127.0.0.1:8000/v1", model), "json_schema")


def test_a_known_model_is_never_sent_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    backend = _Recording("gpt-4-0613")
    client = JudgeClient(backend, open_cache("memory"))
    spec = parse_judge_spec("openai:gpt-4-0613,cache=memory,progress=false")
    from elitr_bench.judges.qa.engine import LLMJudge

    items = [JudgeItem("Q?", "A.", "A."), JudgeItem("R?", "B.", "B.")]
    run = judge_items(items, spec, judge=LLMJudge(spec, client))
    assert [j.score for j in run.judgements] == [6.0, 6.0]
    assert len(backend.sent) == 4 and not any(r.response_format for r in backend.sent)
    assert run.usage["unstructured"] == 2 and run.usage["structured_refused"] == 0
    assert capsys.readouterr().err.count("takes no response_format json_schema") == 1


def _judge_one(backend: _Recording) -> Judgement:
    """One QA item judged through ``backend`` (failures recorded, not raised)."""
    spec = parse_judge_spec("openai:judge-x,cache=memory,progress=false")
    from elitr_bench.judges.qa.engine import LLMJudge

    client = JudgeClient(backend, open_cache("memory"))
    run = judge_items(
        [JudgeItem("Q?", "A.", "A.")], spec, judge=LLMJudge(spec, client), on_error="record"
    )
    (judgement,) = run.judgements
    return judgement


def test_a_refused_request_without_an_optional_extra_fails_the_item() -> None:
    """Nothing to leave out: the refusal is the item's error, in the server's words."""
    backend = _Recording("judge-x", refuse="HTTP 400: Unsupported parameter: 'seed'")
    judgement = _judge_one(backend)
    assert judgement.status == "error" and "Unsupported parameter" in judgement.reason
    # typed: the server refused this request (it answers), not "the judge is gone"
    request = CompletionRequest("Q?", 0.0, 1.0, 8, None)
    with pytest.raises(JudgeRequestRefused, match="Unsupported parameter: 'seed'"):
        asyncio.run(JudgeClient(backend, open_cache("memory")).complete(request))


class _RefusesRestatements(_Recording):
    """Answers the first prompt, refuses every restatement turn (a 400 it cannot work around)."""

    async def complete(self, request: CompletionRequest) -> Completion:
        if len(request.messages) > 1:
            self.sent.append(request)
            raise RequestRefused(self.refuse, 400, "seed")
        return await _Recording("judge-x").complete(request)


def test_a_refused_restatement_keeps_the_reply_unscored_with_the_reason() -> None:
    """Issue 46: the first reply was received and cached, so the item is never an error."""
    backend = _RefusesRestatements("judge-x", refuse="HTTP 400: Unsupported parameter: 'seed'")
    judgement = _judge_one(backend)
    assert judgement.status == "unscored" and judgement.score is None
    assert "restatement not answered: " in judgement.reason
    assert "Unsupported parameter" in judgement.reason
    assert judgement.samples[0].raw == "Partly right, a 6 out of 10."  # the reply is kept
    # only the restatement turn was refused (the transport may drop an optional extra once)
    assert backend.sent and all(r.prompt.startswith("Restate your final") for r in backend.sent)


# --- every unscored item says why ----------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "reply", "reason"),
    [
        ("rambling", lambda r: Reply("and so on " * 40, finish_reason="length"), "cut off"),
        ("empty", lambda r: Reply(""), "empty reply"),
        (
            "restated into nothing",
            lambda r: "still no score" if restating(r) else "Fine, a 7 of sorts.",
            "restatement",
        ),
    ],
)
def test_every_unscored_item_has_a_reason(
    loopback: LoopbackOpenAI, name: str, reply: Any, reason: str
) -> None:
    loopback.handler = reply
    spec = f"openai:judge-x,base_url={loopback.base_url},cache=memory,progress=false,reask=1"
    run = judge_items([JudgeItem("Q?", "A.", "A.")], parse_judge_spec(spec), on_error="record")
    [judgement] = run.judgements
    assert judgement.status == "unscored" and reason in judgement.reason, name
    assert judgement.to_dict()["reason"] == judgement.reason


# --- MESA's debate reads the draft's words with its restated values --------------------------
def test_challengers_read_the_drafts_reasoning_with_its_restated_values(
    loopback: LoopbackOpenAI,
) -> None:
    script = make_script()
    prose = "Omissions are few: the date is there, the owner is not. I rate them a 4, confidence 8."
    restated = '{"rating": 4, "confidence": 8}'

    def handler(request: RecordedRequest) -> Reply | str:
        if restating(request):
            return restated
        if classify(request.prompt) == ("scoring", "OM", "single"):
            return prose
        return script(request)

    loopback.handler = handler
    (result,) = run(loopback, [ITEM], ",debate=same")
    drafts = [r for r in loopback.requests if restating(r)]
    assert len(drafts) == 1 and drafts[0].body["messages"][1]["content"] == prose
    draft_prompt = drafts[0].body["messages"][0]["content"]
    answer = with_restatement(prose, restated)
    assert prose in answer and answer.endswith(restated)
    sent = {r.prompt for r in loopback.requests}
    assert all(challenge_prompt(draft_prompt, answer, i, 3) in sent for i in range(3))
    trace = json.dumps(result.details)
    assert json.dumps(prose)[1:-1] in trace and json.dumps(restated)[1:-1] in trace


# --- the exit line of a failed run never suggests what fails the same way -------------------
_DOCS = [
    {"question": f"Q{i}?", "answer": "r", "meeting_id": "m", "question_id": str(i)}
    for i in range(4)
]


def test_a_refused_schema_leaves_no_item_for_the_finish_line(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from elitr_bench.judges.qa.lm_eval_filter import judge_responses

    lines = after_run_errors(monkeypatch)
    loopback.handler = lambda r: '{"score": 5}' if restating(r) else "Half right: a 5 of 10."
    spec = f"openai:gpt-4-0613,base_url={loopback.base_url},retries=0,concurrency=1,cache=memory"
    out = judge_responses([[f"answer {i}"] for i in range(4)], _DOCS, parse_judge_spec(spec))
    assert [json.loads(row[0])["judge"]["score"] for row in out] == [5.0] * 4
    assert lines == [] and len(loopback.refused) == 1


def test_a_request_the_server_refuses_is_not_suggested_again(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request the server refuses (HTTP 400): `score` with the same spec would fail alike.

    (o3's refusal of ``max_tokens`` was this test's example until reasoning models got the
    parameters they take: see tests/llm/test_reasoning_models.py.)
    """
    from elitr_bench.judges.qa.lm_eval_filter import judge_responses

    error = {
        "message": "Invalid value for 'logit_bias': the request's token ids are unknown.",
        "type": "invalid_request_error",
        "param": "logit_bias",
        "code": "invalid_value",
    }
    loopback.handler = lambda request: Reply(status=400, body={"error": error})
    lines = after_run_errors(monkeypatch)
    spec = f"openai:gpt-4o,base_url={loopback.base_url},retries=0,concurrency=1,cache=memory"
    out = judge_responses([[f"answer {i}"] for i in range(4)], _DOCS, parse_judge_spec(spec))
    assert {json.loads(row[0])["judge"]["status"] for row in out} == {"error"}
    [line] = lines
    assert "Invalid value for 'logit_bias'" in line
    assert "would fail the same way" in line and "--judge openai:gpt-4o" not in line
    assert line.endswith("finish with: elitr-bench score out --judge A_FIXED_JUDGE_SPEC")
