"""The restatement turn end to end, through the real CLIs and a loopback judge (issue 30).

For every family the judge first answers in prose, or in the asked format with a
conflicting second value; it is then asked, in the same chat, for its final values as one
JSON object, and the item ends with the restated value. A reply already in the asked
format costs no second call (the server's request count says so).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli import main
from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.metrics import parse_filtered
from elitr_bench.judges.minutes.prompts import AFGR, ART
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.judges.rubrics import GPT4
from elitr_bench.judges.usage import usage_line
from elitr_bench.llm import memory
from tests.conftest import run_lm_eval
from tests.judges.conftest import chat_qa_args, minutes_replay_args
from tests.judges.test_cream_arena import FAST, cream_script, write_run
from tests.judges.test_mesa_script import PAPER_RATINGS, classify, make_script
from tests.support.openai_server import (
    LoopbackOpenAI,
    RecordedRequest,
    Reply,
    fails_every_restatement,
    is_restatement,
    restates_the_prose,
)


def restating(request: RecordedRequest) -> bool:
    """Whether a request is a restatement turn: prompt, the judge's reply, the message."""
    messages = request.body["messages"]
    return len(messages) >= 3 and messages[-1]["content"].startswith("Restate your final")


def check_turn(request: RecordedRequest, first_reply: str, schema: bool = True) -> None:
    """The restatement turn holds the original prompt, the reply, then the fixed message.

    ``schema``: the judge takes structured output, so the turn carries its JSON schema
    (``structured=auto``); a judge that refuses it gets the same turn without.
    """
    messages = request.body["messages"]
    assert [m["role"] for m in messages[-3:]] == ["user", "assistant", "user"]
    assert messages[-2]["content"] == first_reply
    fmt = request.body.get("response_format")
    assert (fmt or {}).get("type") == ("json_schema" if schema else None)


# --- QA: elitr_qa_dev through lm_eval -----------------------------------------------------
PROSE = "The response names both people correctly. I would give it a 7 out of 10."
#: A box and a prose value that differ: a judge asked to restate would give the prose's 4.
TWO_VALUES = "Feedback: both people, but one role is wrong. I'd rate it a 4.\n\\boxed{9}"


def by_arrival(judged: list[str], reply: Callable[[int], str]) -> Callable[[RecordedRequest], str]:
    """The tested model's fixed answer, and the judge's ``reply(n)`` to the n-th judge prompt.

    ``judged`` collects the judge prompts in the order they first arrived (a prompt asked
    again keeps its number).
    """
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> str:
        if "### Response to evaluate:" not in request.prompt:  # the tested model
            return "They were [PERSON3] and [PERSON6]."
        with lock:
            if request.prompt not in judged:
                judged.append(request.prompt)
            return reply(judged.index(request.prompt))

    return answer


