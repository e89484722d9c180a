"""``arena``, ``mesa`` and ``mesa-train`` check the judge before paying for anything.

A dead endpoint used to be retried for every call (about a minute) before the commands
wrote empty results; now one preflight request fails fast with one line. Calls the cache
answers, and ``--dry-run``, need no preflight.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.llm import memory
from tests.judges.test_cream_arena import FAST, cream_script, two_runs, write_run
from tests.support.openai_server import LoopbackOpenAI


def closed_port_url() -> str:
    """Base URL of a loopback port nobody listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def fails_fast(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the CLI, expect a non-zero exit from the preflight, return the error line.

    A judge retried instead of checked takes over a minute (6 retries with exponential
    back-off, 1+2+...+32 s); the 45 s bound tells the two apart on any loaded machine and
    is a hang guard, not a speed measurement.
    """
    start = time.monotonic()
    code = main(argv)
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert code != 0
    assert elapsed < 45, f"took {elapsed:.1f}s: the judge was retried instead of checked"
    errors = [line for line in err.splitlines() if line.startswith("elitr-bench: error")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def test_arena_closed_port_one_line_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [str(run) for run in two_runs(tmp_path)]
    out = tmp_path / "arena"
    url = closed_port_url()
    line = fails_fast(
        ["arena", *runs, "--judge", f"openai:gpt-4o,base_url={url}", "--out", str(out), *FAST],
        capsys,
    )
    assert f"cannot reach {url}" in line and "preflight=false" in line
    assert not out.exists()  # no arena, comparisons or leaderboard


@dataclass
class CachedArena:
    """An arena of two runs judged by the scripted judge, every call of it in the cache."""

    loopback: LoopbackOpenAI
    judge: str
    out: Path
    argv: list[str]

    def judge_gone(self) -> None:
        """The judge's server stops, and no earlier preflight of it counts."""
        self.loopback.stop()
        memory.forget()  # as a new process: no earlier passed preflight counts


@pytest.fixture
def cached_arena(tmp_path: Path, loopback: LoopbackOpenAI) -> CachedArena:
    loopback.handler = cream_script()
    loopback.model = "judge-model"
    judge = f"openai:judge-model,base_url={loopback.base_url}"
    out = tmp_path / "arena"
    argv = ["arena", *map(str, two_runs(tmp_path)), "--judge", judge, "--out", str(out), *FAST]
    assert main(argv) == 0
    assert len(loopback.snapshot()) == 12
    return CachedArena(loopback, judge, out, argv)


def test_arena_all_cached_needs_no_preflight(
    cached_arena: CachedArena, capsys: pytest.CaptureFixture[str]
) -> None:
    out = cached_arena.out
    board = (out / "leaderboard.md").read_text("utf-8")
    # A run killed before writing its records: every call is cached, the server is gone.
    (out / "comparisons.jsonl").unlink()
    cached_arena.judge_gone()
    capsys.readouterr()
    assert main(cached_arena.argv) == 0
    assert "judge requests sent: 0, cache hits: 12" in capsys.readouterr().out
    assert (out / "leaderboard.md").read_text("utf-8") == board


def test_arena_partly_cached_still_preflights(
    cached_arena: CachedArena, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, judge = cached_arena.out, cached_arena.judge
    third = str(write_run(tmp_path, "m-third", "half"))
    cached_arena.judge_gone()
    capsys.readouterr()
    line = fails_fast(["arena", third, "--judge", judge, "--out", str(out), *FAST], capsys)
    assert "cannot reach" in line
    assert len((out / "comparisons.jsonl").read_text("utf-8").splitlines()) == 4


@pytest.mark.parametrize("command", ["mesa", "mesa-train"])
def test_mesa_closed_port_one_line_nothing_written(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mesa"
    url = closed_port_url()
    which = ["--meetings", "1"] if command == "mesa" else ["--feedback-meetings", "2"]
    argv = [command, "--systems", "gpt4", *which, "--judge", f"openai:gpt-4o,base_url={url}"]
    line = fails_fast([*argv, "--out", str(out)], capsys)
    assert f"cannot reach {url}" in line
    assert not out.exists()
    # --dry-run prints the plan and sends nothing, so it needs no reachable judge.
    assert main([*argv, "--out", str(out), "--dry-run"]) == 0
    assert "MESA plan (MADP-S debate" in capsys.readouterr().err
    assert not out.exists()
