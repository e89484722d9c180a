"""The one data layer every task, judge and report reads the benchmark through."""

from elitr_bench.data.errors import DataError, ElitrBenchError
from elitr_bench.data.loaders import (
    RELEASED_FILES,
    Benchmark,
    load_benchmark,
    load_questions,
    load_released_responses,
    released_systems,
)
from elitr_bench.data.records import Meeting, Question, ReleasedResponse

__all__ = [
    "RELEASED_FILES",
    "Benchmark",
    "DataError",
    "ElitrBenchError",
    "Meeting",
    "Question",
    "ReleasedResponse",
    "load_benchmark",
    "load_questions",
    "load_released_responses",
    "released_systems",
]
