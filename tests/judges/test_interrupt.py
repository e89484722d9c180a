"""Ctrl-C or SIGTERM while judging: nothing new is sent, replies in flight are cached, one line.

Issue 25, point 6. A child process judges through the loopback server, which answers the
first requests at once and holds the next ones (they are in flight) until the test lets
them land, after the signal. The replies that land must be in the cache, no request may
start after the signal, the child must end with the shell's status (130 for SIGINT, 143
for SIGTERM) and one line, and a re-run must send exactly the items never answered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.aio import GRACE_ENV
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from tests.conftest import ROOT, lm_eval_command
from tests.judges.conftest import boxed_by_response, response_in
from tests.support.judge_cache import cached_rows
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply
from tests.support.stop_marker import MARKER_ENV, sitecustomize_source

N_ITEMS = 16
ANSWERED_FIRST = 4
CONCURRENCY = 3

CHILD = textwrap.dedent(
    """
    import sys
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.judges.qa.engine import JudgeItem, judge_items
    from elitr_bench.judges.aio import RunInterrupted
    spec, n = sys.argv[1], int(sys.argv[2])
    items = [JudgeItem(question=f"Q{i}?", response=f"answer number {i}", reference="r")
             for i in range(n)]
    try:
        judge_items(items, parse_judge_spec(spec), on_error="record")
    except RunInterrupted as stop:  # a library caller gets a KeyboardInterrupt with the line
        print(stop.line, file=sys.stderr)
        sys.exit(stop.status)
    print("finished without the signal", file=sys.stderr)
    """
)


def _items(n: int) -> list[JudgeItem]:
    return [
        JudgeItem(question=f"Q{i}?", response=f"answer number {i}", reference="r") for i in range(n)
    ]


class HoldAfter:
    """Answer the first ``answered`` requests at once, hold the rest until ``gate`` opens."""

    def __init__(self, answered: int) -> None:
        self.answered = answered
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.seen = 0
        self.score = boxed_by_response(lambda r: len(r) % 10 + 1)

    def __call__(self, request: RecordedRequest) -> Reply | str:
        with self.lock:
            self.seen += 1
            first = self.seen <= self.answered
        if first:
            return self.score(request)
        return Reply(content=self.score(request), wait=self.gate)


def _child_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The child's environment with the stop watcher (tests/support/stop_marker.py)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(sitecustomize_source(), encoding="utf-8")
    marker = tmp_path / "child-is-stopping"
    path = os.pathsep.join([str(hook), str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, MARKER_ENV: str(marker)}
    env[GRACE_ENV] = "60"  # the held replies land long before; a loaded machine is slow
    return env, marker


def _wait_for(condition: Callable[[], bool], child: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 120
    while not condition():
        assert child.poll() is None, child.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"the child never {what}"
        time.sleep(0.02)


def _interrupt_when_in_flight(
    child: subprocess.Popen[str],
    server: LoopbackOpenAI,
    script: HoldAfter,
    cache: Path,
    sig: int,
    marker: Path,
) -> int:
    """Signal the child once requests are held in flight; let them land; the request count."""
    in_flight = script.answered + CONCURRENCY
    _wait_for(
        lambda: cached_rows(cache) >= script.answered and len(server.requests) >= in_flight,
        child,
        "sent its first requests",
    )
    sent = len(server.requests)
    child.send_signal(sig)
    # The held replies land only once the child has recorded the signal (no guessed sleep).
    _wait_for(marker.exists, child, "recorded the signal")
    script.gate.set()
    return sent


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_keeps_the_replies_in_flight_and_says_so_in_one_line(
    tmp_path: Path, sig: int, status: int
) -> None:
    cache = tmp_path / "cache.sqlite"
    script = HoldAfter(ANSWERED_FIRST)
    with LoopbackOpenAI(script) as server:
        spec = (
            f"openai:gpt-4-0613,base_url={server.base_url},cache={cache},"
            f"concurrency={CONCURRENCY},progress=false"
        )
        env, marker = _child_env(tmp_path)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, spec, str(N_ITEMS)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            sent = _interrupt_when_in_flight(child, server, script, cache, sig, marker)
            _, stderr = child.communicate(timeout=120)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert sent == ANSWERED_FIRST + CONCURRENCY
        assert child.returncode == status, stderr[-3000:]
        assert "Traceback" not in stderr
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, stderr
        name = "SIGINT (Ctrl-C)" if sig == signal.SIGINT else "SIGTERM"
        assert lines[0].startswith(f"interrupted by {name} while judging"), lines[0]
        assert f"{CONCURRENCY} replies that were in flight landed" in lines[0]
        assert str(cache) in lines[0] and "Re-run the same command to resume" in lines[0]
        # Nothing was sent after the signal, and every paid reply is in the cache.
        assert len(server.requests) == sent
        assert cached_rows(cache) == sent

        # The same command resumes: only the items never answered are sent.
        answered = {response_in(r) for r in server.snapshot()}
        server.reset()
        script.answered = N_ITEMS * 2
        run = judge_items(_items(N_ITEMS), parse_judge_spec(spec))
        resent = [response_in(r) for r in server.snapshot()]
    assert not set(resent) & answered
    assert len(resent) == N_ITEMS - sent
    assert all(j.status == "scored" for j in run.judgements)


@pytest.mark.slow
def test_ctrl_c_in_the_lm_eval_cli_ends_with_one_line_and_status_130(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    script = HoldAfter(ANSWERED_FIRST)
    with LoopbackOpenAI(script, model="gpt-4-0613") as server:
        judge = (
            f"openai:gpt-4-0613,base_url={server.base_url},cache={cache},"
            f"concurrency={CONCURRENCY},progress=false"
        )
        args = ["--model", "elitr-replay", "--model_args", "system=gpt-4"]
        args += [
            "--tasks",
            "elitr_qa_test",
            "--limit",
            "12",
            "--metadata",
            json.dumps({"judge": judge}),
        ]
        args += ["--output_path", str(tmp_path / "out"), "--log_samples"]
        cmd = lm_eval_command()
        env, marker = _child_env(tmp_path)
        child = subprocess.Popen(
            [*cmd, *args], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
        )
        try:
            sent = _interrupt_when_in_flight(child, server, script, cache, signal.SIGINT, marker)
            _, stderr = child.communicate(timeout=300)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert child.returncode == 130, stderr[-3000:]
        assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
        last = stderr.strip().splitlines()[-1]
        assert last.startswith("elitr-bench: interrupted by SIGINT (Ctrl-C) while judging"), last
        assert stderr.count("elitr-bench:") == 1, stderr[-3000:]
        assert len(server.requests) == sent and cached_rows(cache) == sent
