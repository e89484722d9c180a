"""An independent word error rate for the noise tests: our own tokenisation, then jiwer.

The noise code measures WER with its own jiwer transform chain; a test that compares its
reported number with that same function proves nothing. This oracle writes the convention
the README states (lower-case, Unicode punctuation removed, split on any whitespace) in a
few lines of plain Python and gives jiwer only the resulting word lists.
"""

from __future__ import annotations

import unicodedata

import jiwer


def words(text: str) -> list[str]:
    """Lower-cased words with every Unicode punctuation character (category P*) removed."""
    kept = "".join(c for c in text.lower() if not unicodedata.category(c).startswith("P"))
    return kept.split()


def measure(reference: str, hypothesis: str) -> jiwer.WordOutput:
    """Jiwer's alignment of the two texts' :func:`words` (substitutions, deletions, ...)."""
    return jiwer.process_words(" ".join(words(reference)), " ".join(words(hypothesis)))


def plain_wer(reference: str, hypothesis: str) -> float:
    """WER over plain whitespace tokens, case and punctuation kept."""
    return float(jiwer.wer(" ".join(reference.split()), " ".join(hypothesis.split())))
