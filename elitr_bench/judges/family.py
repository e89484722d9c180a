"""Judge families: what each family adds to a judge spec, registered by the family itself.

A judge spec is one string (``openai:MODEL,method=NAME,option=value``) whose options
are of two kinds: the endpoint and sampling options every LLM judge has (the
:class:`~elitr_bench.judges.identity.JudgeConfig` fields) and the options of one family.
A family owns the second kind as a frozen dataclass, and registers it here with the
methods it declares (:class:`Method`: each name written once, from which how a spec
selects the family, the minutes-method registration and the ``read-reply`` kinds all
follow), its defaults, its checks, the direction and scale of its metrics and its other
reply grammars, so that the spec parser (the core) knows which family a spec means and
which options it may take without importing or naming any family: a new family calls
:func:`register_family` when its module is imported.

The built-in families are lazy placeholders (module paths imported on first use,
:data:`BUILTIN_FAMILY_MODULES`); an installed package adds one with an entry point in the
``elitr_bench.judge_families`` group whose value is the module that registers it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.option_types import Converter, option_converters
from elitr_bench.judges.plugins import Registry
from elitr_bench.judges.reading import Grammar

#: A parsed :class:`~elitr_bench.judges.identity.JudgeConfig`, as the hooks receive it. It is
#: ``Any`` here because ``identity.py`` imports this module (no import cycle, not even for
#: types); each family annotates its own hooks with ``JudgeConfig``.
Config = Any

#: Raises :class:`JudgeConfigError` for a parsed config that is wrong for its family.
SpecCheck = Callable[[Config, str], None]

#: Decides from a spec's shared options (``method``, ``rubric``, ...) whether it means
#: this family; for families that select by more than a method or rubric name.
Selector = Callable[[Mapping[str, Any]], bool]

#: The family of a :class:`~elitr_bench.judges.identity.JudgeConfig` built without parsing a
#: spec (the one registered with ``default``; a test checks they agree).
DEFAULT_FAMILY = "qa"

#: The entry-point group through which an installed package adds a judge family.
ENTRY_POINT_GROUP = "elitr_bench.judge_families"

#: Builds a family's minutes method (a :class:`~elitr_bench.judges.summary.base.MinutesMethod`)
#: from a parsed judge config.
MethodFactory = Callable[[Config], Any]

#: Every minutes method's factory by name. Only a name some family declares in its
#: :attr:`JudgeFamily.methods` may be registered (:func:`declaring_family`); the summary
#: registry adds the lazy placeholders of the built-in methods whose modules are heavy.
METHODS: Registry[MethodFactory] = Registry("minutes method")


@dataclass(frozen=True)
class Method:
    """A method a family declares: the one place its name is written.

    Attributes:
        name: What ``method=NAME`` selects (lower case); also the ``elitr-bench
            read-reply`` kind of its grammar.
        factory: Builds the method from a parsed config, registered with the family.
            None: a module imported on first use registers it (``register_method``),
            for the built-in methods whose modules are heavy.
        grammar: Its judges' reply grammar (None: it has none of its own).
        by_rubric: Selected with ``rubric=NAME`` (a prompt-only method, AutoMin's); a
            spec may still write ``method=NAME``.
    """

    name: str
    factory: MethodFactory | None = None
    grammar: Grammar | None = None
    by_rubric: bool = False

    @property
    def selector(self) -> str:
        """How a user selects it (``method=mesa``, ``rubric=gpt-art``)."""
        return f"{'rubric' if self.by_rubric else 'method'}={self.name}"


@dataclass(frozen=True)
class NoOptions:
    """The options record of a family that takes no option of its own."""


@dataclass(frozen=True)
class JudgeFamily:
    """A judge family as the core sees it.

    Attributes:
        name: The family's name, as ``parse_judge_spec(spec, family=...)`` names it.
        label: How messages name its judges ("the toy judge").
        options: Its frozen options record: each field is a spec option only this family
            reads, with its type (a hint the converter table of
            :mod:`~elitr_bench.judges.option_types` knows) and default.
        defaults: Shared :class:`JudgeConfig` options this family sets differently from
            the dataclass defaults (greedy sampling where its paper gives none).
        rubrics: Names ``rubric=`` may select for it besides its ``by_rubric`` methods.
        methods: The methods it declares (:class:`Method`), each name once: how a spec
            selects the family (:attr:`selector`), which factories it registers and
            which reply grammars ``read-reply`` knows (:meth:`reply_kinds`) follow.
        select: A predicate over the spec's shared options, asked before the methods
            and rubrics of every family (None: selected by them alone).
        default: The family of a spec that no family selects (exactly one has it).
        check: Checks its options, and the shared ones it reads, on a parsed config.
        identity: What its options add to the judge identity (for LLM judges).
        models: Models besides the judge's own that its judges call (checked before
            anything is generated).
        ready: Checks, before anything is generated, that what a non-LLM backend of
            this family reads is there (raises ``JudgeNotReadyError``).
        redacted: Its string options that may hold credentials (masked by ``to_dict``).
        other_model: How messages name a model its ``models`` hook returns (the option
            that sets it).
        lower_is_better: Whether one of its metrics (an lm-eval metric or a field its
            command writes) is better when lower; None: all are higher-is-better.
        scale: The fixed range of one of its metrics (figures show the whole scale);
            None from the hook, or no hook: no fixed range.
        short: How lists of rubrics name it briefly ("" = its name).
        grammars: Reply grammars of its judges besides its methods' own
            (:class:`~elitr_bench.judges.reading.Grammar`), by the kind name
            ``elitr-bench read-reply`` takes.
        batches: Its judges judge in passes through batches with ``batch=on`` and
            ``score --batch-write/--batch-read`` (:mod:`elitr_bench.judges.batching`);
            a spec of a family without it that says ``batch=on`` is refused in one line.
    """

    name: str
    label: str
    options: type[Any] = NoOptions
    defaults: Mapping[str, Any] = field(default_factory=dict)
    rubrics: tuple[str, ...] = ()
    methods: tuple[Method, ...] = ()
    select: Selector | None = None
    default: bool = False
    check: SpecCheck | None = None
    identity: Callable[[Config], Mapping[str, Any]] | None = None
    models: Callable[[Config], Sequence[str]] | None = None
    ready: Callable[[Config, Mapping[str, str]], None] | None = None
    redacted: tuple[str, ...] = ()
    other_model: str = "other model"
    lower_is_better: Callable[[str], bool] | None = None
    short: str = ""
    scale: Callable[[str], tuple[float, float] | None] | None = None
    grammars: Mapping[str, Grammar] = field(default_factory=dict)
    batches: bool = False

    def option_names(self) -> tuple[str, ...]:
        """The spec options this family owns, in its record's order."""
        return tuple(f.name for f in fields(self.options))

    @cached_property
    def converters(self) -> dict[str, Converter]:
        """Option name -> its converter, from the record's real type hints."""
        return option_converters(self.options)

    def method_names(self) -> tuple[str, ...]:
        """The names ``method=`` selects this family with (all its declared methods)."""
        return tuple(m.name for m in self.methods)

    def rubric_names(self) -> tuple[str, ...]:
        """The names ``rubric=`` selects this family with."""
        return (*self.rubrics, *(m.name for m in self.methods if m.by_rubric))

    @property
    def selector(self) -> str:
        """How a spec selects it, as a user writes it (``method=mesa``), for messages.

        Empty for a family a command names or the default one (it declares no method).
        """
        return " or ".join(m.selector for m in self.methods)

    def reply_kinds(self) -> dict[str, Grammar]:
        """``read-reply`` kind -> grammar: its methods' grammars, then its others."""
        kinds = {m.name: m.grammar for m in self.methods if m.grammar is not None}
        return {**kinds, **self.grammars}

    def selects(self, options: Mapping[str, Any]) -> bool:
        """Whether this family's own predicate claims a spec's shared options."""
        return self.select is not None and bool(self.select(options))


