"""Judge families: what each family adds to a judge spec, registered by the family itself.

A judge spec is one string (``openai:gpt-4o,method=mesa,debate=same``) whose options
are of two kinds: the endpoint and sampling options every LLM judge has (the
:class:`~elitr_bench.judges.config.JudgeConfig` fields) and the options of one family
(MESA's ``debate``, the AutoMin judges' ``filler``, replay's ``system``). A family owns
the second kind as a frozen dataclass, and registers it here with its defaults, the
metrics it writes, its reply parsers and its checks, so that the spec parser (the core)
knows which options a spec may take without importing any family, and a new family
needs no edit of the core: it calls :func:`register_family` when its module is imported.

The built-in families (``qa``, ``minutes``, ``mesa``, ``cream``) are imported by name on
first use (:data:`BUILTIN_FAMILY_MODULES`); a third-party family imports this module and
registers itself before its specs are parsed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from elitr_bench.judges.errors import JudgeConfigError

#: A parsed :class:`~elitr_bench.judges.config.JudgeConfig`, as the hooks receive it. It is
#: ``Any`` here because ``config.py`` imports this module (no import cycle, not even for
#: types); each family annotates its own hooks with ``JudgeConfig``.
Config = Any

#: Raises :class:`JudgeConfigError` for a parsed config that is wrong for its family.
SpecCheck = Callable[[Config, str], None]


@dataclass(frozen=True)
class NoOptions:
    """The options record of a family that takes no option of its own (CREAM)."""


@dataclass(frozen=True)
class JudgeFamily:
    """A judge family as the core sees it.

    Attributes:
        name: The family's name (``qa``, ``minutes``, ``mesa``, ``cream``).
        label: How messages name its judges ("MESA", "the AutoMin GPT judges").
        selector: How a spec selects it, as a user writes it (``method=mesa``); empty
            for families a command names (``cream``) or the default (``qa``).
        options: Its frozen options record: each field is a spec option only this family
            reads, with its type and default.
        defaults: Shared :class:`JudgeConfig` options this family sets differently from
            the QA judge's (greedy sampling where its paper gives none, ``method=mesa``).
        rubrics: Names ``rubric=`` may select for it.
        methods: Names ``method=`` may select for it (a function: a registry may grow).
        metrics: The per-sample metric names its judges write for a config.
        parsers: Its reply parsers (pure functions of the reply text), by name.
        check: Checks its options, and the shared ones it reads, on a parsed config.
        identity: What its options add to the judge identity (for LLM judges).
        models: Models besides the judge's own that its judges call (checked before
            anything is generated).
    """

    name: str
    label: str
    options: type[Any] = NoOptions
    selector: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    rubrics: tuple[str, ...] = ()
    methods: Callable[[], Sequence[str]] | None = None
    metrics: Callable[[Config], tuple[str, ...]] | None = None
    parsers: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    check: SpecCheck | None = None
    identity: Callable[[Config], Mapping[str, Any]] | None = None
    models: Callable[[Config], Sequence[str]] | None = None

    def option_names(self) -> tuple[str, ...]:
        """The spec options this family owns, in its record's order."""
        return tuple(f.name for f in fields(self.options))

    def option_types(self) -> dict[str, str]:
        """Option name -> its annotated type, as text (``bool``, ``str``, ``int | None``)."""
        return {f.name: str(f.type) for f in fields(self.options)}


_FAMILIES: dict[str, JudgeFamily] = {}

#: Modules whose import registers the built-in families, loaded by name on first use:
#: the core names no family module in its imports, so a family depends on the core and
#: never the other way round.
BUILTIN_FAMILY_MODULES = (
    "elitr_bench.judges.qa.family",
    "elitr_bench.judges.minutes.family",
    "elitr_bench.judges.mesa.options",
    "elitr_bench.judges.cream.family",
)
_LOADED = False


def register_family(family: JudgeFamily) -> None:
    """Add (or replace) a judge family; a family module calls this when imported."""
    _FAMILIES[family.name] = family


def _load_builtins() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        for module in BUILTIN_FAMILY_MODULES:
            importlib.import_module(module)


def families() -> tuple[JudgeFamily, ...]:
    """Every registered family, the built-in ones first."""
    _load_builtins()
    return tuple(_FAMILIES.values())


def get_family(name: str) -> JudgeFamily:
    """The family called ``name``.

    Raises:
        JudgeConfigError: No family has that name.
    """
    _load_builtins()
    try:
        return _FAMILIES[name]
    except KeyError:
        raise JudgeConfigError(
            f"unknown judge family {name!r}; use one of {', '.join(_FAMILIES)}"
        ) from None


def owner_of(option: str) -> JudgeFamily | None:
    """The family whose options record has ``option`` (None: no family owns it)."""
    for family in families():
        if option in family.option_names():
            return family
    return None
