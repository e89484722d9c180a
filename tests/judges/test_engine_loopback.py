import json
import logging
import threading
import zlib
from collections import Counter
from pathlib import Path

import pytest

from elitr_bench.judges import JudgeRequestError, parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.llm.cache import SQLiteCache
from tests.judges.conftest import TEST_KEY, boxed_by_response, response_in
from tests.support.openai_server import (
    LoopbackOpenAI,
    RecordedRequest,
    Reply,
    server_error,
    too_many_requests,
)


def score_of(response: str) -> int:
    return zlib.crc32(response.encode()) % 10 + 1


def items(n: int) -> list[JudgeItem]:
    return [
        JudgeItem(question=f"Q{i}?", response=f"answer number {i}", reference=f"ref {i}")
        for i in range(n)
    ]


def spec(server: LoopbackOpenAI, extra: str = "", *, timeout: float = 30.0) -> str:
    """A judge on the loopback server; the timeout is far above a loaded machine's reply time.

    Tests count requests exactly, so a clean reply must never time out; only the fault
    test asks for a short timeout, and it counts with bounds.
    """
    base = f"openai:gpt-4-0613,base_url={server.base_url}"
    return f"{base},backoff=0.01,timeout={timeout},progress=false{extra}"


def test_scores_and_request_shape(loopback: LoopbackOpenAI) -> None:
    loopback.handler = boxed_by_response(score_of)
    run = judge_items(items(12), parse_judge_spec(spec(loopback, ",cache=memory")))
    assert [j.score for j in run.judgements] == [
        float(score_of(f"answer number {i}")) for i in range(12)
    ]
    body = loopback.requests[0].body
    assert (body["model"], body["temperature"], body["top_p"], body["seed"]) == (
        "gpt-4-0613",
        0.6,
        0.9,
        2023,
    )
    assert loopback.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"
    assert run.usage["requests"] == 12 and run.usage["estimated_cost_usd"] > 0
    assert run.identity["prompt_hash"] and run.identity["sampling"]["temperature"] == 0.6


