"""The CREAM family as the judge core sees it: no option of its own, greedy decoding.

The ``arena`` command names the family (``parse_judge_spec(spec, family="cream")``); its
settings (key facts, unit, tolerance, ratings) are the command's flags, not spec options.
"""

from __future__ import annotations

from elitr_bench.judges.cream.parse import KEY_FACTS
from elitr_bench.judges.family import JudgeFamily, NoOptions, register_family
from elitr_bench.judges.options import GREEDY

register_family(
    JudgeFamily(
        "cream",
        label="CREAM",
        options=NoOptions,
        defaults=GREEDY,
        grammars={"cream-key-facts": KEY_FACTS},  # the alignment reply needs the key facts
        batches=True,
    )
)
