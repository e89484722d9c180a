"""A judge's usage counters with their cost, for every family's plan and results."""

from __future__ import annotations

from typing import Any

from elitr_bench.judges.config import JudgeConfig
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.pricing import price_for


def usage_with_cost(config: JudgeConfig, client: JudgeClient) -> dict[str, Any]:
    """A client's usage counters with the cost estimate (priced for openai judges only)."""
    prices = price_for(config.model, config.price_in, config.price_out)
    return client.usage.as_dict(prices if config.backend == "openai" else None)
