"""Reading MESA's three step replies: the JSON the prompts spell out, strict meaning.

Steps 1 and 2 (Figs. 3-4) answer with one JSON list of instance objects; every field the
step's format asks for must be present with the right type and inside its range, or the
reply is rejected with a reason (and asked again), never coerced. JSON syntax slips
(single quotes, a trailing comma) are repaired, since the paper's own format lines show
single quotes. Numbers may come as numeric strings and ``error_exists`` as ``"true"``,
because Figs. 3-4 ask for "double quotes around all keys and values". Fig. 4 asks for a
severity in its text but not in its format line, so severity is optional.

Step 3 (Fig. 5) gives the type's score: one JSON object with ``"rating"`` (0-5) and
``"confidence"`` (0-10), each written once. Any other statement of a rating or a
confidence (a "Final rating: 2" line, a ``reasoning`` string that says "I rate this a
2") that differs vetoes it, and the reply is asked to restate both as JSON
(:mod:`elitr_bench.judges.reading`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from elitr_bench.judges.reading import (
    Field,
    NumericGrammar,
    Reading,
    Reply,
    Stated,
    json_values,
    read_reply,
)


@dataclass(frozen=True)
class Candidate:
    """A possible error instance from step 1 (Fig. 3)."""

    instance: str
    reasoning: str
    certainty: float

    def to_dict(self) -> dict[str, Any]:
        """As shown to step 2 and logged."""
        return {"instance": self.instance, "reasoning": self.reasoning, "certainty": self.certainty}


@dataclass(frozen=True)
class Verified:
    """A checked instance from step 2 (Fig. 4)."""

    instance: str
    reasoning: str
    certainty: float
    error_exists: bool
    severity: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """As shown to step 3 and logged (severity only when the judge gave one)."""
        out: dict[str, Any] = {
            "instance": self.instance,
            "reasoning": self.reasoning,
            "certainty": self.certainty,
            "error_exists": self.error_exists,
        }
        if self.severity is not None:
            out["severity"] = self.severity
        return out


@dataclass(frozen=True)
class TypeScore:
    """The step 3 verdict on one error type (Fig. 5)."""

    rating: float
    confidence: float
    reasoning: str


class _Invalid(Exception):
    """A field failed validation (message = reason)."""


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")


def _number(obj: Mapping[str, Any], key: str, low: float, high: float, where: str) -> float:
    if key not in obj:
        raise _Invalid(f"{where}: missing {key!r}")
    raw = obj[key]
    if isinstance(raw, bool):
        raise _Invalid(f"{where}: {key!r} is a boolean, expected a number in [{low:g}, {high:g}]")
    if isinstance(raw, str) and _NUMBER.match(raw.strip()):
        raw = float(raw.strip())
    if not isinstance(raw, int | float) or not math.isfinite(float(raw)):
        raise _Invalid(f"{where}: {key!r}={raw!r} is not a number")
    value = float(raw)
    if not low <= value <= high:
        raise _Invalid(f"{where}: {key!r}={value:g} is outside [{low:g}, {high:g}]")
    off = Field(key, low, high).problem(value)
    if off:  # 0.85 on 0-100: a 0-1 value, not one on the asked scale
        raise _Invalid(f"{where}: {off}")
    return value


def _text(obj: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    raw = obj.get(key)
    if raw is None:
        if required:
            raise _Invalid(f"{where}: missing {key!r}")
        return ""
    if not isinstance(raw, str):
        raise _Invalid(f"{where}: {key!r} must be a string, got {type(raw).__name__}")
    if required and not raw.strip():
        raise _Invalid(f"{where}: {key!r} is empty")
    return raw.strip()


def _boolean(obj: Mapping[str, Any], key: str, where: str) -> bool:
    if key not in obj:
        raise _Invalid(f"{where}: missing {key!r}")
    raw = obj[key]
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise _Invalid(f"{where}: {key!r}={raw!r} must be true or false")


def _as_list(value: Any) -> list[Any]:
    """The list of instances: a JSON list, or an object wrapping exactly one list."""
    if isinstance(value, list):
        return value
    if isinstance(value, Mapping):
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(value) == 1 and len(lists) == 1:
            return lists[0]
    raise _Invalid(f"expected a JSON list of instances, got {type(value).__name__}")


_EMPTY_LIST = re.compile(r"^\s*(?:```[a-zA-Z]*\s*)?\[\s*\](?:\s*```)?\s*$")


def _answer(text: str) -> Any:
    """The step's one JSON answer; two different ones are conflicting, none is no JSON."""
    values = json_values(text)
    if not values:
        if _EMPTY_LIST.match(text):
            return []
        raise _Invalid("no JSON in the reply")
    distinct = {json.dumps(v, sort_keys=True, default=str) for v in values}
    if len(distinct) > 1:
        raise _Invalid(f"conflicting answers: {len(distinct)} different JSON values in one reply")
    return values[0]


