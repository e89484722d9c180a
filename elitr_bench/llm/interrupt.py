"""Stopping a judging run on Ctrl-C or SIGTERM without losing what was paid.

Without this, a signal cancels every request in flight: the server has done (and billed)
the work, the reply never reaches the cache, and the re-run pays for it again; the user
reads a 60-line traceback ending in ``KeyboardInterrupt``. Instead, once the caller that
owns the signals records one (:func:`request_stop`), nothing new is sent (a request about
to be sent raises :class:`StopRequested`; its item fails like any unsent one), requests in
flight land and are cached as usual (:func:`note_kept` counts them), and the caller ends
the run in one line naming the caches in use (:func:`recorded`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elitr_bench.llm.errors import JudgeRequestError


class StopRequested(JudgeRequestError):
    """A request was not sent because the run is stopping after a signal."""


@dataclass
class _State:
    """The process's stop request: the signal, replies cached since, caches in use."""

    signum: int | None = None
    kept: int = 0
    caches: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


_STATE = _State()


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


def recorded() -> tuple[int | None, int, tuple[str, ...]]:
    """The recorded signal (None: none), replies kept since, and the cache files in use."""
    with _STATE.lock:
        return _STATE.signum, _STATE.kept, tuple(_STATE.caches)


def reset() -> None:
    """Forget a recorded signal (the next run of this process starts afresh; tests)."""
    with _STATE.lock:
        _STATE.signum = None
        _STATE.kept = 0
        _STATE.caches.clear()
