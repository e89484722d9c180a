"""Reading CREAM's two replies in the formats App. A.2 shows (docs/judge-replies.md).

Extraction: one list of top-level items (the prompt shows ``*`` bullets); sub-items, group
headings, two lists or echoed example facts are restated as ``{"key_facts": [...]}``.
Alignment: one JSON list of ``key fact`` / ``response`` / ``line number`` objects, one per
key fact; prose that counts otherwise vetoes it; else restated as ``{"alignment": [...]}``.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elitr_bench.judges.cream.prompts import EXAMPLE_KEY_FACTS
from elitr_bench.judges.reading import (
    NUMBER,
    Reading,
    Reply,
    Restatement,
    Statement,
    json_values,
    number,
    object_schema,
    one_object,
    read_reply,
    two_values,
    unquote,
    without_reasoning,
)

_ITEM = re.compile(
    r"^(?P<indent>[ \t]*)(?:[-*+\u2022]|\d{1,3}(?:(?P<sub>(?:\.\d{1,3})+)\.?|[.)]))"
    r"[ \t]+(?P<text>\S.*)$"
)
_EXAMPLES = {re.sub(r"\W+", " ", f).strip().lower() for f in EXAMPLE_KEY_FACTS}


class CreamParseError(ValueError):
    """A reply not in the asked format; the message is the recorded reason (internal)."""


@dataclass(frozen=True)
class Alignment:
    """One key fact aligned to one summary: "Yes"/"No", the units cited, the fact as named."""

    key_fact: str
    supported: bool
    lines: tuple[int, ...]
    judge_key_fact: str = ""


def _key(text: str) -> str:
    return re.sub(r"\W+", " ", text).strip().lower()


def _clean(item: str) -> str:
    text = re.sub(r"\*\*|__|`", "", item.strip()).strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def _list_items(text: str) -> list[str]:
    """The top-level items of the reply's one list (see the module docstring)."""
    items: list[str] = []
    state = "before"
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _ITEM.match(line)
        indent = len(match.group("indent").expandtabs(4)) if match is not None else 0
        if match is not None and (match.group("sub") or indent >= 2):
            raise CreamParseError("extraction reply nests items under its key facts")
        if match is not None:
            if state == "after":
                raise CreamParseError("extraction reply holds more than one list")
            body = match.group("text").strip()
            label = body.rstrip("*_ ").endswith(":") and len(body.split()) <= 4  # "- Decisions:"
            if label or re.fullmatch(r"(\*\*|__)[^.]+\1", body):
                raise CreamParseError(f"extraction reply groups its facts under {body!r}")
            items.append(_clean(body))
            state = "in"
        elif state == "in" and line[:1] in " \t":
            items[-1] += " " + line.strip()  # a fact wrapped onto an indented line
        elif state == "in":
            state = "after"
    return items


def _facts(items: Sequence[Any], where: str) -> tuple[str, ...]:
    unique: list[str] = []
    for fact in items:
        if fact and fact not in unique:
            unique.append(fact)
    if not unique:
        raise CreamParseError(f"{where} holds no list of key facts")
    if any(_key(f) in _EXAMPLES or "kevin carr" in f.lower() for f in unique):
        raise CreamParseError(f"{where} repeats the prompt's example key facts (Kevin Carr)")
    return tuple(unique)


def _restated_facts(answer: str) -> Reading:
    obj, why = one_object(answer)
    facts = obj.get("key_facts") if obj is not None and set(obj) == {"key_facts"} else None
    if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
        why = why or 'restatement is not {"key_facts": [strings]}'
        return Reading({"key_facts": None}, {"key_facts": why})
    try:
        return Reading({"key_facts": _facts([f.strip() for f in facts], "restatement")})
    except CreamParseError as exc:
        return Reading({"key_facts": None}, {"key_facts": str(exc)})


@dataclass(frozen=True)
class KeyFactsGrammar:
    """The extraction reply (App. A.2, step 1): field ``key_facts``, a tuple of strings."""

    fields: tuple[str, ...] = ("key_facts",)

    def read(self, reply: Reply) -> Reading:
        """The key facts of the one list, in order, without duplicates; or why not."""
        try:
            text = unquote(without_reasoning(reply.raw), code=False)  # facts may copy lines
            facts = _facts(_list_items(text), "extraction reply")
        except CreamParseError as exc:
            return Reading({"key_facts": None}, {"key_facts": str(exc)}, restate=str(exc))
        return Reading({"key_facts": facts}, strict={"key_facts": facts})

    @property
    def restatement(self) -> Restatement:
        """``{"key_facts": [...]}``."""
        schema = object_schema({"key_facts": {"type": "array", "items": {"type": "string"}}})
        message = (
            "Restate your final key facts only, as one JSON object with exactly the key "
            '"key_facts" (a list of strings, one key fact each). Write nothing else.'
        )
        return Restatement(message, schema, _restated_facts)


