"""Judges of meeting minutes (AutoMin 2023 GPT-ART/GPT-AFGR, MESA, ...) on the shared client.

Layout: the records, the :class:`MinutesMethod` protocol every method implements and the
registry of methods by name (chosen by the judge spec's ``rubric=``/``method=``, and
:func:`assess_items`) are shared with MESA and live in :mod:`elitr_bench.judges.summary`;
here: ``gpt`` (the AutoMin GPT judges and filler compression),
``lm_eval_filter`` (the ``elitr_minutes_judge`` filter and per-sample metrics), ``check``
(meta-evaluation against AutoMin 2023's human scores). Importing this package stays light.
"""

from elitr_bench.judges.summary.base import MinutesAssessment, MinutesItem, MinutesMethod
from elitr_bench.judges.summary.registry import (
    assess_items,
    get_method,
    known_methods,
    register_method,
)

__all__ = [
    "MinutesAssessment",
    "MinutesItem",
    "MinutesMethod",
    "assess_items",
    "get_method",
    "known_methods",
    "register_method",
]