@pytest.mark.slow
def test_qa_lm_eval_restates_prose_and_reads_a_boxed_reply_at_once(tmp_path: Path) -> None:
    """Prose is restated; a box is read at once; a box beside another value is never restated.

    The third judge restates its prose value when asked (``restates_the_prose``): had a
    restatement been sent for its reply, it would have chosen the 4 over the box's 9.
    """
    first_judged: list[str] = []
    first = by_arrival(
        first_judged, lambda n: [PROSE, "Feedback: correct and concise.\n\\boxed{9}", TWO_VALUES][n]
    )

    def prose_value(request: RecordedRequest) -> str:
        check_turn(request, PROSE)  # only the prose reply is ever restated
        assert request.body["messages"][0]["content"] == first_judged[0]
        reply = request.body["messages"][-2]["content"]
        return '{"score": 4}' if reply == TWO_VALUES else '{"score": 7}'

    server = restates_the_prose(first, prose_value)
    out = tmp_path / "out"
    # Listed like vLLM lists its model: the preflight reads the judge's window from it.
    with LoopbackOpenAI(server, model="judge-model", max_model_len=8192) as loop:
        judge = f"openai:judge-model,base_url={loop.base_url},cache={tmp_path / 'c.sqlite'}"
        args = chat_qa_args(loop.chat_url, judge, out, limit=3)
        proc = run_lm_eval(args, env={"OPENAI_API_KEY": "sk-test"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "context window is unknown" not in proc.stderr
        judged = [r for r in loop.requests if "### Response to evaluate:" in str(r.body)]
        # three judge prompts, one restatement: neither box cost a second call
        assert len(judged) == 4 and sum(map(restating, judged)) == 1
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    assert results["results"]["elitr_qa_dev"]["judge_score,openai:judge-model"] == 8.0
    rows = [json.loads(x) for p in out.rglob("samples_*.jsonl") for x in p.read_text().splitlines()]
    samples = sorted(
        (json.loads(r["filtered_resps"][0][0])["judge"]["samples"][0] for r in rows),
        key=lambda s: (s["score"] is None, s["score"] or 0),
    )
    assert [(s["score"], s["restated"], s["attempts"]) for s in samples] == [
        (7.0, True, 2),
        (9.0, False, 1),
        (None, False, 1),
    ]
    assert [(s["raw"], s["restatement"]) for s in samples] == [
        (PROSE, '{"score": 7}'),  # the feedback stays logged
        ("Feedback: correct and concise.\n\\boxed{9}", ""),
        (TWO_VALUES, ""),
    ]
    assert samples[2]["reason"] == "the judge gave 9 and 4 for score"
    usage = results["configs"]["elitr_qa_dev"]["metadata"]["judge_usage"]
    assert usage["restated"] == 1 and usage["judge_restated"] == 1


# --- AutoMin GPT-ART and GPT-AFGR through lm_eval ------------------------------------------
ART_PROSE = (
    "They earn 7 out of 10 for adequacy, 8 out of 10 for relevance and 9 out of 10 for topicality."
)
AFGR_PROSE_LINE = (  # relevance in prose: one value, which the restatement must confirm
    "Adequacy: 8\nFluency: 9\nGrammatical correctness: 10\n\nRelevance is a 7."
)
CLEAN = {
    "gpt-art": "Adequacy: 5\nRelevance: 6\nTopicality: 7",
    "gpt-afgr": "Adequacy: 5\nFluency: 6\nGrammatical correctness: 7\nRelevance: 8",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "first", "restated", "metrics"),
    [
        (
            "gpt-art",
            ART_PROSE,
            {"adequacy": 7, "relevance": 8, "topicality": 9},
            {"art_adequacy": 7.0, "art_relevance": 8.0, "art_topicality": 9.0},
        ),
        (
            "gpt-afgr",
            AFGR_PROSE_LINE,
            {"adequacy": 8, "fluency": 9, "grammaticality": 10, "relevance": 7},
            {"afgr_adequacy": 8.0, "afgr_fluency": 9.0, "afgr_grammaticality": 10.0},
        ),
    ],
)
def test_minutes_lm_eval_restates_and_reads_clean_lines_at_once(
    tmp_path: Path, method: str, first: str, restated: dict[str, int], metrics: dict[str, float]
) -> None:
    prompt = ART if method == "gpt-art" else AFGR
    seen: dict[str, str] = {}
    lock = threading.Lock()

    def server(request: RecordedRequest) -> str:
        if restating(request):
            # gpt-4-32k refuses json_schema like the API: only the turn without it gets here
            check_turn(request, first, schema=False)
            assert request.body["messages"][-1]["content"] == prompt.grammar.restatement.message
            return json.dumps(restated)
        if "on a scale 0 to 10" not in request.prompt:  # a readiness probe of the endpoint
            return "OK"
        with lock:  # the first meeting judged answers badly, the other in the asked lines
            seen.setdefault("bad", request.prompt)
        return first if request.prompt == seen["bad"] else CLEAN[method]

    out = tmp_path / "run"
    with LoopbackOpenAI(server) as loop:
        spec = f"openai:gpt-4-32k,rubric={method},base_url={loop.base_url},filler=false,reask=0"
        proc = run_lm_eval(minutes_replay_args(spec, out), env={"OPENAI_API_KEY": "sk-test"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        requests = [r for r in loop.requests if "on a scale 0 to 10" in json.dumps(r.body)]
        # the restatement is refused with its schema once, then sent without it
        assert len(requests) == 4 and sum(map(restating, requests)) == 2
        assert [r.body["response_format"]["type"] for r in loop.refused] == ["json_schema"]
    assert "2 restatements included" in proc.stderr  # the preflight counts them
    text = next(out.rglob("samples_*.jsonl")).read_text()
    samples = [json.loads(x) for x in text.split("\n") if x.strip()]
    judged = [parse_filtered(s["filtered_resps"])["judge"] for s in samples]  # type: ignore[index]
    restated_item = next(j for j in judged if j["details"]["raw"][0][0] == first)
    assert restated_item["status"] == "ok" and restated_item["details"]["restated"] == [True]
    # the judge's words and the values restated from them, apart
    assert restated_item["details"]["reply"] == [first]
    assert [json.loads(x) for x in restated_item["details"]["restatement"]] == [restated]
    assert {k: restated_item["scores"][k] for k in metrics} == metrics
    clean = next(j for j in judged if j is not restated_item)
    assert clean["status"] == "ok" and len(clean["details"]["raw"][0]) == 1
    assert "restated" not in clean["details"]


# --- CREAM: elitr-bench arena ---------------------------------------------------------------
def test_cream_arena_restates_a_grouped_key_fact_list(
    tmp_path: Path, loopback: LoopbackOpenAI
) -> None:
    plain = cream_script()
    grouped: dict[str, list[str]] = {}

    def handler(request: RecordedRequest) -> str:
        messages = request.body["messages"]
        if restating(request):
            facts = grouped[messages[0]["content"]]
            return json.dumps({"key_facts": facts})
        reply = plain(request)
        if len(messages) == 1:  # extraction: answered grouped under a heading item
            facts = [line.split(". ", 1)[1] for line in reply.splitlines()[1:]]
            grouped[messages[0]["content"]] = facts
            return "- **Key facts:**\n" + "\n".join(f"  - {f}" for f in facts)
        # The alignment follows the restated extraction in the same chat; the plain
        # script reads its facts from a numbered list, shown to it on a copy (the log
        # keeps every request as it was sent).
        assert messages[2]["content"].startswith("Restate your final key facts")
        facts = grouped[messages[0]["content"]]
        fake = "Key facts:\n" + "\n".join(f"{i}. {f}" for i, f in enumerate(facts, 1))
        shown = [{"role": "user", "content": ""}, {"content": fake}, messages[-1]]
        return plain(dataclasses.replace(request, body={**request.body, "messages": shown}))

    loopback.handler = handler
    loopback.model = "judge-model"
    full = write_run(tmp_path, "model-full", "full")
    half = write_run(tmp_path, "model-half", "half")
    out = tmp_path / "arena"
    spec = f"openai:judge-model,base_url={loopback.base_url}"
    assert main(["arena", str(full), str(half), "--judge", spec, "--out", str(out), *FAST]) == 0
    requests = loopback.snapshot()
    # 4 comparisons x (extraction + its restatement + 2 alignments in the asked JSON)
    assert len(requests) == 4 * 4 and sum(map(restating, requests)) == 4
    # Each alignment was sent in the extraction's chat, after the restated facts.
    alignments = [r for r in requests if len(r.body["messages"]) == 5]
    assert len(alignments) == 8
    for request in alignments:
        chat = request.body["messages"]
        assert [m["role"] for m in chat] == ["user", "assistant", "user", "assistant", "user"]
        assert chat[1]["content"].startswith("- **Key facts:**")
        assert chat[2]["content"].startswith("Restate your final key facts")
        restated = {"key_facts": grouped[chat[0]["content"]]}
        assert json.loads(chat[3]["content"]) == restated
        assert chat[4]["content"].startswith("You now have a summary")
    rows = [json.loads(x) for x in (out / "comparisons.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" for r in rows)
    for row in rows:
        # the judge's grouped reply is logged as it came, the restated list apart from it
        assert row["extraction_raw"].startswith("- **Key facts:**\n")
        assert row["key_facts"] and json.loads(row["extraction_restatement"]) == {
            "key_facts": row["key_facts"]
        }
        assert all("restatement" not in side for side in row["sides"])  # read at once


# --- MESA: elitr-bench mesa ---------------------------------------------------------------
def test_mesa_command_restates_prose_and_incomplete_scoring(
    loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    script = make_script()
    firsts: dict[str, str] = {}

    def handler(request: RecordedRequest) -> Reply | str:
        if restating(request):
            step, code, _ = classify(request.body["messages"][0]["content"])
            assert step == "scoring" and code in ("OM", "REP")
            check_turn(request, firsts[code])
            rating, confidence = PAPER_RATINGS[code]
            return json.dumps({"rating": rating, "confidence": confidence})
        step, code, _ = classify(request.prompt)
        if step == "scoring" and code == "OM":
            firsts[code] = "I rate the omissions a 4, with confidence 8."
            return firsts[code]
        if step == "scoring" and code == "REP":
            firsts[code] = json.dumps(  # no rating field: the reasoning's one value
                {"reasoning": "Overall I rate this a 1.", "confidence": 9.0}
            )
            return firsts[code]
        return script(request)

    loopback.handler = handler
    loopback.model = "loop-m"
    judge = f"openai:loop-m,base_url={loopback.base_url},progress=false,debate=none"
    out = tmp_path / "mesa"
    args = ["mesa", "--systems", "gpt4", "--meetings", "1", "--judge", judge, "--out", str(out)]
    assert main(args) == 0
    requests = loopback.snapshot()
    assert len(requests) == 24 + 2 and sum(map(restating, requests)) == 2
    [row] = [json.loads(x) for x in (out / "mesa.jsonl").read_text().splitlines()]
    assert row["types"]["OM"]["rating"] == 4.0 and row["types"]["REP"]["rating"] == 1.0
    assert row["quality"] == pytest.approx(1 + (5 - 14.24 / 6.19) * 9 / 5)
    run = json.loads((out / "run.json").read_text())
    assert run["usage"]["restated"] == 2


# --- a restatement turn that fails (issue 46, item 5) ----------------------------------------
def test_a_failing_restatement_never_costs_the_item_nor_feeds_the_breaker(
    loopback: LoopbackOpenAI,
) -> None:
    """Every restatement fails: clean items score, the others stay unscored with the reason.

    Four failures in a row are more than the breaker takes (three), yet no item is left
    unsent: the first replies were received and cached, so no judge call failed an item.
    """
    prose = "Feedback: most of it, but the owner is missing. I would give it a 6."

    def first(request: RecordedRequest) -> str:
        return "Feedback: right.\n\\boxed{8}" if "Q0" in request.prompt else prose

    loopback.handler = fails_every_restatement(first)
    spec = f"openai:gpt-4-0613,base_url={loopback.base_url},cache=memory,progress=false"
    items = [
        JudgeItem(question=f"Q{i}: who owns the task?", response="Anna.", reference="Anna.")
        for i in range(5)
    ]
    run = judge_items(items, parse_judge_spec(f"{spec},retries=0,backoff=0.01"))
    clean, *failed = run.judgements
    assert clean.status == "scored" and clean.score == 8.0
    for judgement in failed:
        assert judgement.status == "unscored" and judgement.score is None
        (sample,) = judgement.samples
        assert sample.raw == prose  # the reply is kept
        assert sample.reason.startswith(
            "no score in the asked format; restatement not answered: "
        ), sample.reason
    assert run.summary["judge_errors"] == 0 and run.summary["judge_unscored"] == 4
    restatements = [r for r in loopback.requests if is_restatement(r)]
    assert len({json.dumps(r.body["messages"][0]) for r in restatements}) == 4  # each sent


@pytest.mark.slow
def test_lm_eval_loses_no_item_when_every_restatement_fails(tmp_path: Path) -> None:
    """Through ``lm_eval``: a server failing every restatement turn stops nothing.

    Four restatements fail in a row, more than the run's breaker takes (three), yet the run
    ends with rc 0: the one boxed reply scores, the four prose replies stay unscored with
    the reason, and each keeps the reply the judge gave.
    """
    prose = "Feedback: most of it, but the owner is missing. I would give it a 6."
    first = by_arrival([], lambda n: "Feedback: right.\n\\boxed{8}" if n == 0 else prose)

    out = tmp_path / "out"
    with LoopbackOpenAI(fails_every_restatement(first), model="judge-model") as loop:
        judge = (
            f"openai:judge-model,base_url={loop.base_url},cache={tmp_path / 'c.sqlite'},"
            "retries=0,backoff=0.01"
        )
        proc = run_lm_eval(
            chat_qa_args(loop.chat_url, judge, out, limit=5), env={"OPENAI_API_KEY": "sk-test"}
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        restatements = [r for r in loop.requests if is_restatement(r)]
    assert len(restatements) == 4  # each prose reply was asked once, and each failed
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    assert results["results"]["elitr_qa_dev"]["judge_score,openai:judge-model"] == 8.0
    rows = [json.loads(x) for p in out.rglob("samples_*.jsonl") for x in p.read_text().splitlines()]
    samples = [json.loads(r["filtered_resps"][0][0])["judge"]["samples"][0] for r in rows]
    assert sorted(s["score"] or 0 for s in samples) == [0, 0, 0, 0, 8.0]
    lost = [s for s in samples if s["score"] is None]
    assert [s["raw"] for s in lost] == [prose] * 4  # the replies are kept
    for sample in lost:
        assert sample["reason"].startswith(
            "no score in the asked format; restatement not answered: "
        ), sample["reason"]


# --- structured output, greedy judges, the cache ------------------------------------------
def _item() -> JudgeItem:
    return JudgeItem(question="When do they meet?", response="On 3 May.", reference="On 3 May.")


@pytest.mark.parametrize(
    ("option", "sent"), [("", True), (",structured=auto", True), (",structured=on", True),
                         (",structured=off", False)]
)  # fmt: skip
def test_structured_option_sends_the_schema_or_not(
    loopback: LoopbackOpenAI, option: str, sent: bool
) -> None:
    loopback.handler = lambda r: '{"score": 9}' if restating(r) else "Looks right: 9 of 10."
    # gpt-4o takes a strict json_schema: the loopback, like the API, checks the schema's rules
    spec = f"openai:gpt-4o,base_url={loopback.base_url},cache=memory,progress=false{option}"
    run = judge_items([_item()], parse_judge_spec(spec))
    (judgement,) = run.judgements
    assert judgement.score == 9.0 and judgement.samples[0].restated
    first, second = loopback.requests
    assert "response_format" not in first.body
    assert ("response_format" in second.body) is sent
    assert loopback.refused == [] and run.usage["structured_refused"] == 0
    if sent:
        schema = second.body["response_format"]["json_schema"]["schema"]
        assert schema == GPT4.grammar.restatement.schema
        assert schema["properties"]["score"] == {"type": "integer", "minimum": 1, "maximum": 10}


def test_a_refused_schema_is_sent_once_then_never_again(
    loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """gpt-4-0613, the paper's judge, refuses json_schema (HTTP 400): each turn still scores."""
    loopback.handler = lambda r: '{"score": 8}' if restating(r) else "Looks right: 8 of 10."
    spec = f"openai:gpt-4-0613,base_url={loopback.base_url},cache=memory,progress=false"
    items = [_item(), JudgeItem("Who comes?", "Anna.", "Anna and Ben."), _item()]
    run = judge_items(items, parse_judge_spec(spec + ",concurrency=4"), on_error="record")
    assert [j.score for j in run.judgements] == [8.0, 8.0, 8.0]
    assert [j.status for j in run.judgements] == ["scored"] * 3
    restatements = [r for r in loopback.requests if restating(r)]
    # identical items share their calls: two restatement turns, the first tried with the schema
    assert [("response_format" in r.body) for r in restatements] == [True, False, False]
    assert loopback.refused == restatements[:1]
    usage = run.usage
    assert usage["structured_refused"] == 1 and usage["unstructured"] == 3
    assert usage["refused"] == 1 and usage["requests"] == usage["answered"] + 1
    err = capsys.readouterr().err
    assert err.count("refuses response_format json_schema") == 1
    assert "sent without the refused response_format: 3 (1 refused with it first)" in (
        usage_line(usage)
    )


def test_bad_structured_value_is_one_line() -> None:
    with pytest.raises(Exception, match="structured=maybe must be auto, on or off"):
        parse_judge_spec("openai:gpt-4o,structured=maybe")


def test_greedy_judge_is_not_asked_again_for_a_cut_off_reply(loopback: LoopbackOpenAI) -> None:
    loopback.handler = lambda r: Reply("Feedback: \\boxed{9", finish_reason="length")
    spec = f"openai:gpt-4-0613,base_url={loopback.base_url},cache=memory,temperature=0,reask=3"
    (judgement,) = judge_items([_item()], parse_judge_spec(spec + ",progress=false")).judgements
    assert judgement.status == "unscored" and len(loopback.requests) == 1
    loopback.reset()
    sampled = spec.replace("temperature=0", "temperature=0.6")
    judge_items([_item()], parse_judge_spec(sampled + ",progress=false"))
    assert len(loopback.requests) == 4  # a sampling judge may answer otherwise: asked again


def test_a_restatement_is_cached_and_a_rerun_resumes(
    loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    loopback.handler = lambda r: '{"score": 6}' if restating(r) else "Partly right, a 6."
    spec = f"openai:gpt-4-0613,base_url={loopback.base_url},cache={tmp_path / 'c.db'}"
    config = parse_judge_spec(spec + ",progress=false")
    first = judge_items([_item()], config)
    # the prompt, the restatement refused for its schema, the restatement without it
    assert first.judgements[0].score == 6.0 and len(loopback.requests) == 3
    loopback.reset()
    again = judge_items([_item()], config)  # this process knows: nothing is sent
    assert again.judgements[0].score == 6.0 and loopback.requests == []
    usage: dict[str, Any] = again.usage
    assert usage["cache_hits"] == 2 and usage["restated"] == 1
    memory.forget()  # a new process learns it again, from one refused (unbilled) request
    resumed = judge_items([_item()], config)
    assert resumed.judgements[0].score == 6.0 and loopback.requests == loopback.refused
    assert len(loopback.refused) == 1 and resumed.usage["answered"] == 0


# --- read-reply and the red-team corpus ---------------------------------------------------
def test_read_reply_says_restate_and_reads_a_restatement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = tmp_path / "reply.txt"
    reply.write_text("I would give it a 7 out of 10.", encoding="utf-8")
    assert main(["read-reply", "gpt4-rubric", str(reply)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["restate"].startswith("no score in the asked format")
    assert err.startswith("restate: no score in the asked format")
    reply.write_text('{"score": 7}', encoding="utf-8")
    assert main(["read-reply", "gpt4-rubric", str(reply), "--restatement"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "values": {"score": 7},
        "reasons": {},
        "restated": True,
    }
    lines = tmp_path / "replies.jsonl"
    rows = [
        {"reply": '{"adequacy": 7, "relevance": 8, "topicality": 9}', "turn": "restatement"},
        {"reply": "Adequacy: 7\nRelevance: 8\nTopicality: 9"},
        {"reply": "Adequacy: 7 out of 10", "turn": "restatement"},
    ]
    lines.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    assert main(["read-reply", "gpt-art", "--jsonl", str(lines)]) == 0
    read = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert (
        read[0]["values"]
        == read[1]["values"]
        == {
            "adequacy": 7.0,
            "relevance": 8.0,
            "topicality": 9.0,
        }
    )
    assert read[2]["values"]["adequacy"] is None and "restate" not in read[2]


def test_corpus_entries_of_the_restatement_turn_use_the_restatement_reader() -> None:
    from elitr_bench.cli.read_reply import read_record
    from tests.judges.redteam import record, verdict

    entry = {
        "kind": "mesa-scoring",
        "turn": "restatement",
        "reply": '{"rating": 2, "confidence": 7}',
    }
    got = read_record("mesa-scoring", record(entry))
    assert verdict("mesa-scoring", 2, got["values"]["rating"]) == "right"
    entry["reply"] = '{"rating": 2}\nOn reflection a 3.'
    got = read_record("mesa-scoring", record(entry))
    assert got["values"]["rating"] is None and "restate" not in got  # no second restatement
