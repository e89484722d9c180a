r"""How a judge reply becomes values: the asked format only, everything else may veto.

Pattern reading of free text cannot be made safe: every widening of a grammar that
catches one shape misreads another, and a misread value is recorded with status ``ok``.
So a value comes only from the format its prompt asks for, which each family declares
(``\boxed{N}``, ``[RESULT] N``, ``Criterion: N`` lines, the JSON the prompt spells out).
Every rule below holds for all families:

* **Reasoning.** A reasoning block (``<think>...</think>`` and the like) is removed
  before anything is read: neither a value nor a veto comes from a draft.
* **Quoted text.** Block quotes (``>``), code blocks that are not JSON, quoted spans that
  carry a value and lines of the evaluated text repeated verbatim never supply a value:
  an answer that writes ``\boxed{10}`` cannot lend the judge its number.
* **Exactly one.** A field must be stated exactly once in the asked format.
* **Veto.** Any other statement of a value for the field (prose, a revision, a table
  cell, a ``reasoning`` string naming a score, a second box) that differs makes the field
  conflicting. Vetoes are broad on purpose: a false veto costs one cheap restatement
  call, a missed one a wrong number.
* **Restatement.** A reply that is not in the asked format, or is conflicting, is asked
  once more in the same chat for its final values as one JSON object
  (:class:`Restatement`), read strictly; a value in the first reply's asked format must
  agree with it. Cut-off, empty and refused replies are asked again instead
  (:mod:`.asking` runs both).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

TRUNCATED = "truncated: the reply was cut off at the token limit (finish_reason=length)"
EMPTY = "empty reply: the judge wrote no text"
REFUSED = "refused: the judge declined to answer"
#: Reasons whose remedy is asking the same prompt again (never a restatement).
REASK = (TRUNCATED, EMPTY, REFUSED)


@dataclass(frozen=True)
class Field:
    """One value a judge is asked for, with the scale its prompt states."""

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
                f"{self.name}={value:g} looks like a 0-1 value, not on {self.low:g}-{self.high:g}"
            )
        return ""


@dataclass(frozen=True)
class Reading:
    """What one reply says: a value per field, or None with the reason.

    Attributes:
        values: Field -> value (a number, a label, a tuple of records); None = unscored.
        reasons: Field -> why it is None.
        strict: Field -> the value the reply states in the asked format, even when the
            field is vetoed (a restatement must agree with it).
        restate: Why a restatement is asked ("" when none is: the reading is complete, or
            the reply is to be asked again, or this is the restatement's own reading).
        restated: The values come from a restatement.
    """

    values: Mapping[str, Any]
    reasons: Mapping[str, str] = field(default_factory=dict)
    strict: Mapping[str, Any] = field(default_factory=dict)
    restate: str = ""
    restated: bool = False

    @classmethod
    def unscored(cls, names: Iterable[str], reason: str, restate: bool = False) -> Reading:
        """Every field unscored for one reason (restated when ``restate``)."""
        keys = list(names)
        return cls(dict.fromkeys(keys), dict.fromkeys(keys, reason), {}, reason if restate else "")

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

    @property
    def reask(self) -> bool:
        """Whether asking the same prompt again is the remedy (cut off, empty, refused)."""
        return not self.complete and any(r in REASK for r in self.reasons.values())

    def to_dict(self) -> dict[str, Any]:
        """``{"values", "reasons"}`` plus ``restate`` or ``restated`` when they apply."""
        out: dict[str, Any] = {
            "values": {k: _plain(v) for k, v in self.values.items()},
            "reasons": dict(self.reasons),
        }
        if self.restate:
            out["restate"] = self.restate
        if self.restated:
            out["restated"] = True
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


@dataclass(frozen=True)
class Restatement:
    """The follow-up turn of a reply that is not in the asked format, or is conflicting.

    Attributes:
        message: The fixed user message sent after the judge's reply.
        schema: JSON schema of the one object it asks for (OpenAI ``response_format``).
        read: The strict reader of the answer (reasoning already removed).
    """

    message: str
    schema: Mapping[str, Any]
    read: Callable[[str], Reading]

    @property
    def response_format(self) -> str:
        """OpenAI's structured-output ``response_format`` as canonical JSON text."""
        spec = {"name": "final_values", "strict": True, "schema": self.schema}
        return json.dumps({"type": "json_schema", "json_schema": spec}, sort_keys=True)


class Grammar(Protocol):
    """A family's asked format: its fields, its strict reader and its restatement."""

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields every reading of this grammar has."""
        ...

    @property
    def restatement(self) -> Restatement | None:
        """The restatement turn (None: the family asks again instead)."""
        ...

    def read(self, reply: Reply) -> Reading:
        """The reading of one reply."""
        ...


# --- preparing a reply ----------------------------------------------------------------
_THINK = re.compile(r"<(think|thinking|reasoning|scratchpad)>.*?(?:</\1>|\Z)", re.S | re.I)
_THINK_END = re.compile(r"^.*?</(?:think|thinking|reasoning)>", re.S | re.I)
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M)
_BLOCK_QUOTE = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?>.*$", re.M)
_SPAN = re.compile(r"\"((?:[^\"\\\n]|\\.)*)\"|“([^”\n]*)”|«([^»\n]*)»")
_VALUE_LIKE = re.compile(r"\d|\\boxed|\[RESULT\]", re.I)
_MIN_QUOTE = 12


def without_reasoning(raw: str) -> str:
    """The reply without its reasoning blocks (a lone closing tag ends one from the start)."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    text = _THINK.sub("", text)
    return _THINK_END.sub("", text, count=1)


def _blank(text: str, start: int, end: int) -> str:
    """``text[start:end]`` replaced by spaces, line breaks kept (positions hold)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def repeated(text: str, evaluated: Sequence[str]) -> str:
    """``text`` with the lines of an evaluated text that it repeats verbatim blanked.

    Only lines of 12 characters or more that hold a digit or a marker: a repeated line of
    the answer or the minutes is never the judge's own statement.
    """
    out = text
    for source in evaluated:
        for line in {ln.strip() for ln in source.splitlines()}:
            if len(line) >= _MIN_QUOTE and _VALUE_LIKE.search(line):
                start = out.find(line)
                while start >= 0:
                    out = _blank(out, start, start + len(line))
                    start = out.find(line, start + len(line))
    return out


def unquote(text: str, *, code: bool = True) -> str:
    r"""``text`` with quoted material blanked (same length and line breaks).

    Blanked: ``>`` lines, fenced blocks that are not JSON (kept with ``code=False``), and
    quoted spans (not JSON strings) that hold a digit, ``\\boxed`` or ``[RESULT]``.
    """
    out = text
    for match in _FENCE.finditer(text) if code else ():
        if not isinstance(_parse_json(match.group(2)), (dict, list)):
            out = _blank(out, match.start(), match.end())
    for match in _BLOCK_QUOTE.finditer(out):
        out = _blank(out, match.start(), match.end())
    for match in _SPAN.finditer(out):
        body = next((g for g in match.groups() if g is not None), "")
        in_json = re.search(
            r"[:,\[{][ \t]*$", out[max(0, match.start() - 40) : match.start()]
        )  # a JSON string
        if _VALUE_LIKE.search(body) and not in_json:
            out = _blank(out, match.start(), match.end())
    return out


@dataclass(frozen=True)
class Reply:
    """A judge reply prepared for a grammar.

    Attributes:
        raw: The reply as the judge wrote it.
        answer: The reply without reasoning blocks and without the lines of the evaluated
            text it repeats: where vetoes are looked for.
        text: ``answer`` with quoted material blanked: where the asked format is read.
    """

    raw: str
    answer: str
    text: str

    @classmethod
    def of(cls, raw: str, evaluated: Sequence[str] = ()) -> Reply:
        """Prepare ``raw``, blanking what it quotes from ``evaluated``."""
        answer = repeated(without_reasoning(raw), evaluated)
        return cls(raw, answer, unquote(answer))


_REFUSAL = re.compile(
    r"^\W*(?:i'?m sorry|i am sorry|sorry,|i cannot|i can'?t|i can not|i won'?t|"
    r"i'?m (?:not able|unable)|i am (?:not able|unable)|as an ai)",
    re.I,
)


def read_reply(
    grammar: Grammar,
    raw: str | None,
    finish_reason: str | None = None,
    evaluated: Sequence[str] = (),
) -> Reading:
    """Read one first reply: cut-off, empty and refused replies first, then the grammar."""
    if finish_reason == "length":
        return Reading.unscored(grammar.fields, TRUNCATED)
    reply = Reply.of(raw or "", evaluated)
    if not reply.answer.strip():
        return Reading.unscored(grammar.fields, EMPTY)
    reading = grammar.read(reply)
    refused = _REFUSAL.match(reply.answer.strip()) and len(reply.answer) < 600
    if refused and not reading.n_scored and not reading.strict:
        return Reading.unscored(grammar.fields, REFUSED)
    return reading


def read_restatement(
    grammar: Grammar, first: Reading, raw: str | None, finish_reason: str | None = None
) -> Reading:
    """Read the answer to a restatement strictly; the first reply's asked format must agree."""
    assert grammar.restatement is not None
    names = grammar.fields
    if finish_reason == "length":
        return Reading.unscored(names, f"restatement {TRUNCATED}")
    answer = without_reasoning(raw or "")
    if not answer.strip():
        return Reading.unscored(names, f"restatement: {EMPTY}")
    second = grammar.restatement.read(answer)
    values, reasons = dict(second.values), dict(second.reasons)
    for name in names:
        before = first.strict.get(name)
        if values.get(name) is None and first.values.get(name) is not None:
            values[name] = first.values[name]  # read in the asked format, never vetoed
            reasons.pop(name, None)
        elif values.get(name) is None:
            reasons[name] = f"{first.reasons.get(name) or 'no value'}; then {reasons.get(name)}"
        elif before is not None and values[name] != before:
            values[name] = None
            reasons[name] = (
                f"restatement gives {name}={_shown(second.values[name])}, the reply's asked "
                f"format {_shown(before)}"
            )
    return Reading(values, reasons, first.strict, first.restate, restated=True)


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def shows_format(grammar: Grammar, text: str) -> bool:
    r"""Whether ``text`` (an answer, minutes) holds a value in the judge's asked format.

    An answer written so (``\boxed{10}``, ``Adequacy: 10``) is counted
    (``judge_format_in_answer``) and scores the minimum if its judge stays unscored.
    """
    if not text or not text.strip():
        return False
    return bool(grammar.read(Reply(text, text, text)).strict)


# --- JSON -------------------------------------------------------------------------------
class Repeated(list[Any]):
    """The values of a key an object gives twice with different values."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and out[key] != value:
            earlier = out[key]
            out[key] = Repeated([*(earlier if isinstance(earlier, Repeated) else [earlier]), value])
        else:
            out[key] = value
    return out


def _parse_json(body: str, repair: bool = True) -> Any:
    stripped = body.strip()
    if not stripped:
        return None
    try:
        return json.loads(stripped, object_pairs_hook=_pairs)
    except ValueError:
        if not repair:
            return None
    from json_repair import repair_json

    try:  # syntax only (trailing commas, single quotes): the meaning is checked strictly
        value = repair_json(stripped, return_objects=True)
    except Exception:  # the library failing is "no JSON", not a crash
        return None
    return None if value in ("", None) else value


def json_values(text: str) -> list[Any]:
    """Every JSON object or list the reply holds (fenced or bare), in order, not nested."""
    found: list[tuple[int, Any]] = []
    covered: list[tuple[int, int]] = []
    for match in _FENCE.finditer(text):
        value = _parse_json(match.group(2))
        covered.append((match.start(), match.end()))
        if isinstance(value, (dict, list)) and value != []:
            found.append((match.start(), value))
    pos = 0
    while (start := _next_open(text, pos, covered)) >= 0:
        end = _balanced_end(text, start)
        span = text[start:end] if end > 0 else ""
        looks = "{" in span or '"' in span  # "[PERSON4]", "[1]": not JSON answers
        value = _parse_json(span) if looks else None
        if isinstance(value, (dict, list)) and value not in ([], {}):
            found.append((start, value))
            covered.append((start, end))
            pos = end
        else:
            pos = start + 1
    return [value for _, value in sorted(found, key=lambda pair: pair[0])]


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
    quote = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quote = False
            continue
        if ch == '"':
            quote = True
        elif ch in closing:
            stack.append(closing[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        elif ch in "}]":
            return -1
    return -1


def one_object(answer: str) -> tuple[dict[str, Any] | None, str]:
    """The one JSON object of a restatement (a ``json`` fence allowed), or why there is none.

    Strict JSON (no repair), and no digit outside the object: prose around it that names
    a number would be a second statement.
    """
    body = answer.strip()
    fence = re.fullmatch(r"(```|~~~)[^\n]*\n(.*?)\n?[ \t]*\1", body, re.S)
    body = fence.group(2).strip() if fence else body
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return None, "restatement holds no JSON object"
    if re.search(r"\d", body[:start] + body[end + 1 :]):
        return None, "restatement states numbers outside its JSON object"
    value = _parse_json(body[start : end + 1], repair=False)
    if not isinstance(value, dict):
        return None, "restatement is not one valid JSON object"
    return value, ""


# --- numeric fields: the asked format, vetoes, the restatement --------------------------
@dataclass(frozen=True)
class Stated:
    """One value written in the asked format, and where (``start``, ``end`` in the text)."""

    field: str
    value: float
    start: int
    end: int


_WORD = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
_WORD |= {"nine": 9, "ten": 10, "zero": 0, "one": 1}
_N = r"\d+(?:\.\d+)?|" + "|".join(_WORD)
_MENTION = re.compile(
    rf"(?<![\w.\[/])(?P<a>{_N})(?:[ \t]*(?:-|–|to)[ \t]*(?P<b>{_N}))?(?P<pct>[ \t]*%)?"
    r"(?P<den>[ \t]*(?:/|out[ \t]+of)[ \t]*(?P<top>\d+(?:\.\d+)?|ten|five))?(?![\w])",
    re.I,
)
_SENTENCES = re.compile(r"(?<=[.!?;])[ \t]+|\n")
_ABBREVIATION = re.compile(r"\b(?:i\.e|e\.g|vs|cf|approx)\.", re.I)
#: "a 4.", "an 8": a bare value in any sentence speaks of a score too.
_ARTICLE_VALUE = re.compile(r"\ban?[ \t]+\d+(?:\.\d+)?(?![\w%]|\.\d)", re.I)


def _num(token: str) -> float:
    return float(_WORD[token.lower()]) if token.lower() in _WORD else float(token)


def vetoes(
    text: str, specs: Sequence[Field], labels: Mapping[str, str], generic: str
) -> dict[str, list[tuple[float, float, str]]]:
    """Every other statement of a value per field: ``(low, high, as written)``.

    A sentence (or line, or table row) that names a field, or that speaks of a score at
    all (``generic``: then it concerns every field), contributes each number it holds:
    a range as its two ends, a percentage or a number on another scale as ``nan`` (it
    never agrees). Number words count only from "two" up, "zero" and "one" only as
    "one out of ten"; numbers glued to a word, a dot or a bracket ("[PERSON4]") do not.
    """
    out: dict[str, list[tuple[float, float, str]]] = {s.name: [] for s in specs}
    text = _ABBREVIATION.sub(lambda m: m.group(0).replace(".", " "), text)
    for sentence in _SENTENCES.split(text):
        named = [s for s in specs if re.search(labels[s.name], sentence, re.I)]
        scored = re.search(generic, sentence, re.I) or _ARTICLE_VALUE.search(sentence)
        if not named and not scored:
            continue
        for m in _MENTION.finditer(sentence):
            if m.group("a").lower() in ("zero", "one") and not m.group("den"):
                continue
            low = _num(m.group("a"))
            high = _num(m.group("b")) if m.group("b") else low
            for spec in named or specs:
                other = m.group("top") is not None and _num(m.group("top")) != spec.high
                other = other or (m.group("b") is not None and low in (0, 1) and high != spec.high)
                if m.group("pct") or other:
                    out[spec.name].append((math.nan, math.nan, m.group(0).strip()))
                elif named or spec.low <= low <= spec.high:
                    out[spec.name].append((low, high, m.group(0).strip()))
    return out


@dataclass(frozen=True)
class NumericGrammar:
    """Numeric fields read from the asked format, vetoed by any other statement.

    Attributes:
        specs: The fields with their scales, in the prompt's order.
        find: The strict statements in a (quote-blanked) reply.
        labels: Field -> regular expression that names it in prose (for vetoes).
        generic: Words that make a sentence speak of a value of any field.
        shape: The asked format in words (for reasons).
        what: What the restatement asks for ("score", "scores").
        keys: Field -> its key in the restatement object (the field's name by default).
    """

    specs: tuple[Field, ...]
    find: Callable[[str], list[Stated]]
    labels: Mapping[str, str]
    generic: str
    shape: str
    what: str
    keys: Mapping[str, str] = field(default_factory=dict)

    @property
    def fields(self) -> tuple[str, ...]:
        """The field names."""
        return tuple(s.name for s in self.specs)

    def read(self, reply: Reply) -> Reading:
        """Each field's one value in the asked format, unless a veto contradicts it."""
        stated = self.find(reply.text)
        rest = reply.answer
        for s in stated:
            rest = _blank(rest, s.start, s.end)
        others = vetoes(rest, self.specs, self.labels, self.generic)
        values: dict[str, Any] = {}
        reasons: dict[str, str] = {}
        strict: dict[str, Any] = {}
        for spec in self.specs:
            mine = [s.value for s in stated if s.field == spec.name]
            problem = spec.problem(mine[0]) if len(mine) == 1 else ""
            if not mine:
                problem = f"no {spec.name} in the asked format"
            elif len(mine) > 1:
                shown = " and ".join(f"{v:g}" for v in mine)
                problem = f"{spec.name} given {len(mine)} times in the asked format ({shown})"
            else:
                value = int(mine[0]) if spec.integer else mine[0]
                strict[spec.name] = value
                against = [w for lo, hi, w in others[spec.name] if not lo <= value <= hi]
                if against:
                    problem = f"conflicting {spec.name}: {value:g}, also {', '.join(against)}"
            values[spec.name] = None if problem else strict.get(spec.name)
            if problem:
                reasons[spec.name] = problem
        restate = "; ".join(dict.fromkeys(reasons.values()))
        return Reading(values, reasons, strict, restate and f"{restate} ({self.shape})")

    @property
    def restatement(self) -> Restatement:
        """One JSON object with exactly the restatement keys, every value on its scale."""
        keys = {s.name: self.keys.get(s.name, s.name) for s in self.specs}
        scales = ", ".join(
            f'"{keys[s.name]}" ({"an integer" if s.integer else "a number"} from {s.low:g} '
            f"to {s.high:g})"
            for s in self.specs
        )
        one = len(keys) == 1
        message = (
            f"Restate your final {self.what} only, as one JSON object with exactly "
            f"{'the key' if one else 'these keys'}: {scales}. Write nothing else."
        )
        schema = {
            "type": "object",
            "properties": {
                keys[s.name]: {
                    "type": "integer" if s.integer else "number",
                    "minimum": s.low,
                    "maximum": s.high,
                }
                for s in self.specs
            },
            "required": list(keys.values()),
            "additionalProperties": False,
        }
        return Restatement(message, schema, lambda answer: self._restated(answer, keys))

    def _restated(self, answer: str, keys: Mapping[str, str]) -> Reading:
        obj, why = one_object(answer)
        if obj is not None and set(obj) != set(keys.values()):
            why = f"restatement keys are {sorted(obj)}, not {sorted(keys.values())}"
        if obj is None or why:
            return Reading.unscored(self.fields, why)
        values: dict[str, Any] = {}
        reasons: dict[str, str] = {}
        for spec in self.specs:
            raw = obj[keys[spec.name]]
            number = isinstance(raw, (int, float)) and not isinstance(raw, bool)
            problem = spec.problem(float(raw)) if number else f"{spec.name}={raw!r} is not a number"
            values[spec.name] = None if problem else (int(raw) if spec.integer else float(raw))
            if problem:
                reasons[spec.name] = f"restatement: {problem}"
        return Reading(values, reasons)