KEY_FACTS = KeyFactsGrammar()


_KEYS = {"key fact", "response", "line number"}


def _lines(value: Any, n_units: int, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or any(type(i) is not int for i in value):
        raise CreamParseError(f"{where}: line number {value!r} is not a list of integers")
    if outside := [i for i in value if not 1 <= i <= n_units]:
        raise CreamParseError(
            f"{where}: line {outside[0]} is outside the summary (lines 1-{n_units})"
        )
    return tuple(dict.fromkeys(value))


def _match(named: Sequence[str], key_facts: Sequence[str]) -> list[int]:
    """For each entry's fact text, the index of the one key fact it names."""
    keys = [_key(f) for f in key_facts]
    out: list[int] = []
    for i, text in enumerate(named, start=1):
        if keys.count(_key(text)) == 1:
            out.append(keys.index(_key(text)))
            continue
        ratios = [difflib.SequenceMatcher(None, _key(text), k).ratio() for k in keys]
        best = max(range(len(keys)), key=ratios.__getitem__)
        if ratios[best] < 0.8 or sum(r >= ratios[best] - 0.05 for r in ratios) > 1:
            raise CreamParseError(f"alignment entry {i} names no key fact that was asked: {text!r}")
        out.append(best)
    if len(set(out)) < len(out):
        raise CreamParseError(
            "alignment answers a key fact more than once (and another not at all)"
        )
    return out


def alignments(entries: Any, key_facts: Sequence[str], n_units: int) -> tuple[Alignment, ...]:
    """The alignment of every key fact from the list of entries, or CreamParseError."""
    if not isinstance(entries, list) or len(entries) != len(key_facts):
        count = len(entries) if isinstance(entries, list) else 0
        raise CreamParseError(f"alignment answers {count} entries for {len(key_facts)} key facts")
    for i, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or set(entry) != _KEYS:
            raise CreamParseError(
                f'alignment entry {i} is not {{"key fact", "response", "line number"}}'
            )
    order = _match([str(e["key fact"]) for e in entries], key_facts)
    out: list[Alignment | None] = [None] * len(key_facts)
    for i, (entry, j) in enumerate(zip(entries, order, strict=True), start=1):
        word = str(entry["response"]).strip().rstrip(".").lower()
        if word not in ("yes", "no") or not isinstance(entry["response"], str):
            raise CreamParseError(
                f'alignment entry {i}: response {entry["response"]!r} is neither "Yes" nor "No"'
            )
        lines = _lines(entry["line number"], n_units, f"alignment entry {i}")
        out[j] = Alignment(
            key_facts[j], word == "yes", lines if word == "yes" else (), entry["key fact"]
        )
    return tuple(a for a in out if a is not None)


_COUNT = re.compile(
    rf"(?<![\w.])({NUMBER})\s+(?:out\s+)?of\s+(?:the\s+)?({NUMBER})\s+(?:key\s+)?facts?\b", re.I
)


def _shown(found: Any) -> str:
    """Alignments as "[Yes 1,3; No]": per key fact the answer and the lines, sorted."""
    if not isinstance(found, tuple) or not all(isinstance(a, Alignment) for a in found):
        return str(found)
    each = [
        f"Yes {','.join(map(str, sorted(a.lines)))}".strip() if a.supported else "No" for a in found
    ]
    return "[" + "; ".join(each) + "]"


@dataclass(frozen=True)
class StatedAlignments:
    """One JSON list of alignments a reply stated: a restatement must say the same."""

    found: tuple[Alignment, ...]

    def holds(self, value: Any) -> bool:
        """The same answer and the same lines for every key fact."""
        return _shown(value) == _shown(self.found)

    def show(self, value: Any) -> str:
        """``value`` as "[Yes 1,3; No]"."""
        return _shown(value)

    def __str__(self) -> str:
        return _shown(self.found)


@dataclass(frozen=True)
class StatedCount:
    """A count of supported key facts the reply wrote ("2 of the 3 key facts")."""

    yes: int
    written: str

    def holds(self, value: Any) -> bool:
        """As many Yes answers."""
        return isinstance(value, tuple) and sum(a.supported for a in value) == self.yes

    def show(self, value: Any) -> str:
        """``value`` as its number of Yes answers."""
        return f"{sum(a.supported for a in value)} Yes" if isinstance(value, tuple) else str(value)

    def __str__(self) -> str:
        return repr(self.written)


@dataclass(frozen=True)
class AlignmentGrammar:
    """The alignment reply (App. A.2, step 2): field ``alignments``, one per key fact."""

    key_facts: tuple[str, ...]
    n_units: int
    fields: tuple[str, ...] = ("alignments",)

    def read(self, reply: Reply) -> Reading:
        """Every key fact's alignment from the one JSON list, unless prose counts otherwise.

        A vetoed or unusable reply keeps what it stated (each usable list, each count of
        the key facts) so that its restatement must agree with it; one that states two
        answers (two lists, or a count its list does not give) is final: a restatement
        could only choose.
        """
        answers = [v for v in json_values(reply.text) if isinstance(v, list)]
        said: list[Statement] = []
        for answer in answers:
            with contextlib.suppress(CreamParseError):  # an unusable list states nothing
                said.append(StatedAlignments(alignments(answer, self.key_facts, self.n_units)))
        counts = [
            (m.group(0), int(number(m.group(1))))
            for m in _COUNT.finditer(reply.answer)
            if number(m.group(2)) == len(self.key_facts) and number(m.group(1)).is_integer()
        ]
        said += [StatedCount(yes, written) for written, yes in counts]
        stated = {"alignments": tuple(said)}
        lists = list(dict.fromkeys(str(s) for s in said if isinstance(s, StatedAlignments)))
        yeses = {s.yes for s in said if isinstance(s, StatedCount)}
        agreed = {
            sum(a.supported for a in s.found) for s in said if isinstance(s, StatedAlignments)
        }
        if len(lists) > 1 or len(yeses | agreed) > 1:  # two answers: a restatement would choose
            why = two_values("alignments", [*lists, *(repr(w) for w, _ in counts)])
            return Reading(
                {"alignments": None},
                {"alignments": why},
                stated=stated,
                final=frozenset({"alignments"}),
            )
        try:
            if len(answers) != 1:
                raise CreamParseError(f"alignment reply holds {len(answers)} JSON lists, not one")
            found = alignments(answers[0], self.key_facts, self.n_units)
            yes = sum(a.supported for a in found)
            for written, count in counts:
                if count != yes:
                    raise CreamParseError(
                        f"conflicting: the reply says {written!r}, its JSON {yes} Yes"
                    )
        except CreamParseError as exc:
            why = str(exc)
            return Reading({"alignments": None}, {"alignments": why}, restate=why, stated=stated)
        return Reading({"alignments": found}, strict={"alignments": found}, stated=stated)

    @property
    def restatement(self) -> Restatement:
        """``{"alignment": [{"key fact", "response", "line number"}, ...]}``."""
        entry = object_schema(
            {
                "key fact": {"type": "string"},
                "response": {"type": "string", "enum": ["Yes", "No"]},
                "line number": {"type": "array", "items": {"type": "integer"}},
            }
        )
        schema = object_schema({"alignment": {"type": "array", "items": entry}})
        message = (
            'Restate your final answer only, as one JSON object with exactly the key "alignment": '
            'the list of dictionaries with the keys "key fact", "response" ("Yes" or "No") and '
            '"line number" (a list of integers), one per key fact. Write nothing else.'
        )
        return Restatement(message, schema, self._restated)

    def _restated(self, answer: str) -> Reading:
        obj, why = one_object(answer)
        try:
            if obj is None or set(obj) != {"alignment"}:
                raise CreamParseError(why or 'restatement is not {"alignment": [...]}')
            return Reading(
                {"alignments": alignments(obj["alignment"], self.key_facts, self.n_units)}
            )
        except CreamParseError as exc:
            why = str(exc) if str(exc).startswith("restatement") else f"restatement: {exc}"
            return Reading({"alignments": None}, {"alignments": why})


def parse_alignment(
    text: str | None, key_facts: Sequence[str], n_units: int, finish_reason: str | None = None
) -> Reading:
    """Read an alignment reply against the key facts and the summary's unit count."""
    return read_reply(AlignmentGrammar(tuple(key_facts), n_units), text or "", finish_reason)
