"""One registry type for everything pluggable in the judges: families and minutes methods.

Read beside lm-eval's ``api/registry.py``: a name maps to a value or to a *lazy
placeholder*, a module path imported on first use (whose import registers the real
value), so listing what exists costs no import of a heavy family; an installed package
adds entries through an entry-point group, so a plugin needs no edit of this package.
There is one collision rule for every registry: a name registered again from the same
module replaces the old value (a module reload), and from another module it is an
error naming both modules, since two plugins silently shadowing each other would change
what a spec means without anyone noticing.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from elitr_bench.judges.errors import JudgeConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class _Entry(Generic[T]):
    value: T
    origin: str


@dataclass(frozen=True)
class Placeholder:
    """A name whose value a module registers when it is imported (tried in order).

    Attributes:
        modules: Module paths; the first whose import registers the name wins. A module
            that does not exist is skipped, one whose own imports fail raises.
        origin: Where the placeholder came from (``built-in``, an entry point).
    """

    modules: tuple[str, ...]
    origin: str


class Registry(Generic[T]):
    """Names -> values of one kind, with lazy placeholders and one collision rule.

    Args:
        kind: How messages name an entry ("judge family", "minutes method").
        group: An entry-point group whose entries are placeholders (name -> module).
    """

    def __init__(self, kind: str, group: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self._entries: dict[str, _Entry[T]] = {}
        self._placeholders: dict[str, Placeholder] = {}
        self._scanned = group is None

    def register(self, name: str, value: T, origin: str, *, replace: bool = False) -> None:
        """Add ``value`` under ``name``, registered by module ``origin``.

        Raises:
            JudgeConfigError: ``name`` is taken by a value from another module (the
                message names both), unless ``replace``.
        """
        old = self._entries.get(name)
        if old is not None and old.origin != origin and old.value is not value and not replace:
            raise JudgeConfigError(
                f"{self.kind} {name!r} is registered twice: by {old.origin} and by {origin}; "
                "rename one of them"
            )
        self._entries[name] = _Entry(value, origin)

    def unregister(self, name: str) -> None:
        """Forget ``name`` (tests, plugins that withdraw)."""
        self._entries.pop(name, None)
        self._placeholders.pop(name, None)

    def add_placeholder(self, name: str, modules: Sequence[str], origin: str = "built-in") -> None:
        """Say which module(s) register ``name``, without importing them now."""
        if name not in self._placeholders:
            self._placeholders[name] = Placeholder(tuple(modules), origin)

    def _scan(self) -> None:
        if self._scanned:
            return
        self._scanned = True
        assert self.group is not None
        for ep in importlib.metadata.entry_points(group=self.group):
            self.add_placeholder(ep.name, (ep.module,), f"entry point {ep.value} ({ep.group})")

    def names(self) -> tuple[str, ...]:
        """Every name known now, registered or placeholder, without importing anything."""
        self._scan()
        return tuple(dict.fromkeys([*self._entries, *self._placeholders]))

    def resolve(self, name: str) -> T | None:
        """The value of ``name``, importing its placeholder module(s) if needed."""
        self._scan()
        if name in self._entries:
            return self._entries[name].value
        holder = self._placeholders.get(name)
        for module in holder.modules if holder is not None else ():
            if name in self._entries:
                break
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name is None or not module.startswith(exc.name):
                    raise  # the module exists but one of its own imports is missing
        entry = self._entries.get(name)
        return entry.value if entry is not None else None

    def placeholder(self, name: str) -> Placeholder | None:
        """The placeholder of ``name``, if one was declared."""
        self._scan()
        return self._placeholders.get(name)

    def values(self) -> Iterator[T]:
        """Every value, resolving all placeholders (registration order, placeholders first)."""
        for name in self.names():
            self.resolve(name)
        return iter([e.value for e in self._entries.values()])

    def origin(self, name: str) -> str | None:
        """The module that registered ``name`` (None: not registered yet)."""
        entry = self._entries.get(name)
        return entry.origin if entry is not None else None
