"""Minutes methods by name, and judging many minutes concurrently through one client.

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
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from elitr_bench.judges.config import family_identity
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
    MinutesAssessment,
    MinutesItem,
    MinutesMethod,
    error_assessment,
    lower_is_better,
)
from elitr_bench.tokens import estimate_tokens

if TYPE_CHECKING:
    from elitr_bench.judges.config import JudgeConfig
    from elitr_bench.llm.cache import JudgeCache
    from elitr_bench.llm.client import JudgeClient
    from elitr_bench.llm.context_window import Overlong

log = logging.getLogger(__name__)

MethodFactory = Callable[["JudgeConfig"], MinutesMethod]

#: Every minutes method by name: one registry type and collision rule with the families
#: (the family core's registry, typed here with the method base class).
METHODS: Registry[MethodFactory] = cast("Registry[MethodFactory]", _FACTORIES)

# Built-in method name -> modules (tried in order) whose import registers it.
_MODULES: dict[str, tuple[str, ...]] = {
    "gpt-art": ("elitr_bench.judges.minutes.gpt",),
    "gpt-afgr": ("elitr_bench.judges.minutes.gpt",),
    "mesa": (
        "elitr_bench.judges.mesa",
        "elitr_bench.judges.mesa.method",
        "elitr_bench.judges.minutes.mesa",
    ),
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


def make_client(config: JudgeConfig, cache: JudgeCache | None = None) -> JudgeClient:
    """The shared client (backend, cache, rate limits, retries) for an LLM judge config.

    Args:
        config: The LLM judge config (backend, limits, retries, cache setting).
        cache: A cache owned by someone else (MESA's debate pool shares its caller's
            cache so that one run has one cache); None opens ``config.cache`` and the
            client owns (closes) it.

    Raises:
        JudgeConfigError: The backend does not complete prompts (replay, lexical).
    """
    from elitr_bench.judges import asking

    if not config.is_llm:
        raise JudgeConfigError(
            f"judge spec {config.spec or config.backend!r}: minutes judges need an LLM backend "
            "(openai:<model> or hf:<model>); replay and lexical score only QA answers, and "
            "without a key a local OpenAI-compatible server needs none "
            "(openai:MODEL,base_url=http://127.0.0.1:PORT/v1)"
        )
    return asking.make_client(config, cache)


# --- context window: checked before anything is paid ------------------------------------


def context_over(items: Sequence[MinutesItem], method: MinutesMethod) -> list[Overlong | None]:
    """Per item: its judge prompt when it cannot fit the judge's window, else None.

    Methods say so with ``context_over(items)``; by default a method is checked only by
    the judge client, call by call.
    """
    return list(method.context_over(items))


def context_unsure(items: Sequence[MinutesItem], method: MinutesMethod) -> list[Overlong | None]:
    """Per item: a prompt that fits or not depending on what a paid step returns."""
    return list(method.context_unsure(items))


def context_line(
    what: str, over: Sequence[Overlong], method: MinutesMethod, config: JudgeConfig
) -> str:
    """The one line naming over-long meetings, their tokens, the limit and the ways out."""
    from elitr_bench.llm.context_window import judge_window, overlength_line, way_out

    alternatives = tuple(method.context_way_out())
    basis = method.context_basis
    if basis:
        what = f"{what} ({basis})"
    return overlength_line(what, over, judge_window(config), way_out(config, over, *alternatives))


def check_context(
    items: Sequence[MinutesItem], method: MinutesMethod, config: JudgeConfig, what: str
) -> None:
    """Stop before any call when some item's judge prompt cannot fit the window.

    Items that may fit after a paid step (filler compression) are let through with a
    warning; each is checked again before its judge call.

    Raises:
        ContextWindowError: One line naming every such meeting and the way out.
    """
    from elitr_bench.llm.context_window import ContextWindowError

    over = [o for o in context_over(items, method) if o is not None]
    if over:
        raise ContextWindowError(context_line(what, over, method, config))
    warn_unsure(items, method, config)


def warn_unsure(items: Sequence[MinutesItem], method: MinutesMethod, config: JudgeConfig) -> None:
    """Say which meetings fit the window only if filler compression removes enough."""
    from elitr_bench.llm.context_window import judge_window, worst_by_label

    unsure = [o for o in context_unsure(items, method) if o is not None]
    if unsure:
        listing = ", ".join(f"{o.label} ({o.tokens:,})" for o in worst_by_label(unsure))
        log.warning(
            "%s: %d judge prompt(s) fit the window only if filler compression removes enough "
            "(uncompressed tokens: %s); each is checked after compression and marked 'error' "
            "without a judge call if it still does not fit (%s)",
            method.name,
            len(unsure),
            listing,
            judge_window(config).describe(config.max_tokens),
        )


@dataclass
class MinutesRun:
    """Assessments of one run (input order) with the judge identity, usage and timing.

    ``flagged`` holds the meetings the method flagged (:meth:`~.base.MinutesMethod.flag`),
    listed in usage blocks under ``flag_key``.
    """

    assessments: list[MinutesAssessment]
    identity: dict[str, Any]
    usage: dict[str, Any]
    elapsed_s: float
    method: str = ""
    metrics: tuple[str, ...] = ()
    errors: int = 0
    summary: dict[str, Any] = field(default_factory=dict)
    flagged: dict[str, str] = field(default_factory=dict)
    flag_key: str = "flagged"


def summarize(assessments: Sequence[MinutesAssessment], metrics: Sequence[str]) -> dict[str, Any]:
    """Mean of each metric over the items that have it, with counts per status."""
    out: dict[str, Any] = {"n": len(assessments)}
    for metric in metrics:
        values = [a.scores[metric] for a in assessments if a.scores.get(metric) is not None]
        out[metric] = sum(v for v in values if v is not None) / len(values) if values else None
        out[f"{metric}_n"] = len(values)
    for status in ("ok", "partial", "unscored", "error", "skipped"):
        out[status] = sum(a.status == status for a in assessments)
    return out


def usage_of(config: JudgeConfig, client: JudgeClient) -> dict[str, Any]:
    """The client's usage counters with the cost estimate (priced for openai only)."""
    from elitr_bench.judges.usage import usage_with_cost

    return usage_with_cost(config, client)


