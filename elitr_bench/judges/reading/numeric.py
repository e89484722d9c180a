r"""Numeric fields: the asked format, the statements beside it, and the restatement.

Per field, the reply's statements are its values in the asked format and the score
statements of :mod:`.vetoes`. One value (ranges that hold it add nothing) is read when it is
in the asked format, or restated when it is not; two values make the field final (never
restated); a value on another scale counts only through a conversion the same sentence
states.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from elitr_bench.judges.reading import cues
from elitr_bench.judges.reading.json_text import object_schema, one_object
from elitr_bench.judges.reading.numeric_field import Field
from elitr_bench.judges.reading.policy import Reading, Restatement, Statement, two_values
from elitr_bench.judges.reading.reply import Reply, blank, echoed, repeated
from elitr_bench.judges.reading.vetoes import (
    Mention,
    declared_scales,
    vetoes,
    whole_word,
)

SCORE_WORDS = f"{cues.SCORE}|{cues.REVISION}|{cues.HEDGE}"
"""Every generic cue before a number: score words, revisions and hedges (:mod:`.cues`)."""


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
class Stated:
    """One value written in the asked format, and where (``start``, ``end`` in the text)."""

    field: str
    value: float
    start: int
    end: int


def field_outcome(
    spec: Field, mine: Sequence[float], scale: float | None, others: Sequence[Mention]
) -> tuple[Any, str, bool, tuple[Statement, ...]]:
    """One field's ``(value, reason, final, statements)`` from what the reply stated.

    ``mine``: the values in the asked format; ``scale``: the scale the reply put them on
    (None: the field's); ``others``: the score statements outside it.
    """
    loose = [m for m in others if not m.specific]
    others = [m for m in others if m.specific]
    converted = {m.sentence for m in others if not m.off_scale(spec)}
    off = [m for m in others if m.off_scale(spec) and m.sentence not in converted]
    fine = [m for m in others if not m.off_scale(spec)]
    valid = [v for v in dict.fromkeys(mine) if not spec.problem(v)]
    said = tuple(Span(v, v) for v in valid) + tuple(
        dict.fromkeys(Span(m.low, m.high) for m in fine)
    )
    if scale is not None and scale != spec.high:
        why = f"the judge gave {spec.name} on a scale to {scale:g}, not {spec.low:g}-{spec.high:g}"
        return None, why, True, said
    if off:
        shown = [f"{v:g}" for v in valid] + [m.written for m in fine + off]
        return None, f"{two_values(spec.name, shown)} (another scale)", True, said
    points = list(dict.fromkeys(valid))
    if len(points) > 1:
        return None, two_values(spec.name, [f"{v:g}" for v in points]), True, said
    if points:  # one value in the asked format: a range holding it adds nothing
        value = points[0]
        against = [m.written for m in fine if not m.low <= value <= m.high]
        if against:
            return None, two_values(spec.name, [f"{value:g}", *against]), True, said
        if len(mine) > 1:
            why = f"{spec.name} given {len(mine)} times in the asked format ({value:g})"
            return None, why, False, said
        vetoed = [m.written for m in loose if not m.low <= value <= m.high or m.off_scale(spec)]
        if vetoed:  # a bare statement the reply ties to no field in particular
            return (
                None,
                f"conflicting {spec.name}: {value:g}, also {', '.join(vetoed)}",
                False,
                said,
            )
        return (int(value) if spec.integer else value), "", False, said
    stated = list(dict.fromkeys((m.low, m.high) for m in fine))
    if len(stated) > 1 or any(lo != hi for lo, hi in stated):
        shown = list(dict.fromkeys(m.written for m in fine))
        return None, two_values(spec.name, shown), True, said
    problem = spec.problem(mine[0]) if mine else f"no {spec.name} in the asked format"
    return None, problem, False, said


@dataclass(frozen=True)
class NumericGrammar:
    """Numeric fields (``specs``, also the restatement's keys) read from the asked format.

    ``find`` gives the strict statements; ``labels`` (per field) and ``generic`` say which
    sentences may veto; ``shape`` and ``what`` name the format and the values in messages;
    ``given`` is the prompt's own text (its template and rubric), whose number phrases a
    reply repeats without stating anything.
    """

    specs: tuple[Field, ...]
    find: Callable[[str], list[Stated]]
    labels: Mapping[str, str]
    generic: str
    shape: str
    what: str
    given: tuple[str, ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        """The field names."""
        return tuple(s.name for s in self.specs)

    def read(self, reply: Reply) -> Reading:
        """Each field's one value in the asked format, or why not (see :func:`field_outcome`)."""
        stated = self.find(reply.text)
        context = echoed(repeated(reply.text, self.given), self.given)
        rest = context
        for s in stated:
            rest = blank(rest, s.start, s.end)
        others = vetoes(rest, self.specs, self.labels, self.generic, context)
        values: dict[str, Any] = {}
        reasons: dict[str, str] = {}
        strict: dict[str, Any] = {}
        said: dict[str, tuple[Statement, ...]] = {}
        final: set[str] = set()
        declared = declared_scales(reply.text)
        for spec in self.specs:
            mine = [s for s in stated if s.field == spec.name]
            named = [
                top
                for top, sentence in declared
                if re.search(whole_word(self.labels[spec.name]), sentence, re.I)
            ]
            if not named and not any(
                re.search(whole_word(self.labels[o.name]), sentence, re.I)
                for _, sentence in declared
                for o in self.specs
            ):
                named = [top for top, _ in declared]
            tops = [t for t in named if t != spec.high]
            scale = tops[0] if tops and mine else None
            numbers = [s.value for s in mine]
            if len(numbers) == 1 and not spec.problem(numbers[0]):
                strict[spec.name] = int(numbers[0]) if spec.integer else numbers[0]
            value, why, closed, said[spec.name] = field_outcome(
                spec, numbers, scale, others[spec.name]
            )
            values[spec.name] = value
            if why:
                reasons[spec.name] = why
            if closed:
                final.add(spec.name)
        open_reasons = [r for k, r in reasons.items() if k not in final]
        restate = "; ".join(dict.fromkeys(open_reasons))
        restate = restate and f"{restate} ({self.shape})"
        return Reading(values, reasons, strict, restate, stated=said, final=frozenset(final))

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
            is_number = isinstance(raw, (int, float)) and not isinstance(raw, bool)
            problem = (
                spec.problem(float(raw)) if is_number else f"{spec.name}={raw!r} is not a number"
            )
            values[spec.name] = None if problem else (int(raw) if spec.integer else float(raw))
            if problem:
                reasons[spec.name] = f"restatement: {problem}"
        if reasons:  # one value off its scale: the object is not the one asked for
            other = "; ".join(reasons.values())
            return Reading(dict.fromkeys(self.fields), {k: reasons.get(k, other) for k in values})
        return Reading(values, reasons)
