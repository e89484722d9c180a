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
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from elitr_bench.judges.errors import JudgeConfigError

T = TypeVar("T")

log = logging.getLogger(__name__)


def is_missing_module(exc: ModuleNotFoundError, module: str) -> bool:
    """Whether ``exc`` says ``module`` itself is absent, not a module it imports.

    True when the missing module is ``module`` or a package above it (a dotted prefix:
    ``a.b`` for ``a.b.c``, never ``scorer`` for ``scorer_plugin``): the plugin is not
    installed. False when ``module`` exists and one of its own imports failed, which
    the caller reports by name (:func:`missing_dependency`).
    """
    missing = exc.name
    return missing is not None and (module == missing or module.startswith(missing + "."))


def missing_dependency(exc: ModuleNotFoundError, module: str, what: str) -> JudgeConfigError:
    """The one-line error for a plugin module whose own import of another module failed.

    Args:
        exc: The import error raised while importing ``module``.
        module: The plugin module being loaded.
        what: How the message names the plugin ("judge family 'x' (entry point ...)").
    """
    missing = exc.name or str(exc)
    return JudgeConfigError(
        f"{what} cannot be loaded: its module {module} imports {missing!r}, which is not "
        "installed; install the package that provides it, or uninstall the plugin"
    )


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
        #: Plugins whose own imports failed, by name: the one-line error naming what is missing.
        self._broken: dict[str, JudgeConfigError] = {}
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
        if holder is None:
            return None
        for module in holder.modules:
            if name in self._entries:
                break
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if not is_missing_module(exc, module):  # it exists; one of its imports not
                    origin = "" if holder.origin == "built-in" else f" ({holder.origin})"
                    error = missing_dependency(exc, module, f"{self.kind} {name!r}{origin}")
                    self._broken[name] = error
                    raise error from exc
        entry = self._entries.get(name)
        if entry is None and holder.origin.startswith("entry point"):
            # A plugin of the group that registers something else under its name (a QA
            # rubric): imported now, it is not one of ours.
            del self._placeholders[name]
        return entry.value if entry is not None else None

    def placeholder(self, name: str) -> Placeholder | None:
        """The placeholder of ``name``, if one was declared."""
        self._scan()
        return self._placeholders.get(name)

    def registered(self) -> tuple[T, ...]:
        """The values registered now, importing nothing."""
        return tuple(e.value for e in self._entries.values())

    def values(self) -> Iterator[T]:
        """Every value, resolving all placeholders (registration order, placeholders first).

        A plugin whose own imports fail is left out with one warning, so that it breaks
        no spec that does not use it; naming it (:meth:`resolve`) raises its error, and
        :meth:`broken_note` adds it to "unknown name" messages.
        """
        for name in self.names():
            try:
                self.resolve(name)
            except JudgeConfigError:
                if name not in self._broken:
                    raise
                if self._placeholders.pop(name, None) is not None:  # warned once
                    log.warning("%s", self._broken[name])
        return iter([e.value for e in self._entries.values()])

    def broken_note(self) -> str:
        """``"; note: PLUGIN cannot be loaded: ..."`` for each broken plugin, or ``""``."""
        return "".join(f"; note: {error}" for error in self._broken.values())

    def origin(self, name: str) -> str | None:
        """The module that registered ``name`` (None: not registered yet)."""
        entry = self._entries.get(name)
        return entry.origin if entry is not None else None
