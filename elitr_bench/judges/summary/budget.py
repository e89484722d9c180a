"""Command-line values shared by the minutes judges' commands (``mesa``, ``arena``)."""

from __future__ import annotations

import argparse

from elitr_bench.data.errors import ElitrBenchError


def comma_list(text: str | None) -> list[str] | None:
    """The non-empty, stripped parts of a comma-separated flag value (None when not given).

    ``--systems a, b,`` gives ``["a", "b"]``; the caller decides what an absent flag means
    (all systems, for both commands).
    """
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


def add_budget_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """``--max-cost`` and ``--dry-run``, with one meaning for every paid command.

    Args:
        parser: The command's parser.
        what: What the plan counts, for the help text (e.g. "calls, tokens, cost").
    """
    parser.add_argument(
        "--max-cost",
        type=float,
        default=None,
        metavar="USD",
        help="stop with status 2, before any call, when the estimate exceeds USD (or the "
        "judge has no price; add price=IN:OUT to its spec)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help=f"print the plan ({what}) and stop with status 0: nothing is sent or written",
    )


def check_budget(cost_usd: float | None, calls: int, max_cost: float | None) -> None:
    """Refuse to start a run whose estimated cost exceeds ``--max-cost`` (exit status 2).

    A run with no call to pay passes whatever its estimate; an unknown cost (unpriced
    model) with a budget set is refused, since it could be anything.

    Raises:
        BudgetError: Over budget, or the cost is unknown while a budget is set.
    """
    if max_cost is None or calls == 0:
        return
    if cost_usd is None:
        raise BudgetError(
            f"--max-cost {max_cost:g} given but the judge model has no known price; add "
            "price=IN:OUT (USD per 1M tokens) to the judge spec"
        )
    if cost_usd > max_cost:
        raise BudgetError(
            f"estimated cost ${cost_usd:,.2f} exceeds --max-cost {max_cost:g}; select fewer "
            "--systems/--meetings, a cheaper judge, or raise --max-cost (--dry-run only "
            "prints the plan)"
        )


class BudgetError(ElitrBenchError):
    """The estimated cost exceeds ``--max-cost``."""
