"""One writer per arena folder; adding a system is one step (issue 25, points 1 and 4).

Two ``elitr-bench arena`` processes into one ``--out`` used to both exit 0 while the last
writer dropped the other's system. Now the second one refuses in one line naming the
first (PID, host, command), or with ``--wait`` waits and then adds its system to what the
first wrote. A lock left by a killed run is taken over with a note. A full disk (or a
kill) while a system is added leaves the old arena, which the same command completes.
"""

from __future__ import annotations

import csv
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from elitr_bench.data import folder as folder_module
from elitr_bench.data.folder import (
    LOCK_FILE,
    FolderBusyError,
    FolderLock,
    leftover_temp_files,
    write_atomic,
)
from elitr_bench.judges.cream.arena import load_state
from tests.conftest import ROOT
from tests.judges.test_cream_arena import FAST, arena, cream_script, two_runs, write_run
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply

CLI = "import sys; from elitr_bench.cli import main; sys.exit(main(sys.argv[1:]))"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def _start_arena(
    server: LoopbackOpenAI, out: Path, runs: list[Path], *extra: str
) -> subprocess.Popen[str]:
    spec = f"openai:judge-model,base_url={server.base_url}"
    args = ["arena", *map(str, runs), "--judge", spec, "--out", str(out), *FAST, *extra]
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *args],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(
    condition: object, what: str, child: subprocess.Popen[str], timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert child.poll() is None, f"{what}: child ended early: {child.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _systems_in(out: Path) -> tuple[list[str], list[str]]:
    meta = json.loads((out / "arena.json").read_text())
    board = list(csv.DictReader((out / "leaderboard.csv").open()))
    return sorted(meta["systems"]), sorted({r["system"] for r in board})


def test_two_arena_runs_into_one_folder_keep_every_system(tmp_path: Path) -> None:
    common = two_runs(tmp_path)
    third = write_run(tmp_path, "m-third", "third")
    fourth = write_run(tmp_path, "m-fourth", "x", text=lambda m: f"- Only one line about {m}.")
    out = tmp_path / "arena"
    gate = threading.Event()
    answer = cream_script()

    def held(request: RecordedRequest) -> Reply | str:
        return Reply(content=answer(request), wait=gate)  # run A holds the lock meanwhile

    with LoopbackOpenAI(held, model="judge-model") as server:
        first = _start_arena(server, out, [*common, third])
        lock = out / LOCK_FILE
        _wait_for(lambda: len(server.requests) > 0, "run A sends", first)
        assert str(first.pid) in lock.read_text()

        # Without --wait: one line naming the holder; nothing written, nothing sent.
        refused = _start_arena(server, out, [*common, fourth])
        _, err = refused.communicate(timeout=120)
        assert refused.returncode == 2, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith(
            f"elitr-bench: error: {out} is in use by another run (PID {first.pid}"
        )
        assert "arena" in err and "--wait" in err

        # With --wait: it waits for A, then adds its system to what A wrote.
        second = _start_arena(server, out, [*common, fourth], "--wait")
        assert second.stderr is not None
        err_b: list[str] = []
        reader = threading.Thread(target=lambda: err_b.extend(second.stderr))  # type: ignore[arg-type]
        reader.start()
        _wait_for(lambda: err_b, "run B says it waits", second)
        assert err_b[0].startswith(f"elitr-bench: waiting for {out}: in use by PID {first.pid}")
        gate.set()
        _, err_a = first.communicate(timeout=300)
        second.wait(timeout=300)
        reader.join()
        assert first.returncode == 0, err_a[-3000:]
        assert second.returncode == 0, "".join(err_b)[-3000:]

    names = ["hf,m-fourth", "hf,m-full", "hf,m-half", "hf,m-third"]
    assert _systems_in(out) == (names, names)
    header = (out / "leaderboard.csv").read_text().splitlines()[0].split(",")
    assert header[:2] == ["rank", "metric"] and len(header) == len(set(header))  # point 7
    comparisons = [json.loads(x) for x in (out / "comparisons.jsonl").read_text().splitlines()]
    assert len(comparisons) == 6 * 2 * 2  # 6 pairs x 2 meetings x 2 orders, each once
    assert lock.read_text() == "" and not leftover_temp_files(out)


def test_a_lock_left_by_a_killed_run_is_taken_over_with_a_note(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from elitr_bench.data.folder import FolderLock;"
            "FolderLock(sys.argv[1], 'elitr-bench arena --out x').acquire();"
            "print('held', flush=True); time.sleep(600)",
            str(tmp_path),
        ],
        env=_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(
            FolderBusyError, match=f"PID {holder.pid} on .*`elitr-bench arena --out x`"
        ):
            FolderLock(tmp_path).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    notes: list[str] = []

    class Note:
        def write(self, text: str) -> None:
            notes.append(text)

    with FolderLock(tmp_path, "second", note=Note()):  # type: ignore[arg-type]
        assert '"command": "second"' in (tmp_path / LOCK_FILE).read_text()
    line = "".join(notes).strip()
    assert "took over the lock of a run that is no longer running" in line
    assert f"PID {holder.pid}" in line


def _disk_full_on(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``fsync`` of a temp file for ``name`` fails with ENOSPC, as on a full disk."""
    real = os.fsync

    def fsync(fd: int) -> None:
        if f".{name}." in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(folder_module.os, "fsync", fsync)


def _arena_of_two_and_a_third_run(loopback: LoopbackOpenAI, tmp_path: Path) -> tuple[Path, Path]:
    """An arena of ``m-full`` and ``m-half`` judged by the scripted judge; a third run."""
    loopback.handler = cream_script()
    out = tmp_path / "arena"
    assert arena(loopback, out, *map(str, two_runs(tmp_path))) == 0
    return out, write_run(tmp_path, "m-third", "third")


def test_disk_full_while_adding_a_system_leaves_an_arena_the_same_command_completes(
    tmp_path: Path,
    loopback: LoopbackOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, third = _arena_of_two_and_a_third_run(loopback, tmp_path)
    before = (out / "arena.json").read_text()
    capsys.readouterr()

    with monkeypatch.context() as patch:
        _disk_full_on("arena.json", patch)
        assert arena(loopback, out, str(third)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"elitr-bench: error: {out / 'arena.json'}: cannot write (No space")
    assert "re-run the same command" in err and len(err.splitlines()) == 1
    assert (out / "arena.json").read_text() == before  # the old arena, whole
    assert not leftover_temp_files(out)
    assert sorted(load_state(out).systems) == ["hf,m-full", "hf,m-half"]

    # The same command, with space again, adds the system (no "already in this arena").
    assert arena(loopback, out, str(third)) == 0
    assert sorted(json.loads((out / "arena.json").read_text())["systems"]) == [
        "hf,m-full",
        "hf,m-half",
        "hf,m-third",
    ]


def test_an_arena_listing_a_system_without_its_minutes_resumes(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder an older version left half-written (arena.json first, then killed)."""
    out, third = _arena_of_two_and_a_third_run(loopback, tmp_path)
    meta = json.loads((out / "arena.json").read_text())
    meta["systems"]["hf,m-third"] = {"source": str(third), "tasks": ["automin23_en"]}
    (out / "arena.json").write_text(json.dumps(meta))
    (out / "arena.json.tmp").write_text("{")  # and the old fixed temp name
    (out / ".minutes.jsonl.x1y2.tmp").write_text("cut")
    assert arena(loopback, out, str(third)) == 0
    printed = capsys.readouterr().out
    assert "removed .minutes.jsonl.x1y2.tmp" in printed
    assert "removed arena.json.tmp" in printed
    assert sorted(json.loads((out / "arena.json").read_text())["systems"]) == [
        "hf,m-full",
        "hf,m-half",
        "hf,m-third",
    ]


def test_write_atomic_keeps_the_old_file_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "summary.json"
    write_atomic(target, "old\n")
    _disk_full_on("summary.json", monkeypatch)
    with pytest.raises(folder_module.FolderWriteError, match="cannot write"):
        write_atomic(target, "new\n" * 1000)
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
    assert oct(target.stat().st_mode & 0o777) != oct(0o600)  # as open() would create it


_HOLDER = """
import sys
from elitr_bench.data.folder import FolderBusyError, FolderLock
lock = FolderLock(sys.argv[1], sys.argv[2], wait=sys.argv[3] == "wait")
try:
    lock.acquire()
except FolderBusyError as exc:
    print("busy", exc, flush=True)
    sys.exit(0)
print("held", flush=True)
sys.stdin.readline()  # hold it until told to let go
lock.release()
print("released", flush=True)
"""


def _holder(out: Path, name: str, wait: bool) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(out), name, "wait" if wait else "no-wait"],
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    return child.stdout.readline().strip()


def _waiting_holder(out: Path, name: str) -> subprocess.Popen[str]:
    """A holder that found the folder in use and waits for it."""
    child = _holder(out, name, wait=True)
    assert child.stderr is not None
    assert child.stderr.readline().startswith(f"elitr-bench: waiting for {out}: in use by PID")
    return child


def _let_go(child: subprocess.Popen[str]) -> None:
    """Tell a holder to release its lock; it says it did."""
    assert child.stdin is not None
    child.stdin.write("\n")
    child.stdin.flush()
    assert _line(child) == "released"


def test_a_waiter_keeps_the_lock_of_a_folder_its_creator_removed(tmp_path: Path) -> None:
    """Issue 34, point 1: B and C never hold one folder's lock together.

    A creates the folder and holds it, B waits, A ends having written nothing (its empty
    folder goes), then C arrives. Before the fix A deleted the lock file after unlocking:
    B held a lock on a deleted file and C created a new one and took it at once.
    """
    out = tmp_path / "arena"  # created by run A
    a = _holder(out, "run-A", wait=False)
    b = c = None
    try:
        assert _line(a) == "held"
        b = _waiting_holder(out, "run-B")
        _let_go(a)
        assert a.wait(timeout=60) == 0
        assert _line(b) == "held"
        c = _holder(out, "run-C", wait=False)
        verdict = _line(c)
        assert verdict.startswith("busy"), f"B and C hold the lock together: C said {verdict!r}"
        assert f"PID {b.pid}" in verdict and "run-B" in verdict
        assert c.wait(timeout=60) == 0
        assert '"command": "run-B"' in (out / LOCK_FILE).read_text()  # B's is the visible file

        c = _waiting_holder(out, "run-C")  # a waiting C gets it only once B lets go
        _let_go(b)
        assert _line(c) == "held"
        assert '"command": "run-C"' in (out / LOCK_FILE).read_text()
    finally:
        for child in (a, b, c):
            if child is not None and child.poll() is None:
                child.kill()
                child.wait()


def test_a_run_that_wrote_nothing_leaves_no_folder_and_leftovers_are_a_list(
    tmp_path: Path,
) -> None:
    out = tmp_path / "new"
    with FolderLock(out):
        assert (out / LOCK_FILE).exists()
    assert not out.exists()
    with FolderLock(out):
        (out / ".arena.json.abc.tmp").write_text("cut")
    assert (out / LOCK_FILE).exists()  # it wrote something: the folder stays
    removed = folder_module.remove_leftovers(out)  # deletes without being iterated
    assert not (out / ".arena.json.abc.tmp").exists()
    assert removed == [out / ".arena.json.abc.tmp"]
