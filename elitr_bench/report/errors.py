"""Errors raised while building a report.

They derive from the project's ``ElitrBenchError`` so that ``elitr-bench report`` prints
them as one line naming the file at fault and the fix.
"""

from __future__ import annotations

from elitr_bench.data.errors import ElitrBenchError


class ReportError(ElitrBenchError):
    """A run directory, results file or judge-check file cannot be used for a report."""
