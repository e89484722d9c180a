"""Cache upkeep (issue 34, point 5).

``elitr-bench cache info|prune|clear``, the size limit, and the judge client's cache calls
kept off the event-loop thread.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli import main
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.cache import Completion, SQLiteCache, open_cache
from elitr_bench.llm.client import JudgeClient
from tests.judges.test_arena_folder import _env
from tests.llm.test_transport import client_for
from tests.support.openai_server import LoopbackOpenAI

DAY = 86400.0


def _fill(path: Path) -> None:
    cache = SQLiteCache(path)
    for i in range(6):
        cache.put(f"old{i}", Completion("o" * 300), {"backend": "openai", "model": "gpt-4o"})
    for i in range(4):
        cache.put(f"new{i}", Completion("n" * 300), {"backend": "openai", "model": "gpt-4o"})
    for i in range(3):
        cache.put(f"q{i}", Completion("q"), {"backend": "hf", "model": "Qwen/Qwen2.5-7B"})
    cache._conn.execute(
        "UPDATE completions SET created = created - 40 * ? WHERE key LIKE 'old%'", (DAY,)
    )
    cache.close()


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_info_prune_and_clear(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "judge.sqlite"
    monkeypatch.setenv("ELITR_JUDGE_CACHE", str(path))
    code, out, _ = _run(["cache", "info"], capsys)  # no cache yet: said, and none made
    assert code == 0 and out.startswith(f"no judge cache at {path} yet") and not path.exists()
    _fill(path)

    code, out, _ = _run(["cache", "info"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"cache: {path}" and lines[1] == "entries: 13"
    assert lines[2].startswith("size: ") and "KB on disk" in lines[2]
    assert lines[3].startswith("size limit: none (set ELITR_JUDGE_CACHE_MAX_MB")
    assert lines[4].split() == ["model", "backend", "entries", "oldest", "newest"]
    gpt = lines[5].split()
    assert gpt[:3] == ["gpt-4o", "openai", "10"]
    today = time.strftime("%Y-%m-%d", time.gmtime())
    old = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 40 * DAY))
    assert gpt[3] == old and gpt[6] == today  # oldest 40 days ago, newest today
    assert lines[6].split()[:3] == ["Qwen/Qwen2.5-7B", "hf", "3"]

    code, _, err = _run(["cache", "prune"], capsys)
    assert code == 2 and "--older-than DAYS, --model NAME, or both" in err
    code, _, err = _run(["cache", "prune", "--model", "gtp-4o"], capsys)
    assert code == 2 and "no entry of model 'gtp-4o'; its models: Qwen/Qwen2.5-7B, gpt-4o" in err
    code, out, _ = _run(["cache", "prune", "--older-than", "30"], capsys)
    assert code == 0 and out.startswith("deleted 6 entries written more than 30 days ago; 7 left")
    code, out, _ = _run(["cache", "prune", "--model", "Qwen/Qwen2.5-7B"], capsys)
    assert code == 0 and out.startswith("deleted 3 entries of model Qwen/Qwen2.5-7B; 4 left")
    with pytest.raises(SystemExit):
        main(["cache", "prune", "--older-than", "soon"])
    assert "'soon' is not a positive number of days" in capsys.readouterr().err

    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a terminal: never asked
    code, _, err = _run(["cache", "clear"], capsys)
    assert code == 2 and "deletes all 4 entries" in err and "add --yes" in err
    assert SQLiteCache(path).count() == 4
    code, out, _ = _run(["cache", "clear", "--yes"], capsys)
    assert code == 0 and out.startswith(f"deleted 4 entries from {path}")
    assert SQLiteCache(path).count() == 0
    code, out, _ = _run(["cache", "clear", "--yes", "--cache", str(path)], capsys)
    assert code == 0 and "nothing to clear" in out


def test_clear_asks_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "judge.sqlite"
    _fill(path)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, out, _ = _run(["cache", "clear", "--cache", str(path)], capsys)
    assert code == 1 and "delete all 13 judge replies" in out and "nothing deleted" in out
    assert SQLiteCache(path).count() == 13
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    code, out, _ = _run(["cache", "clear", "--cache", str(path)], capsys)
    assert code == 0 and "deleted 13 entries" in out


def test_the_size_limit_evicts_the_least_recently_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "judge.sqlite"
    monkeypatch.setenv("ELITR_JUDGE_CACHE_MAX_MB", "0.25")
    cache = open_cache(str(path))
    assert isinstance(cache, SQLiteCache) and cache.max_bytes == 256 * 1024
    meta = {"backend": "openai", "model": "m"}
    for i in range(10):
        cache.put(f"first{i}", Completion(f"{i}" + "x" * 2000), meta)
    for i in range(400):  # ~800 KB written into a 256 KB cache
        cache.put(f"k{i}", Completion("y" * 2000), meta)
        if i % 10 == 0:
            for j in range(5):  # the first five stay in use
                assert cache.get(f"first{j}") is not None, (i, j)
    kept = cache.count()
    cache.close()
    assert 50 < kept < 140  # about 256 KB of 2 KB entries
    reopened = SQLiteCache(path)  # opening under the limit evicts too
    assert reopened.stats().data_bytes <= 256 * 1024
    assert all(reopened.get(f"first{j}") is not None for j in range(5))
    assert all(reopened.get(f"first{j}") is None for j in range(5, 10))
    assert reopened.get("k0") is None and reopened.get("k399") is not None
    reopened.close()

    monkeypatch.setenv("ELITR_JUDGE_CACHE_MAX_MB", "lots")
    with pytest.raises(ValueError, match="ELITR_JUDGE_CACHE_MAX_MB='lots' must be a positive"):
        open_cache(str(path))


class _ThreadRecordingCache:
    """A real SQLite cache that records which thread each call runs in."""

    def __init__(self, path: Path) -> None:
        self.inner = SQLiteCache(path)
        self.threads: list[tuple[str, int]] = []

    def _note(self, name: str) -> None:
        self.threads.append((name, threading.get_ident()))

    def get(self, key: str) -> Completion | None:
        self._note("get")
        return self.inner.get(key)

    def put(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        self._note("put")
        self.inner.put(key, completion, meta)

    def claim(self, key: str) -> bool:
        self._note("claim")
        return self.inner.claim(key)

    def release(self, key: str) -> None:
        self._note("release")
        self.inner.release(key)

    def close(self) -> None:
        self.inner.close()


def test_the_client_never_touches_the_cache_on_the_event_loop_thread(
    loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    loopback.handler = lambda request: "\\boxed{7}"
    cache = _ThreadRecordingCache(tmp_path / "judge.sqlite")
    client: JudgeClient = client_for(loopback, cache=cache)

    async def run() -> int:
        loop_thread = threading.get_ident()
        requests = [
            CompletionRequest(f"p{i}", temperature=0.0, top_p=1.0, max_tokens=8, seed=None)
            for i in range(6)
        ]
        await asyncio.gather(*(client.complete(r) for r in requests))
        await asyncio.gather(*(client.complete(r) for r in requests))  # hits
        return loop_thread

    loop_thread = asyncio.run(run())
    called = {name for name, _ in cache.threads}
    assert called == {"get", "put", "claim", "release"}
    assert all(thread != loop_thread for _, thread in cache.threads)
    assert cache.inner.count() == 6
    cache.close()


def test_a_writer_holding_the_file_never_delays_a_lookup(tmp_path: Path) -> None:
    """A write lock held by another process (and a put of ours waiting on it) delays no lookup.

    Lookups use a connection of their own (WAL readers never wait for a writer).
    """
    path = tmp_path / "judge.sqlite"
    cache = SQLiteCache(path, busy_timeout_s=30)
    cache.put("k", Completion("kept"), {})
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
            "c.execute('BEGIN IMMEDIATE'); c.execute(\"INSERT INTO completions (key, text)"
            " VALUES ('other', 'x')\"); print('locked', flush=True); sys.stdin.readline();"
            "c.execute('COMMIT')",
            str(path),
        ],
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        writers = [
            threading.Thread(target=cache.put, args=(f"w{i}", Completion(f"w{i}"), {}))
            for i in range(8)
        ]
        for writer in writers:
            writer.start()  # each waits for the other process's write lock
        hit = cache.get("k")  # answered while the puts wait
        assert hit is not None and hit.text == "kept" and all(w.is_alive() for w in writers)
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        for writer in writers:
            writer.join(timeout=60)
            assert not writer.is_alive()
        assert all(cache.get(f"w{i}") is not None for i in range(8)) and cache.unsaved == 0
        assert cache.count() == 1 + 8 + 1  # ours, the eight that waited, the other process's
    finally:
        holder.kill()
        holder.wait()
        cache.close()
