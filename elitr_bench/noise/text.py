"""Tokenisation, protection and WER measurement shared by rule building and injection.

Measurement convention (used for calibration, for the reported effective WER and for
rule building, so that the three agree):

* a *word* is a whitespace-separated token of the text after lower-casing and removing
  every Unicode punctuation character (jiwer's ``ToLowerCase`` + ``RemovePunctuation``);
  tokens that are nothing but punctuation (``-``, ``...``) are therefore not words;
* protected tokens (speaker labels, de-identified entities, event tags) are words of the
  reference like any other: ``(PERSON4)`` is measured as ``person4`` and ``<laugh/>`` as
  ``<laugh>`` (``<`` and ``>`` are maths symbols, not punctuation, for Unicode);
* WER = (S + D + I) / N from jiwer's minimum-edit alignment of the two word lists.

:func:`whitespace_wer` gives the other convention, the plain whitespace tokens of the
texts with case and punctuation kept, as the ASR error simulator the paper adapted scores
WER (the paper does not say how its Table 5 was measured). Calibration never looks at it; it is
reported next to the calibrated WER so that both conventions can be quoted.

Lower-casing and punctuation removal are applied because the rules are keyed on
lower-case words and because ASR output is usually scored case- and punctuation-blind;
counting a capital letter or a comma as a word error would inflate the WER with changes
a listener cannot hear.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import jiwer

Protect = Literal["default", "none"]
PROTECT_CHOICES: tuple[str, ...] = ("default", "none")

#: Speaker labels ``(PERSON4)``, de-identified entities ``[ORGANIZATION2]`` and event tags
#: such as ``<laugh/>``, ``<parallel_talk>`` or ``</another_language>`` in ELITR transcripts.
#: A token containing one of them (``[PERSON3]'s``, ``[PERSON12],``) is left untouched.
PROTECTED_PATTERN = re.compile(r"\([A-Z][A-Z_]*\d*\)|\[[A-Z][A-Z_]*\d*\]|</?[A-Za-z][\w-]*/?>")

_TOKEN = re.compile(r"\S+")
_AFFIXES = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)

_KEY_TRANSFORM = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation()])
MEASURE_TRANSFORM = jiwer.Compose(
    [
        # jiwer splits words on spaces only: a bare newline would glue two words together.
        jiwer.SubstituteRegexes({r"\s+": " "}),
        jiwer.ToLowerCase(),
        jiwer.RemovePunctuation(),
        jiwer.RemoveMultipleSpaces(),
        jiwer.Strip(),
        jiwer.ReduceToListOfListOfWords(),
    ]
)
#: For hypotheses that are already normalised words joined by spaces.
_SPLIT_TRANSFORM = jiwer.Compose(
    [jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()]
)


def word_keys(tokens: Sequence[str]) -> list[str]:
    """Normalise whitespace-free tokens the way WER is measured (may return ``""``).

    The tokens are joined by newlines and normalised in one call because jiwer's
    transforms are much faster on one long string than on a list of short ones.
    """
    if not tokens:
        return []
    joined = _KEY_TRANSFORM("\n".join(tokens))
    keys = str(joined).split("\n")
    if len(keys) != len(tokens):  # a token carried a line separator jiwer does not split
        return [str(_KEY_TRANSFORM(t)).replace("\n", "") for t in tokens]
    return keys


def word_key(token: str) -> str:
    """Normalised form of one token: lower-case, punctuation removed (may be ``""``)."""
    return str(_KEY_TRANSFORM(token))


def normalise_words(text: str) -> list[str]:
    """The words of ``text`` under the measurement convention of this module."""
    words = MEASURE_TRANSFORM(text)
    return list(words[0]) if words else []


@dataclass(frozen=True)
class WerMeasure:
    """Word error rate of a hypothesis against a reference, with its edit counts."""

    wer: float
    reference_words: int
    substitutions: int
    deletions: int
    insertions: int


def measure_wer(reference: str, hypothesis: str) -> WerMeasure:
    """WER of ``hypothesis`` against ``reference`` under the module's normalisation.

    Raises:
        ValueError: If the reference has no words (WER is undefined).
    """
    out = jiwer.process_words(
        reference,
        hypothesis,
        reference_transform=MEASURE_TRANSFORM,
        hypothesis_transform=MEASURE_TRANSFORM,
    )
    return WerMeasure(
        wer=float(out.wer),
        reference_words=out.hits + out.substitutions + out.deletions,
        substitutions=out.substitutions,
        deletions=out.deletions,
        insertions=out.insertions,
    )


#: Whitespace tokens, case and punctuation kept: the plain convention.
WHITESPACE_TRANSFORM = jiwer.Compose(
    [jiwer.SubstituteRegexes({r"\s+": " "}), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()]
)


def whitespace_wer(reference: str, hypothesis: str) -> float:
    """WER over plain whitespace tokens: ``Hello,`` and ``hello`` are different words.

    Raises:
        ValueError: If the reference has no tokens (WER is undefined).
    """
    return float(
        jiwer.wer(
            reference,
            hypothesis,
            reference_transform=WHITESPACE_TRANSFORM,
            hypothesis_transform=WHITESPACE_TRANSFORM,
        )
    )


def wer_of_words(reference: str, hypothesis: str) -> float:
    """WER of two strings of already-normalised words (fast path used during search)."""
    return float(
        jiwer.wer(
            reference,
            hypothesis,
            reference_transform=_SPLIT_TRANSFORM,
            hypothesis_transform=_SPLIT_TRANSFORM,
        )
    )


@dataclass(frozen=True)
class Tokens:
    """A text cut into whitespace tokens, keeping the separators to rebuild it.

    Attributes:
        tokens: Non-whitespace tokens in order.
        separators: ``separators[i]`` is the whitespace before ``tokens[i]``; the last
            element is the trailing whitespace, so ``len(separators) == len(tokens) + 1``.
    """

    tokens: tuple[str, ...]
    separators: tuple[str, ...]


def tokenize(text: str) -> Tokens:
    """Split ``text`` into tokens and the exact whitespace between them."""
    tokens: list[str] = []
    seps: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        seps.append(text[pos : match.start()])
        tokens.append(match.group())
        pos = match.end()
    seps.append(text[pos:])
    return Tokens(tuple(tokens), tuple(seps))


def is_protected(token: str, protect: str) -> bool:
    """Whether ``token`` must be left as it is under the ``protect`` policy."""
    if protect == "none":
        return False
    return PROTECTED_PATTERN.search(token) is not None


def split_affixes(token: str) -> tuple[str, str, str]:
    """Split a token into leading punctuation, core and trailing punctuation."""
    match = _AFFIXES.match(token)
    if match is None:  # pragma: no cover - the pattern matches every string
        return "", token, ""
    return match.group(1), match.group(2), match.group(3)


def match_case(replacement: str, original_core: str) -> str:
    """Give a (lower-case) replacement the capitalisation pattern of the word it replaces."""
    if not replacement:
        return replacement
    letters = [c for c in original_core if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return replacement.upper()
    if original_core[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement
