"""MESA's error types as data: codes, definitions and importance weights from one YAML file.

The packaged file (``error_types.yaml`` next to this module) holds the paper's eight types
(App. C, Table 9) and weights (Sec. 2.5). Users evaluate against their own guidelines by
pointing ``--error-types FILE`` / ``error_types=PATH`` at a file of the same shape; it is
checked strictly, because a misspelt field or a zero weight would silently change what a
reported quality score means.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from elitr_bench.data.errors import ElitrBenchError

#: The packaged definitions (the paper's types and weights).
DEFAULT_ERROR_TYPES = Path(__file__).with_name("error_types.yaml")

_CODE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_TYPE_KEYS = ("name", "definition", "weight", "aliases")
_TOP_KEYS = ("types",)


class ErrorTypesError(ElitrBenchError):
    """An error-type file is missing, malformed, or has an unknown key or a bad weight."""


@dataclass(frozen=True)
class ErrorType:
    """One error type MESA assesses on its own (single-aspect evaluation).

    Attributes:
        code: Short code (``OM``, ``REP``...); names the metric ``mesa_<code>``.
        name: Human-readable name (``Omission``).
        definition: Definition text (Table 9 for the packaged types).
        weight: Importance ``i_n`` of Eq. 1 (> 0).
        aliases: Other codes accepted for this type (``RED`` for ``REP``).
    """

    code: str
    name: str
    definition: str
    weight: float
    aliases: tuple[str, ...] = ()

    @property
    def criteria(self) -> str:
        """Text put into the prompts' ``self.criteria[criteria]`` slot (Figs. 3-5)."""
        return f"{self.name}: {self.definition}"


@dataclass(frozen=True)
class ErrorTypes:
    """An ordered set of error types (file order is assessment and output order).

    Attributes:
        types: The types, in file order.
        source: File they were read from.
    """

    types: tuple[ErrorType, ...]
    source: str = ""

    def __iter__(self) -> Iterator[ErrorType]:
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)

    @property
    def codes(self) -> tuple[str, ...]:
        """Codes in order."""
        return tuple(t.code for t in self.types)

    def get(self, code: str) -> ErrorType:
        """The type with this code or alias (case-insensitive).

        Raises:
            ErrorTypesError: No such type.
        """
        wanted = code.strip().upper()
        for etype in self.types:
            if wanted == etype.code.upper() or wanted in (a.upper() for a in etype.aliases):
                return etype
        raise ErrorTypesError(
            f"unknown MESA error type {code!r} in {self.source or 'the error-type file'}; "
            f"known: {', '.join(self.codes)}"
        )

    def weights(self) -> dict[str, float]:
        """Code -> importance weight."""
        return {t.code: t.weight for t in self.types}


def _type_from(code: str, raw: Any, where: str) -> ErrorType:
    if not _CODE.match(code):
        raise ErrorTypesError(
            f"{where}: error type code {code!r} must be letters, digits or _ (it names the "
            "metric mesa_<code>)"
        )
    if not isinstance(raw, Mapping):
        raise ErrorTypesError(
            f"{where}: type {code} must be a mapping with name, definition and weight"
        )
    unknown = sorted(str(k) for k in raw if k not in _TYPE_KEYS)
    if unknown:
        raise ErrorTypesError(
            f"{where}: type {code} has unknown key(s) {', '.join(unknown)}; "
            f"allowed keys: {', '.join(_TYPE_KEYS)}"
        )
    for key in ("name", "definition", "weight"):
        if key not in raw:
            raise ErrorTypesError(f"{where}: type {code} lacks {key!r}")
    name, definition, weight = raw["name"], raw["definition"], raw["weight"]
    if not isinstance(name, str) or not name.strip():
        raise ErrorTypesError(f"{where}: type {code}: name must be a non-empty string")
    if not isinstance(definition, str) or not definition.strip():
        raise ErrorTypesError(f"{where}: type {code}: definition must be a non-empty string")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
        raise ErrorTypesError(
            f"{where}: type {code}: weight {weight!r} must be a number > 0 "
            "(the importance i_n of Eq. 1; the paper uses 0.9, 1.0 and 1.1)"
        )
    aliases = raw.get("aliases") or []
    if isinstance(aliases, str):
        aliases = [aliases]
    if not isinstance(aliases, list) or not all(
        isinstance(a, str) and _CODE.match(a) for a in aliases
    ):
        raise ErrorTypesError(f"{where}: type {code}: aliases must be a list of codes")
    return ErrorType(
        code=code,
        name=name.strip(),
        definition=" ".join(definition.split()),
        weight=float(weight),
        aliases=tuple(aliases),
    )


def parse_error_types(data: Any, source: str = "") -> ErrorTypes:
    """Validate the parsed content of an error-type file.

    Raises:
        ErrorTypesError: One line naming the file, the type and the field at fault.
    """
    where = f"error-type file {source}" if source else "error types"
    if not isinstance(data, Mapping) or not isinstance(data.get("types"), Mapping):
        raise ErrorTypesError(
            f"{where}: expected a top-level 'types:' mapping of CODE -> "
            "{name, definition, weight}; see the packaged error_types.yaml"
        )
    unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if unknown:
        raise ErrorTypesError(
            f"{where}: unknown top-level key(s) {', '.join(unknown)}; only 'types' is allowed"
        )
    types = [_type_from(str(code), raw, where) for code, raw in data["types"].items()]
    if not types:
        raise ErrorTypesError(f"{where}: defines no error types")
    seen: dict[str, str] = {}
    for etype in types:
        for code in (etype.code, *etype.aliases):
            if code.upper() in seen:
                raise ErrorTypesError(
                    f"{where}: code {code} is used by both {seen[code.upper()]} and {etype.code}"
                )
            seen[code.upper()] = etype.code
    return ErrorTypes(tuple(types), source)


@lru_cache(maxsize=16)
def _load_cached(path: str, mtime_ns: int) -> ErrorTypes:
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ErrorTypesError(
            f"error-type file {path}: cannot read it ({exc.strerror}); pass an existing file "
            "with --error-types / error_types="
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise ErrorTypesError(f"error-type file {path}: not valid YAML{line}") from None
    return parse_error_types(data, path)


def load_error_types(path: str | Path | None = None) -> ErrorTypes:
    """Read and validate an error-type file (default: the packaged paper definitions).

    Raises:
        ErrorTypesError: Unreadable file, bad YAML, unknown key, missing field, weight <= 0.
    """
    target = Path(path).expanduser() if path else DEFAULT_ERROR_TYPES
    try:
        mtime = target.stat().st_mtime_ns
    except OSError:
        raise ErrorTypesError(
            f"error-type file {target}: not found; pass an existing file with "
            "--error-types / error_types="
        ) from None
    return _load_cached(str(target), mtime)
