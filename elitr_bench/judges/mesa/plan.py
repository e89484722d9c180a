"""Calls, tokens and cost of a MESA run, printed before any request (``--max-cost``).

A full assessment is 24 calls per summary (8 types x 3 steps) without debate (the
paper's Single-n, ``debate=none``) and 120 with it (draft, 3 challengers and synthesis per
step: the paper's MESA, MADP-S, the default), each carrying the whole transcript, so the
preview matters. It names the variant, and with MADP-M prices each challenger's share at
its own model. Prompt tokens are estimated from
the prompt lengths (:func:`elitr_bench.tokens.estimate_tokens`, the package's one
characters-per-token ratio); completion tokens are bounded by
``max_tokens`` per call. Error types whose first call is cached are not counted, so a
finished run plans 0 calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.mesa.method import MesaMethod
from elitr_bench.judges.mesa.options import CHALLENGERS
from elitr_bench.judges.pricing import estimate_cost
from elitr_bench.judges.summary.base import MinutesItem
from elitr_bench.judges.summary.budget import Cap
from elitr_bench.judges.summary.budget import check_budget as budget_check
from elitr_bench.judges.usage import judge_prices
from elitr_bench.llm.client import JudgeClient
from elitr_bench.tokens import estimate_tokens


@dataclass(frozen=True)
class Plan:
    """What a run will ask for.

    Attributes:
        summaries: Summaries to assess.
        variant: The MESA variant that will run and its calls per summary, e.g.
            ``MADP-S debate, 8 types x 3 steps x 5 calls = 120 per summary``.
        calls: Completions when every reply validates at once.
        calls_max: Completions if every reply needs all re-asks, and every scoring
            reply a restatement turn.
        prompt_tokens: Estimated prompt tokens of ``calls`` (+ ``extra_calls``).
        completion_tokens_max: ``calls`` x ``max_tokens``.
        cost_usd: Estimated cost of prompt tokens + maximal completions (None: no price).
        extra_calls: Calls besides the assessments (self-training feedback, consolidation).
        cached_types: (summary, error type) assessments found in the cache (not counted).
    """

    summaries: int
    variant: str
    calls: int
    calls_max: int
    prompt_tokens: int
    completion_tokens_max: int
    cost_usd: float | None
    extra_calls: int = 0
    cached_types: int = 0
    restated_max: int = 0

    def line(self, model: str) -> str:
        """One human-readable preview line."""
        cost = (
            f"~${self.cost_usd:,.2f}"
            if self.cost_usd is not None
            else "unknown cost (no price for this model; set price=IN:OUT in the judge spec)"
        )
        extra = f" + {self.extra_calls} self-training calls" if self.extra_calls else ""
        if self.cached_types:
            extra += f" ({self.cached_types} type assessments already cached, not counted)"
        return (
            f"MESA plan ({self.variant}): {self.summaries} summaries -> {self.calls:,} "
            f"calls{extra} "
            f"(up to {self.calls_max:,} with re-asks and {self.restated_max:,} restatements), "
            f"~{self.prompt_tokens:,} prompt tokens, "
            f"<= {self.completion_tokens_max:,} completion tokens; {model}: {cost}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for run files."""
        return asdict(self)


def make_plan(
    items: Sequence[MinutesItem],
    method: MesaMethod,
    config: JudgeConfig,
    *,
    extra_calls: int = 0,
    extra_prompt_chars: int = 0,
    client: JudgeClient | None = None,
) -> Plan:
    """Estimate a run over ``items`` (plus optional extra calls, e.g. self-training).

    With ``client``, error types whose first call is already cached are left out (see
    :meth:`MesaMethod.cached_types`), so a finished run plans 0 calls and a resumed one
    only what is left.
    """
    per_step = method.calls_per_step()
    per_type, per_type_max = 3 * per_step, 3 * method.calls_per_step(upper=True) + per_step
    calls = calls_max = chars = cached = restated = 0
    for item in items:
        if method.fitted(item).action == "skipped":
            continue  # overlength=skip: no call will be made
        done = set(method.cached_types(item, client)) if client is not None else set()
        cached += len(done)
        for etype in method.types:
            if etype.code in done:
                continue
            calls += per_type
            calls_max += per_type_max
            restated += per_step  # the scoring step's asks, each restated once at most
            chars += method.type_prompt_chars(item, etype)
    calls += extra_calls
    calls_max += extra_calls * (config.reask + 1)
    chars += extra_prompt_chars
    prompt_tokens = estimate_tokens(chars)
    completion = calls * config.max_tokens
    cost = _cost(method, config, calls, prompt_tokens, per_step)
    variant = (
        f"{_VARIANTS[method.options.debate]}, {len(method.types)} types x 3 steps x "
        f"{per_step} call{'s' if per_step > 1 else ''} = {per_type * len(method.types)} "
        "per summary"
    )
    return Plan(
        len(items),
        variant,
        calls,
        calls_max,
        prompt_tokens,
        completion,
        cost,
        extra_calls,
        cached,
        restated,
    )


#: How the plan names each ``debate=`` value (the paper's names, Sec. 2.4-2.5 and 3).
_VARIANTS = {
    "none": "Single-n, no debate",
    "same": "MADP-S debate, the paper's MESA",
    "mixed": "MADP-M debate",
}


def _cost(
    method: MesaMethod, config: JudgeConfig, calls: int, prompt_tokens: int, per_step: int
) -> float | None:
    """Estimated USD: the moderator's calls at the judge's price, MADP-M challengers at theirs.

    Tokens are split by call count (a challenger's prompt is about as long as the
    moderator's). None when any model that will be called has no price.
    """
    prices = judge_prices(config)  # batch=on: the batch price
    if prices is None:
        return None
    pool = method.options.pool if method.options.debate == "mixed" else ()
    if not pool or not calls:
        return estimate_cost(prompt_tokens, calls * config.max_tokens, prices)
    challenger_share = CHALLENGERS / per_step
    own = 1.0 - challenger_share
    total = estimate_cost(
        round(prompt_tokens * own), round(calls * own * config.max_tokens), prices
    )
    for seat in range(CHALLENGERS):  # challenger i is pool[i % len(pool)] (method.py)
        member = pool[seat % len(pool)]
        member_prices = judge_prices(member)
        if member_prices is None:
            return None
        share = challenger_share / CHALLENGERS
        total += estimate_cost(
            round(prompt_tokens * share), round(calls * share * member.max_tokens), member_prices
        )
    return total


def check_budget(plan: Plan, max_cost: float | Cap | None) -> None:
    """Refuse to start when the estimate exceeds ``max_cost`` (USD, or a cap); as ``arena`` does.

    Raises:
        elitr_bench.judges.summary.budget.BudgetError: Over budget, or the cost is
            unknown while a budget is set.
    """
    budget_check(plan.cost_usd, plan.calls, max_cost)
