"""A judge's usage counters with their cost, for every family's plan and results."""

from __future__ import annotations

from typing import Any

from elitr_bench.judges.config import JudgeConfig
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.pricing import batch_prices, price_for


def judge_prices(config: JudgeConfig) -> tuple[float, float] | None:
    """The prices a judge pays per 1M tokens: ``batch=on`` pays the batch price."""
    prices = price_for(config.model, config.price_in, config.price_out)
    if not config.batch:
        return prices
    return batch_prices(prices, explicit=config.price_in is not None)


def usage_with_cost(config: JudgeConfig, client: JudgeClient) -> dict[str, Any]:
    """A client's usage counters with the cost estimate (priced for openai judges only)."""
    usage = client.usage.as_dict(judge_prices(config) if config.backend == "openai" else None)
    if config.batch:
        usage["batch_price"] = True
    return usage
