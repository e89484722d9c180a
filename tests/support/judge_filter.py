"""The judge filters' end-of-run error lines, caught instead of ending the test process."""

from __future__ import annotations

import pytest


def after_run_errors(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The list the lines a judge filter leaves for the end of the run will be appended to.

    The process is made to look like ``lm_eval --log_samples --output_path out``, with no
    failure of an earlier run remembered.
    """
    from elitr_bench.judges import filtering

    lines: list[str] = []
    monkeypatch.setattr(filtering, "_FAILURES", {})
    monkeypatch.setattr(
        filtering, "exit_with_error_after_run", lambda m, source="": lines.append(m)
    )
    monkeypatch.setattr("sys.argv", ["lm_eval", "--log_samples", "--output_path", "out"])
    return lines
