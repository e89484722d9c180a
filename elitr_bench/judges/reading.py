r"""One strict reading policy for every judge reply, whatever the family.

A judge reply becomes a number only when the reply states that number unambiguously as
the judge's own answer; anything else is *unscored* with a reason, counted, and asked
again. A wrong number recorded with status ``ok`` moves a leaderboard without anyone
noticing, whereas an unscored item is visible, so every rule below errs towards
"unscored". Families supply only their fields (with scales) and their grammar: where in a
reply a value for a field can be written. This module applies the rules that hold for all
of them:

* **Cut off.** A reply the token limit cut off (``finish_reason == "length"``) is never
  read: its first half may hold a draft value that the rest would have corrected.
* **Quoted text.** Text the judge quotes never supplies a value: block quotes (``>``
  lines), code blocks that are not JSON, quotation-mark spans that carry a number, and any
  line of the evaluated answer/minutes/summary repeated verbatim in the reply. An answer
  that writes "Score: 10" or ``\\boxed{10}`` cannot lend the judge its number.
* **Agreement.** Every candidate value for a field, anywhere in the reply (a line, prose,
  a table, fenced or bare JSON, ``\\boxed{}``, a restatement, a correction) must be the
  same value; otherwise the field is unscored as ``conflicting``. There is no "first
  block wins" or "last wins" rule: a judge that changes its mind is asked again.
* **Scale.** A value must lie on the field's scale as written: an integer where the
  prompt asks for one, inside the range, and not a 0-1 fraction on a wider scale (0.85 on
  0-10 is a confidence, not a score).

Everything here is a pure function of the reply text; :mod:`.asking` runs the loop.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

#: The reason of every field of a reply the token limit cut off.
TRUNCATED = "truncated: the reply was cut off at the token limit (finish_reason=length)"
EMPTY = "empty reply: the judge wrote no text"


@dataclass(frozen=True)
class Field:
    """One value a judge is asked for, with the scale its prompt states.

    Attributes:
        name: The field's name in readings and logs (``score``, ``adequacy``, ``rating``).
        low: Lowest value on the prompt's scale.
        high: Highest value on the prompt's scale.
        integer: The prompt asks for an integer (a 7.5 is then off the scale).
    """

    name: str
    low: float
    high: float
    integer: bool = False

    def problem(self, value: float) -> str:
        """Why ``value`` is not on this field's scale ("" when it is)."""
        if not math.isfinite(value):
            return f"{self.name}={value} is not a number"
        if not self.low <= value <= self.high:
            return f"{self.name}={value:g} outside {self.low:g}-{self.high:g}"
        if self.integer and not float(value).is_integer():
            return f"{self.name}={value:g} is not an integer on {self.low:g}-{self.high:g}"
        if self.high >= 5 and 0 < value < 1:
            return (
                f"{self.name}={value:g} looks like a 0-1 value, not one on the "
                f"{self.low:g}-{self.high:g} scale"
            )
        return ""


@dataclass(frozen=True)
class Candidate:
    """One value a grammar found for a field.

    Attributes:
        value: The value, or None when what is written cannot be one (a range, another
            scale, "8,5").
        problem: Why ``value`` is None ("" otherwise); ``{c}`` stands for the field name.
        shown: The value as written ("8/10"), for reasons.
    """

    value: float | None
    problem: str = ""
    shown: str = ""


def decide(name: str, found: Sequence[Candidate], spec: Field | None = None) -> tuple[Any, str]:
    """One value when every candidate agrees on it and it is on the scale; else the reason.

    Args:
        name: The field (for reasons).
        found: Every candidate the grammar found, in any order.
        spec: The field's scale; None when the grammar checked it already.

    Returns:
        ``(value, "")`` or ``(None, reason)``; reasons start with ``no``, ``conflicting``
        or describe the unusable value.
    """
    if not found:
        return None, f"no {name} score"
    values = sorted({c.value for c in found if c.value is not None})
    problems = [c for c in found if c.value is None]
    if len(values) == 1 and not problems:
        value = values[0]
        issue = spec.problem(value) if spec is not None else ""
        return (None, issue) if issue else (value, "")
    if not values:
        return None, problems[0].problem.replace("{c}", name)
    shown = " and ".join(
        dict.fromkeys(c.shown or f"{c.value:g}" for c in found if c.shown or c.value is not None)
    )
    return None, f"conflicting {name}: given as {shown}"