def _instances(text: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The reply's instance objects in order, each with its position for error messages.

    Lazy, so a reply's first problem is the one reported (steps 1 and 2 share this).
    """
    for i, obj in enumerate(_as_list(_answer(text))):
        where = f"instance {i + 1}"
        if not isinstance(obj, Mapping):
            raise _Invalid(f"{where}: expected an object, got {type(obj).__name__}")
        yield where, obj


@dataclass(frozen=True)
class _ListStep:
    """Steps 1 and 2: the reply is one JSON list of instance objects (field ``instances``)."""

    step: str
    build: Callable[[str, Mapping[str, Any]], Any]
    fields: tuple[str, ...] = ("instances",)
    restatement: None = None  # a list of instances: an unusable one is asked again

    def read(self, reply: Reply) -> Reading:
        try:
            out = tuple(self.build(where, obj) for where, obj in _instances(reply.text))
        except _Invalid as exc:
            return Reading({"instances": None}, {"instances": f"{self.step} reply: {exc}"})
        return Reading({"instances": out})


def _candidate(where: str, obj: Mapping[str, Any]) -> Candidate:
    return Candidate(
        instance=_text(obj, "instance", where),
        reasoning=_text(obj, "reasoning", where),
        certainty=_number(obj, "certainty", 0, 100, where),
    )


def _verified(where: str, obj: Mapping[str, Any]) -> Verified:
    severity = _number(obj, "severity", 0, 10, where) if obj.get("severity") is not None else None
    return Verified(
        instance=_text(obj, "instance", where),
        reasoning=_text(obj, "reasoning", where),
        certainty=_number(obj, "certainty", 0, 100, where),
        error_exists=_boolean(obj, "error_exists", where),
        severity=severity,
    )


IDENTIFICATION = _ListStep("identification", _candidate)
"""Step 1 (Fig. 3): ``[{instance, reasoning, certainty 0-100}, ...]``."""
VERIFICATION = _ListStep("verification", _verified)
"""Step 2 (Fig. 4): instances with ``error_exists``, certainty and an optional severity."""

RATING = Field("rating", 0, 5)
CONFIDENCE = Field("confidence", 0, 10)
_PAIR = re.compile(
    r'"(rating|confidence)"[ \t]*:[ \t]*"?[ \t]*(-?\d+(?:\.\d+)?)[ \t]*"?(?=[ \t\n]*[,}])'
)


def _stated(text: str) -> list[Stated]:
    """``"rating": N`` and ``"confidence": N`` pairs, when the reply holds JSON at all."""
    if not json_values(text):
        return []
    return [Stated(m.group(1), float(m.group(2)), m.start(), m.end()) for m in _PAIR.finditer(text)]


SCORING = NumericGrammar(
    (RATING, CONFIDENCE),
    _stated,
    {"rating": r"rat(?:e|ed|ing)\b|rating|scor", "confidence": r"confiden"},
    r"out\s+of|\d\s*/\s*\d",
    'one JSON object with "rating" and "confidence"',
    "rating and confidence",
)
"""Step 3 (Fig. 5): ``rating`` 0-5 and ``confidence`` 0-10, restated as JSON if need be."""


def scoring_reasoning(text: str) -> str:
    """The ``reasoning`` the judge gave with its step 3 answer ("" if none)."""
    for obj in json_values(text):
        value = obj.get("reasoning") if isinstance(obj, Mapping) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def parse_identification(text: str, finish_reason: str | None = None) -> Reading:
    """Read a step 1 reply (field ``instances``: a tuple of :class:`Candidate`)."""
    return read_reply(IDENTIFICATION, text, finish_reason)


def parse_verification(text: str, finish_reason: str | None = None) -> Reading:
    """Read a step 2 reply (field ``instances``: a tuple of :class:`Verified`)."""
    return read_reply(VERIFICATION, text, finish_reason)


def parse_scoring(text: str, finish_reason: str | None = None) -> Reading:
    """Read a step 3 reply (fields ``rating`` 0-5 and ``confidence`` 0-10)."""
    return read_reply(SCORING, text, finish_reason)


def type_score(reading: Reading, text: str) -> TypeScore | None:
    """The step 3 verdict of a complete reading, with the judge's reasoning."""
    if not reading.complete:
        return None
    return TypeScore(
        rating=float(reading.value("rating")),
        confidence=float(reading.value("confidence")),
        reasoning=scoring_reasoning(text),
    )
