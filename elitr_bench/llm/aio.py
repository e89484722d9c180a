"""Running the transport's coroutines from synchronous callers.

lm-eval calls our filters and metrics from plain functions, and a notebook or server may
already run an event loop in this thread; the judge layer still wants one entry point.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_coroutine(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, even if a loop already runs here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
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
