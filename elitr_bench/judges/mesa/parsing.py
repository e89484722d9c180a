"""Reading MESA's three step replies: the JSON the prompts spell out (docs/judge-replies.md).

Steps 1-2 (Figs. 3-4): one JSON list of instance objects, every field present, typed and on
its range (numbers may be numeric strings and ``error_exists`` ``"true"``: the figures ask
for "double quotes around all keys and values"; severity is optional, as in Fig. 4's
format line). Step 3 (Fig. 5): one object with ``"rating"`` 0-5 and ``"confidence"`` 0-10;
any other statement of either that differs vetoes it, and the reply is restated as JSON.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from elitr_bench.judges.mesa import prompts
from elitr_bench.judges.reading import (
    SCORE_WORDS,
    Field,
    NumericGrammar,
    Reading,
    Reply,
    Stated,
    json_values,
)


@dataclass(frozen=True)
class Candidate:
    """A possible error instance from step 1 (Fig. 3)."""

    instance: str
    reasoning: str
    certainty: float

    def to_dict(self) -> dict[str, Any]:
        """As shown to step 2 and logged."""
        return asdict(self)


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
        return {k: v for k, v in asdict(self).items() if k != "severity" or v is not None}


@dataclass(frozen=True)
class TypeScore:
    """The step 3 verdict on one error type (Fig. 5)."""

    rating: float
    confidence: float
    reasoning: str


class _Invalid(Exception):
    """A field failed validation (message = reason)."""


def _value(obj: Mapping[str, Any], key: str, kind: str | tuple[float, float], where: str) -> Any:
    """``obj[key]`` as a string, a boolean (``"true"`` too) or a number on ``kind``'s range."""
    raw = obj.get(key)
    if raw is None or raw == "":
        raise _Invalid(f"{where}: missing {key!r}")
    if kind == "text" and isinstance(raw, str):
        return raw.strip()
    if kind == "bool" and str(raw).strip().lower() in ("true", "false"):
        return str(raw).strip().lower() == "true"
    if isinstance(kind, tuple) and isinstance(raw, bool):
        raise _Invalid(f"{where}: {key!r} is a boolean, expected a number in {list(kind)}")
    if isinstance(kind, tuple) and re.fullmatch(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*", str(raw)):
        value, (low, high) = float(raw), kind
        if not math.isfinite(value) or not low <= value <= high:
            raise _Invalid(f"{where}: {key!r}={value:g} is outside [{low:g}, {high:g}]")
        off = Field(key, low, high).problem(value)  # 0.85 on 0-100: a 0-1 value
        if off:
            raise _Invalid(f"{where}: {off}")
        return value
    wanted = {"text": "a string", "bool": "true or false"}.get(str(kind), "a number")
    raise _Invalid(f"{where}: {key!r}={raw!r} must be {wanted}")


def _instances(text: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The reply's one JSON list of instance objects (``[]`` too), each with its position."""
    values = json_values(text) or ([[]] if re.fullmatch(r"[\s`json]*\[\s*\][\s`]*", text) else [])
    if len(values) != 1:
        raise _Invalid(f"{len(values) or 'no'} JSON values in the reply, not one list")
    found = values[0]
    if isinstance(found, Mapping) and len(found) == 1:  # {"instances": [...]}
        found = next(iter(found.values()))
    if not isinstance(found, list) or not all(isinstance(o, Mapping) for o in found):
        raise _Invalid("expected a JSON list of instance objects")
    return [(f"instance {i}", obj) for i, obj in enumerate(found, start=1)]


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
        _value(obj, "instance", "text", where),
        _value(obj, "reasoning", "text", where),
        _value(obj, "certainty", (0, 100), where),
    )


def _verified(where: str, obj: Mapping[str, Any]) -> Verified:
    severity = obj.get("severity")
    return Verified(
        _value(obj, "instance", "text", where),
        _value(obj, "reasoning", "text", where),
        _value(obj, "certainty", (0, 100), where),
        _value(obj, "error_exists", "bool", where),
        None if severity is None else _value(obj, "severity", (0, 10), where),
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
    {"rating": r"rat(?:e|es|ed|ing)|scor\w*", "confidence": r"confiden\w*"},
    SCORE_WORDS,
    'one JSON object with "rating" and "confidence"',
    "rating and confidence",
    (prompts.SCORING,),
)
"""Step 3 (Fig. 5): ``rating`` 0-5 and ``confidence`` 0-10, restated as JSON if need be."""


def type_score(reading: Reading, text: str) -> TypeScore | None:
    """The step 3 verdict of a complete reading, with the judge's reasoning."""
    if not reading.complete:
        return None
    said = [
        o["reasoning"] for o in json_values(text) if isinstance(o, Mapping) and "reasoning" in o
    ]
    why = str(said[0]).strip() if said else ""  # a restatement gives none
    return TypeScore(float(reading.value("rating")), float(reading.value("confidence")), why)
