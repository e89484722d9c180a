"""A judge's usage counters with their cost, for every family's plan and results."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.pricing import batch_prices, estimate_cost, price_for
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.usage import Usage


def priced_usage(usage: Usage, prices: tuple[float, float] | None = None) -> dict[str, Any]:
    """Counters plus the estimated cost of the tokens paid in this run."""
    out: dict[str, Any] = asdict(usage)
    out["estimated_cost_usd"] = round(
        estimate_cost(usage.prompt_tokens, usage.completion_tokens, prices), 6
    )
    out["cache_saved_usd"] = round(
        estimate_cost(usage.cached_prompt_tokens, usage.cached_completion_tokens, prices), 6
    )
    out["priced"] = prices is not None
    if prices is not None:
        out["price_per_1m_tokens"] = {"prompt": prices[0], "completion": prices[1]}
    return out


def judge_prices(config: JudgeConfig) -> tuple[float, float] | None:
    """The prices a judge pays per 1M tokens: ``batch=on`` pays the batch price."""
    prices = price_for(config.model, config.price_in, config.price_out)
    if not config.batch:
        return prices
    return batch_prices(prices, explicit=config.price_in is not None)


def usage_with_cost(config: JudgeConfig, client: JudgeClient) -> dict[str, Any]:
    """A client's usage counters with the cost estimate (priced for openai judges only).

    With ``batch=on`` the lines batches answered cost the batch price and the requests
    sent one by one (a line a batch failed) the listed one (``price=`` names both).
    """
    if config.backend != "openai":
        return priced_usage(client.usage, None)
    listed = price_for(config.model, config.price_in, config.price_out)
    usage = priced_usage(client.usage, listed)
    batch = judge_prices(config)
    if not config.batch or listed is None or batch is None:
        return usage
    counted = client.usage
    tokens = (counted.batched_prompt_tokens, counted.batched_completion_tokens)
    saved = estimate_cost(*tokens, listed) - estimate_cost(*tokens, batch)
    usage["estimated_cost_usd"] = round(usage["estimated_cost_usd"] - saved, 6)
    usage["batch_price_per_1m_tokens"] = {"prompt": batch[0], "completion": batch[1]}
    return usage


def usage_line(usage: dict[str, Any]) -> str:
    """One human line of a usage dict (:func:`priced_usage`), saying answered vs refused."""
    hits = f"cache hits: {usage.get('cache_hits', 0)}"
    if usage.get("deduplicated"):
        hits += f" ({usage['deduplicated']} of them identical requests in flight)"
    line = (
        f"judge requests sent: {usage.get('requests', 0)}, {hits}; of those sent: answered "
        f"{usage.get('answered', 0)}, refused {usage.get('refused', 0)}, failed "
        f"{usage.get('failed', 0)}"
    )
    if usage.get("batched"):
        line += f"; answered in batches: {usage['batched']}"
    if usage.get("not_sent"):
        line += f"; not sent after the credentials were refused: {usage['not_sent']}"
    if usage.get("structured_refused") or usage.get("unstructured"):
        line += (
            f"; sent without the refused response_format: {usage.get('unstructured', 0)} "
            f"({usage.get('structured_refused', 0)} refused with it first)"
        )
    return line
