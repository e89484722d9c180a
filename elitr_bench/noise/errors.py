"""Error type of the noise engine.

It subclasses the project's :class:`~elitr_bench.data.ElitrBenchError` (a ``ValueError``)
so that the CLI and the tasks report a malformed rules file or an impossible target in
one line, the same way they report bad data files.
"""

from __future__ import annotations

from elitr_bench.data.errors import ElitrBenchError


class NoiseError(ElitrBenchError):
    """A rules file, pair file or noise setting is unusable; the message names the fix."""
