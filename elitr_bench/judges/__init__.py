"""LLM judges for ELITR-Bench (paper Sec. 4 and 6, App. F) and a reusable judge client layer.

Layout: ``rubrics`` (prompts and parsing, pure), ``config`` (judge specs, readiness, run
setting), ``client``/``cache``/``ratelimit``/``backends`` (how completions are obtained),
``engine`` (judging many items), ``metrics`` and ``lm_eval_filter`` (lm-eval glue),
``commands`` and ``judge_check`` (CLI). Importing this package stays light: lm-eval and
the openai SDK are imported only by the modules that need them.
"""

from elitr_bench.judges.config import (
    DEFAULT_JUDGE_SPEC,
    JudgeConfig,
    check_judge_ready,
    get_run_judge,
    parse_judge_spec,
    reset_run_judge,
    resolve_judge_spec,
    resolve_run_judge,
    set_run_judge,
)
from elitr_bench.judges.errors import (
    JudgeConfigError,
    JudgeError,
    JudgeNotReadyError,
    JudgeRequestError,
    ReplayMatchError,
)
from elitr_bench.judges.metrics import judge_metrics

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