#: Every judge family, by name: built-in ones as placeholders, installed ones through
#: :data:`ENTRY_POINT_GROUP`.
FAMILIES: Registry[JudgeFamily] = Registry("judge family", ENTRY_POINT_GROUP)

#: Modules whose import registers the built-in families, loaded by name on first use:
#: the core names no family module in its imports, so a family depends on the core and
#: never the other way round.
BUILTIN_FAMILY_MODULES: Mapping[str, str] = {
    "qa": "elitr_bench.judges.qa.family",
    "minutes": "elitr_bench.judges.minutes.family",
    "mesa": "elitr_bench.judges.mesa.options",
    "cream": "elitr_bench.judges.cream.family",
}
for _name, _module in BUILTIN_FAMILY_MODULES.items():
    FAMILIES.add_placeholder(_name, (_module,))


def register_family(family: JudgeFamily, *, replace: bool = False) -> None:
    """Add a judge family and the factories of its methods; its module calls this.

    Its options record is checked here: an option type the converter table cannot
    convert fails now, naming the field, not when a user first writes the option. So
    are its methods: a name declared twice, or declared by another registered family.

    Raises:
        JudgeConfigError: The name is taken by a family registered from another module
            (the message names both), an option type is unsupported, or a method name
            is declared twice or by another family.
    """
    from elitr_bench.judges.option_types import UnsupportedOptionType

    try:
        family.converters  # noqa: B018 -- computed (and cached) to refuse bad hints now
    except UnsupportedOptionType as exc:
        raise JudgeConfigError(f"judge family {family.name!r}: {exc}") from None
    names = family.method_names()
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise JudgeConfigError(
            f"judge family {family.name!r} declares method {', '.join(twice)} twice; "
            "declare each once in methods="
        )
    for method in family.methods:
        other = _declared_by(method.name)
        if other is not None and other.name != family.name:
            raise JudgeConfigError(
                f"judge family {family.name!r} declares method {method.name!r}, which "
                f"{other.label} ({other.name!r}) declares already; rename one of them"
            )
    origin = str(sys._getframe(1).f_globals.get("__name__", "?"))
    FAMILIES.register(family.name, family, origin, replace=replace)
    for method in family.methods:
        if method.factory is not None:
            METHODS.register(method.name, method.factory, origin, replace=replace)


