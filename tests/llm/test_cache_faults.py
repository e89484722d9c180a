"""A cache that cannot be written or read never loses a paid reply (issue 25, points 2 and 3).

The faults are SQLite's own: ``max_page_count`` makes the file full (``database or disk
is full``, as on a full disk), ``query_only`` makes it refuse writes (``attempt to write
a readonly database``, as a read-only file does; the tests run as root, where ``chmod``
would not stop a write), and random bytes over a page in the middle of the file damage
it with its header intact (``database disk image is malformed``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, judge_items, make_judge
from elitr_bench.judges.readiness import check_cache, check_judge_ready
from elitr_bench.llm.cache import Completion, SQLiteCache
from elitr_bench.llm.errors import JudgeCacheError, JudgeConfigError
from elitr_bench.tasks.preflight import check_run_judges
from tests.judges.conftest import boxed_by_response, response_in
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

ITEMS = [JudgeItem(question=f"Q{i}?", response=f"answer {i}", reference="r") for i in range(8)]
#: Long enough that every reply needs pages of its own (a full file cannot take one).
PADDING = "x" * 6000


def _long_reply(request: RecordedRequest) -> str:
    """A score by the answer's number, after feedback longer than a page."""
    number = int(response_in(request).split()[-1])
    return f"Feedback: {PADDING}. \\boxed{{{number % 10 + 1}}}"


def _spec(base_url: str, cache: Path) -> str:
    return f"openai:gpt-4o,base_url={base_url},cache={cache},backoff=0.01,progress=false"


def _refusing(path: Path, fault: str) -> SQLiteCache:
    """A cache whose file takes no more rows, for the reason ``fault`` names."""
    cache = SQLiteCache(path)
    conn = cache._conn  # the fault is injected into SQLite itself, not into our code
    if fault == "full":
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={pages}")
    else:
        conn.execute("PRAGMA query_only=ON")
    return cache


