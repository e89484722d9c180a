r"""A judge reply's values come only from the asked format; anything else may veto.

Free-text pattern reading cannot be made safe (each widening misreads another shape). A
reply not in the family's format, or vetoed, is restated once as JSON (:class:`Restatement`,
run by :mod:`.asking`); cut-off, empty and refused replies are asked again. Vetoes are broad
on purpose: a false one costs a cheap call, a missed one a wrong number. The full policy
is in docs/judge-replies.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

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
        fraction = self.high >= 5 and 0 < value < 1  # 0.85 on 0-10: a 0-1 value
        return (
            f"{self.name}={value:g} looks like a 0-1 value, not on this scale" if fraction else ""
        )


class Statement(Protocol):
    """A value a reply stated for a field, in the asked format or in a veto."""

    def holds(self, value: Any) -> bool:
        """Whether a restated ``value`` agrees with this statement."""

    def show(self, value: Any) -> str:
        """``value`` (a restated one) written the way this statement is written."""


@dataclass(frozen=True)
class Span:
    """A number a reply stated (a range, "7-8", holds both ends and what lies between)."""

    low: float
    high: float

    def holds(self, value: Any) -> bool:
        """Whether ``value`` lies in the span."""
        return isinstance(value, (int, float)) and self.low <= value <= self.high

    def show(self, value: Any) -> str:
        """``value`` as a number (``7``, ``7.5``)."""
        return f"{value:g}" if isinstance(value, (int, float)) else str(value)

    def __str__(self) -> str:
        return f"{self.low:g}" if self.low == self.high else f"{self.low:g}-{self.high:g}"


@dataclass(frozen=True)
class Reading:
    """What one reply says: per field a value or None (``reasons`` says why).

    ``strict`` holds the values stated in the asked format, vetoed or not; ``stated`` every
    value the reply stated per field, in the asked format or in a veto (a restatement must
    agree with one of them); ``restate`` says why a restatement is asked ("" for none);
    ``restated``: the values come from a restatement.
    """

    values: Mapping[str, Any]
    reasons: Mapping[str, str] = field(default_factory=dict)
    strict: Mapping[str, Any] = field(default_factory=dict)
    restate: str = ""
    restated: bool = False
    stated: Mapping[str, tuple[Statement, ...]] = field(default_factory=dict)

    @classmethod
    def unscored(cls, names: Iterable[str], reason: str) -> Reading:
        """Every field unscored for one reason."""
        keys = list(names)
        return cls(dict.fromkeys(keys), dict.fromkeys(keys, reason))

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
    def reask(self) -> bool:
        """Whether asking the same prompt again is the remedy (cut off, empty, refused)."""
        return not self.complete and any(r in REASK for r in self.reasons.values())

    def to_dict(self) -> dict[str, Any]:
        """``{"values", "reasons"}`` plus ``restate`` or ``restated`` when they apply."""
        out = {"values": {k: _plain(v) for k, v in self.values.items()}, "reasons": self.reasons}
        extra = {"restate": self.restate, "restated": self.restated}
        return {**out, **{k: v for k, v in extra.items() if v}}


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


@dataclass(frozen=True)
class Restatement:
    """The follow-up turn: its fixed message, its object's JSON schema, its strict reader."""

    message: str
    schema: Mapping[str, Any]
    read: Callable[[str], Reading]


