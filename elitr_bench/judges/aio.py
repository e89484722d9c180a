"""Running the transport's coroutines from synchronous callers, and stopping them on signals.

lm-eval calls our filters and metrics from plain functions, and a notebook or server may
already run an event loop in this thread; the judge layer still wants one entry point.
In the main thread it also owns SIGINT and SIGTERM while the coroutine runs, so that a
signal stops judging without losing replies in flight (:mod:`elitr_bench.llm.interrupt`):

1. the first SIGINT/SIGTERM stops new requests,
2. requests in flight get :func:`grace_seconds` to land; each reply is cached as usual,
3. then the run is cancelled (a second signal cancels at once), and
4. :class:`RunInterrupted` carries one line (what was kept, how to resume) and the exit
   status a shell expects (130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from elitr_bench.llm import interrupt

T = TypeVar("T")

#: Seconds the requests in flight get to land after the first signal.
GRACE_ENV = "ELITR_BENCH_INTERRUPT_GRACE"
DEFAULT_GRACE_S = 5.0

#: The signals a judging run stops on, with the names printed in its line.
SIGNALS: dict[int, str] = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}


class RunInterrupted(KeyboardInterrupt):
    """Judging stopped on a signal; ``line`` says what was kept, ``status`` is the exit code.

    A ``KeyboardInterrupt``, so library callers and notebooks stop as they would on Ctrl-C.
    """

    def __init__(self, line: str, status: int) -> None:
        super().__init__(line)
        self.line = line
        self.status = status


def grace_seconds() -> float:
    """How long requests in flight may take to land after the first signal."""
    raw = os.environ.get(GRACE_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_GRACE_S
    except ValueError:
        return DEFAULT_GRACE_S


def interrupted() -> RunInterrupted:
    """The one line and exit status of the recorded signal (call once stopping)."""
    recorded, kept, caches = interrupt.recorded()
    signum = recorded if recorded is not None else signal.SIGINT
    where = f"the judge cache {', '.join(caches)}" if caches else "the judge cache"
    line = (
        f"interrupted by {SIGNALS.get(signum, f'signal {signum}')} while judging: no new judge "
        f"requests were sent; {kept} replies that were in flight landed and, like every "
        f"reply received before, are in {where}. Re-run the same command to resume: cached "
        "replies are not paid again"
    )
    return RunInterrupted(line, 128 + int(signum))


def run_coroutine(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, even if a loop already runs here.

    Raises:
        RunInterrupted: A signal stopped it (library callers; the CLI exits 130/143 with
            one line instead).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        if threading.current_thread() is threading.main_thread():
            return _run_guarded(factory)
        return asyncio.run(factory())
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(factory())
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=worker, name="elitr-judge")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _run_guarded(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run`` with SIGINT/SIGTERM stopping judging gracefully (main thread only).

    The first signal stops new requests and gives those in flight :func:`grace_seconds`
    to land (and be cached); then, or at a second signal, the coroutine is cancelled. The
    process's own handlers come back after.
    """
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        assert main is not None

        def on_signal(signum: int) -> None:
            if interrupt.request_stop(signum):
                loop.call_later(grace_seconds(), main.cancel)
            else:  # a second signal: stop waiting for the replies in flight
                main.cancel()

        for sig in SIGNALS:
            try:
                loop.add_signal_handler(sig, on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError):  # no such support here
                break
        return await factory()

    box: dict[str, T] = {}

    async def run() -> None:
        box["value"] = await guarded()

    try:
        asyncio.run(run())
    except (asyncio.CancelledError, Exception):
        if not interrupt.stopping():
            raise
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)
    if interrupt.stopping():
        stop = interrupted()
        interrupt.reset()  # a library caller that goes on starts afresh
        from elitr_bench.cli_errors import exit_interrupted

        exit_interrupted(stop.line, stop.status)
        raise stop from None
    return box["value"]
