"""A judging run killed mid-way resumes from the cache without re-sending answered requests."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from tests.judges.conftest import boxed_by_response, response_in
from tests.support.judge_cache import cached_rows
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply

N_ITEMS = 24
ANSWERED_BEFORE_KILL = 10
REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import sys
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.judges.qa.engine import JudgeItem, judge_items
    spec, n = sys.argv[1], int(sys.argv[2])
    items = [JudgeItem(question=f"Q{i}?", response=f"answer number {i}", reference="r")
             for i in range(n)]
    judge_items(items, parse_judge_spec(spec))
    """
)


def test_killed_run_resumes_without_resending(tmp_path: Path) -> None:
    gate = threading.Event()
    answer = boxed_by_response(lambda r: len(r) % 10 + 1)
    lock = threading.Lock()
    answered: list[str] = []

    def first_run(req: RecordedRequest) -> Reply | str:
        with lock:
            if len(answered) < ANSWERED_BEFORE_KILL:
                answered.append(response_in(req))
                return answer(req)
        return Reply(content="never delivered", wait=gate)

    cache_file = tmp_path / "resume.sqlite"
    with LoopbackOpenAI(first_run) as server:
        spec = f"openai:gpt-4-0613,base_url={server.base_url},cache={cache_file}"
        spec += ",concurrency=4,progress=false"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        child = subprocess.Popen([sys.executable, "-c", CHILD, spec, str(N_ITEMS)], env=env)
        try:
            deadline = time.monotonic() + 60
            while (
                cached_rows(cache_file) < ANSWERED_BEFORE_KILL
                or len(server.requests) <= ANSWERED_BEFORE_KILL
            ):
                assert child.poll() is None, "child exited early"
                assert time.monotonic() < deadline, "child made no progress"
                time.sleep(0.05)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        in_flight = {response_in(r) for r in server.snapshot()} - set(answered)
        assert in_flight, "the kill must interrupt requests in flight"
        assert cached_rows(cache_file) == ANSWERED_BEFORE_KILL

        gate.set()
        server.reset()
        server.handler = answer
        run = judge_items(
            [
                JudgeItem(question=f"Q{i}?", response=f"answer number {i}", reference="r")
                for i in range(N_ITEMS)
            ],
            parse_judge_spec(spec),
        )
        resent = [response_in(r) for r in server.snapshot()]

    assert not set(resent) & set(answered), "an answered request was sent again"
    assert len(resent) == len(set(resent)) == N_ITEMS - ANSWERED_BEFORE_KILL
    assert run.usage["cache_hits"] == ANSWERED_BEFORE_KILL
    assert all(j.status == "scored" for j in run.judgements)
    assert cached_rows(cache_file) == N_ITEMS