class Grammar(Protocol):
    """A family's asked format: its fields, its strict reader and its restatement."""

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields every reading of this grammar has."""

    @property
    def restatement(self) -> Restatement | None:
        """The restatement turn (None: the family asks again instead)."""

    def read(self, reply: Reply) -> Reading:
        """The reading of one reply."""


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
    """``text`` without the evaluated lines (12+ characters, a digit) it repeats verbatim."""
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
    r"""``text`` with ``>`` lines, non-JSON fences and quoted values blanked (same length)."""
    out = text
    for match in _FENCE.finditer(text) if code else ():
        if not isinstance(_parse_json(match.group(2)), (dict, list)):
            out = _blank(out, match.start(), match.end())
    for match in _BLOCK_QUOTE.finditer(out):
        out = _blank(out, match.start(), match.end())
    for match in _SPAN.finditer(out) if code else ():  # code=False: a list of texts
        body = next((g for g in match.groups() if g is not None), "")
        before = out[max(0, match.start() - 40) : match.start()]
        if _VALUE_LIKE.search(body) and not re.search(r"[:,\[{][ \t]*$", before):  # JSON
            out = _blank(out, match.start(), match.end())
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
    reasoned_out: bool = False,
) -> Reading:
    """Read one first reply: cut-off, empty and refused replies first, then the grammar.

    ``reasoned_out``: the usage says the limit went to hidden reasoning before any text
    (:attr:`elitr_bench.llm.cache.Completion.reasoned_out`); the reason then says so.
    """
    if finish_reason == "length":
        return Reading.unscored(grammar.fields, REASONED_OUT if reasoned_out else TRUNCATED)
    reply = Reply.of(raw or "", evaluated)
    if not reply.answer.strip():
        return Reading.unscored(grammar.fields, EMPTY)
    reading = grammar.read(reply)
    refused = _REFUSAL.match(reply.answer.strip()) and len(reply.answer) < 600
    if refused and not reading.n_scored and not reading.strict:
        return Reading.unscored(grammar.fields, REFUSED)
    return reading


def read_restatement(
    grammar: Grammar,
    first: Reading,
    raw: str | None,
    finish_reason: str | None = None,
    reasoned_out: bool = False,
) -> Reading:
    """Read the answer to a restatement strictly; it must agree with what the reply stated.

    A restated value must equal a value the first reply stated for that field (in the asked
    format or in a veto: ``first.stated``) whenever it stated one; otherwise the field stays
    unscored: "restatement disagrees with the reply (7 in the reply, 3 restated)".
    """
    assert grammar.restatement is not None
    names = grammar.fields
    if finish_reason == "length":
        return Reading.unscored(names, f"restatement {REASONED_OUT if reasoned_out else TRUNCATED}")
    answer = without_reasoning(raw or "")
    if not answer.strip():
        return Reading.unscored(names, f"restatement: {EMPTY}")
    second = grammar.restatement.read(answer)
    values, reasons = dict(second.values), dict(second.reasons)
    for name in names:
        said = first.stated.get(name, ())
        if values.get(name) is None and first.values.get(name) is not None:
            values[name] = first.values[name]  # read in the asked format, never vetoed
            reasons.pop(name, None)
        elif values.get(name) is None:
            reasons[name] = f"{first.reasons.get(name) or 'no value'}; then {reasons.get(name)}"
        elif said and not any(s.holds(values[name]) for s in said):
            before = " or ".join(dict.fromkeys(str(s) for s in said))
            reasons[name] = (
                f"restatement disagrees with the reply ({before} in the reply, "
                f"{said[0].show(values[name])} restated)"
            )
            values[name] = None
    return Reading(values, reasons, first.strict, first.restate, True, first.stated)


def shows_format(grammar: Grammar, text: str) -> bool:
    r"""Whether ``text`` (an answer, minutes) holds a value in the asked format (``\boxed{10}``)."""
    if not text or not text.strip():
        return False
    return bool(grammar.read(Reply(text, text, text)).strict)


# --- JSON -------------------------------------------------------------------------------
def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object; one that gives a key twice gets a key no format has (never read as one)."""
    keys = [k for k, _ in pairs]
    return {**dict(pairs), **({" duplicate keys": True} if len(set(keys)) < len(keys) else {})}


def _parse_json(body: str, repair: bool = True) -> Any:
    from json_repair import repair_json

    try:
        return json.loads(body, object_pairs_hook=_pairs)
    except ValueError:
        try:  # syntax only (trailing commas, single quotes): the meaning is checked strictly
            return repair_json(body, return_objects=True) or None if repair else None
        except Exception:  # the library failing is "no JSON", not a crash
            return None