def _damage(path: Path) -> None:
    """Random bytes over a page in the middle of a cache file of 40 rows; header intact."""
    cache = SQLiteCache(path)
    for i in range(40):
        cache.put(f"k{i}", Completion(f"reply {i} " + "y" * 400), {})
    cache.close()
    with sqlite3.connect(path) as conn:  # fold the WAL into the file before damaging it
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = path.stat().st_size // 4096
    assert pages >= 4
    with path.open("r+b") as handle:
        handle.seek(4096 * (pages // 2))
        handle.write(os.urandom(4096))
    from elitr_bench.llm import cache as cache_module

    cache_module._CHECKED.clear()  # this process checked the file while it was intact


@pytest.mark.parametrize("fault", ["full", "readonly"])
def test_a_cache_that_refuses_writes_loses_no_paid_reply(
    tmp_path: Path, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.sqlite"
    with LoopbackOpenAI(_long_reply) as server:
        config = parse_judge_spec(_spec(server.base_url, path))
        cache = _refusing(path, fault)
        judge = make_judge(config, cache=cache)
        with caplog.at_level(logging.WARNING):
            run = judge_items(ITEMS, config, judge=judge, on_error="record")
            again = judge_items(ITEMS, config, judge=judge, on_error="record")
        # Every paid reply scored its item (none became an 'error'), and the second run
        # of the same process paid nothing: the replies were kept in memory.
        assert [j.status for j in run.judgements] == ["scored"] * len(ITEMS)
        assert [j.score for j in run.judgements] == [i % 10 + 1 for i in range(len(ITEMS))]
        assert [j.score for j in again.judgements] == [j.score for j in run.judgements]
        assert len(server.requests) == len(ITEMS)
        assert cache.unsaved > 0
    warnings = [r.getMessage() for r in caplog.records if "judge cache" in r.getMessage()]
    assert len(warnings) == 1, warnings  # once per file, not once per reply
    assert str(path) in warnings[0] and "pays for them again" in warnings[0]
    assert "\n" not in warnings[0]

    # Space freed before the run ends: the kept replies reach the file when it closes.
    cache._conn.execute("PRAGMA max_page_count=1073741823")
    cache._conn.execute("PRAGMA query_only=OFF")
    cache.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0] == len(ITEMS)


def test_a_damaged_cache_is_named_in_one_line_with_a_fix_that_works(tmp_path: Path) -> None:
    path = tmp_path / "damaged.sqlite"
    _damage(path)
    with sqlite3.connect(path) as conn, pytest.raises(sqlite3.DatabaseError, match="malformed"):
        conn.execute("SELECT key, text FROM completions").fetchall()  # the fault is real

    with pytest.raises(JudgeCacheError) as caught:
        check_cache(str(path))
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(f"judge cache {path} is damaged (")
    assert f"mv {path} {path}.damaged" in line and "cache=off" in line
    assert "elitr-bench score" not in line  # it would fail the same way

    # Both ways out work: the file moved aside starts a new cache; cache=off needs none.
    with LoopbackOpenAI(boxed_by_response(lambda _r: 7)) as server:
        config = parse_judge_spec(_spec(server.base_url, path))
        with pytest.raises(JudgeCacheError):
            check_judge_ready(config)
        off = parse_judge_spec(_spec(server.base_url, path).replace(f"cache={path}", "cache=off"))
        check_judge_ready(off)
        assert [j.score for j in judge_items(ITEMS[:2], off).judgements] == [7.0, 7.0]
        path.rename(f"{path}.damaged")
        check_judge_ready(config)
        assert [j.score for j in judge_items(ITEMS[:2], config).judgements] == [7.0, 7.0]


def test_the_start_up_check_opens_the_cache_before_the_model_loads(tmp_path: Path) -> None:
    """``lm_eval``'s start-up hook runs this check before the model is built."""
    path = tmp_path / "damaged.sqlite"
    _damage(path)
    with LoopbackOpenAI() as server:
        metadata = {"judge": _spec(server.base_url, path) + ",preflight=false"}
        with pytest.raises(JudgeCacheError, match=f"judge cache {path} is damaged"):
            check_run_judges(tasks=["elitr_qa_dev"], model="hf", metadata=metadata)
        assert not server.requests
    # Not a cache at all (another file given as cache=): named, with no advice to move it.
    other = tmp_path / "notes.txt"
    other.write_text("these are not completions\n" * 400)
    with pytest.raises(JudgeCacheError) as caught:
        check_cache(str(other))
    assert str(caught.value) == (
        f"judge cache {other}: not a judge cache of lm-eval-elitr (not an SQLite file); left "
        "untouched: check the path in cache= or ELITR_JUDGE_CACHE, or name a new file for "
        "the cache"
    )


def test_a_cache_damaged_during_a_run_is_fixed_before_score_is_advised(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's last line must not send the user to a command that fails the same way."""
    import sys

    from elitr_bench.judges.filtering import record_failures

    monkeypatch.setattr(sys, "argv", ["python", "--log_samples", "--output_path", "out"])
    reason = (
        "judge cache /c/judge.sqlite is damaged (database disk image is malformed); move it "
        "aside (mv /c/judge.sqlite /c/judge.sqlite.damaged) and re-run"
    )
    config = parse_judge_spec("openai:gpt-4o")
    with caplog.at_level(logging.WARNING):
        record_failures([reason], 3, config, source="cache-fault-test")
    (line,) = [
        r.getMessage()
        for r in caplog.records
        if "cache-fault" in r.getMessage() or reason in r.getMessage()
    ]
    assert "first move the cache aside (or use cache=off); then " in line
    assert line.index("move the cache aside") < line.index("elitr-bench score")


def test_an_arena_on_a_read_only_cache_finishes_and_warns_once(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 25, point 2: the arena used to end in a 53-line traceback, its replies lost."""
    from elitr_bench.llm import cache as cache_module
    from tests.judges.test_cream_arena import arena, cream_script, write_run

    opened = cache_module.SQLiteCache.__init__

    def read_only(self: SQLiteCache, *args: object, **kwargs: object) -> None:
        opened(self, *args, **kwargs)  # type: ignore[arg-type]
        self._conn.execute("PRAGMA query_only=ON")  # the file refuses every write from now

    monkeypatch.setattr(cache_module.SQLiteCache, "__init__", read_only)
    runs = [str(write_run(tmp_path, n, n.split("-")[1])) for n in ("m-full", "m-half")]
    with (
        LoopbackOpenAI(cream_script(), model="judge-model") as server,
        caplog.at_level(logging.WARNING),
    ):
        assert arena(server, tmp_path / "arena", *runs) == 0
        assert len(server.requests) == 12  # each paid once, none lost to the cache
    comparisons = (tmp_path / "arena" / "comparisons.jsonl").read_text().splitlines()
    assert len(comparisons) == 4 and all('"status": "ok"' in c for c in comparisons)
    warnings = [r.getMessage() for r in caplog.records if "cannot store replies" in r.getMessage()]
    assert len(warnings) == 1 and "judge-cache.sqlite" in warnings[0]
    assert "Traceback" not in capsys.readouterr().err


def test_the_start_up_check_creates_no_file_and_names_an_impossible_place(tmp_path: Path) -> None:
    """A check writes nothing, yet names a cache that could never be created.

    A dry run leaves no cache behind; an impossible place still fails before the model loads.
    """
    path = tmp_path / "new" / "judge.sqlite"
    check_cache(str(path))
    assert not path.exists() and not path.parent.exists()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(JudgeConfigError, match=f"judge cache {blocker}/j.sqlite: cannot create"):
        check_cache(str(blocker / "j.sqlite"))
    SQLiteCache(path).close()  # an existing cache is opened and read, as before
    check_cache(str(path))
    assert path.is_file()
