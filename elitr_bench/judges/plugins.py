"""One registry type for everything pluggable in the judges: families and minutes methods.

Read beside lm-eval's ``api/registry.py``: a name maps to a value or to a *lazy
placeholder*, a module path imported on first use (whose import registers the real
value), so listing what exists costs no import of a heavy family; an installed package
adds entries through an entry-point group, so a plugin needs no edit of this package.
There is one collision rule for every registry: a name registered again from the same
module replaces the old value (a module reload), and from another module it is an
error naming both modules, since two plugins silently shadowing each other would change
what a spec means without anyone noticing.

An installed plugin is someone else's code, written against some release of ours: any
exception while importing it (an ``ImportError`` from a name we no longer export, a
``SyntaxError``, a :class:`JudgeConfigError` from its own registration, even a
``sys.exit()``) makes it *broken*, not fatal. Listing what is installed leaves it out
with one warning naming the plugin, its distribution and the error, and what it
registered before failing is withdrawn; a spec that names it (its entry point's name as
a method or rubric) gets that error as its own. A spec that does not name it never
notices, so one stale plugin costs one warning. A plugin whose entry point takes a name
already taken (a built-in family's, another plugin's) is never imported: one warning
says so, since a plugin that silently does nothing would look installed and working.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from elitr_bench.cli_errors import debug_enabled
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
        distribution: The installed distribution that declares the entry point
            (``name version``; ``""`` for a built-in placeholder).
    """

    modules: tuple[str, ...]
    origin: str
    distribution: str = ""

    @property
    def is_plugin(self) -> bool:
        """Whether an installed package declared it (its failures are isolated)."""
        return self.origin.startswith("entry point")


def _distribution(ep: importlib.metadata.EntryPoint) -> str:
    """``name version`` of the distribution declaring ``ep`` (``"unknown"`` if unreadable)."""
    dist = getattr(ep, "dist", None)
    try:
        name = dist.metadata["Name"] if dist is not None else None
        version = dist.version if dist is not None else None
    except Exception:  # a malformed METADATA must not break the scan
        name = version = None
    return f"{name} {version}" if name else "unknown"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def plugin_error(
    name: str, holder: Placeholder, module: str, exc: BaseException
) -> JudgeConfigError:
    """The one line saying why plugin ``name`` cannot be loaded, and the way on.

    Names the plugin, its entry point, its distribution and the error (its first line:
    a plugin's exception text is not ours to print in full; with ``ELITR_BENCH_DEBUG=1``
    the warning carries its traceback).
    """
    dist = holder.distribution.split(" ")[0] if holder.distribution else ""
    uninstall = f"pip uninstall {dist}" if dist and dist != "unknown" else "uninstall it"
    what = f"plugin {name!r} ({holder.origin}, distribution {holder.distribution or 'unknown'})"
    if isinstance(exc, ModuleNotFoundError) and not is_missing_module(exc, module):
        missing = exc.name or str(exc)
        return JudgeConfigError(
            f"{what} cannot be loaded: its module {module} imports {missing!r}, which is not "
            f"installed; install the package that provides it, or {uninstall}"
        )
    if isinstance(exc, (ImportError, AttributeError)):  # a name this release lacks
        fix = f"it may be written for another release of lm-eval-elitr: update it, or {uninstall}"
    else:
        fix = f"fix or update it, or {uninstall}"
    if isinstance(exc, SystemExit):  # its str() is only the exit code
        return JudgeConfigError(
            f"{what} cannot be loaded: its module {module} calls sys.exit({exc.code!r}) "
            f"when imported; {fix}"
        )
    return JudgeConfigError(f"{what} cannot be loaded: {_first_line(exc)}; {fix}")


#: Every registry made, so that a plugin failing half way through its import leaves no
#: entry it registered before failing in any of them.
_REGISTRIES: weakref.WeakSet[Registry[object]] = weakref.WeakSet()


def _snapshot() -> dict[Registry[object], set[str]]:
    return {registry: set(registry._entries) for registry in list(_REGISTRIES)}