def json_values(text: str) -> list[Any]:
    """Every JSON object or list in a reply, in order (fenced: syntax repaired; bare: valid)."""
    found: list[tuple[int, Any]] = []
    covered: list[tuple[int, int]] = []
    for match in _FENCE.finditer(text):
        value = _parse_json(match.group(2))
        covered.append((match.start(), match.end()))
        if isinstance(value, (dict, list)) and value != []:
            found.append((match.start(), value))
    decoder = json.JSONDecoder(object_pairs_hook=_pairs)
    pos = 0
    while (
        start := min((i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0), default=-1)
    ) >= 0:
        inside = next((e for s, e in covered if s <= start < e), None)
        try:
            value, end = (None, inside) if inside is not None else decoder.raw_decode(text, start)
        except ValueError:
            value, end = None, start + 1
        looks = "{" in text[start:end] or '"' in text[start:end]  # not "[1]", "[PERSON4]"
        if isinstance(value, (dict, list)) and value not in ([], {}) and looks:
            found.append((start, value))
        pos = end
    return [value for _, value in sorted(found, key=lambda pair: pair[0])]


def one_object(answer: str) -> tuple[dict[str, Any] | None, str]:
    """The restatement's one strict JSON object (fenced or not, no digit outside), or why not."""
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
NUMBER = r"\d+(?:\.\d+)?|" + "|".join(_WORD)
"""A number in digits or words (zero to ten); :func:`number` gives its value."""
_MENTION = re.compile(
    rf"(?<![\w.\[/:$€£])(?P<a>{NUMBER})(?:[ \t]*(?:-|–|to)[ \t]*(?P<b>{NUMBER}))?(?P<pct>[ \t]*%)?"
    r"(?P<den>[ \t]*(?:/|out[ \t]+of)[ \t]*(?P<top>\d+(?:\.\d+)?|ten|five))?"
    r"(?![\w%]|[.,:]\d|-[A-Za-z])",
    re.I,
)
_SENTENCES = re.compile(r"(?<=[.!?;])[ \t]+|\n")
_ABBREVIATION = re.compile(r"\b(?:i\.e|e\.g|vs|cf|approx)\.", re.I)

SCORE_WORDS = (
    r"scor\w*|rat(?:e|es|ed|ing)|grad(?:e|es|ed|ing)|mark(?:s|ed)?|result|boxed|"
    r"deserv\w*|earn\w*|award\w*|merit\w*|giv(?:e|es|ing)|gave|final|verdict|settl\w*|"
    r"revis\w*|lower\w*|rais(?:e|es|ed|ing)|adjust\w*|downgrad\w*|upgrad\w*|bump\w*|"
    r"reconsider\w*|instead|reflection|thought|say|go(?:ing)? with|call it"
)
"""The score words: one just before a number ties it to a score (see :func:`vetoes`)."""
#: Words that may stand between a cue and its number ("I'd rate it a solid 7").
_FILLER = (
    r"it|it's|this|that|the|its|my|our|i|i'd|i'll|i'm|me|them|these|they|a|an|is|was|be|"
    r"would|will|should|could|can|of|at|to|as|with|go|going|say|call|put|give|gives|given|"
    r"get|gets|got|receives?|deserves?|earns?|merits?|lands?|sits?|stays?|remains?|comes?|"
    r"stands?|down|up|around|about|roughly|approximately|maybe|perhaps|probably|here|now|"
    r"still|then|therefore|thus|so|also|only|just|solid|strong|fair|firm|clear|generous|"
    r"low|high|full|perfect|final|overall|decent|good|weak|modest|reasonable|response|"
    r"answer|summary|minutes|output|on|like|more|really|closer|nearer|somewhere"
)
_SEP = r"[\s:=|*()\[\]{}\\\-–—>\"'`~,]"
#: After a number, the words that keep it a possible score; any other word makes it a
#: quantity ("2 hours", "three months", "3 pm", "two of the three points").
_LINK = re.compile(
    r"[ \t]*(?:(?:for|on|in|at|overall|and|or|but|because|as|since|here|which|so|with|too|"
    r"also|though|however|then|now|instead|rather|not|from|than|given|points?|pts|stars?|scale|rating|score|"
    r"grade|this|that|it|i|is|would|seems?|fits?)\b|[^\w \t]|$)",
    re.I,
)
#: Another field's label a few words before a number makes it that field's ("severity 7").
_FOREIGN = re.compile(
    r"(?<![A-Za-z])(?:severit(?:y|ies)|certaint(?:y|ies))(?:\W+\w+){0,3}\W*$", re.I
)
_ENUMERATOR = re.compile(r"^[\s>*#|]*$")  # "1. ..." / "2) ...": a list marker, no number


