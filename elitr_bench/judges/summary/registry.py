"""Minutes methods by name: which method a judge spec selects, and how methods register.

A judge spec names its minutes method with ``rubric=`` (the AutoMin prompts ``gpt-art`` and
``gpt-afgr``, which are prompts like the QA rubrics) or ``method=`` (multi-step methods such
as ``mesa``). Every method is declared once, by its family
(:class:`~elitr_bench.judges.family.Method` in ``JudgeFamily.methods``); a family that
gives the factory there has it registered with the family. A built-in method whose module
is heavy declares no factory; the registry knows which module holds it (lazy
placeholders of :data:`METHODS`, the same registry type and collision rule as the judge
families) and that module calls :func:`register_method` when imported: ``method=mesa``
imports ``elitr_bench.judges.mesa`` (then ``.method``), whose import calls
``register_method("mesa", factory)``. Registering a name no family declares is an error.
Running a method (its client, context checks, plan and usage) is
:mod:`elitr_bench.judges.summary.run`'s.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import METHODS as _FACTORIES
from elitr_bench.judges.family import declaring_family, families
from elitr_bench.judges.family import method_selectors as _declared_selectors
from elitr_bench.judges.metrics import (
    COUNT_AGGREGATION,
    JUDGE_ERRORS,
    JUDGE_FORMAT_IN_ANSWER,
    JUDGE_UNSCORED,
)
from elitr_bench.judges.plugins import Registry, is_missing_module, missing_dependency
from elitr_bench.judges.summary.base import (
    MinutesMethod,
    lower_is_better,
)

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig

MethodFactory = Callable[["JudgeConfig"], MinutesMethod]

#: Every minutes method by name: one registry type and collision rule with the families
#: (the family core's registry, typed here with the method base class).
METHODS: Registry[MethodFactory] = cast("Registry[MethodFactory]", _FACTORIES)

# Built-in method name -> modules (tried in order) whose import registers it.
_MODULES: dict[str, tuple[str, ...]] = {
    "gpt-art": ("elitr_bench.judges.minutes.gpt",),
    "gpt-afgr": ("elitr_bench.judges.minutes.gpt",),
    "mesa": ("elitr_bench.judges.mesa", "elitr_bench.judges.mesa.method"),
}

MINUTES_RUBRICS: tuple[str, ...] = ("gpt-art", "gpt-afgr")
"""Minutes methods selected with ``rubric=`` (prompt-only methods)."""

for _name, _modules in _MODULES.items():
    METHODS.add_placeholder(_name, _modules)


def register_method(name: str, factory: MethodFactory, *, replace: bool = False) -> None:
    """Make ``name`` selectable with ``rubric=name`` / ``method=name`` in a judge spec.

    Args:
        name: Method name (lower case, e.g. ``mesa``).
        factory: Builds the method from the parsed judge config.
        replace: Take the name even from a factory another module registered (tests);
            the same module registering again (a reload) always replaces.

    Raises:
        JudgeConfigError: No judge family declares ``name`` (a family lists it in its
            ``methods=``), or the name is taken by a factory of another module (the
            message names both) and ``replace`` is False.
    """
    origin = str(sys._getframe(1).f_globals.get("__name__", "?"))
    name = name.strip().lower()
    if declaring_family(name) is None:
        raise JudgeConfigError(
            f"{origin} registers minutes method {name!r}, which no judge family declares; "
            f"add Method({name!r}, factory=...) to its family's methods= (then this "
            "register_method call is not needed)"
        )
    METHODS.register(name, factory, origin, replace=replace)


def known_methods() -> tuple[str, ...]:
    """Names that a spec may select (registered now or importable built-ins)."""
    return tuple(sorted(METHODS.names()))


def method_selectors() -> tuple[str, ...]:
    """How a judge spec selects each minutes method, as a user writes it.

    ``rubric=NAME`` for the prompt methods, then ``method=NAME`` for every other one,
    built-in or of an installed family, each in name order, as the families declare
    them: help texts and messages list these rather than names of their own.
    """
    return _declared_selectors()


def selectors_text() -> str:
    """:func:`method_selectors` as a phrase: ``rubric=a, rubric=b or method=c``."""
    found = method_selectors()
    if len(found) < 2:
        return "".join(found)
    return f"{', '.join(found[:-1])} or {found[-1]}"


def minutes_judge_example(model: str = "openai:gpt-4o") -> str:
    """A minutes judge spec for help texts, with the other methods after it.

    ``openai:gpt-4o,rubric=gpt-afgr (or rubric=gpt-art, method=mesa)``, with every method
    the registry knows (an installed family's included).
    """
    first, *others = method_selectors()
    return f"{model},{first}" + (f" (or {', '.join(others)})" if others else "")


def method_name(config: JudgeConfig) -> str | None:
    """The minutes method a judge config selects, or None for a QA judge config."""
    if getattr(config, "method", ""):
        return str(config.method).strip().lower()
    rubric = config.rubric.strip().lower()
    if rubric in METHODS.names():
        return rubric
    return None


def _load(name: str) -> MethodFactory | None:
    found = METHODS.resolve(name)
    if found is None and METHODS.placeholder(name) is None:
        families()  # installed families register their methods when loaded
        found = METHODS.resolve(name)
    if found is None and METHODS.placeholder(name) is None:
        module = f"elitr_bench.judges.minutes.{name.replace('-', '_')}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if not is_missing_module(exc, module):
                raise missing_dependency(exc, module, f"minutes method {name!r}") from exc
        found = METHODS.resolve(name)
    return found


def get_method(config: JudgeConfig) -> MinutesMethod:
    """The minutes method selected by ``config.method`` (else ``config.rubric``).

    Raises:
        JudgeConfigError: The spec selects no minutes method, or an unknown one.
    """
    name = method_name(config)
    spec = config.spec or config.backend
    if name is None:
        raise JudgeConfigError(
            f"judge spec {spec!r} is not a minutes judge; add {selectors_text()}"
        )
    factory = _load(name)
    holder = METHODS.placeholder(name)
    if factory is None and holder is not None:
        raise JudgeConfigError(
            f"judge spec {spec!r}: minutes method {name!r} is not available here (none of "
            f"{', '.join(holder.modules)} registered it)"
        )
    if factory is None:
        raise JudgeConfigError(
            f"judge spec {spec!r}: unknown minutes method {name!r}; use one of "
            f"{', '.join(known_methods())}"
        )
    return factory(config)


def metric_entries(config: JudgeConfig) -> list[dict[str, Any]]:
    """lm-eval ``metric_list`` entries of a task judged by any minutes method.

    Which metrics exist depends on the method: its scores (their direction as their
    family declares it, :func:`~.base.lower_is_better`), the counts every judge writes,
    then the fields the method declares itself (:meth:`~.base.MinutesMethod.extra_metric_entries`).
    """
    method = get_method(config)
    entries: list[dict[str, Any]] = [
        {"metric": m, "aggregation": "mean", "higher_is_better": not lower_is_better(m)}
        for m in method.metrics
    ]
    entries += [
        {"metric": name, "aggregation": COUNT_AGGREGATION, "higher_is_better": False}
        for name in (JUDGE_UNSCORED, JUDGE_ERRORS, JUDGE_FORMAT_IN_ANSWER)
    ]
    return entries + method.extra_metric_entries()
