"""The cache commands and the judges touch only our cache file (issue 41, point 2).

``completions`` is a common table name among LLM tools: ``elitr-bench cache info`` used to
switch such a file to WAL, add tables and columns and die with a traceback, and ``cache
clear --yes`` deleted all its rows. Our file carries a marker (SQLite's
``application_id``); any other file is refused in one line and stays byte for byte what
it was (its SHA-256 and modification time before and after, and no ``-wal``/``-shm`` file
appears beside it). Issue 48: ``cache info`` on another program's WAL-mode file with its
``-wal`` beside it made a 32 KB ``-shm`` file there, and a table-less file another program
had versioned (``user_version``) was taken for an empty one and given our tables.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.readiness import check_cache
from elitr_bench.llm.cache import (
    APPLICATION_ID,
    Completion,
    SQLiteCache,
    inspect_cache_file,
)
from elitr_bench.llm.errors import JudgeCacheError


def _digest(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file in ``folder`` -> its SHA-256 and mtime (a new sidecar file shows up too)."""
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.iterdir())
    }


def _other_tool(path: Path) -> Path:
    """Another LLM tool's SQLite file: a ``completions`` table of its own, with rows."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE completions (id INTEGER PRIMARY KEY, prompt TEXT, reply TEXT)")
        conn.executemany(
            "INSERT INTO completions (prompt, reply) VALUES (?, ?)", [("a", "b"), ("c", "d")]
        )
    conn.close()
    return path


def _like_ours_plus_a_table(path: Path) -> Path:
    """Our exact ``completions`` table beside a table of someone else's: still not ours."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE completions (key TEXT PRIMARY KEY, backend TEXT, model TEXT,"
            " params TEXT, text TEXT NOT NULL, prompt_tokens INTEGER,"
            " completion_tokens INTEGER, created REAL)"
        )
        conn.execute("INSERT INTO completions (key, text) VALUES ('k', 'v')")
        conn.execute("CREATE TABLE users (name TEXT)")
    conn.close()
    return path


def _marked_by_another(path: Path) -> Path:
    """An SQLite file another program marked as its own (``application_id``)."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA application_id = 1234")
        conn.execute("CREATE TABLE completions (key TEXT, text TEXT)")
    conn.close()
    return path


def _versioned(path: Path) -> Path:
    """A table-less SQLite file another program has stamped with its ``user_version``."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    conn.close()
    return path