@dataclass(frozen=True)
class Reading:
    """What one reply says: a value per field, or None with the reason.

    The one result type of every judge family (QA rubric scores, AutoMin criteria, filler
    labels, CREAM key facts and alignments, MESA steps).

    Attributes:
        values: Field -> value (a number, a label, a tuple of records), None = unscored.
        reasons: Field -> why it is None (only for unscored fields).
    """

    values: Mapping[str, Any]
    reasons: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def unscored(cls, names: Iterable[str], reason: str) -> Reading:
        """Every field unscored for one reason (a cut-off, empty or refused reply)."""
        keys = list(names)
        return cls(dict.fromkeys(keys), dict.fromkeys(keys, reason))

    @classmethod
    def of(cls, decided: Mapping[str, tuple[Any, str]]) -> Reading:
        """From ``field -> (value, reason)`` pairs as :func:`decide` returns them."""
        return cls(
            {k: v for k, (v, _) in decided.items()},
            {k: r for k, (v, r) in decided.items() if v is None},
        )

    def value(self, name: str) -> Any:
        """The field's value (None when unscored)."""
        return self.values.get(name)

    @property
    def n_scored(self) -> int:
        """How many fields have a value."""
        return sum(v is not None for v in self.values.values())

    @property
    def complete(self) -> bool:
        """Every field has a value."""
        return bool(self.values) and all(v is not None for v in self.values.values())

    @property
    def reason(self) -> str:
        """The reasons of the unscored fields in one line ("" when complete)."""
        return "; ".join(dict.fromkeys(r for r in self.reasons.values() if r))

    @property
    def truncated(self) -> bool:
        """Whether the reply was cut off by the token limit."""
        return any(r == TRUNCATED for r in self.reasons.values())

    def to_dict(self) -> dict[str, Any]:
        """``{"values": ..., "reasons": ...}`` (JSON-safe: tuples of records as lists)."""
        return {
            "values": {k: _plain(v) for k, v in self.values.items()},
            "reasons": dict(self.reasons),
        }


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


