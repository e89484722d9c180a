"""The units CREAM numbers for the alignment step and counts for conciseness.

The paper divides by summary *sentences* (App. A.1: "S is the set of sentences in the
summary") and its alignment prompt asks for "the line number(s) of the summary
sentence(s)", so by default each sentence of a summary gets its own number. Counting lines
instead would let one cited sentence make a whole multi-sentence line concise, which
favours exactly the systems that write paragraphs (AutoMin's zoom-long has about four
sentences per line). ``unit=line`` keeps the earlier behaviour as an option.

Sentences come from ``pysbd`` (a maintained rule-based splitter that knows abbreviations,
decimals and ellipses), applied to one line at a time: in minutes a line break is
structure (a bullet, a heading, a speaker turn), so a sentence never runs across it and
a bullet without final punctuation stays one sentence. Three things pysbd does not know
about minutes are handled around it, never by splitting text ourselves:

* a list marker (``-``, ``*``, ``--``, ``1.``, ``2)``, ``(a)``) is taken off before
  splitting and put back on the line's first sentence, so that ``1.`` is not a sentence
  of its own;
* a piece that does not end a sentence (pysbd cuts after a parenthesised speaker label
  such as ``(PERSON1)``) is joined to the piece that follows it;
* a piece without any letter or digit (a stray ``...`` or emoji) joins its neighbour.

Empty lines are dropped, as in line counting.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from elitr_bench.judges.cream.prompts import summary_lines

UNITS: tuple[str, ...] = ("sentence", "line")
"""What the alignment step numbers and conciseness divides by."""

DEFAULT_UNIT = "sentence"
"""The paper's unit (App. A.1 and the alignment prompt of App. A.2)."""

_MARKER = re.compile(
    r"^(?P<marker>(?:[-*+\u2022\u2023\u25aa\u25cf\u2013\u2014]+|\(?(?:\d{1,3}|[a-z])[.)])\s+)"
    r"(?P<rest>\S.*)$",
    re.S,
)
_ENDS_SENTENCE = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*\s*$")
_WORD = re.compile(r"\w")


@lru_cache(maxsize=1)
def _segment_function() -> Callable[[str], Any]:
    import pysbd

    segmenter: Any = pysbd.Segmenter(language="en", clean=False)
    return segmenter.segment


def _pieces(text: str) -> list[str]:
    """The segments pysbd finds in one line, as exact consecutive substrings of it."""
    raw = [str(s) for s in _segment_function()(text)]
    if "".join(raw) == text:
        return raw
    # Not seen on real minutes; if pysbd ever altered text, keep ours, cut where it cut.
    out: list[str] = []
    pos = 0
    for seg in raw:
        found = text.find(seg.strip(), pos)
        if found < 0:
            continue
        if found > pos and out:
            out[-1] += text[pos:found]
        pos = found + len(seg.strip())
        out.append(text[found:pos])
    if not out:
        return [text]
    out[-1] += text[pos:]
    return out


@lru_cache(maxsize=8192)
def line_sentences(line: str) -> tuple[str, ...]:
    """The sentences of one summary line, stripped; at least one for a non-empty line."""
    line = line.strip()
    if not line:
        return ()
    match = _MARKER.match(line)
    marker, rest = (match.group("marker"), match.group("rest")) if match else ("", line)
    merged: list[str] = []
    for piece in _pieces(rest):
        if not piece.strip():
            continue
        if merged and (not _ENDS_SENTENCE.search(merged[-1]) or not _WORD.search(piece)):
            merged[-1] += piece
        else:
            merged.append(piece)
    if len(merged) > 1 and not _WORD.search(merged[0]):
        merged[:2] = [merged[0] + merged[1]]
    if not merged:
        return (line,)
    merged[0] = marker + merged[0]
    return tuple(s.strip() for s in merged)


def summary_sentences(text: str) -> tuple[str, ...]:
    """The sentences of a summary in order, line by line (see the module docstring)."""
    return tuple(s for line in summary_lines(text) for s in line_sentences(line))


@dataclass(frozen=True)
class Summary:
    """One summary divided both ways.

    Attributes:
        lines: Non-empty lines (the extraction paragraph is built from these).
        sentences: Sentences, line by line.
    """

    lines: tuple[str, ...]
    sentences: tuple[str, ...]

    @classmethod
    def of(cls, text: str) -> Summary:
        """Divide a summary's text."""
        return cls(summary_lines(text), summary_sentences(text))

    def units(self, unit: str) -> tuple[str, ...]:
        """What the alignment step numbers: sentences or lines."""
        check_unit(unit)
        return self.sentences if unit == "sentence" else self.lines


def check_unit(unit: str) -> str:
    """The unit, or ValueError naming the valid ones."""
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r}: use one of {', '.join(UNITS)}")
    return unit
