"""Reports of ELITR-Bench runs: the paper's tables and figures with clustered intervals."""

from elitr_bench.report.build import Report, build_report
from elitr_bench.report.errors import ReportError
from elitr_bench.report.runs import LoadedRuns, TaskRun, load_runs

__all__ = ["LoadedRuns", "Report", "ReportError", "TaskRun", "build_report", "load_runs"]
