"""Reading MESA's three step replies: tolerant JSON syntax, strict meaning.

Syntax is repaired by the shared :func:`~elitr_bench.judges.jsonparse.parse_json_reply`
(``json-repair``). What the values mean is checked strictly here: every field the step's
format asks for must be present with the right type and inside its range, otherwise the
reply is rejected with a reason (and re-asked, then reported), never coerced into a score.

Two concessions follow the paper's own format lines (App. A): numbers may come as numeric
strings (Figs. 3-4 show ``'certainty': '<score ...>'`` in quotes and ask for "double quotes
around all keys and values"), and ``error_exists`` may be the string ``"true"``/``"false"``
for the same reason. Fig. 4 asks for a severity in its text but not in its format line, so
severity is optional (checked when present); its certainty follows the format line (0-100),
not the text (1-10).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from elitr_bench.judges.jsonparse import parse_json_reply

T = TypeVar("T")

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """A validated reply or the reason it was rejected.

    Attributes:
        value: The validated value, or None.
        reason: Why the reply was rejected ("" when valid).
    """

    value: T | None
    reason: str = ""

    @property
    def ok(self) -> bool:
        """Whether the reply was valid."""
        return self.value is not None


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


def _json(text: str) -> Any:
    value = parse_json_reply(text)
    if value is None:
        raise _Invalid("no JSON in the reply")
    return value


def _instances(text: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The reply's instance objects in order, each with its position for error messages.

    Lazy, so a reply's first problem is the one reported (steps 1 and 2 share this).
    """
    for i, obj in enumerate(_as_list(_json(text))):
        where = f"instance {i + 1}"
        if not isinstance(obj, Mapping):
            raise _Invalid(f"{where}: expected an object, got {type(obj).__name__}")
        yield where, obj


def parse_identification(text: str) -> Parsed[tuple[Candidate, ...]]:
    """Validate a step 1 reply: a list of ``{instance, reasoning, certainty 0-100}``."""
    try:
        out = []
        for where, obj in _instances(text):
            out.append(
                Candidate(
                    instance=_text(obj, "instance", where),
                    reasoning=_text(obj, "reasoning", where),
                    certainty=_number(obj, "certainty", 0, 100, where),
                )
            )
    except _Invalid as exc:
        return Parsed(None, f"identification reply: {exc}")
    return Parsed(tuple(out))


def parse_verification(text: str) -> Parsed[tuple[Verified, ...]]:
    """Validate a step 2 reply: instances with ``error_exists``, certainty, optional severity."""
    try:
        out = []
        for where, obj in _instances(text):
            severity = (
                _number(obj, "severity", 0, 10, where) if obj.get("severity") is not None else None
            )
            out.append(
                Verified(
                    instance=_text(obj, "instance", where),
                    reasoning=_text(obj, "reasoning", where),
                    certainty=_number(obj, "certainty", 0, 100, where),
                    error_exists=_boolean(obj, "error_exists", where),
                    severity=severity,
                )
            )
    except _Invalid as exc:
        return Parsed(None, f"verification reply: {exc}")
    return Parsed(tuple(out))


def parse_scoring(text: str) -> Parsed[TypeScore]:
    """Validate a step 3 reply: ``{reasoning, confidence 0-10, rating 0-5}``."""
    try:
        obj = _json(text)
        if not isinstance(obj, Mapping):
            raise _Invalid(f"expected a JSON object, got {type(obj).__name__}")
        score = TypeScore(
            rating=_number(obj, "rating", 0, 5, "scoring"),
            confidence=_number(obj, "confidence", 0, 10, "scoring"),
            reasoning=_text(obj, "reasoning", "scoring"),
        )
    except _Invalid as exc:
        return Parsed(None, f"scoring reply: {exc}")
    return Parsed(score)
