"""Project-wide error type for bad input.

Every message is a single line that names the file, field or setting at fault and
the fix, because users meet these errors in the middle of long evaluation logs.
"""

from __future__ import annotations


class ElitrBenchError(ValueError):
    """Bad input or configuration, with a one-line message naming the remedy."""


class DataError(ElitrBenchError):
    """A benchmark data file is missing, corrupt, or does not match its pin."""
