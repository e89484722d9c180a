"""Running the transport's coroutines from synchronous callers.

lm-eval calls our filters and metrics from plain functions, and a notebook or server may
already run an event loop in this thread; the judge layer still wants one entry point.
In the main thread it also owns SIGINT and SIGTERM while the coroutine runs, so that a
signal stops judging without losing replies in flight (:mod:`elitr_bench.llm.interrupt`).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from elitr_bench.llm import interrupt

T = TypeVar("T")


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

    The first signal stops new requests and gives those in flight
    :func:`~elitr_bench.llm.interrupt.grace_seconds` to land (and be cached); then, or at a
    second signal, the coroutine is cancelled. The process's own handlers come back after.
    """
    previous = {sig: signal.getsignal(sig) for sig in interrupt.SIGNALS}

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        assert main is not None

        def on_signal(signum: int) -> None:
            if interrupt.request_stop(signum):
                loop.call_later(interrupt.grace_seconds(), main.cancel)
            else:  # a second signal: stop waiting for the replies in flight
                main.cancel()

        for sig in interrupt.SIGNALS:
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
        stop = interrupt.interrupted()
        interrupt.reset()  # a library caller that goes on starts afresh
        from elitr_bench.cli_errors import exit_interrupted

        exit_interrupted(stop.line, stop.status)
        raise stop from None
    return box["value"]