def _wal_beside(path: Path, *, checkpointed: bool) -> Path:
    """Another program's WAL-mode file as it left it: a ``-wal`` beside it, no ``-shm``.

    Copied while the other program holds it open (as after a crash, or a copy of its
    folder), so the log holds writes the file does not. ``checkpointed``: its table is
    in the file too, else only in the log.
    """
    elsewhere = path.parent.parent / "other-program"
    elsewhere.mkdir()
    conn = sqlite3.connect(elsewhere / path.name, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE notes (body TEXT)")
    if checkpointed:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("INSERT INTO notes VALUES ('kept in the log')")
    shutil.copy(elsewhere / path.name, path)
    shutil.copy(elsewhere / f"{path.name}-wal", f"{path}-wal")
    conn.close()
    return path


def _wal_tables_in_file(path: Path) -> Path:
    return _wal_beside(path, checkpointed=True)


def _wal_tables_in_log(path: Path) -> Path:
    return _wal_beside(path, checkpointed=False)


def _json(path: Path) -> Path:
    path.write_text(json.dumps({"results": {"elitr_qa": {"judge_score": 7.1}}}))
    return path


FOREIGN = {
    "another tool's completions table": (_other_tool, "with tables completions"),
    "our columns beside another table": (_like_ours_plus_a_table, "tables completions, users"),
    "another application_id": (_marked_by_another, "application_id 0x4d2"),
    "a table-less file with a user_version": (_versioned, "user_version 7"),
    "a WAL-mode file with its -wal beside it": (_wal_tables_in_file, "with tables notes"),
    "a WAL-mode file whose tables are in its -wal": (
        _wal_tables_in_log,
        "an SQLite file another program is writing",
    ),
    "a JSON file": (_json, "not an SQLite file"),
}


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", FOREIGN)
def test_the_commands_refuse_any_other_file_and_leave_it_byte_identical(
    kind: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make, detail = FOREIGN[kind]
    folder = tmp_path / "data"
    folder.mkdir()
    path = make(folder / "store.db")
    before = _digest(folder)
    commands = (["cache", "info"], ["cache", "clear", "--yes"], ["cache", "prune", "--model", "m"])
    for args in commands:
        code, out, err = _run([*args, "--cache", str(path)], capsys)
        assert code == 2 and out == "", (args, out)
        [line] = err.splitlines()
        assert f"judge cache {path}: not a judge cache of lm-eval-elitr (" in line
        assert detail in line and f"check the path in --cache {path}" in line
        assert ".damaged" not in line  # moving it aside is no fix for a wrong path
        assert _digest(folder) == before, args
    monkeypatch.setenv("ELITR_JUDGE_CACHE", str(path))  # named by the runs' setting
    code, _, err = _run(["cache", "clear", "--yes"], capsys)
    assert code == 2 and "check the path in ELITR_JUDGE_CACHE" in err
    # A judge run given the file as its cache refuses it before writing too.
    with pytest.raises(JudgeCacheError, match=f"not a judge cache of lm-eval-elitr .*{detail}"):
        check_cache(str(path))
    with pytest.raises(JudgeCacheError, match="check the path in cache= or ELITR_JUDGE_CACHE"):
        SQLiteCache(path)
    assert _digest(folder) == before


def test_a_mistyped_path_is_named_as_missing_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "judge-cahce.sqlite"
    for args in (["cache", "info"], ["cache", "clear", "--yes"]):
        code, out, err = _run([*args, "--cache", str(typo)], capsys)
        assert code == 2 and out == ""
        [line] = err.splitlines()
        assert f"--cache {typo}: no such file; check the path" in line, line
        assert "damaged" not in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("setting", ["off", "memory"])
def test_a_run_setting_without_a_file_leaves_the_default_cache_alone(
    setting: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ELITR_JUDGE_CACHE=off`` used to make ``cache clear`` clear the default file."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("ELITR_JUDGE_CACHE", raising=False)
    code, out, _ = _run(["cache", "info"], capsys)
    default = Path(out.split("no judge cache at ")[1].split(" yet")[0])
    assert default.is_relative_to(tmp_path)
    cache = SQLiteCache(default)
    cache.put("k", Completion("paid for"), {"model": "gpt-4o"})
    cache.close()
    before = _digest(default.parent)
    monkeypatch.setenv("ELITR_JUDGE_CACHE", setting)
    for args, doing in ((["cache", "clear", "--yes"], "clear"), (["cache", "info"], "show")):
        code, out, err = _run(args, capsys)
        assert code == 0 and err == ""
        assert out.startswith(f"ELITR_JUDGE_CACHE={setting}: judged runs keep ")
        assert f"so there is nothing to {doing}" in out
    assert _digest(default.parent) == before


def test_a_new_cache_carries_the_marker(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite"
    SQLiteCache(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()
    assert inspect_cache_file(path).kind == "ours"


def test_a_cache_of_ours_from_before_the_marker_is_recognised_and_stamped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first release's table (no ``finish_reason``, ``used`` or ``pending``), no marker."""
    path = tmp_path / "judge.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE completions ( key TEXT PRIMARY KEY, backend TEXT, model TEXT,"
            " params TEXT, text TEXT NOT NULL, prompt_tokens INTEGER,"
            " completion_tokens INTEGER, created REAL)"
        )
        conn.execute("INSERT INTO completions VALUES ('k', 'openai', 'gpt-4o', '{}', 'r', 1, 1, 0)")
    conn.close()
    assert inspect_cache_file(path).kind == "unmarked"
    code, out, _ = _run(["cache", "info", "--cache", str(path)], capsys)
    assert code == 0 and "entries: 1" in out
    assert inspect_cache_file(path).kind == "ours"
    code, out, _ = _run(["cache", "clear", "--yes", "--cache", str(path)], capsys)
    assert code == 0 and out.startswith(f"deleted 1 entries from {path}")


def test_an_empty_file_is_no_cache_yet_and_stays_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "judge.sqlite"
    path.touch()
    code, out, _ = _run(["cache", "clear", "--yes", "--cache", str(path)], capsys)
    assert code == 0 and out.startswith(f"{path} holds no judge replies yet")
    assert path.stat().st_size == 0 and list(tmp_path.iterdir()) == [path]