def test_faults_give_the_same_final_scores(loopback: LoopbackOpenAI) -> None:
    clean_handler = boxed_by_response(score_of)
    loopback.handler = clean_handler
    clean = judge_items(items(30), parse_judge_spec(spec(loopback, ",cache=memory")))
    loopback.reset()

    seen: Counter[str] = Counter()
    lock = threading.Lock()
    faults = [
        too_many_requests(0.02),
        server_error(),
        Reply(content="late", delay=120.0),  # past the timeout; cut short when the server stops
        Reply(raw=b"{not json"),
        Reply(status=503, headers={"retry-after-ms": "10"}),
    ]

    def faulty(req: RecordedRequest) -> Reply | str:
        key = response_in(req)
        with lock:
            seen[key] += 1
            n = seen[key]
        index = int(key.rsplit(" ", 1)[1])
        if n == 1 and index % 2 == 0:  # every other item fails once, each with a different fault
            return faults[index // 2 % len(faults)]
        return clean_handler(req)

    loopback.handler = faulty
    faulted = judge_items(
        items(30), parse_judge_spec(spec(loopback, ",cache=memory,concurrency=8", timeout=0.5))
    )
    assert [j.score for j in faulted.judgements] == [j.score for j in clean.judgements]
    assert faulted.summary == clean.summary
    # Bounds, not exact counts: on a loaded machine a clean reply may also pass the short
    # timeout and be retried. Each of the 15 faulted items was retried at least once, and
    # every request past the first per item is a counted retry.
    retries = faulted.usage["retries"]
    assert retries >= 15
    assert len(loopback.requests) == 30 + retries
    assert all(seen[f"answer number {i}"] >= 2 for i in range(0, 30, 2))


def test_unscored_items_are_reasked_restated_counted_and_never_averaged(
    loopback: LoopbackOpenAI,
) -> None:
    """A refusal is asked again; a reply without the box is restated once, then read."""

    def handler(req: RecordedRequest) -> str:
        messages = req.body["messages"]
        if len(messages) == 3:  # the restatement turn: items 0-2 never give JSON
            return (
                '{"score": 6}'
                if "answer number 3\n" in messages[0]["content"]
                else "still no score"
            )
        index = int(response_in(req).rsplit(" ", 1)[1])
        if index < 3:
            return "I cannot decide. \\boxed{42}" if req.seed == 2023 else "still no score"
        if index == 3:
            return "garbage without a score"
        return "\\boxed{6}" if index % 2 else "\\boxed{9}"

    loopback.handler = handler
    run = judge_items(items(10), parse_judge_spec(spec(loopback, ",cache=memory")))
    statuses = [j.status for j in run.judgements]
    assert statuses[:3] == ["unscored"] * 3 and statuses[3:] == ["scored"] * 7
    assert all(j.score is None for j in run.judgements[:3])
    assert run.judgements[0].raw == "still no score"
    # refused (asked again with the next seed), no box (restated): three completions
    assert run.judgements[0].samples[0].attempts == 3 and run.judgements[0].samples[0].restated
    assert run.judgements[3].score == 6.0 and run.judgements[3].samples[0].attempts == 2
    expected_mean = (6 + 9 + 6 + 9 + 6 + 9 + 6) / 7
    assert run.summary["judge_score"] == pytest.approx(expected_mean)
    assert (run.summary["judge_unscored"], run.summary["judge_scored"]) == (3, 7)
    assert run.summary["judge_restated"] == 4 and run.usage["restated"] == 4
    assert len(loopback.taken()) == 10 + 3 + 4  # items 0-2 asked again, 0-3 restated
    assert {r.seed for r in loopback.requests} == {2023, 2024}
    # gpt-4-0613 refuses the schema: the first restatement tried it, none after
    assert len(loopback.refused) == 1 and run.usage["structured_refused"] == 1


def test_no_reask_when_disabled(loopback: LoopbackOpenAI) -> None:
    loopback.handler = lambda req: "I cannot say."
    run = judge_items(items(4), parse_judge_spec(spec(loopback, ",cache=memory,reask=0")))
    assert run.summary["judge_unscored"] == 4 and len(loopback.requests) == 4


def test_samples_report_mean_and_spread(loopback: LoopbackOpenAI) -> None:
    loopback.handler = lambda req: f"\\boxed{{{4 + 2 * (req.seed - 2023)}}}"
    run = judge_items(
        items(2), parse_judge_spec(spec(loopback, ",cache=memory,samples=3,temperature=0"))
    )
    j = run.judgements[0]
    assert [s.score for s in j.samples] == [4.0, 6.0, 8.0]
    assert j.score == 6.0 and j.spread == pytest.approx(2.0)
    assert all(r.body["temperature"] == 0 for r in loopback.requests)


def test_prometheus_rubric_over_http_is_doubled(loopback: LoopbackOpenAI) -> None:
    loopback.handler = lambda req: (
        "Feedback: partial. [RESULT] 3" if "(score 5)" in req.prompt else "wrong prompt"
    )
    run = judge_items(
        items(3), parse_judge_spec(spec(loopback, ",cache=memory,rubric=prometheus-rubric"))
    )
    assert [j.score for j in run.judgements] == [6.0, 6.0, 6.0]


def test_persistent_failure_raises_and_caches_nothing(
    loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    loopback.handler = lambda req: server_error()
    cache_file = tmp_path / "c.sqlite"
    with pytest.raises(JudgeRequestError, match="gave up after 2 retries"):
        judge_items(items(2), parse_judge_spec(spec(loopback, f",cache={cache_file},retries=2")))
    assert SQLiteCache(cache_file).count() == 0
    loopback.handler = lambda req: Reply(
        status=401, body={"error": {"message": f"bad key {TEST_KEY}"}}
    )
    with pytest.raises(JudgeRequestError) as err:
        judge_items(items(1), parse_judge_spec(spec(loopback, ",cache=memory")))
    assert "401" in str(err.value) and TEST_KEY not in str(err.value)


def test_cached_rerun_sends_nothing(loopback: LoopbackOpenAI, tmp_path: Path) -> None:
    loopback.handler = boxed_by_response(score_of)
    cfg = parse_judge_spec(spec(loopback, f",cache={tmp_path / 'c.sqlite'}"))
    first = judge_items(items(20), cfg)
    sent = len(loopback.requests)
    second = judge_items(items(20), cfg)
    assert sent == 20 and len(loopback.requests) == 20
    assert [j.score for j in second.judgements] == [j.score for j in first.judgements]
    assert second.usage["cache_hits"] == 20 and second.usage["requests"] == 0
    # Another seed is another request.
    judge_items(
        items(2), parse_judge_spec(spec(loopback, f",cache={tmp_path / 'c.sqlite'},seed=7"))
    )
    assert len(loopback.requests) == 22


def test_no_api_key_in_any_written_file(
    loopback: LoopbackOpenAI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from elitr_bench.scoring.qa import score_samples

    loopback.handler = boxed_by_response(score_of)
    caplog.set_level(logging.DEBUG)
    samples = tmp_path / "out" / "samples_elitr_qa_dev_2024-01-01T00-00-00.000001.jsonl"
    samples.parent.mkdir()
    docs = [
        {
            "meeting_id": "m",
            "question_id": str(i),
            "question": f"Q{i}?",
            "answer": "a",
            "split": "dev",
            "setting": "qa",
            "mode": "st",
        }
        for i in range(5)
    ]
    samples.write_text(
        "".join(
            json.dumps(
                {
                    "doc_id": i,
                    "doc": d,
                    "resps": [[f"answer number {i}"]],
                    "filtered_resps": [f"answer number {i}"],
                    "filter": "none",
                }
            )
            + "\n"
            for i, d in enumerate(docs)
        )
    )
    cache_file = tmp_path / "cache.sqlite"
    cfg = parse_judge_spec(spec(loopback, f",cache={cache_file}"))
    results, _ = score_samples([samples.parent], cfg)
    log_file = tmp_path / "log.txt"
    log_file.write_text(caplog.text + repr(cfg.to_dict()))
    written = [results, cache_file, log_file, *samples.parent.glob("samples_*rescored*.jsonl")]
    written += list(tmp_path.glob("cache.sqlite*"))
    assert len(written) >= 4
    for path in written:
        blob = path.read_bytes()
        assert TEST_KEY.encode() not in blob, path
        assert TEST_KEY[:12].encode() not in blob, path
    assert (
        loopback.requests[0].headers["authorization"].endswith(TEST_KEY)
    )  # the key was really used


def test_a_judge_object_can_be_reused_across_runs(loopback: LoopbackOpenAI) -> None:
    from elitr_bench.judges.qa.engine import make_judge

    loopback.handler = boxed_by_response(score_of)
    cfg = parse_judge_spec(spec(loopback, ",cache=memory,rpm=100000,tpm=100000000"))
    judge = make_judge(cfg)
    first = judge_items(items(5), cfg, judge=judge)
    second = judge_items(items(6), cfg, judge=judge)
    assert [j.score for j in second.judgements[:5]] == [j.score for j in first.judgements]
    assert len(loopback.requests) == 6
