"""Stopping a judging run on Ctrl-C or SIGTERM without losing what was paid.

Without this, a signal cancels every request in flight: the server has done (and billed)
the work, the reply never reaches the cache, and the re-run pays for it again; the user
reads a 60-line traceback ending in ``KeyboardInterrupt``. Instead, while judging (inside
:func:`elitr_bench.llm.aio.run_coroutine` in the main thread):

1. the first SIGINT/SIGTERM stops new requests (a request about to be sent raises
   :class:`StopRequested`; its item fails like any unsent one),
2. requests in flight get :func:`grace_seconds` to land; each reply is cached as usual,
3. then the run is cancelled (a second signal cancels at once), and
4. :class:`RunInterrupted` carries one line (what was kept, how to resume) and the exit
   status a shell expects (130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elitr_bench.llm.errors import JudgeRequestError

#: Seconds the requests in flight get to land after the first signal.
GRACE_ENV = "ELITR_BENCH_INTERRUPT_GRACE"
DEFAULT_GRACE_S = 5.0

#: The signals a judging run stops on, with the names printed in its line.
SIGNALS: dict[int, str] = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}


class StopRequested(JudgeRequestError):
    """A request was not sent because the run is stopping after a signal."""


class RunInterrupted(KeyboardInterrupt):
    """Judging stopped on a signal; ``line`` says what was kept, ``status`` is the exit code.

    A ``KeyboardInterrupt``, so library callers and notebooks stop as they would on Ctrl-C.
    """

    def __init__(self, line: str, status: int) -> None:
        super().__init__(line)
        self.line = line
        self.status = status


@dataclass
class _State:
    """The process's stop request: the signal, replies cached since, caches in use."""

    signum: int | None = None
    kept: int = 0
    caches: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


_STATE = _State()


def grace_seconds() -> float:
    """How long requests in flight may take to land after the first signal."""
    raw = os.environ.get(GRACE_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_GRACE_S
    except ValueError:
        return DEFAULT_GRACE_S


def stopping() -> bool:
    """Whether a signal asked this process to stop judging."""
    return _STATE.signum is not None


def request_stop(signum: int) -> bool:
    """Record the first signal; False when one was already recorded (stop waiting then)."""
    with _STATE.lock:
        if _STATE.signum is not None:
            return False
        _STATE.signum = signum
        return True


def watch_cache(cache: Any) -> None:
    """Remember a cache file in use, to name it in the line (in-memory caches have none)."""
    path = getattr(cache, "path", None)
    if isinstance(path, Path):
        with _STATE.lock:
            if str(path) not in _STATE.caches:
                _STATE.caches.append(str(path))


def note_kept() -> None:
    """One reply landed (and was cached) after the signal."""
    if _STATE.signum is not None:
        with _STATE.lock:
            _STATE.kept += 1


def not_sending() -> StopRequested:
    """The error of a request that the stopping run does not send."""
    return StopRequested("not sent: the run was interrupted")


def interrupted() -> RunInterrupted:
    """The one line and exit status of the recorded signal (call once stopping)."""
    signum = _STATE.signum if _STATE.signum is not None else signal.SIGINT
    where = f"the judge cache {', '.join(_STATE.caches)}" if _STATE.caches else "the judge cache"
    line = (
        f"interrupted by {SIGNALS.get(signum, f'signal {signum}')} while judging: no new judge "
        f"requests were sent; {_STATE.kept} replies that were in flight landed and, like every "
        f"reply received before, are in {where}. Re-run the same command to resume: cached "
        "replies are not paid again"
    )
    return RunInterrupted(line, 128 + int(signum))


def reset() -> None:
    """Forget a recorded signal (the next run of this process starts afresh; tests)."""
    with _STATE.lock:
        _STATE.signum = None
        _STATE.kept = 0
        _STATE.caches.clear()
