"""Judges: a small core and the judge families that register with it.

The core: ``config`` (judge specs, readiness, the run's judge; it names no family),
``family`` (the family registry that decides a spec's family), ``plugins`` (the one
registry type: lazy placeholders, entry points, one collision rule), ``option_types``
(spec options from type hints), ``rubrics`` (the ELITR-Bench QA prompts, pure, the specs'
default), ``metrics`` (metric and filter names, logged-judgement parsing), ``filtering``
(what every judge filter shares), ``usage``, ``errors`` and ``summary`` (records, the
method base class and the registry of the summary judges). The families: ``qa`` (LLM
judge, replay, lexical, the ``elitr_judge`` filter), ``minutes`` (AutoMin
GPT-ART/GPT-AFGR, filler compression), ``cream``, ``mesa``; none imports another. The
transport they call is :mod:`elitr_bench.llm`.
Importing this package stays light: lm-eval and the openai SDK are imported only by the
modules that need them.
"""

from elitr_bench.judges.errors import (
    JudgeConfigError,
    JudgeError,
    JudgeNotReadyError,
    JudgeRequestError,
    ReplayMatchError,
)
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.metrics import judge_metrics
from elitr_bench.judges.readiness import check_judge_ready
from elitr_bench.judges.spec import (
    DEFAULT_JUDGE_SPEC,
    get_run_judge,
    parse_judge_spec,
    reset_run_judge,
    resolve_judge_spec,
    resolve_run_judge,
    set_run_judge,
)

__all__ = [
    "DEFAULT_JUDGE_SPEC",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeError",
    "JudgeNotReadyError",
    "JudgeRequestError",
    "ReplayMatchError",
    "check_judge_ready",
    "get_run_judge",
    "judge_metrics",
    "parse_judge_spec",
    "reset_run_judge",
    "resolve_judge_spec",
    "resolve_run_judge",
    "set_run_judge",
]
