"""Let a test know when a child process has recorded its stop signal, instead of sleeping.

A test that signals a judging child must let the held replies land only once the child
has taken the signal in; otherwise the child sends its next requests first. A fixed sleep
guesses how long that takes; on a loaded machine it guesses wrong. Put a folder holding
:func:`sitecustomize_source` as ``sitecustomize.py`` first on the child's ``PYTHONPATH``
and name a marker file in ``ELITR_TEST_STOP_MARKER``: a daemon thread of the child writes
the file as soon as :func:`elitr_bench.llm.interrupt.stopping` turns true.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

MARKER_ENV = "ELITR_TEST_STOP_MARKER"


def sitecustomize_source() -> str:
    """The ``sitecustomize.py`` that starts the watcher in every child interpreter.

    It shadows the session's own (tests/support/startup/sitecustomize.py), so it runs that
    one too.
    """
    session = Path(__file__).with_name("startup") / "sitecustomize.py"
    return (
        f"import runpy\nrunpy.run_path({str(session)!r}, run_name='sitecustomize')\n"
        "from tests.support.stop_marker import watch_from_env\nwatch_from_env()\n"
    )


def watch_from_env() -> None:
    """Start the watcher when ``ELITR_TEST_STOP_MARKER`` names a marker file."""
    marker = os.environ.get(MARKER_ENV)
    if marker:
        threading.Thread(target=_watch, args=(Path(marker),), daemon=True).start()


def _watch(marker: Path) -> None:
    # Never import here: an import in this thread while the main thread imports lm_eval
    # and torch can deadlock. The judging code imports the module before it can stop.
    while True:
        interrupt = sys.modules.get("elitr_bench.llm.interrupt")
        # The module is in sys.modules while it is still being imported (its own imports
        # take a while): until ``stopping`` exists, nothing can be stopping.
        stopping = getattr(interrupt, "stopping", None)
        if stopping is not None and stopping():
            break
        time.sleep(0.005)
    marker.write_text(str(os.getpid()), encoding="utf-8")
