"""The judge transport: 200s without text, in-flight de-duplication, stopping after a 401.

Everything goes through the real openai SDK to the loopback server, and requests are
counted where they arrive.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import zlib
from collections import Counter
from pathlib import Path

import pytest

from elitr_bench.judges import JudgeRequestError, parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.judges.summary.run import assess_items_run
from elitr_bench.judges.usage import usage_line
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.cache import NullCache, SQLiteCache
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.factory import make_backend
from tests.judges.conftest import TEST_KEY, boxed_by_response, response_in
from tests.support.openai_server import (
    MALFORMED_SHAPES,
    LoopbackOpenAI,
    RecordedRequest,
    Reply,
    malformed_ok,
    unauthorized,
)


def score_of(response: str) -> int:
    return zlib.crc32(response.encode()) % 10 + 1


def items(n: int) -> list[JudgeItem]:
    return [
        JudgeItem(question=f"Q{i}?", response=f"answer number {i}", reference=f"ref {i}")
        for i in range(n)
    ]


def spec(server: LoopbackOpenAI, extra: str = "") -> str:
    return (
        f"openai:gpt-4-0613,base_url={server.base_url},backoff=0.01,timeout=5,progress=false,"
        f"cache=memory{extra}"
    )


def client_for(server: LoopbackOpenAI, extra: str = "", cache: object = None) -> JudgeClient:
    config = parse_judge_spec(spec(server, extra))
    return JudgeClient(
        make_backend(config),
        cache or NullCache(),  # type: ignore[arg-type]
        concurrency=config.concurrency,
        retries=config.retries,
        backoff=config.backoff,
    )


# --- HTTP 200 without usable text ---------------------------------------------------------


def test_every_malformed_200_shape_is_retried_and_the_scores_equal_a_clean_run(
    loopback: LoopbackOpenAI,
) -> None:
    loopback.handler = boxed_by_response(score_of)
    clean = judge_items(items(12), parse_judge_spec(spec(loopback)))
    loopback.reset()

    seen: Counter[str] = Counter()
    lock = threading.Lock()
    clean_reply = boxed_by_response(score_of)

    def flaky(request: RecordedRequest) -> Reply | str:
        key = response_in(request)
        with lock:
            seen[key] += 1
            first = seen[key] == 1
        index = int(key.rsplit(" ", 1)[1])
        if first:  # every item's first reply is one of the four shapes
            return malformed_ok(MALFORMED_SHAPES[index % len(MALFORMED_SHAPES)])
        return clean_reply(request)

    loopback.handler = flaky
    faulted = judge_items(items(12), parse_judge_spec(spec(loopback, ",concurrency=4")))
    assert [j.score for j in faulted.judgements] == [j.score for j in clean.judgements]
    assert faulted.summary == clean.summary
    assert len(loopback.requests) == 24
    usage = faulted.usage
    assert (usage["requests"], usage["answered"], usage["failed"], usage["refused"]) == (
        24,
        12,
        12,
        0,
    )
    assert usage["retries"] == 12


@pytest.mark.parametrize("shape", MALFORMED_SHAPES)
def test_a_judge_that_only_sends_malformed_200s_fails_items_with_a_reason(
    loopback: LoopbackOpenAI, shape: str
) -> None:
    loopback.handler = lambda _req: malformed_ok(shape)
    config = parse_judge_spec(spec(loopback, ",retries=1,concurrency=1"))
    run = judge_items(items(2), config, on_error="record")
    assert [j.status for j in run.judgements] == ["error", "error"]
    words = {
        "no_choices": "200 without choices",
        "empty_choices": "200 without choices",
        "no_message": "200 whose choice has no message",
        "null_content": "200 whose message content is null",
    }[shape]
    reason = run.judgements[0].reason
    assert words in reason and "gave up after 1 retries" in reason
    assert "AttributeError" not in reason and run.judgements[0].score is None
    assert run.usage["failed"] == 4 and run.usage["answered"] == 0
    # Library callers that want exceptions get our one-line error, not an AttributeError.
    with pytest.raises(JudgeRequestError, match=words):
        judge_items(items(1), config)


def test_minutes_judges_turn_malformed_replies_into_error_assessments(
    loopback: LoopbackOpenAI,
) -> None:
    from elitr_bench.judges.minutes import MinutesItem

    loopback.handler = lambda _req: malformed_ok("no_message")
    config = parse_judge_spec(spec(loopback, ",rubric=gpt-art,filler=true,retries=1"))
    item = MinutesItem("meeting_en_test2023_999", "gpt4", "(PERSON1) Hello there.\n", "- Hi.")
    run = asyncio.run(assess_items_run([item], config))
    [assessment] = run.assessments
    assert assessment.status == "error"
    assert "200 whose choice has no message" in assessment.reason
    assert all(v is None for v in assessment.scores.values())


# --- identical requests in flight ---------------------------------------------------------


def test_identical_requests_in_flight_are_sent_once(loopback: LoopbackOpenAI) -> None:
    release = threading.Event()
    loopback.handler = lambda req: Reply(content=f"echo {req.prompt}", wait=release)
    client = client_for(loopback)
    same = CompletionRequest("same prompt", 0.0, 1.0, 8, 7)

    async def run() -> list[str]:
        calls = [client.complete(same) for _ in range(20)]
        calls += [
            client.complete(CompletionRequest(f"other {i}", 0.0, 1.0, 8, 7)) for i in range(5)
        ]
        tasks = [asyncio.ensure_future(c) for c in calls]
        while len(loopback.requests) < 6:
            await asyncio.sleep(0.01)
        release.set()
        done = await asyncio.gather(*tasks)
        await client.aclose()
        return [c.text for c in done]

    texts = asyncio.run(run())
    assert texts[:20] == ["echo same prompt"] * 20
    bodies = Counter(json.dumps(r.body, sort_keys=True) for r in loopback.requests)
    assert len(loopback.requests) == 6 and set(bodies.values()) == {1}
    usage = client.usage.as_dict()
    assert (usage["requests"], usage["answered"], usage["deduplicated"]) == (6, 6, 19)
    assert usage["cache_hits"] == 19
    assert "19 of them identical requests in flight" in usage_line(usage)


def test_a_failed_request_fails_every_waiter_and_nothing_is_cached(
    loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    release = threading.Event()
    loopback.handler = lambda _req: Reply(status=500, wait=release)
    cache = SQLiteCache(tmp_path / "c.sqlite")
    client = client_for(loopback, ",retries=0", cache)
    same = CompletionRequest("same prompt", 0.0, 1.0, 8, 7)

    async def run() -> list[BaseException | object]:
        tasks = [asyncio.ensure_future(client.complete(same)) for _ in range(5)]
        while not loopback.requests:
            await asyncio.sleep(0.01)
        release.set()
        out = await asyncio.gather(*tasks, return_exceptions=True)
        await client.aclose()
        return out

    outcomes = asyncio.run(run())
    assert all(isinstance(o, JudgeRequestError) and "HTTP 500" in str(o) for o in outcomes)
    assert len(loopback.requests) == 1 and cache.count() == 0
    assert client.usage.refused == 1


def test_a_cancelled_first_caller_does_not_cancel_the_request_others_wait_for(
    loopback: LoopbackOpenAI,
) -> None:
    release = threading.Event()
    loopback.handler = lambda _req: Reply(content="done", wait=release)
    client = client_for(loopback)
    same = CompletionRequest("same prompt", 0.0, 1.0, 8, 7)

    async def run() -> str:
        first = asyncio.ensure_future(client.complete(same))
        second = asyncio.ensure_future(client.complete(same))
        while not loopback.requests:
            await asyncio.sleep(0.01)
        first.cancel()
        await asyncio.sleep(0.05)
        release.set()
        text = (await second).text
        with pytest.raises(asyncio.CancelledError):
            await first
        await client.aclose()
        return text

    assert asyncio.run(run()) == "done"
    assert len(loopback.requests) == 1 and client.usage.answered == 1


# --- authentication refused ---------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_after_an_auth_error_nothing_more_is_sent(loopback: LoopbackOpenAI, status: int) -> None:
    served = itertools.count()

    def handler(request: RecordedRequest) -> Reply | str:
        if next(served) < 3:
            return boxed_by_response(score_of)(request)
        return unauthorized(status, f"key {TEST_KEY} revoked")

    loopback.handler = handler
    config = parse_judge_spec(spec(loopback, ",concurrency=1"))
    run = judge_items(items(10), config, on_error="record")
    statuses = [j.status for j in run.judgements]
    assert statuses[:3] == ["scored"] * 3 and set(statuses[3:]) == {"error"}
    # The request that got the refusal was the last one the server saw.
    assert len(loopback.requests) == 4
    usage = run.usage
    assert (usage["requests"], usage["answered"], usage["refused"], usage["retries"]) == (
        4,
        3,
        1,
        0,
    )
    assert usage["not_sent"] >= 1
    first = run.judgements[3].reason
    assert f"HTTP {status}" in first and "nothing more is sent" in first
    assert run.judgements[4].reason == first  # queued requests fail with the same reason
    assert TEST_KEY not in json.dumps([j.to_dict() for j in run.judgements])
    line = usage_line(usage)
    assert "answered 3, refused 1" in line and "not sent after the credentials were refused" in line

    # A later run of this process with the same credentials sends nothing either ...
    again = judge_items(items(12)[10:], config, on_error="record")
    assert len(loopback.requests) == 4
    assert {j.reason for j in again.judgements} == {first}
    assert again.usage["requests"] == 0 and again.usage["not_sent"] == 2


def test_many_queued_requests_stop_at_the_first_refusal(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.handler = lambda _req: unauthorized(401)
    client = client_for(loopback, ",concurrency=4")

    async def run() -> list[BaseException | object]:
        calls = [client.complete(CompletionRequest(f"p{i}", 0.0, 1.0, 8, 1)) for i in range(40)]
        out = await asyncio.gather(*calls, return_exceptions=True)
        await client.aclose()
        return out

    outcomes = asyncio.run(run())
    assert all(isinstance(o, JudgeRequestError) for o in outcomes)
    sent = len(loopback.requests)
    assert 1 <= sent <= 4  # only what was already in flight when the first 401 came back
    usage = client.usage
    assert usage.requests == usage.refused == sent and usage.retries == 0
    assert usage.not_sent == 40 - sent

    # Other credentials are other credentials: a fixed key is sent again.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a-new-key-0000")
    loopback.handler = lambda _req: "\\boxed{5}"
    fresh = client_for(loopback)
    text = asyncio.run(fresh.complete(CompletionRequest("p0", 0.0, 1.0, 8, 1))).text
    assert text == "\\boxed{5}" and len(loopback.requests) == sent + 1


def test_a_failing_mesa_item_waits_for_its_other_requests_so_counts_are_exact(
    loopback: LoopbackOpenAI,
) -> None:
    from elitr_bench.judges.aio import run_coroutine
    from elitr_bench.judges.minutes import MinutesItem
    from elitr_bench.judges.summary.registry import get_method
    from tests.judges.test_mesa_script import make_script

    script = make_script()

    def handler(request: RecordedRequest) -> Reply | str:
        if "Omission" in request.prompt:  # one error type's first step fails for good
            return Reply(status=500)
        return script(request)

    loopback.handler = handler
    config = parse_judge_spec(spec(loopback, ",method=mesa,debate=none,retries=1,context=32768"))
    method = get_method(config)
    item = MinutesItem("meeting_a", "sys1", "ALICE: we ship on Friday.\nBOB: agreed.", "- Ship.")
    run = run_coroutine(lambda: assess_items_run([item], config, method=method, progress=False))
    [assessment] = run.assessments
    assert assessment.status == "error" and "HTTP 500" in assessment.reason
    usage = run.usage
    # The seven other types ran their three steps before the item failed: all counted.
    assert usage["requests"] == len(loopback.requests) == 2 + 7 * 3
    assert usage["requests"] == usage["answered"] + usage["refused"] + usage["failed"]
    assert (usage["refused"], usage["answered"]) == (2, 21)


def test_a_judge_server_that_is_gone_is_named_in_the_one_failure_line(tmp_path: Path) -> None:
    """A server that died mid-run (nothing listens on its port any more): the error names it."""
    import socket

    with socket.socket() as sock:  # a port that was open a moment ago and is closed now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    config = parse_judge_spec(f"openai:judge-model,base_url={base},retries=0,cache=memory")
    client = JudgeClient(make_backend(config), NullCache(), retries=0)

    async def run() -> BaseException:
        try:
            await client.complete(CompletionRequest("prompt", 0.0, 1.0, 8, 7))
        except JudgeRequestError as exc:
            return exc
        finally:
            await client.aclose()
        raise AssertionError("a request to a closed port succeeded")

    message = str(asyncio.run(run()))
    assert f"cannot reach {base}" in message and "\n" not in message
