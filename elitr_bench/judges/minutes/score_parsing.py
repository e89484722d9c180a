r"""The AutoMin GPT judges' asked format: one ``Criterion: N`` line per criterion.

Figs. 17-18 name no format, so the plainest is read: the name, a colon and ``N`` or
``N/10`` at the start of a line (a list marker and bold allowed, an explanation after a
dash, colon, parenthesis or full stop). Prose, tables, JSON and number-before-label lines
only veto (docs/judge-replies.md); without the lines the reply is restated as JSON.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from elitr_bench.judges.reading import SCORE_WORDS, Field, NumericGrammar, Stated

#: How each criterion may be named (Fig. 18 asks for "grammatical correctness").
CRITERION_NAMES: Mapping[str, str] = {
    "adequacy": r"adequacy",
    "relevance": r"relevance|relevancy",
    "topicality": r"topicality",
    "fluency": r"fluency",
    "grammaticality": r"grammaticality|grammatical[ _-]*correctness|grammar|grammatical",
}

SCALE_LOW, SCALE_HIGH = 0.0, 10.0
"""Both prompts ask for "a scale 0 to 10" (Figs. 17-18)."""

_B = r"(?:\*\*|__)?"
#: After "N - ", a number that starts a count ("6 - 3 of the 7 conclusions"), not a range.
_COUNTED = r"[ \t]*%|[ \t]+(?:out[ \t]+)?of\b"
_LINE = (
    r"^[ \t]*(?:(?:[-*+•]|\d{1,2}[.)])[ \t]+)?" + _B + r"[ \t]*(?:{names})[ \t]*" + _B
    + r"[ \t]*:[ \t]*" + _B + r"[ \t]*(?P<num>\d+(?:\.\d+)?)(?!\.?\d)(?:[ \t]*/[ \t]*10(?:\.0)?)?"
    + _B + r"(?![ \t]*(?:[-–—,;/]|to\b|and\b|or\b)[ \t]*\d+(?:\.\d+)?(?!\.?\d|" + _COUNTED + "))"
    + r"(?=[ \t]*(?:$|[-–—:.,;(]))"
)  # fmt: skip


def criteria_grammar(criteria: tuple[str, ...], given: tuple[str, ...] = ()) -> NumericGrammar:
    """The grammar of a prompt asking for ``criteria`` (keys of :data:`CRITERION_NAMES`).

    ``given``: the prompt's own text, whose number phrases a reply repeats without stating.
    """
    lines = [
        re.compile(_LINE.replace("{names}", CRITERION_NAMES[c]), re.I | re.M) for c in criteria
    ]
    patterns = list(zip(criteria, lines, strict=True))

    def find(text: str) -> list[Stated]:
        return [
            Stated(c, float(m.group("num")), m.start(), m.end())
            for c, pattern in patterns
            for m in pattern.finditer(text)
        ]

    return NumericGrammar(
        tuple(Field(c, SCALE_LOW, SCALE_HIGH) for c in criteria),
        find,
        {c: rf"(?<![A-Za-z])(?:{CRITERION_NAMES[c]})(?![A-Za-z])" for c in criteria},
        SCORE_WORDS,
        "one 'Criterion: N' line per criterion",
        "scores",
        given,
    )
