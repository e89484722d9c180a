"""The report's records: what a report holds and what its section builders are given.

They live apart from :mod:`elitr_bench.report.build`, which runs the builders, so that a
builder in another module (the minutes report) can name them without importing the
module that imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elitr_bench.metaeval.stats import CIMethod
from elitr_bench.report.runs import TaskRun
from elitr_bench.report.tables import Table


@dataclass
class Report:
    """Everything a report holds, before and after writing.

    Attributes:
        tables: Tables in report order.
        figures: Written PNG files.
        runs: The task runs used.
        notes: What was skipped or substituted, and why.
        sections: ``(heading, text-or-table-keys)`` for the Markdown layout.
        options: Metric and interval options, written into ``report.json``.
    """

    tables: list[Table] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    runs: Sequence[TaskRun] = ()
    notes: list[str] = field(default_factory=list)
    sections: list[tuple[str, list[str | Table]]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    def table(self, key: str) -> Table:
        """The table with ``key``.

        Raises:
            KeyError: No such table.
        """
        for t in self.tables:
            if t.key == key:
                return t
        raise KeyError(key)

    def section(self, heading: str, *parts: str | Table) -> None:
        """Append a section; tables in it are also listed in :attr:`tables`."""
        self.sections.append((heading, list(parts)))
        self.tables += [p for p in parts if isinstance(p, Table)]


@dataclass(frozen=True)
class ReportInputs:
    """What ``elitr-bench report`` was given, for the section builders.

    Attributes:
        run_paths: The RUN_DIR arguments as given (builders for other kinds of runs, e.g.
            minutes, read their own files below them).
        judge_checks: ``elitr-bench judge-check --output`` files.
        out: The output directory (figures go to ``out/figures``).
        runs: The ELITR-Bench QA/Conv task runs found below ``run_paths``.
        metric: Main per-sample metric asked for.
        ci: Interval method.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.
        reference: Evaluator to bin by in the agreement section (None: Gold Human).
    """

    run_paths: tuple[Path, ...]
    judge_checks: tuple[Path, ...]
    out: Path
    runs: tuple[TaskRun, ...]
    metric: str = "judge_score"
    ci: CIMethod = "cluster-t"
    n_resamples: int = 10_000
    seed: int = 0
    reference: str | None = None


#: A section builder adds sections, figures and notes to the report for the inputs it
#: understands, and leaves the rest alone (it may find nothing to add).
SectionBuilder = Callable[[ReportInputs, Report], None]
