"""Per-model token prices for cost estimates (USD per 1M tokens: prompt, completion).

List prices published by OpenAI at the time of writing; they change, so every judge can
override them with ``price=IN:OUT`` in its spec. Unknown models cost 0 (reported as an
estimate with ``priced=False``) rather than a guess.
"""

from __future__ import annotations

PRICES_PER_M: dict[str, tuple[float, float]] = {
    "gpt-4-0613": (30.0, 60.0),
    "gpt-4": (30.0, 60.0),
    "gpt-4-turbo": (10.0, 30.0),
    "gpt-4o": (2.5, 10.0),
    # The first GPT-4o snapshot (CREAM's evaluator, the arena's default) kept its launch
    # price; the prefix rule would give it the later, cheaper gpt-4o price.
    "gpt-4o-2024-05-13": (5.0, 15.0),
    "gpt-4o-mini": (0.15, 0.6),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-3.5-turbo": (0.5, 1.5),
}


def price_for(
    model: str, price_in: float | None = None, price_out: float | None = None
) -> tuple[float, float] | None:
    """Prices for a model: explicit override, exact name, else the longest known prefix."""
    if price_in is not None and price_out is not None:
        return (price_in, price_out)
    if model in PRICES_PER_M:
        return PRICES_PER_M[model]
    matches = [name for name in PRICES_PER_M if model.startswith(name + "-")]
    if matches:
        return PRICES_PER_M[max(matches, key=len)]
    return None


def estimate_cost(
    prompt_tokens: int, completion_tokens: int, prices: tuple[float, float] | None
) -> float:
    """USD cost of the given usage (0.0 when the model has no known price)."""
    if prices is None:
        return 0.0
    return (prompt_tokens * prices[0] + completion_tokens * prices[1]) / 1_000_000


def batch_prices(
    prices: tuple[float, float] | None, explicit: bool = False
) -> tuple[float, float] | None:
    """What a batch pays: half the listed prices (OpenAI's Batch API), or ``price=`` as given.

    Args:
        prices: The prices :func:`price_for` found.
        explicit: They came from the spec's ``price=``, which names what is paid.
    """
    if prices is None or explicit:
        return prices
    return (prices[0] / 2, prices[1] / 2)