def _declared_by(method: str) -> JudgeFamily | None:
    """The registered family declaring ``method`` (no placeholder is imported)."""
    return next((f for f in FAMILIES.registered() if method in f.method_names()), None)


def declaring_family(method: str) -> JudgeFamily | None:
    """The family that declares ``method`` (every family is loaded if needed)."""
    found = _declared_by(method)
    if found is None:
        families()
        found = _declared_by(method)
    return found


def method_selectors() -> tuple[str, ...]:
    """Every declared method as a spec selects it, ``rubric=`` ones first, each by name."""
    declared = [m for f in families() for m in f.methods]
    return tuple(m.selector for m in sorted(declared, key=lambda m: (not m.by_rubric, m.name)))


def families() -> tuple[JudgeFamily, ...]:
    """Every registered family, the built-in ones first, then the installed ones."""
    return tuple(FAMILIES.values())


def get_family(name: str) -> JudgeFamily:
    """The family called ``name``.

    Raises:
        JudgeConfigError: No family has that name.
    """
    found = FAMILIES.resolve(name)
    if found is None:
        raise JudgeConfigError(
            f"unknown judge family {name!r}; use one of {', '.join(FAMILIES.names())}"
            + FAMILIES.broken_note()
        )
    return found


def batch_refusal(name: str) -> str | None:
    """Why a judge of family ``name`` cannot batch (None: its family batches)."""
    family = get_family(name)
    if family.batches:
        return None
    batching = ", ".join(f.label for f in families() if f.batches)
    return f"the {name} family ({family.label}) sends one by one; batches apply to {batching}"


def default_family() -> JudgeFamily:
    """The family of a spec no family selects (the one registered with ``default``)."""
    for family in families():
        if family.default:
            return family
    raise JudgeConfigError("no judge family is registered as the default")


def select_family(options: Mapping[str, Any]) -> JudgeFamily:
    """The family a spec's shared options select, asking every registered family.

    First a family's own predicate (``select``), then the family whose methods hold
    ``method=``, then the one whose rubrics hold ``rubric=``, else the default family.

    Raises:
        JudgeConfigError: ``method=`` names a method no family declares (the message
            lists the installed ones), or one of a plugin that cannot be loaded (its
            error).
    """
    registered = families()
    method = str(options.get("method") or "").strip().lower()
    rubric = str(options.get("rubric") or "").strip().lower()
    for family in registered:
        if family.selects(options):
            return family
    if method:
        for family in registered:
            if method in family.method_names():
                return family
        broken = FAMILIES.broken(method)
        if broken is not None:  # the plugin that would declare it cannot be loaded
            raise broken
        installed = method_selectors()
        raise JudgeConfigError(
            f"unknown method {method!r}: no installed judge family declares it; installed "
            f"methods: {', '.join(installed) or 'none'}{FAMILIES.broken_note()}"
        )
    if rubric:
        for family in registered:
            if not family.default and rubric in family.rubric_names():
                return family
    return default_family()


def owner_of(option: str) -> JudgeFamily | None:
    """The family whose options record has ``option`` (None: no family owns it)."""
    for family in families():
        if option in family.option_names():
            return family
    return None
