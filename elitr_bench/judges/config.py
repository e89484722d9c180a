"""Judge configuration: one import path for the spec grammar, options, identity and readiness.

The concepts live in modules of their own: :mod:`~elitr_bench.judges.spec` (parsing
``openai:gpt-4-0613,rubric=...`` strings, the run's judge), :mod:`~elitr_bench.judges.options`
(option types, aliases, family options and their checks),
:mod:`~elitr_bench.judges.identity` (the :class:`JudgeConfig` record and what a score
depends on) and :mod:`~elitr_bench.judges.readiness` (whether a judge can run here). Their
public names are re-exported here, where callers and plugins have always imported them.
"""

from __future__ import annotations

from elitr_bench.judges.identity import (
    JudgeConfig,
    family_identity,
    judge_endpoint,
)
from elitr_bench.judges.options import (
    GREEDY,
    family_defaults,
    judge_family,
    with_options,
    without_option,
)
from elitr_bench.judges.readiness import (
    KEYLESS_JUDGE,
    LOCAL_SERVER_JUDGE,
    check_judge_ready,
    judge_flag_hint,
    keyless_alternatives,
)
from elitr_bench.judges.spec import (
    BACKENDS,
    DEFAULT_JUDGE_SPEC,
    ENV_CACHE,
    ENV_JUDGE,
    get_run_judge,
    parse_judge_spec,
    reset_run_judge,
    resolve_judge_spec,
    resolve_run_judge,
    set_run_judge,
)

__all__ = [
    "BACKENDS",
    "DEFAULT_JUDGE_SPEC",
    "ENV_CACHE",
    "ENV_JUDGE",
    "GREEDY",
    "KEYLESS_JUDGE",
    "LOCAL_SERVER_JUDGE",
    "JudgeConfig",
    "check_judge_ready",
    "family_defaults",
    "family_identity",
    "get_run_judge",
    "judge_endpoint",
    "judge_family",
    "judge_flag_hint",
    "keyless_alternatives",
    "parse_judge_spec",
    "reset_run_judge",
    "resolve_judge_spec",
    "resolve_run_judge",
    "set_run_judge",
    "with_options",
    "without_option",
]
