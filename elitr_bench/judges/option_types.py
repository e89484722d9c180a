"""Spec option values from their type hints: one small converter table, no text matching.

A judge spec is text (``strictness=3,steps=a|b``); each option's record field says what
the text becomes. The hints are read with :func:`typing.get_type_hints`, so a record
written with or without ``from __future__ import annotations`` converts alike, and an
annotation the table cannot convert is refused when its family registers, not when a
user first writes the option (where it would silently stay a string).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union

#: Text that means true / false for a ``bool`` option.
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
#: Text that means "no value" for an ``X | None`` option.
_NONE = frozenset({"none", ""})
#: Separates the items of a ``tuple[str, ...]`` option (commas separate spec options).
ITEM_SEPARATOR = "|"


class UnsupportedOptionType(TypeError):
    """An options record has a field whose annotation the converter table cannot convert."""


@dataclasses.dataclass(frozen=True)
class Converter:
    """How one option's text becomes its value.

    Attributes:
        kind: How messages name the type (``int``, ``float | None``, ``one of a, b``).
        convert: Text -> value; raises :class:`ValueError` for text of another type.
    """

    kind: str
    convert: Callable[[str], Any]


def _bool(raw: str) -> bool:
    low = raw.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(raw)


def _str_tuple(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(ITEM_SEPARATOR) if part.strip())


#: The plain types an option may have, with their converters.
_PLAIN: dict[Any, Converter] = {
    bool: Converter("bool", _bool),
    int: Converter("int", int),
    float: Converter("float", float),
    str: Converter("str", str),
    tuple[str, ...]: Converter("tuple[str, ...]", _str_tuple),
}


def _optional(inner: Converter) -> Converter:
    def convert(raw: str) -> Any:
        return None if raw.lower() in _NONE else inner.convert(raw)

    return Converter(f"{inner.kind} | None", convert)


def _literal(choices: tuple[Any, ...]) -> Converter:
    if not all(isinstance(c, str) for c in choices):
        raise UnsupportedOptionType(f"Literal{list(choices)}: only string choices are supported")
    allowed = tuple(str(c) for c in choices)

    def convert(raw: str) -> str:
        if raw not in allowed:
            raise ValueError(raw)
        return raw

    return Converter(f"one of {', '.join(allowed)}", convert)


def converter_for(hint: Any) -> Converter:
    """The converter of one resolved type hint.

    Raises:
        UnsupportedOptionType: The hint is none of bool, int, float, str,
            ``tuple[str, ...]``, a string ``Literal`` or ``X | None`` of one of them.
    """
    if hint in _PLAIN:
        return _PLAIN[hint]
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        return _literal(args)
    if origin in (Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return _optional(converter_for(rest[0]))
    raise UnsupportedOptionType(
        f"{hint!r} is not a spec option type; use bool, int, float, str, tuple[str, ...], "
        "a string Literal, or Optional of one of them"
    )


def option_converters(record: type[Any], skip: tuple[str, ...] = ()) -> dict[str, Converter]:
    """Field name -> converter for every field of a dataclass options record.

    Args:
        record: A dataclass whose fields are spec options.
        skip: Fields that are not spec options.

    Raises:
        UnsupportedOptionType: A field's hint cannot be converted (the message names it).
    """
    hints = typing.get_type_hints(record)
    out: dict[str, Converter] = {}
    for f in dataclasses.fields(record):
        if f.name in skip:
            continue
        try:
            out[f.name] = converter_for(hints[f.name])
        except UnsupportedOptionType as exc:
            raise UnsupportedOptionType(
                f"{record.__module__}.{record.__qualname__}.{f.name}: {exc}"
            ) from None
    return out
