"""The reading policy: what a reading holds, and how a restatement may change it.

**A restatement confirms what the reply stated or fills what it left out; it never
chooses.** A field's restated value is taken only where the first reply stated no value
for it, or exactly one (a range holding the asked-format value is not a second one) and
the restatement equals it. A field the reply stated two values for is *final*: unscored
with both named, and no restatement is asked for it (it could only pick one).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from elitr_bench.judges.reading import reply as prepared
from elitr_bench.judges.reading.reply import Reply, without_reasoning


class Statement(Protocol):
    """A value a reply stated for a field, in the asked format or in a veto."""

    def holds(self, value: Any) -> bool:
        """Whether a restated ``value`` agrees with this statement."""

    def show(self, value: Any) -> str:
        """``value`` (a restated one) written the way this statement is written."""


@dataclass(frozen=True)
class Reading:
    """What one reply says: per field a value or None (``reasons`` says why).

    ``strict`` holds the values stated in the asked format, vetoed or not; ``stated`` what
    the reply stated per field, in the asked format or in a veto (a restatement must agree
    with all of it); ``final`` the fields no restatement may change (the reply stated two
    values for them); ``restate`` says why a restatement is asked ("" for none);
    ``restated``: the values come from a restatement.
    """

    values: Mapping[str, Any]
    reasons: Mapping[str, str] = field(default_factory=dict)
    strict: Mapping[str, Any] = field(default_factory=dict)
    restate: str = ""
    restated: bool = False
    stated: Mapping[str, tuple[Statement, ...]] = field(default_factory=dict)
    final: frozenset[str] = frozenset()

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
        return not self.complete and any(r in prepared.REASK for r in self.reasons.values())

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


def two_values(name: str, shown: Sequence[str]) -> str:
    """The reason of a field the reply stated several values for ("the judge gave 7 and 6")."""
    return f"the judge gave {' and '.join(dict.fromkeys(shown))} for {name}"


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
        why = prepared.REASONED_OUT if reasoned_out else prepared.TRUNCATED
        return Reading.unscored(grammar.fields, why)
    reply = Reply.of(raw or "", evaluated)
    if not reply.answer.strip():
        return Reading.unscored(grammar.fields, prepared.EMPTY)
    reading = grammar.read(reply)
    refused = _REFUSAL.match(reply.answer.strip()) and len(reply.answer) < 600
    if refused and not reading.n_scored and not reading.strict:
        return Reading.unscored(grammar.fields, prepared.REFUSED)
    return reading


def read_restatement(
    grammar: Grammar,
    first: Reading,
    raw: str | None,
    finish_reason: str | None = None,
    reasoned_out: bool = False,
) -> Reading:
    """Read the answer to a restatement strictly; it confirms or fills, never chooses.

    A field the first reply stated nothing for takes the restated value; one it stated a
    value for takes it only when the restatement agrees with everything stated
    ("restatement disagrees with the reply (7 in the reply, 3 restated)"); a final field
    (two values stated) keeps its reason whatever is restated.
    """
    assert grammar.restatement is not None
    names = grammar.fields
    if finish_reason == "length":
        why = f"restatement {prepared.REASONED_OUT if reasoned_out else prepared.TRUNCATED}"
        return _kept(first, why)
    answer = without_reasoning(raw or "")
    if not answer.strip():
        return _kept(first, f"restatement: {prepared.EMPTY}")
    second = grammar.restatement.read(answer)
    values, reasons = dict(second.values), dict(second.reasons)
    for name in names:
        said = first.stated.get(name, ())
        if name in first.final:
            values[name], reasons[name] = None, first.reasons.get(name, "")
        elif values.get(name) is None and first.values.get(name) is not None:
            values[name] = first.values[name]  # read in the asked format, never vetoed
            reasons.pop(name, None)
        elif values.get(name) is None:
            reasons[name] = f"{first.reasons.get(name) or 'no value'}; then {reasons.get(name)}"
        elif not all(s.holds(values[name]) for s in said):
            before = " or ".join(dict.fromkeys(str(s) for s in said))
            reasons[name] = (
                f"restatement disagrees with the reply ({before} in the reply, "
                f"{said[0].show(values[name])} restated)"
            )
            values[name] = None
    return Reading(values, reasons, first.strict, first.restate, True, first.stated, first.final)


def _kept(first: Reading, why: str) -> Reading:
    """The first reading, its open fields unscored because the restatement gave nothing."""
    reasons = {
        k: f"{first.reasons.get(k) or 'no value'}; then {why}"
        for k, v in first.values.items()
        if v is None
    }
    return replace(first, reasons=reasons, restated=True)


def not_answered(first: Reading, why: str) -> Reading:
    """The first reading kept when the restatement turn failed: ``restatement not answered``.

    The reply was received and cached; a failing follow-up never costs what it stated.
    """
    reasons = {
        k: f"{first.reasons.get(k) or 'no value'}; restatement not answered: {why}"
        for k, v in first.values.items()
        if v is None
    }
    return replace(first, reasons=reasons)


def explained(reading: Reading, attempts: int) -> Reading:
    """The reading with a reason for every field left without a value.

    The grammars say why a field is unscored; this is the net under them, so that no
    item ends unscored with an empty reason, whatever the reply.
    """
    silent = [k for k, v in reading.values.items() if v is None and not reading.reasons.get(k)]
    if not silent:
        return reading
    times = f"{attempts} completion{'s' if attempts != 1 else ''}"
    why = {k: f"no {k} read from the judge's {times}" for k in silent}
    return replace(reading, reasons={**reading.reasons, **why})


def shows_format(grammar: Grammar, text: str) -> bool:
    r"""Whether ``text`` (an answer, minutes) holds a value in the asked format (``\boxed{10}``)."""
    if not text or not text.strip():
        return False
    return bool(grammar.read(Reply(text, text, text)).strict)