_COUNTERS = (
    "requests",
    "cache_hits",
    "retries",
    "prompt_tokens",
    "completion_tokens",
    "cached_prompt_tokens",
    "cached_completion_tokens",
    "estimated_cost_usd",
    "cache_saved_usd",
)


def with_side_usage(usage: dict[str, Any], side: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The judge's usage plus the clients a method opened for other models.

    Totals (requests, tokens, cost) include them; each keeps its own block under its label
    (e.g. ``filler_classifier``), priced at its own model.
    """
    out = dict(usage)
    for label, extra in side.items():
        out[label] = extra
        for name in _COUNTERS:
            if isinstance(extra.get(name), (int, float)) and isinstance(
                out.get(name), (int, float)
            ):
                out[name] = round(out[name] + extra[name], 6)
        out["priced"] = bool(out.get("priced")) and bool(extra.get("priced"))
    return out


def identity_of(config: JudgeConfig, method: MinutesMethod) -> dict[str, Any]:
    """What a minutes score depends on: backend, model, endpoint, method, prompt hash, sampling."""
    ident: dict[str, Any] = {
        "backend": config.backend,
        "model": config.model,
        "method": method.name,
        "metrics": list(method.metrics),
        "sampling": {
            "temperature": config.temperature,
            "top_p": config.top_p,
            "seed": config.seed,
            "max_tokens": config.max_tokens,
        },
    }
    if isinstance(method.prompt_hash, str):
        ident["prompt_hash"] = method.prompt_hash
    ident.update(family_identity(config))  # who classified the turns, if anyone did
    from elitr_bench.llm.endpoint import endpoint_key

    endpoint = endpoint_key(config)
    if endpoint:  # a non-default server; absent for the default OpenAI API as before
        ident["endpoint"] = endpoint
    return ident


async def assess_items_run(
    items: Sequence[MinutesItem],
    config: JudgeConfig,
    client: JudgeClient | None = None,
    *,
    method: MinutesMethod | None = None,
    progress: bool | None = None,
    desc: str = "judging minutes",
) -> MinutesRun:
    """Judge all items concurrently (the client bounds requests in flight), in input order.

    A failing item (requests exhausted their retries, a backend error) becomes an ``error``
    assessment with every metric unscored and the reason kept; the other items and the
    caller's minutes are never lost. Cancellation (Ctrl-C) still propagates.
    """
    start = time.perf_counter()
    active = method if method is not None else get_method(config)
    own = client is None
    judge_client = client if client is not None else make_client(config)
    show = config.progress if progress is None else progress
    bar: Any = None
    if show and items:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(items), desc=desc, unit="minutes", leave=False)

    async def one(item: MinutesItem) -> MinutesAssessment:
        try:
            result = await active.assess(item, judge_client)
        except Exception as exc:  # one item's failure must not discard the others
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
            log.warning(
                "minutes judge %s failed on %s/%s: %s",
                active.name,
                item.system,
                item.meeting_id,
                reason,
            )
            result = error_assessment(item, active.name, active.metrics, reason)
        if bar is not None:
            bar.update(1)
        return result

    side: dict[str, dict[str, Any]] = {}
    try:
        assessments = list(await asyncio.gather(*(one(item) for item in items)))
    finally:
        if bar is not None:
            bar.close()
        side = await active.finish_run()  # methods that open their own clients
        if own:
            await judge_client.aclose()
    run = MinutesRun(
        assessments=assessments,
        identity=identity_of(config, active),
        usage=with_side_usage(usage_of(config, judge_client), side),
        elapsed_s=time.perf_counter() - start,
        method=active.name,
        metrics=tuple(active.metrics),
        errors=sum(a.status == "error" for a in assessments),
        flagged={a.meeting_id: note for a in assessments if (note := active.flag(a))},
        flag_key=active.flag_key,
    )
    run.summary = summarize(assessments, active.metrics)
    return run


async def assess_items(
    items: Sequence[MinutesItem],
    config: JudgeConfig,
    client: JudgeClient | None = None,
) -> list[MinutesAssessment]:
    """Judge all items concurrently with a progress bar; see :func:`assess_items_run`."""
    run = await assess_items_run(items, config, client)
    return run.assessments


def plan(
    items: Sequence[MinutesItem], method: MinutesMethod, config: JudgeConfig
) -> dict[str, Any]:
    """Calls and a rough cost before spending (cache hits are not subtracted).

    ``calls`` counts every restatement turn the judges might ask (``restated_max`` of them).

    Tokens are estimated as characters / 4 of what each call sends (the method's
    ``planned_prompt_chars`` when it has one, else transcript + minutes per call) plus the
    output limit (``planned_completion_tokens``, else ``max_tokens`` per call); the price
    comes from the price table or ``price=IN:OUT``. Calls to another model
    (``planned_side_calls``, e.g. a ``filler_model`` classifier) are counted in ``calls``
    and priced at that model; ``side`` lists them by label.
    """
    from elitr_bench.llm.pricing import estimate_cost, price_for

    calls = 0
    restated = 0
    prompt_tokens = 0
    completion_tokens = 0
    side: dict[str, list[Any]] = {}  # label -> [config, calls, prompt tokens, completion]
    for item in items:
        n = method.planned_calls(item)
        calls += n
        restated += method.planned_restatements(item)
        prompt_tokens += estimate_tokens(int(method.planned_prompt_chars(item)))
        out = method.planned_completion_tokens(item)
        completion_tokens += int(out) if out is not None else n * config.max_tokens
        for extra in method.planned_side_calls(item):
            entry = side.setdefault(extra.label, [extra.config, 0, 0, 0])
            entry[1] += extra.calls
            entry[2] += estimate_tokens(extra.prompt_chars)
            entry[3] += extra.completion_tokens
    prices = price_for(config.model, config.price_in, config.price_out)
    cost = estimate_cost(prompt_tokens, completion_tokens, prices) if prices else None
    priced = prices is not None
    for other, n, prompt, completion in side.values():
        other_prices = price_for(other.model, other.price_in, other.price_out)
        calls += n
        prompt_tokens += prompt
        completion_tokens += completion
        if other_prices is None:
            priced, cost = False, None
        elif cost is not None:
            cost += estimate_cost(prompt, completion, other_prices)
    return {
        "calls": calls,
        "restated_max": restated,
        "prompt_tokens": prompt_tokens,
        "completion_tokens_max": completion_tokens,
        "estimated_cost_usd": None if cost is None else round(cost, 4),
        "priced": priced,
        **(
            {"side": {k: {"model": v[0].model, "calls": v[1]} for k, v in side.items()}}
            if side
            else {}
        ),
    }
