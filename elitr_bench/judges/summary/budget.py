"""The cost budget of the minutes judges' paid runs (``mesa``, ``arena``): ``--max-cost``.

The flags themselves are declared in :mod:`elitr_bench.cli.budget`; this module keeps
the check, which the MESA plan also runs, and holds no argparse.
"""

from __future__ import annotations

from elitr_bench.data.errors import ElitrBenchError


def check_budget(
    cost_usd: float | None,
    calls: int,
    max_cost: float | None,
    narrow: str = "select fewer --systems/--meetings, ",
) -> None:
    """Refuse to start a run whose estimated cost exceeds ``--max-cost`` (exit status 2).

    A run with no call to pay passes whatever its estimate; an unknown cost (unpriced
    model) with a budget set is refused, since it could be anything.

    Args:
        cost_usd: The plan's estimated cost (None: the model has no known price).
        calls: The plan's calls.
        max_cost: ``--max-cost`` (None: no budget).
        narrow: How the command's user judges less, with the flags it has, ending in
            ", " (``""`` when it has none).

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
        shown = f"{cost_usd:,.2f}" if cost_usd >= 0.01 else f"{cost_usd:.2g}"  # not "$0.00"
        raise BudgetError(
            f"estimated cost ${shown} exceeds --max-cost {max_cost:g}; {narrow}pick "
            "a cheaper judge, or raise --max-cost (--dry-run only prints the plan)"
        )


class BudgetError(ElitrBenchError):
    """The estimated cost exceeds ``--max-cost``."""
