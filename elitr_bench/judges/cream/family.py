"""The CREAM family as the judge core sees it: no option of its own, greedy decoding.

The ``arena`` command names the family (``parse_judge_spec(spec, family="cream")``); its
settings (key facts, unit, tolerance, ratings) are the command's flags, not spec options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from elitr_bench.judges.config import GREEDY
from elitr_bench.judges.cream.parse import parse_alignment, parse_key_facts
from elitr_bench.judges.cream.scoring import METRICS
from elitr_bench.judges.family import JudgeFamily, NoOptions, register_family

if TYPE_CHECKING:
    from elitr_bench.judges.config import JudgeConfig


def _metrics(config: JudgeConfig) -> tuple[str, ...]:
    return METRICS


register_family(
    JudgeFamily(
        "cream",
        label="CREAM",
        options=NoOptions,
        defaults=GREEDY,
        metrics=_metrics,
        parsers={"key_facts": parse_key_facts, "alignment": parse_alignment},
    )
)
