"""Numbers the transport reads from the environment, each refused in one line when wrong."""

from __future__ import annotations

import os
from collections.abc import Mapping

from elitr_bench.llm.errors import JudgeConfigError


def env_number(
    name: str,
    what: str,
    environ: Mapping[str, str] | None = None,
    *,
    zero: bool = False,
    unset: str = "for the default",
) -> float | None:
    """A number set in the environment (None: unset), above 0 (or 0 too with ``zero``).

    Args:
        name: The variable.
        what: What it must be, for the message (``a positive number of megabytes``).
        environ: The environment (default: the process's).
        zero: Whether 0 is a value (seconds to wait) or not (a size, a count).
        unset: What leaving it unset gives, for the message.

    Raises:
        JudgeConfigError: Anything else, in one line naming the variable and the fix.
    """
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value >= 0 if zero else value > 0):
        raise JudgeConfigError(f"{name}={raw!r} must be {what}; unset it {unset}")
    return value