def _withdraw_since(before: dict[Registry[object], set[str]]) -> None:
    """Forget what a failed plugin import registered (anything not from ``elitr_bench``).

    A built-in module the plugin imported registers its own entries, which stay: their
    module is imported now and would not register them again.
    """
    for registry, names in before.items():
        for name in set(registry._entries) - names:
            if not registry._entries[name].origin.startswith("elitr_bench."):
                del registry._entries[name]


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
        #: Plugins whose import failed, by name: the one-line error naming plugin and cause.
        self._broken: dict[str, JudgeConfigError] = {}
        #: Broken plugins already warned about (once per process).
        self._warned: set[str] = set()
        self._scanned = group is None
        _REGISTRIES.add(self)  # type: ignore[arg-type]

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
            origin = f"entry point {ep.name} = {ep.value} in {ep.group}"
            holder = Placeholder((ep.module,), origin, _distribution(ep))
            taken = self._taken_by(ep.name)
            if taken:
                log.warning(
                    "plugin %r (%s, distribution %s) is ignored: %s; rename its entry point",
                    ep.name, origin, holder.distribution, taken,
                )  # fmt: skip
                continue
            self._placeholders[ep.name] = holder

    def _taken_by(self, name: str) -> str:
        """Who holds ``name`` before a plugin's entry point claims it (``""``: nobody)."""
        holder = self._placeholders.get(name)
        if holder is not None and not holder.is_plugin:
            return f"{name!r} is the built-in {self.kind} of {', '.join(holder.modules)}"
        if holder is not None:
            return f"{name!r} is taken by the {holder.origin} (distribution {holder.distribution})"
        if name in self._entries:
            return f"{name!r} is the {self.kind} registered by {self._entries[name].origin}"
        return ""

    def names(self) -> tuple[str, ...]:
        """Every name known now, registered or placeholder, without importing anything."""
        self._scan()
        return tuple(dict.fromkeys([*self._entries, *self._placeholders]))

    def resolve(self, name: str) -> T | None:
        """The value of ``name``, importing its placeholder module(s) if needed.

        Raises:
            JudgeConfigError: ``name`` is a plugin that cannot be loaded (its error, also
                on every later call), or a built-in module's own import of another
                module failed.
        """
        self._scan()
        if name in self._broken:
            raise self._broken[name]
        if name in self._entries:
            return self._entries[name].value
        holder = self._placeholders.get(name)
        if holder is None:
            return None
        for module in holder.modules:
            if name in self._entries:
                break
            if holder.is_plugin:
                self._import_plugin(name, holder, module)
                continue
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if not is_missing_module(exc, module):  # it exists; one of its imports not
                    error = missing_dependency(exc, module, f"{self.kind} {name!r}")
                    self._broken[name] = error
                    raise error from exc
        entry = self._entries.get(name)
        if entry is None and holder.is_plugin:
            # A plugin of the group that registers something else under its name (a QA
            # rubric): imported now, it is not one of ours.
            del self._placeholders[name]
        return entry.value if entry is not None else None

    def _import_plugin(self, name: str, holder: Placeholder, module: str) -> None:
        """Import an installed plugin's module; any failure makes it broken, not fatal."""
        before = _snapshot()
        try:
            importlib.import_module(module)
        except (Exception, SystemExit) as exc:  # sys.exit() in a plugin ends no run of ours
            _withdraw_since(before)
            error = plugin_error(name, holder, module, exc)
            self._broken[name] = error
            self._placeholders.pop(name, None)
            raise error from exc  # its __cause__: the traceback ELITR_BENCH_DEBUG=1 shows

    def broken(self, name: str) -> JudgeConfigError | None:
        """The error of the broken plugin called ``name`` (its entry point), if it is one.

        A spec naming a method or rubric the same as a plugin that cannot be loaded
        gets this error instead of "unknown name".
        """
        self._scan()
        wanted = name.strip().lower()
        return next((e for n, e in self._broken.items() if n.lower() == wanted), None)

    def placeholder(self, name: str) -> Placeholder | None:
        """The placeholder of ``name``, if one was declared."""
        self._scan()
        return self._placeholders.get(name)

    def registered(self) -> tuple[T, ...]:
        """The values registered now, importing nothing."""
        return tuple(e.value for e in self._entries.values())

    def values(self) -> Iterator[T]:
        """Every value, resolving all placeholders (registration order, placeholders first).

        A plugin that cannot be loaded is left out with one warning (once per process),
        so that it breaks no spec that does not use it; naming it (:meth:`resolve`,
        :meth:`broken`) raises its error, and :meth:`broken_note` adds it to "unknown
        name" messages.
        """
        for name in self.names():
            try:
                self.resolve(name)
            except JudgeConfigError:
                if name not in self._broken:
                    raise
        for name, error in self._broken.items():
            if name not in self._warned:
                self._warned.add(name)
                cause = error.__cause__  # the plugin's own exception: its traceback on request
                log.warning("%s", error, exc_info=cause if debug_enabled() else None)
        return iter([e.value for e in self._entries.values()])

    def broken_note(self) -> str:
        """``"; note: PLUGIN cannot be loaded: ..."`` for each broken plugin, or ``""``."""
        return "".join(f"; note: {error}" for error in self._broken.values())

    def origin(self, name: str) -> str | None:
        """The module that registered ``name`` (None: not registered yet)."""
        entry = self._entries.get(name)
        return entry.origin if entry is not None else None