def number(token: str) -> float:
    """The value of a :data:`NUMBER`."""
    return float(_WORD[token.lower()]) if token.lower() in _WORD else float(token)


def _word(cue: str) -> str:
    """``cue`` as whole words ("rate" is no cue in "accurate", nor "mark" in "market")."""
    return rf"(?<![A-Za-z])(?:{cue})(?![A-Za-z])"


def _before(cue: str) -> re.Pattern[str]:
    """A cue, then at most five filler words, ending where the number starts."""
    return re.compile(rf"{_word(cue)}(?:{_SEP}*\b(?:{_FILLER})\b){{0,5}}{_SEP}*$", re.I)


def _after(cue: str) -> re.Pattern[str]:
    """After the number: "for"/"on"/"in" and the cue (two words before), or a dash and it."""
    words = r"(?:[ \t]+[a-z']+){0,2}"  # "6 seems fairer for adequacy"
    link = rf"{words}[ \t]+(?:for|on|in)(?:[ \t]+(?:the|its|my))?[ \t]+|[ \t]*[-–—:|][ \t]*"
    return re.compile(rf"^(?:{link}){_word(cue)}", re.I)


def vetoes(
    text: str, specs: Sequence[Field], labels: Mapping[str, str], generic: str
) -> dict[str, list[tuple[float, float, str]]]:
    r"""Every score statement outside the asked format, per field: ``(low, high, as written)``.

    A number is a score statement only where a cue ties it to a score:

    * just before it (at most five filler words between, "I'd rate it a solid 7"): a score
      word (``generic``, e.g. :data:`SCORE_WORDS`: score, rate, grade, give, final, a
      revision, ``\boxed{``, ``[RESULT]``) or the field's label ("adequacy would be 6",
      "| Relevance | 7 |");
    * just after it: the field's label or "rating"/"score"/"grade" ("7 for adequacy",
      "7 - Adequacy", "a 7 rating");
    * a scale after it, "/H" or "out of H" where H is the field's top ("7/10", "4 out of 10");
    * an article just before it ("I'd give it a 7.", "a 4 at first glance").

    A label ties the number to its field; another cue to the fields the sentence names, or
    to every field. Never a statement (content numbers):

    * a number followed by another word: a count, an amount, a duration ("2 hours", "three
      months", "3 pm", "two of the three points");
    * a time or a compound ("2:30", "the 2-hour"), a percentage, a list marker, "one" or
      "zero" without a scale;
    * another field's value: a severity or a certainty a few words before it;
    * for one field, a number off its scale ("7" for MESA's 0-5 rating).

    A tied number written on another scale ("adequacy 4/5", "rate on a 1-5 scale", on 0-10)
    gives ``nan``: it never agrees. A range gives its ends ("Score 7-8" agrees with 8).
    """
    out: dict[str, list[tuple[float, float, str]]] = {s.name: [] for s in specs}
    text = _ABBREVIATION.sub(lambda m: m.group(0).replace(".", " "), text)
    before = {s.name: _before(labels[s.name]) for s in specs}
    after = {s.name: _after(labels[s.name]) for s in specs}
    before_any = _before(generic)
    after_any = re.compile(r"^[ \t]+(?:rating|score|grade)\b", re.I)
    for sentence in _SENTENCES.split(text):
        for m in _MENTION.finditer(sentence):
            head, tail = sentence[max(0, m.start() - 120) : m.start()], sentence[m.end() :]
            word_only = m.group("a").lower() in ("zero", "one") and not m.group("den")
            marker = _ENUMERATOR.match(head) and re.match(r"[.)][ \t]", tail)
            if m.group("pct") or word_only or marker or not _LINK.match(tail):
                continue  # a percentage, a list marker, a quantity ("2 hours")
            if _FOREIGN.search(head):
                continue  # another field's value (MESA's severities and certainties)
            top = number(m.group("top")) if m.group("top") else None
            labelled = [
                s for s in specs if before[s.name].search(head) or after[s.name].match(tail)
            ]
            worded = bool(before_any.search(head)) or bool(after_any.match(tail))
            article = re.search(r"\ban?[ \t]+$", head, re.I)
            named = [s for s in specs if re.search(_word(labels[s.name]), sentence, re.I)]
            tied = labelled or (named or list(specs) if worded or article else [])
            scaled = [s for s in named or specs if top is not None and top == s.high]
            low = number(m.group("a"))
            high = number(m.group("b")) if m.group("b") else low
            for spec in tied or scaled:
                scale = m.group("b") and low in (0, 1) and high not in (low, spec.high)  # "1-5"
                if scale or (top is not None and top != spec.high):
                    out[spec.name].append((math.nan, math.nan, m.group(0).strip()))
                elif spec.low <= low <= high <= spec.high:
                    out[spec.name].append((low, high, m.group(0).strip()))
    return out


