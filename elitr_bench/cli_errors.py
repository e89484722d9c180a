"""One line per error of ours at the top of ``lm_eval`` and ``elitr-bench``.

Our errors (:class:`~elitr_bench.data.errors.ElitrBenchError` and subclasses) already
carry a one-line message naming the setting at fault and the fix; a 16-95 line
traceback around it only hides that line in a long evaluation log. lm-eval's CLI has no
hook for plugin errors, so :func:`install_excepthook` chains a ``sys.excepthook`` that
prints our errors as one line and hands every other exception to the hook it found
(lm-eval's own errors keep their normal traceback). ``ELITR_BENCH_DEBUG=1`` shows our
tracebacks too.

:func:`exit_with_error_after_run` is for failures that must not stop the run (the judge
failing after generation): lm-eval still writes its results and samples, and the process
exits non-zero with one line once it is done.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
from types import TracebackType
from typing import Any

from elitr_bench.data.errors import ElitrBenchError

DEBUG_ENV = "ELITR_BENCH_DEBUG"
PREFIX = "elitr-bench: error: "
#: Exit status of a run whose results were written but whose judging is incomplete.
INCOMPLETE_EXIT = 3

log = logging.getLogger(__name__)

#: Command names (``sys.argv[0]`` basenames) of the CLIs whose exit status we may set.
_CLI_NAMES = frozenset({"lm_eval", "lm-eval", "elitr-bench"})


def debug_enabled() -> bool:
    """Whether ``ELITR_BENCH_DEBUG`` asks for full tracebacks."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def error_line(exc: BaseException) -> str:
    """The one line shown for an error of ours (whitespace collapsed, never empty)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{PREFIX}{text}"


def _chain(previous: Any) -> Any:
    def elitr_excepthook(
        etype: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        if isinstance(value, ElitrBenchError) and not debug_enabled():
            sys.stderr.write(error_line(value) + "\n")
            sys.stderr.flush()
            return
        previous(etype, value, tb)

    elitr_excepthook._elitr_previous = previous  # type: ignore[attr-defined]
    return elitr_excepthook


def install_excepthook() -> None:
    """Print uncaught errors of ours as one line; chain to the previous hook otherwise.

    Idempotent. Called when our task and filter modules load, i.e. in every process that
    runs an ELITR task, and only there.
    """
    if getattr(sys.excepthook, "_elitr_previous", None) is not None:
        return
    sys.excepthook = _chain(sys.excepthook)


# --- a non-zero exit once lm-eval has written its files --------------------------------

#: Lines to print at exit, one per source (a later message of a source replaces its earlier).
_PENDING: dict[str, str] = {}
_STATE: dict[str, Any] = {"armed": False, "printed": False}


def running_as_cli() -> bool:
    """Whether this process is the ``lm_eval`` / ``elitr-bench`` command (not a library user)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and getattr(spec, "name", "") == "lm_eval.__main__":
        return True
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name.removesuffix(".exe") in _CLI_NAMES


def _print_pending() -> None:
    if _STATE["printed"]:
        return
    _STATE["printed"] = True
    for line in _PENDING.values():
        sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _exit_hook(original: Any) -> Any:
    def exit(status: Any = None) -> None:
        if _PENDING and status in (None, 0):
            _print_pending()
            status = INCOMPLETE_EXIT
        original(status)

    exit._elitr_original = original  # type: ignore[attr-defined]
    return exit


def _at_exit() -> None:
    """Fallback for entry points that end without ``sys.exit`` (``python -m lm_eval``)."""
    if _PENDING and not _STATE["printed"]:
        _print_pending()
        sys.stdout.flush()
        os._exit(INCOMPLETE_EXIT)


def exit_with_error_after_run(message: str, source: str = "") -> None:
    """Let the run finish (files written), then exit with status 3 and one line.

    A later message of the same ``source`` replaces the earlier one (running totals).

    In the ``lm_eval`` / ``elitr-bench`` CLI the line is printed last and the exit status
    is :data:`INCOMPLETE_EXIT`; the console script's ``sys.exit(None)`` is turned into
    ``sys.exit(3)``, and an interpreter exit without ``sys.exit`` is caught at exit. A
    library user (a notebook, ``simple_evaluate`` in a test) only gets the warning: the
    status of each item is in the results either way.
    """
    line = message if message.startswith(PREFIX) else PREFIX + message
    if not running_as_cli():  # the CLI prints the line once, last; a library user logs it
        log.warning("%s", line)
        return
    _PENDING[source] = line
    if not _STATE["armed"]:
        _STATE["armed"] = True
        sys.exit = _exit_hook(sys.exit)
        atexit.register(_at_exit)


def exit_interrupted(line: str, status: int) -> None:
    """In the CLI, end the process now with one line and a signal's status (130, 143).

    A pending "judging incomplete" line is dropped: the interrupt line says more, and its
    status must not become :data:`INCOMPLETE_EXIT`. Outside the CLI it returns, and the
    caller raises ``KeyboardInterrupt`` as a library user expects.
    """
    if not running_as_cli():
        return
    _PENDING.clear()
    _STATE["printed"] = True
    sys.stderr.write(f"elitr-bench: {line}\n")
    sys.stderr.flush()
    raise SystemExit(status)
