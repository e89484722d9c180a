"""Two processes judging the same items at once through one cache pay once (issue 25, point 6).

Before, each process looked the request up, missed, and sent it: 60 requests for 30
items. Now the first marks the request as being sent in the cache and the second waits
for its row. A mark left by a killed process is taken over at once.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from elitr_bench.llm.cache import PENDING_TTL_S, Completion, SQLiteCache
from tests.conftest import ROOT
from tests.judges.conftest import boxed_by_response, response_in
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply

N_ITEMS = 12

CHILD = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.judges.qa.engine import JudgeItem, judge_items
    spec, n, started = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    items = [JudgeItem(question=f"Q{i}?", response=f"answer number {i}", reference="r")
             for i in range(n)]
    begin = time.time()
    started.touch()
    run = judge_items(items, parse_judge_spec(spec))
    end = time.time()
    print(json.dumps({"scores": [j.score for j in run.judgements], "held": [begin, end]}))
    """
)


def test_two_processes_sharing_a_cache_send_each_request_once(tmp_path: Path) -> None:
    """Both children judge the same items through one cache at the same time.

    No reply lands until both have started judging (the server holds every reply until
    then: an event, not a guessed delay), so the first cannot finish alone; each child
    records when it held the cache and the test checks that the two intervals intersect.
    """
    score = boxed_by_response(lambda r: int(r.split()[-1]) % 10 + 1)
    both_started = threading.Event()

    def held(request: RecordedRequest) -> Reply:
        return Reply(content=score(request), wait=both_started)

    cache = tmp_path / "shared.sqlite"
    marks = [tmp_path / f"started-{i}" for i in range(2)]
    with LoopbackOpenAI(held) as server:
        spec = f"openai:gpt-4-0613,base_url={server.base_url},cache={cache},concurrency=4"
        spec += ",progress=false"
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        SQLiteCache(cache).close()  # both children open an existing file
        children = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, spec, str(N_ITEMS), str(mark)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for mark in marks
        ]
        deadline = time.monotonic() + 120
        while not all(m.exists() for m in marks):
            assert all(c.poll() is None for c in children), "a child ended before judging"
            assert time.monotonic() < deadline, "the children never started judging"
            time.sleep(0.02)
        both_started.set()
        outputs = [child.communicate(timeout=300) for child in children]
        sent = [response_in(r) for r in server.snapshot()]
    results = []
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err[-3000:]
        results.append(json.loads(out))
        assert results[-1]["scores"] == [i % 10 + 1 for i in range(N_ITEMS)]
    (start_a, end_a), (start_b, end_b) = (r["held"] for r in results)
    assert max(start_a, start_b) < min(end_a, end_b)  # both held the cache at once
    assert sorted(sent) == sorted(f"answer number {i}" for i in range(N_ITEMS))  # once each
    with sqlite3.connect(cache) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pending").fetchone()[0] == 0


def test_a_mark_of_a_dead_or_late_process_is_taken_over(tmp_path: Path) -> None:
    cache = SQLiteCache(tmp_path / "c.sqlite")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    with sqlite3.connect(cache.path) as conn:
        conn.execute(
            "INSERT INTO pending VALUES (?, ?, ?, ?)",
            ("k-dead", socket.gethostname(), pid, time.time()),
        )
        conn.execute("INSERT INTO pending VALUES (?, ?, ?, ?)", ("k-late", "elsewhere", 1, 0.0))
        conn.execute(
            "INSERT INTO pending VALUES (?, ?, ?, ?)", ("k-live", "elsewhere", 1, time.time())
        )
    assert cache.claim("k-dead") and cache.claim("k-late")
    assert not cache.claim("k-live")  # another machine, recent: it is being sent
    cache.put("k-dead", Completion("done"), {})
    cache.release("k-dead")
    assert cache.get("k-dead") is not None
    cache.close()


class _StoredBeforeTheClaim(SQLiteCache):
    """A cache where another process's reply lands between this one's look-up and claim.

    The other process stores its reply and drops its mark just after this process missed
    the look-up: the interleaving that made two processes pay twice for one request.
    """

    def claim(self, key: str, ttl_s: float = PENDING_TTL_S) -> bool:
        if self.get(key) is None:
            self.put(key, Completion("Fine. \\boxed{7}", 10, 3, finish_reason="stop"), {})
        return super().claim(key, ttl_s)


def test_a_reply_stored_between_look_up_and_claim_is_used_not_bought_again(
    tmp_path: Path,
) -> None:
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.judges.qa.engine import JudgeItem, judge_items, make_judge

    items = [JudgeItem(question=f"Q{i}?", response=f"answer {i}", reference="r") for i in range(3)]
    with LoopbackOpenAI(boxed_by_response(lambda _r: 2)) as server:
        config = parse_judge_spec(f"openai:gpt-4o,base_url={server.base_url},progress=false")
        cache = _StoredBeforeTheClaim(tmp_path / "shared.sqlite")
        run = judge_items(items, config, judge=make_judge(config, cache=cache))
        assert server.requests == []  # each reply was already there once the claim was made
    assert [j.score for j in run.judgements] == [7, 7, 7]
    cache.close()
