"""A judge's usage counters with their cost, for every family's plan and results."""

from __future__ import annotations

from typing import Any

from elitr_bench.judges.config import JudgeConfig
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.pricing import batch_prices, estimate_cost, price_for


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
        return client.usage.as_dict(None)
    listed = price_for(config.model, config.price_in, config.price_out)
    usage = client.usage.as_dict(listed)
    batch = judge_prices(config)
    if not config.batch or listed is None or batch is None:
        return usage
    counted = client.usage
    tokens = (counted.batched_prompt_tokens, counted.batched_completion_tokens)
    saved = estimate_cost(*tokens, listed) - estimate_cost(*tokens, batch)
    usage["estimated_cost_usd"] = round(usage["estimated_cost_usd"] - saved, 6)
    usage["batch_price_per_1m_tokens"] = {"prompt": batch[0], "completion": batch[1]}
    return usage