@dataclass(frozen=True)
class NumericGrammar:
    """Numeric fields (``specs``, also the restatement's keys) read from the asked format.

    ``find`` gives the strict statements; ``labels`` (per field) and ``generic`` say which
    sentences may veto; ``shape`` and ``what`` name the format and the values in messages.
    """

    specs: tuple[Field, ...]
    find: Callable[[str], list[Stated]]
    labels: Mapping[str, str]
    generic: str
    shape: str
    what: str

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
        said: dict[str, tuple[Statement, ...]] = {}
        for spec in self.specs:
            mine = [s.value for s in stated if s.field == spec.name]
            spans = [(v, v) for v in mine if not spec.problem(v)]
            spans += [(lo, hi) for lo, hi, _ in others[spec.name] if not math.isnan(lo)]
            said[spec.name] = tuple(Span(lo, hi) for lo, hi in dict.fromkeys(spans))
            problem = spec.problem(mine[0]) if len(mine) == 1 else ""
            if not mine:
                problem = f"no {spec.name} in the asked format"
            elif len(mine) > 1:
                shown = " and ".join(f"{v:g}" for v in mine)
                problem = f"{spec.name} given {len(mine)} times in the asked format ({shown})"
            elif not problem:  # one value, on the scale
                value = int(mine[0]) if spec.integer else mine[0]
                strict[spec.name] = value
                against = [w for lo, hi, w in others[spec.name] if not lo <= value <= hi]
                if against:
                    problem = f"conflicting {spec.name}: {value:g}, also {', '.join(against)}"
            values[spec.name] = None if problem else strict.get(spec.name)
            if problem:
                reasons[spec.name] = problem
        restate = "; ".join(dict.fromkeys(reasons.values()))
        restate = restate and f"{restate} ({self.shape})"
        return Reading(values, reasons, strict, restate, stated=said)

    @property
    def restatement(self) -> Restatement:
        """One JSON object with exactly the field names as keys, every value on its scale."""
        scales = ", ".join(
            f'"{s.name}" ({"an integer" if s.integer else "a number"} from {s.low:g} to {s.high:g})'
            for s in self.specs
        )
        message = (
            f"Restate your final {self.what} only, as one JSON object with exactly "
            f"{'the key' if len(self.specs) == 1 else 'these keys'}: {scales}. Write nothing else."
        )
        kind = {True: "integer", False: "number"}
        schema = object_schema(
            {
                s.name: {"type": kind[s.integer], "minimum": s.low, "maximum": s.high}
                for s in self.specs
            }
        )
        return Restatement(message, schema, self._restated)

    def _restated(self, answer: str) -> Reading:
        obj, why = one_object(answer)
        if obj is not None and set(obj) != set(self.fields):
            why = f"restatement keys are {sorted(obj)}, not {sorted(self.fields)}"
        if obj is None or why:
            return Reading.unscored(self.fields, why)
        values: dict[str, Any] = {}
        reasons: dict[str, str] = {}
        for spec in self.specs:
            raw = obj[spec.name]
            number = isinstance(raw, (int, float)) and not isinstance(raw, bool)
            problem = spec.problem(float(raw)) if number else f"{spec.name}={raw!r} is not a number"
            values[spec.name] = None if problem else (int(raw) if spec.integer else float(raw))
            if problem:
                reasons[spec.name] = f"restatement: {problem}"
        return Reading(values, reasons)


def object_schema(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON schema of one object with exactly ``properties`` (OpenAI's strict mode)."""
    shape = {"type": "object", "properties": dict(properties), "required": list(properties)}
    return {**shape, "additionalProperties": False}
