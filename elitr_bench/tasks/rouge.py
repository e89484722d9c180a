"""ROUGE scorers of the ``rouge_score`` package whose Porter stems are remembered.

``rouge_score`` with ``use_stemmer=True`` stems every token of both texts at each
``score`` call, and NLTK's Porter stemmer is pure Python: scoring minutes against
references spent most of its time stemming the same words again (a meeting's minutes
repeat their names and verbs, and every system's minutes are scored against the same
references). The stem of a word never changes, so each is computed once per process.
The tokenizer is otherwise ``rouge_score``'s own (``rouge_score.tokenize.tokenize``,
given a stemmer), the extension point its ``tokenizers`` module documents, so every
score is the one ``RougeScorer(types, use_stemmer=True)`` gives
(tests/tasks/test_rouge.py compares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

#: Distinct words whose stems are kept (a few MB at most).
STEMS_KEPT = 1 << 17


class _RememberedStems:
    """A Porter stemmer (NLTK's, as ``rouge_score`` builds it) that stems each word once."""

    def __init__(self) -> None:
        from nltk.stem import porter

        self.stem = lru_cache(maxsize=STEMS_KEPT)(porter.PorterStemmer().stem)


@lru_cache(maxsize=1)
def _stems() -> _RememberedStems:
    return _RememberedStems()


def rouge_scorer(types: Sequence[str]) -> Any:
    """``rouge_score.rouge_scorer.RougeScorer(types, use_stemmer=True)``, stems remembered."""
    from rouge_score import rouge_scorer as rs
    from rouge_score import tokenize, tokenizers

    stems = _stems()

    class _Tokenizer(tokenizers.Tokenizer):
        def tokenize(self, text: str) -> list[str]:
            return list(tokenize.tokenize(text, stems))

    return rs.RougeScorer(list(types), tokenizer=_Tokenizer())
