"""Cheap reference-based metrics: token F1 and ROUGE-L.

They need no judge and no network, so every run reports them; the paper's judge
scores are added by ``elitr_bench.judges``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from typing import Any

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD-style normalisation: lower case, no punctuation, articles or extra spaces.

    ``[PERSON4]`` and ``PERSON4`` normalise alike, which matters because models often
    drop the brackets of de-identified names.
    """
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall after normalisation."""
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)


@lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure (the ``rouge_score`` package, Porter stemming on)."""
    return float(_rouge_scorer().score(reference, prediction)["rougeL"].fmeasure)


def total(items: list[float]) -> float:
    """Aggregation for per-sample counts (skipped or truncated prompts): their sum."""
    return float(sum(items))