class Grammar(Protocol):
    """Where a family's values are written in a reply.

    ``read`` receives a reply whose quoted material is already blanked out
    (:class:`Reply`) and returns a :class:`Reading` for exactly :attr:`fields`.
    """

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields every reading of this grammar has."""
        ...

    def read(self, reply: Reply) -> Reading:
        """The reading of one reply."""
        ...


# --- quoted material ------------------------------------------------------------------
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M)
_BLOCK_QUOTE = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?>.*$", re.M)
# A double-quoted span may hold escaped quotes (a JSON string quoting the summary).
_DOUBLE_SPAN = re.compile(r"\"((?:[^\"\\\n]|\\.)*)\"|“([^”\n]*)”|„([^“”\n]*)[“”]|«([^»\n]*)»")
_SINGLE_SPAN = re.compile(r"(?<![\w'’])['‘]([^'’\n]*?)['’](?![\w'’])")
_VALUE_LIKE = re.compile(r"\d|\\boxed|\[RESULT\]", re.I)
#: A line of the evaluated text shorter than this is not matched in the reply (a bare
#: "10" or "Yes" would blank the judge's own words).
_MIN_QUOTE = 12


def _blank(text: str, start: int, end: int) -> str:
    """Replace ``text[start:end]`` by spaces, keeping its line breaks (positions hold)."""
    middle = re.sub(r"[^\n]", " ", text[start:end])
    return text[:start] + middle + text[end:]


def _is_json(body: str) -> bool:
    stripped = body.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    value = _parse_json(stripped)
    return isinstance(value, (dict, list)) and bool(value)


def unquote_blocks(text: str, evaluated: Sequence[str] = (), *, code: bool = True) -> str:
    """The reply with block-level quotations blanked (same length and line breaks).

    Blanked: ``>`` block-quote lines, fenced code blocks that are not JSON (a JSON block
    is the judge's own answer unless it sits in a block quote), and every line of an
    evaluated text (answer, minutes, summary) of at least 12 characters that the reply
    repeats verbatim and that could carry a value. ``code=False`` keeps code blocks (a
    family whose answer is a list of texts, not a number).
    """
    out = text
    for match in _FENCE.finditer(text) if code else ():
        if not _is_json(match.group(2)):
            out = _blank(out, match.start(), match.end())
    for match in _BLOCK_QUOTE.finditer(out):
        out = _blank(out, match.start(), match.end())
    for source in evaluated:
        for line in {ln.strip() for ln in source.splitlines()}:
            if len(line) < _MIN_QUOTE or not _VALUE_LIKE.search(line):
                continue
            start = out.find(line)
            while start >= 0:
                out = _blank(out, start, start + len(line))
                start = out.find(line, start + len(line))
    return out


def unquote_spans(text: str) -> str:
    r"""The reply with quotation-mark spans that carry a value blanked (for prose grammars).

    A span in double (or typographic) quotes, or in single quotes opened and closed at
    word boundaries, is blanked when it holds a digit, ``\\boxed`` or ``[RESULT]``: the
    judge is citing something, not scoring. Spans without one (JSON keys such as
    ``"adequacy"``) stay, so a JSON line still reads as ``key: value``.
    """
    out = text
    for pattern in (_DOUBLE_SPAN, _SINGLE_SPAN):
        for match in pattern.finditer(out):
            body = next((g for g in match.groups() if g is not None), "")
            if _VALUE_LIKE.search(body):
                out = _blank(out, match.start(), match.end())
    return out


_THINK = re.compile(r"<(think|thinking|reasoning|scratchpad)>(.*?)(?:</\1>|\Z)", re.S | re.I)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=\S)|\n+")
_LOOSE_NUMBER = re.compile(r"(?<![\w./\[-])(\d+(?:\.\d+)?)(?![\w%/\]]|\.\d)")


def draft_values(thinking: str, label: str, spec: Field) -> list[Candidate]:
    """Every number on the field's scale in a sentence of a draft that names the field.

    A reasoning block is the judge's draft: its "so topicality is high, 9" or "score 5"
    is as much the judge's value as the final answer, and a final answer that differs
    makes the field conflicting (no "last wins"). Read loosely on purpose: a draft that
    only mentions a number near the field's name costs a re-ask, never a wrong value.
    """
    out: list[Candidate] = []
    for sentence in _SENTENCE.split(thinking):
        if not re.search(rf"(?<![\w-])(?:{label})", sentence, re.I):
            continue
        for match in _LOOSE_NUMBER.finditer(sentence):
            value = float(match.group(1))
            if spec.low <= value <= spec.high:
                out.append(Candidate(value, "", match.group(1)))
    return out


_HTML_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.S | re.I)
_HTML_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.S | re.I)
_ELEMENT = re.compile(r"<(?P<tag>[A-Za-z][\w-]*)(?:\s[^<>]*)?>(?P<body>[^<>\n]*)</(?P=tag)>")
_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
_LATEX_ROW = re.compile(r"^(?P<row>[^\n&]*(?:&[^\n&]*)+?)\s*\\\\\s*(?:\\hline)?\s*$", re.M)


def plain_markup(prose: str) -> str:
    """XML, HTML and LaTeX answers in the line shapes the grammars read.

    ``<adequacy>7</adequacy>`` becomes ``adequacy: 7``, an HTML or LaTeX table row a
    Markdown row (``| Adequacy | 7 |``), a list item ``- ...``; other tags go. The
    words and numbers stay where they were, so nothing is read that the judge did not
    write next to its label.
    """
    if "<" not in prose and "&" not in prose:
        return prose
    out = _HTML_ROW.sub(
        lambda m: "\n| " + " | ".join(c.strip() for c in _HTML_CELL.findall(m.group(1))) + " |",
        prose,
    )
    out = re.sub(r"<li[^>]*>", "\n- ", out, flags=re.I)
    out = _ELEMENT.sub(
        lambda m: (
            m.group(0)
            if m.group("tag").lower() in _KEEP_TAGS
            else f"{m.group('tag')}: {m.group('body').strip()}"
        ),
        out,
    )
    out = _TAG.sub(" ", out)
    return _LATEX_ROW.sub(
        lambda m: "| " + " | ".join(c.strip() for c in m.group("row").split("&")) + " |", out
    )


#: Inline tags that only style text: their content stays as it is.
_KEEP_TAGS = frozenset({"b", "strong", "i", "em", "u", "span", "code", "td", "th", "li", "p"})


@dataclass(frozen=True)
class Reply:
    """A judge reply prepared for a grammar.

    Attributes:
        raw: The reply as the judge wrote it.
        text: ``raw`` with block-level quotations blanked (for JSON and structure).
        prose: ``text`` with value-carrying quotation-mark spans blanked too (for
            line and prose grammars).
        thinking: The reasoning block(s) of the reply (``<think>...</think>`` and
            the like, a reasoning model's draft), also part of ``text`` and ``prose``:
            every value it states, however loosely, must agree (:func:`draft_values`).
    """

    raw: str
    text: str
    prose: str
    thinking: str = ""

    @classmethod
    def of(cls, raw: str, evaluated: Sequence[str] = ()) -> Reply:
        """Prepare ``raw``, blanking what it quotes from ``evaluated``."""
        text = unquote_blocks(raw.replace("\r\n", "\n").replace("\r", "\n"), evaluated)
        prose = unquote_spans(text)
        thinking = "\n".join(m.group(2) for m in _THINK.finditer(prose))
        return cls(raw, text, plain_markup(prose), thinking)


def read_reply(
    grammar: Grammar,
    raw: str | None,
    finish_reason: str | None = None,
    evaluated: Sequence[str] = (),
) -> Reading:
    """Read one reply under the policy: cut-off and empty replies first, then the grammar.

    Args:
        grammar: The family's grammar.
        raw: The reply text.
        finish_reason: The backend's finish reason (``"length"``: cut off, never read).
        evaluated: The texts the judge evaluated (answer, minutes, summary): lines of them
            repeated in the reply never supply a value.
    """
    if finish_reason == "length":
        return Reading.unscored(grammar.fields, TRUNCATED)
    if not raw or not raw.strip():
        return Reading.unscored(grammar.fields, EMPTY)
    return grammar.read(Reply.of(raw, evaluated))


def shows_format(grammar: Grammar, text: str) -> bool:
    r"""Whether ``text`` (an answer, minutes) is written in the judge's own reply format.

    Read as if it were a judge reply, without removing anything it quotes: any value or
    value-like problem the grammar finds (``\boxed{10}``, ``[RESULT] 5``, ``Adequacy:
    10``) means that a judge quoting the text would lend it that value. Used to count such
    answers (``judge_format_in_answer``) and to keep them from gaining by confusing the
    judge (see the tasks' README).
    """
    if not text or not text.strip():
        return False
    reading = grammar.read(Reply(text, text, text))
    return any(
        value is not None or not reading.reasons.get(name, "").startswith("no ")
        for name, value in reading.values.items()
    )


# --- JSON anywhere in a reply -----------------------------------------------------------
def json_values(text: str) -> list[Any]:
    """Every JSON value (object or list) the judge wrote, in order of appearance.

    Fenced blocks are parsed strictly, then through ``json-repair`` (trailing commas,
    single quotes, comments); outside fences each balanced top-level ``{...}``/``[...]``
    is tried the same way when it looks like JSON (it holds a brace or a quote: "[PERSON4]"
    and "[1]" are placeholders and references, not answers). A value nested in another is
    not listed twice. When nothing parses, the reply from its first brace (or bracket
    opening a quoted string or an object) is handed to ``json-repair`` once (a value cut
    before its closing bracket); it counts only as an object or a non-empty list.
    """
    found: list[tuple[int, Any]] = []
    covered: list[tuple[int, int]] = []
    for match in _FENCE.finditer(text):
        value = _parse_json(match.group(2))
        covered.append((match.start(), match.end()))
        if isinstance(value, (dict, list)) and value != []:
            found.append((match.start(), value))
    pos = 0
    while True:
        start = _next_open(text, pos, covered)
        if start < 0:
            break
        end = _balanced_end(text, start)
        if end < 0:
            pos = start + 1
            continue
        span = text[start:end]
        # "[PERSON4]", "[1]": placeholders and references, not JSON an answer is written in.
        looks = "{" in span or '"' in span or "'" in span
        value = _parse_json(span) if looks else None
        if isinstance(value, (dict, list)) and value not in ([], {}):
            found.append((start, value))
            covered.append((start, end))
            pos = end
        else:
            pos = start + 1
    opening = _JSON_START.search(text)
    if not found and opening is not None:
        # A value cut before its closing brackets: repaired from where it opens.
        value = _parse_json(text[opening.start() :])
        strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if isinstance(value, (dict, list)) and value and not strings:
            found.append((0, value))
    found.sort(key=lambda pair: pair[0])
    return [value for _, value in found]


_JSON_START = re.compile(r"\{|\[\s*[\"'{\[]")


def _next_open(text: str, pos: int, covered: Sequence[tuple[int, int]]) -> int:
    while True:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            return -1
        start = min(starts)
        inside = next((e for s, e in covered if s <= start < e), None)
        if inside is None:
            return start
        pos = inside


def _balanced_end(text: str, start: int) -> int:
    """End of the bracketed value opened at ``start`` (strings respected), or -1."""
    closing = {"{": "}", "[": "]"}
    stack: list[str] = []
    quote = ""
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch == '"':
            quote = ch
        elif ch in closing:
            stack.append(closing[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        elif ch in "}]":
            return -1
    return -1


class Repeated(list[Any]):
    """The values of a key an object gives twice with different values (``{"r": 2, "r": 3}``).

    ``json`` keeps the last; the judge gave both, so every family sees the conflict.
    """


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and out[key] != value:
            earlier = out[key]
            out[key] = Repeated([*(earlier if isinstance(earlier, Repeated) else [earlier]), value])
        else:
            out[key] = value
    return out


def _parse_json(body: str) -> Any:
    stripped = body.strip()
    if not stripped:
        return None
    try:
        return json.loads(stripped, object_pairs_hook=_pairs)
    except ValueError:
        pass
    from json_repair import repair_json

    try:
        value = repair_json(stripped, return_objects=True)
    except Exception:  # the library failing is "no JSON", not a crash
        return None
    return None if value in ("", None) else value


def objects_with(values: Iterable[Any], keys: Callable[[str], bool]) -> list[Mapping[str, Any]]:
    """Every JSON object, at any depth, with at least one key ``keys`` accepts."""
    out: list[Mapping[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            if any(keys(str(k)) for k in value):
                out.append(value)
            for v in value.values():
                if isinstance(v, (Mapping, list)):
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for value in values:
        walk(value)
    return out


# --- labelled values in prose -----------------------------------------------------------
_NUM = r"[-+]?\d+(?:[.,]\d+)?"
_LABELLED_TAIL = re.compile(
    rf"[ \t]*(?:\*\*|__)?[ \t]*(?::|=|-|is|of)?[ \t]*(?:\*\*|__)?[ \t]*(?P<num>{_NUM})"
    r"(?P<den>[ \t]*/[ \t]*\d+(?:\.\d+)?|[ \t]+out[ \t]+of[ \t]+\d+(?:\.\d+)?)?"
    r"(?P<after>[ \t]*(?:\*\*|__)?[ \t]*(?:[-–][ \t]*\d)?)",
    re.I,
)


def labelled(prose: str, label: str, spec: Field) -> list[Candidate]:
    """Values written as ``<label>: N`` (``N/high``, ``N out of high``) in prose.

    ``label`` is a regular expression matched at a word boundary; what may stand between
    it and the number is only a colon, ``=``, a dash, "is" or "of" (and Markdown bold).
    "7-8" is a range (unusable), a denominator other than the scale's top is another
    scale (unusable), a decimal comma is unusable.
    """
    out: list[Candidate] = []
    for match in re.finditer(rf"(?<![\w-])(?:{label})(?![\w-])", prose, re.I):
        tail = _LABELLED_TAIL.match(prose, match.end())
        if tail is None:
            continue
        num, den = tail.group("num"), tail.group("den")
        if re.search(r"[-–][ \t]*\d", tail.group("after") or ""):
            out.append(Candidate(None, "{c} given as a range", (num + (den or "")).strip()))
        else:
            out.append(_ratio(num, den, spec))
    return out


_JSON_NUMBER = re.compile(
    rf"[ \t]*(?P<num>{_NUM})"
    r"(?P<den>[ \t]*/[ \t]*\d+|[ \t]+out[ \t]+of[ \t]+\d+)?[ \t]*"
)


def json_candidates(
    objects: Iterable[Mapping[str, Any]], key: Callable[[str], bool], spec: Field
) -> list[Candidate]:
    """Candidates from JSON objects: the value under every key ``key`` accepts.

    Numbers and numeric strings ("7", "7/10") count; booleans, nulls and text do not (a
    ``"rating": "good"`` is a problem, not a value).
    """
    out: list[Candidate] = []
    for obj in objects:
        for k, v in obj.items():
            if not key(str(k)):
                continue
            if isinstance(v, Repeated):
                shown = " and ".join(json.dumps(x) for x in v)
                out.append(Candidate(None, "{c} given twice in one object: " + shown, shown))
            elif isinstance(v, bool) or v is None:
                out.append(Candidate(None, "{c} given as " + json.dumps(v), json.dumps(v)))
            elif isinstance(v, (int, float)):
                out.append(Candidate(float(v), "", f"{v:g}" if isinstance(v, float) else str(v)))
            elif isinstance(v, str) and (number := _JSON_NUMBER.fullmatch(v)) is not None:
                out.append(_ratio(number.group("num"), number.group("den"), spec))
            elif isinstance(v, str):
                out.append(Candidate(None, "{c} given as " + repr(v), v))
    return out


_RATED = re.compile(
    r"(?<![\w-])(?:rate|rated|rating|give|giving|gave|assign|assigning|award|deserves?|"
    r"deserving|earns?|earning|merits?|meriting|warrants?|warranting|score\s+it)"
    r"(?:[ \t]+(?:it|this|that|the|these|(?:response|answer|summary|minutes)(?:'s)?|"
    r"[a-z]+ness|[a-z]+ity|for|on|as|overall|final|with|at|an?|of|score|rating)){0,6}"
    rf"[ \t]+(?P<num>{_NUM})"
    r"(?P<den>[ \t]*/[ \t]*\d+(?:\.\d+)?|[ \t]+out[ \t]+of[ \t]+\d+(?:\.\d+)?)?"
    r"(?![\w%]|[ \t]*[-–][ \t]*\d|\.\d)"
    # "the initial score is 4.", "i.e. a 4.", "an 8.": a value closing its sentence.
    r"|(?<![\w-])(?:score|rating)[ \t]+(?:is|was|would[ \t]+be|of|=|:)[ \t]+"
    rf"(?P<num2>{_NUM})(?=[ \t]*(?:[.;!)]|$))"
    rf"|(?<![\w-])an?[ \t]+(?P<num3>{_NUM})(?=[ \t]*(?:[.;!)]|$))",
    re.I | re.M,
)
_OUT_OF = re.compile(
    rf"(?<![\w./-])(?P<num>{_NUM})"
    r"(?P<den>[ \t]*/[ \t]*(?P<a>\d+)|[ \t]+out[ \t]+of[ \t]+(?P<b>\d+))"
    r"(?![\w.%/])",
    re.I,
)


_RATE_ONLY = re.compile(r"(?<![\w-])(?:rate|rated|rating)(?![\w-])", re.I)


def rated(prose: str, spec: Field, *, ratios: bool = True, verbs: str = "any") -> list[Candidate]:
    """Values stated in prose: "I would rate it a 7", "deserves a 6/10", "8 out of 10".

    A restatement in a sentence counts as much as the formatted answer and must agree
    with it; ``ratios`` adds every "N/high" and "N out of high" (a number over the
    field's own top is a score on that scale, whatever the words around it). ``verbs``
    ``rate`` keeps only "rate/rated/rating" (MESA replies "give" severities and
    certainties to instances, which are not the rating).
    """
    out: list[Candidate] = []
    for match in _RATED.finditer(prose):
        if verbs == "rate" and not _RATE_ONLY.match(prose, match.start()):
            continue
        if match.group("num") is not None:
            out.append(_ratio(match.group("num"), match.group("den"), spec))
        elif verbs != "rate":
            out.append(_ratio(match.group("num2") or match.group("num3"), None, spec))
    if ratios:
        for match in _OUT_OF.finditer(prose):
            top = float(match.group("a") or match.group("b"))
            if top == spec.high:
                out.append(_ratio(match.group("num"), match.group("den"), spec))
    return out


def _ratio(num: str, den: str | None, spec: Field) -> Candidate:
    shown = (num + (den or "")).strip()
    if "," in num:
        return Candidate(None, "{c} given as " + shown + ", not one number", shown)
    if den is not None:
        top = float(re.sub(r"[^\d.]", "", den.split("of")[-1]) or "nan")
        if top != spec.high:
            return Candidate(
                None, "{c} given as " + shown + f", not on {spec.low:g}-{spec.high:g}", shown
            )
    return Candidate(float(num), "", shown)
