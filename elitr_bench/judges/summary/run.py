"""One minutes judge run: its client, the context checks, the run, its usage, identity and plan.

What a minutes judge does once :mod:`~elitr_bench.judges.summary.registry` has named its
method (:func:`~elitr_bench.judges.summary.registry.get_method`): the callers
(``elitr-bench score`` through :mod:`elitr_bench.scoring.minutes`, the lm_eval filter
:mod:`~elitr_bench.judges.summary.lm_eval_filter`, ``elitr-bench mesa``) check every
prompt against the judge's window before anything is paid (:func:`check_context`), print
the :func:`plan`, then judge all minutes concurrently through one client
(:func:`assess_items_run`), which gives the assessments with the judge's identity, usage
and summary (:class:`MinutesRun`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.identity import family_identity
from elitr_bench.judges.summary.base import (
    MinutesAssessment,
    MinutesItem,
    MinutesMethod,
    error_assessment,
)
from elitr_bench.judges.summary.registry import get_method
from elitr_bench.llm.batch import BatchPending
from elitr_bench.tokens import estimate_tokens

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig
    from elitr_bench.judges.overlength import Overlong
    from elitr_bench.llm.cache import JudgeCache
    from elitr_bench.llm.client import JudgeClient

log = logging.getLogger(__name__)


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
    from elitr_bench.judges.overlength import overlength_line, way_out
    from elitr_bench.llm.context_window import judge_window

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
    from elitr_bench.judges.overlength import worst_by_label
    from elitr_bench.llm.context_window import judge_window

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
        except BatchPending as exc:  # waits for a batch (batch=on): nothing failed
            result = error_assessment(item, active.name, active.metrics, str(exc))
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
    usage = with_side_usage(usage_of(config, judge_client), side)
    return finished_run(assessments, config, active, usage, time.perf_counter() - start)


def finished_run(
    assessments: list[MinutesAssessment],
    config: JudgeConfig,
    method: MinutesMethod,
    usage: dict[str, Any],
    elapsed_s: float,
) -> MinutesRun:
    """The run of these assessments: identity, counts, the meetings flagged, summary."""
    run = MinutesRun(
        assessments=assessments,
        identity=identity_of(config, method),
        usage=usage,
        elapsed_s=elapsed_s,
        method=method.name,
        metrics=tuple(method.metrics),
        errors=sum(a.status == "error" for a in assessments),
        flagged={a.meeting_id: note for a in assessments if (note := method.flag(a))},
        flag_key=method.flag_key,
    )
    run.summary = summarize(assessments, method.metrics)
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
    from elitr_bench.judges.pricing import estimate_cost
    from elitr_bench.judges.usage import judge_prices

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
    prices = judge_prices(config)  # batch=on: the batch price
    cost = estimate_cost(prompt_tokens, completion_tokens, prices) if prices else None
    priced = prices is not None
    for other, n, prompt, completion in side.values():
        other_prices = judge_prices(other)
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
        **({"batch": True} if config.batch else {}),  # priced at the batch price
        **(
            {"side": {k: {"model": v[0].model, "calls": v[1]} for k, v in side.items()}}
            if side
            else {}
        ),
    }
