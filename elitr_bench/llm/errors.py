"""Errors of the transport to a model used as a judge.

All derive from the project's ``ElitrBenchError`` (a ``ValueError``) so that the CLI
prints them as one line; each message names the setting at fault and the fix. Their
names say "judge" because that is what users meet them as (they appear in logged
reasons such as ``JudgeRequestError: ...``); the judge families raise them too, through
:mod:`elitr_bench.llm.errors`.
"""

from __future__ import annotations

from elitr_bench.data.errors import ElitrBenchError


class JudgeError(ElitrBenchError):
    """Base class for judge configuration and run failures."""


class JudgeConfigError(JudgeError):
    """A judge spec string or option is malformed or unknown."""


class JudgeRequestError(JudgeError):
    """Judge requests kept failing after all retries."""


class JudgeRequestRefused(JudgeRequestError):
    """The server refused this request (a 4xx) and no optional extra was left to drop.

    The endpoint answers, and other requests may well pass: a caller may keep what it
    already has for the item (a first reply) rather than fail it.
    """


#: How every :class:`JudgeCacheError` message begins (readers of logged reasons look for it).
CACHE_ERROR_PREFIX = "judge cache "


class JudgeCacheError(JudgeConfigError):
    """The judge cache file is damaged or cannot be read; the message names it and the fix."""
