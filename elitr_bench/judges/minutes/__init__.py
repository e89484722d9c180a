"""Judges of meeting minutes (AutoMin 2023 GPT-ART/GPT-AFGR, MESA, ...) on the shared client.

Layout: the records, the :class:`MinutesMethod` protocol every method implements and the
registry of methods by name (chosen by the judge spec's ``rubric=``/``method=``, and
:func:`assess_items`) are shared with MESA and live in :mod:`elitr_bench.judges.summary`;
as does the ``elitr_minutes_judge`` filter every minutes method goes through
(``summary/lm_eval_filter.py``). Here: ``family`` (the options, the filler fields),
``gpt`` (the AutoMin GPT judges and filler compression, whose fields the method declares
itself), ``filler``, ``prompts`` and ``score_parsing``. Importing this package stays light.
"""

from elitr_bench.judges.summary.base import MinutesAssessment, MinutesItem, MinutesMethod
from elitr_bench.judges.summary.registry import get_method, known_methods, register_method
from elitr_bench.judges.summary.run import assess_items

__all__ = [
    "MinutesAssessment",
    "MinutesItem",
    "MinutesMethod",
    "assess_items",
    "get_method",
    "known_methods",
    "register_method",
]
