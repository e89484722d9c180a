"""The G-Eval family: its options record and its registration with elitr_bench.

Imported through the ``elitr_bench.judge_families`` entry point the first time a judge
spec is parsed; importing it registers the family and the one minutes method it declares
(``method=geval``: its selector, its factory and its ``read-reply`` kind all come from
that one :class:`Method`). No ``from __future__ import annotations`` here on purpose: the
option types are read from the real hints either way.
"""

from dataclasses import dataclass
from typing import Any

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import JudgeFamily, Method, register_family

from elitr_geval.method import GRAMMAR, METHOD, METRIC, STEPS, GEvalMethod


@dataclass(frozen=True)
class GEvalOptions:
    """The spec options only the G-Eval judge reads.

    Attributes:
        steps: How many of the evaluation steps the prompt lists (1-5): G-Eval's
            chain-of-thought form, shortened for cheaper judges.
    """

    steps: int = 5


def _check(config: Any, spec: str) -> None:
    steps = config.options_of(GEvalOptions).steps
    if not 1 <= steps <= len(STEPS):
        raise JudgeConfigError(f"judge spec {spec!r}: steps={steps} must be in 1-{len(STEPS)}")


def _factory(config: Any) -> GEvalMethod:
    return GEvalMethod(config, config.options_of(GEvalOptions).steps)


register_family(
    JudgeFamily(
        "geval",
        label="the G-Eval judge",
        options=GEvalOptions,
        defaults={"temperature": 0.0, "top_p": 1.0},  # the form is read greedily
        methods=(Method(METHOD, factory=_factory, grammar=GRAMMAR),),  # read-reply geval
        check=_check,
        scale=lambda metric: (1.0, 5.0) if metric == METRIC else None,  # figures' axes
    )
)
