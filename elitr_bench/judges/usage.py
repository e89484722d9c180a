"""A judge's usage counters with their cost, for every family's plan and results."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from elitr_bench.judges.config import JudgeConfig
from elitr_bench.judges.pricing import estimate_cost, price_for
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


def usage_with_cost(config: JudgeConfig, client: JudgeClient) -> dict[str, Any]:
    """A client's usage counters with the cost estimate (priced for openai judges only)."""
    prices = price_for(config.model, config.price_in, config.price_out)
    return priced_usage(client.usage, prices if config.backend == "openai" else None)


def usage_line(usage: dict[str, Any]) -> str:
    """One human line of a usage dict (:meth:`Usage.as_dict`), saying answered vs refused."""
    hits = f"cache hits: {usage.get('cache_hits', 0)}"
    if usage.get("deduplicated"):
        hits += f" ({usage['deduplicated']} of them identical requests in flight)"
    line = (
        f"judge requests sent: {usage.get('requests', 0)}, {hits}; of those sent: answered "
        f"{usage.get('answered', 0)}, refused {usage.get('refused', 0)}, failed "
        f"{usage.get('failed', 0)}"
    )
    if usage.get("not_sent"):
        line += f"; not sent after the credentials were refused: {usage['not_sent']}"
    if usage.get("structured_refused") or usage.get("unstructured"):
        line += (
            f"; sent without the refused response_format: {usage.get('unstructured', 0)} "
            f"({usage.get('structured_refused', 0)} refused with it first)"
        )
    return line
