r"""Preparing a reply: what is removed before anything is read from it.

A reasoning block is a draft; quoted material, lines of the evaluated text and the
prompt's own words (its rubric, "the maximum score of 10") are what the judge was given,
not what it said. All of them are blanked, keeping every position, so that neither a
value nor a veto comes from them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from elitr_bench.judges.reading.json_text import FENCE, parse_json

TRUNCATED = "truncated: the reply was cut off at the token limit (finish_reason=length)"
#: A reasoning model's limit counts its hidden reasoning: spent there, no text was written.
REASONED_OUT = (
    "truncated: the token limit was spent on the judge's hidden reasoning before it wrote "
    "any reply (finish_reason=length); raise max_tokens"
)
EMPTY = "empty reply: the judge wrote no text"
REFUSED = "refused: the judge declined to answer"
#: Reasons whose remedy is asking the same prompt again (never a restatement).
REASK = (TRUNCATED, REASONED_OUT, EMPTY, REFUSED)

_THINK = re.compile(r"<(think|thinking|reasoning|scratchpad)>.*?(?:</\1>|\Z)", re.S | re.I)
_THINK_END = re.compile(r"^.*?</(?:think|thinking|reasoning)>", re.S | re.I)
_BLOCK_QUOTE = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?>.*$", re.M)
_SPAN = re.compile(r"\"((?:[^\"\\\n]|\\.)*)\"|“([^”\n]*)”|«([^»\n]*)»")
#: Quotes inside a kept JSON string or in prose: ``\"...\"`` and ``'...'`` (8+ characters).
_INNER = re.compile(r"\\\"(.*?)\\\"|(?<![A-Za-z])'([^'\n]{8,}?)'(?![A-Za-z])")
#: Before a quoted span, what makes it a JSON string (a key's value, a list item).
_JSON_BEFORE = re.compile(r"(?:\"[ \t]*:|[\[{]|\"[ \t]*,)[ \t]*$")
_VALUE_LIKE = re.compile(r"\d|\\boxed|\[RESULT\]", re.I)
_MIN_QUOTE = 12


def without_reasoning(raw: str) -> str:
    """The reply without its reasoning blocks (a lone closing tag ends one from the start)."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    text = _THINK.sub("", text)
    return _THINK_END.sub("", text, count=1)


def blank(text: str, start: int, end: int) -> str:
    """``text[start:end]`` replaced by spaces, line breaks kept (positions hold)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def repeated(text: str, evaluated: Sequence[str]) -> str:
    """``text`` without the evaluated lines (12+ characters, a digit) it repeats verbatim."""
    out = text
    for source in evaluated:
        for line in {ln.strip() for ln in source.splitlines()}:
            if len(line) >= _MIN_QUOTE and _VALUE_LIKE.search(line):
                start = out.find(line)
                while start >= 0:
                    out = blank(out, start, start + len(line))
                    start = out.find(line, start + len(line))
    return out


_TOKEN = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "to",
        "and",
        "or",
        "is",
        "it",
        "its",
        "this",
        "that",
        "with",
        "for",
        "in",
        "on",
        "be",
        "as",
        "by",
    ]
)
#: A number's line in the prompt ("Score 10: The response ... is essentially equivalent").
_ECHO_WORDS = 2
_SENTENCE_END = re.compile(r"[.!?;](?:\s|$)|\n")


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def echoed(text: str, given: Sequence[str]) -> str:
    """``text`` without the prompt's own number phrases it repeats (the judge was given them).

    A number is an echo of the prompt where the three words before it and the number stand
    in the prompt as they are ("the maximum score of 10"), or where the word before it and
    the number start one of the prompt's lines ("Score 10:") and the words after it, in its
    sentence, repeat at least two words of that line ("Score 10: essentially equivalent";
    words compared by their first five letters). A judge's own words before it ("it
    contains some elements vaguely related ...; this falls under Score 3-4") are its
    reasoning, not an echo. The phrase is
    blanked; the judge's own statements ("I give it a 10") are never in the prompt.
    """
    if not given:
        return text
    prompt = [t for t, _, _ in _tokens(" ".join(given))]
    joined = " " + " ".join(prompt) + " "
    # each prompt line by its first two words: the words after them (more than three
    # letters, by their first five), built once per reply rather than once per number
    line_words: dict[tuple[str, str], list[set[str]]] = {}
    for source in given:
        for line in source.splitlines():
            tokens = [t for t, _, _ in _tokens(line)]
            if len(tokens) >= 2:
                rest = {w[:5] for w in tokens[2:] if len(w) > 3}
                line_words.setdefault((tokens[0], tokens[1]), []).append(rest)
    out = text
    words = _tokens(text)
    for i, (tok, _start, end) in enumerate(words):
        if not _DIGITS.fullmatch(tok):
            continue
        head = [w for w, _, _ in words[max(0, i - 3) : i]]
        if len(head) == 3 and f" {' '.join([*head, tok])} " in joined:
            out = blank(out, words[i - 3][1], end)
            continue
        starting = line_words.get((words[i - 1][0], tok)) if i else None
        if not starting:
            continue
        stop = _SENTENCE_END.search(text, end)
        near = [w for w in words[i + 1 : i + 9] if w[1] < (stop.start() if stop else len(text))]
        around = {w[:5] for w, _, _ in near if w not in _STOP and len(w) > 3}
        if any(len(around & rest) >= _ECHO_WORDS for rest in starting):
            out = blank(out, words[i - 1][1], end)
    return out


def unquote(text: str, *, code: bool = True) -> str:
    r"""``text`` with ``>`` lines, non-JSON fences and quoted values blanked (same length)."""
    out = text
    for match in FENCE.finditer(text) if code else ():
        if not isinstance(parse_json(match.group(2)), (dict, list)):
            out = blank(out, match.start(), match.end())
    for match in _BLOCK_QUOTE.finditer(out):
        out = blank(out, match.start(), match.end())
    for match in _SPAN.finditer(out) if code else ():  # code=False: a list of texts
        body = next((g for g in match.groups() if g is not None), "")
        before = out[max(0, match.start() - 40) : match.start()]
        if _VALUE_LIKE.search(body) and not _JSON_BEFORE.search(before):
            out = blank(out, match.start(), match.end())
    for match in _INNER.finditer(out) if code else ():
        if _VALUE_LIKE.search(match.group(0)):
            out = blank(out, match.start(), match.end())
    return out


@dataclass(frozen=True)
class Reply:
    """A reply: ``raw``; ``answer`` (vetoes' place); ``text`` (the asked format's place).

    ``answer`` has no reasoning and no repeated evaluated lines; ``text`` no quotes either.
    """

    raw: str
    answer: str
    text: str

    @classmethod
    def of(cls, raw: str, evaluated: Sequence[str] = ()) -> Reply:
        """Prepare ``raw``, blanking what it quotes from ``evaluated``."""
        answer = repeated(without_reasoning(raw), evaluated)
        return cls(raw, answer, unquote(answer))
