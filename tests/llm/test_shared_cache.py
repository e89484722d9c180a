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
import time
from pathlib import Path

from elitr_bench.llm.cache import Completion, SQLiteCache
from tests.conftest import ROOT
from tests.judges.conftest import boxed_by_response, response_in
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply

N_ITEMS = 12

CHILD = textwrap.dedent(
    """
    import json, sys
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.judges.qa.engine import JudgeItem, judge_items
    spec, n = sys.argv[1], int(sys.argv[2])
    items = [JudgeItem(question=f"Q{i}?", response=f"answer number {i}", reference="r")
             for i in range(n)]
    run = judge_items(items, parse_judge_spec(spec))
    print(json.dumps([j.score for j in run.judgements]))
    """
)


def test_two_processes_sharing_a_cache_send_each_request_once(tmp_path: Path) -> None:
    score = boxed_by_response(lambda r: int(r.split()[-1]) % 10 + 1)

    def slow(request: RecordedRequest) -> Reply:
        return Reply(content=score(request), delay=0.4)  # both processes overlap

    cache = tmp_path / "shared.sqlite"
    with LoopbackOpenAI(slow) as server:
        spec = f"openai:gpt-4-0613,base_url={server.base_url},cache={cache},concurrency=4"
        spec += ",progress=false"
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        SQLiteCache(cache).close()  # both children open an existing file
        children = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, spec, str(N_ITEMS)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [child.communicate(timeout=300) for child in children]
        sent = [response_in(r) for r in server.snapshot()]
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err[-3000:]
        assert json.loads(out) == [i % 10 + 1 for i in range(N_ITEMS)]
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
