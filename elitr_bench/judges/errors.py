"""Errors raised by the judge layer.

The shared ones belong to the transport (:mod:`elitr_bench.llm.errors`), which judges
build on; the judge families import them from here along with their own.
"""

from __future__ import annotations

from elitr_bench.llm.errors import (
    JudgeConfigError,
    JudgeError,
    JudgeRequestError,
)

__all__ = [
    "JudgeConfigError",
    "JudgeError",
    "JudgeNotReadyError",
    "JudgeRequestError",
    "ReplayMatchError",
]


class ReplayMatchError(JudgeError):
    """A response has no (or an ambiguous) released score to replay."""


class JudgeNotReadyError(JudgeError):
    """A judge cannot run here (missing API key, model path, optional package)."""
