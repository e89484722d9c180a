"""The cost budget of paid judge runs: ``--max-cost`` and a judge spec's ``max_cost=``.

One module decides what over budget means, for every command and for ``lm_eval``: the
flags themselves are declared in :mod:`elitr_bench.cli.budget`, the ``lm_eval`` judge
filters send nothing over a spec's cap (:mod:`elitr_bench.judges.filtering`), and the
rule and its words are here (no argparse).
"""

from __future__ import annotations

from dataclasses import dataclass

from elitr_bench.data.errors import ElitrBenchError


@dataclass(frozen=True)
class Cap:
    """A spending cap and where it was set, as messages name it.

    Attributes:
        usd: The cap in US dollars.
        label: The cap as written (``--max-cost 5``, ``max_cost=5``).
        knob: What to raise for more (``--max-cost``, ``max_cost= in the judge spec``).
    """

    usd: float
    label: str
    knob: str


def flag_cap(usd: float | None) -> Cap | None:
    """A command's ``--max-cost`` (None: not given)."""
    return None if usd is None else Cap(usd, f"--max-cost {usd:g}", "--max-cost")


def spec_cap(usd: float | None) -> Cap | None:
    """A judge spec's ``max_cost=`` (None: not given)."""
    return None if usd is None else Cap(usd, f"max_cost={usd:g}", "max_cost= in the judge spec")


def spending_cap(flag: float | None, spec: float | None) -> Cap | None:
    """The cap a command honours: the smaller of ``--max-cost`` and the spec's ``max_cost=``.

    Either alone applies; with both, the tighter one is the one a user can have meant.
    """
    caps = [c for c in (flag_cap(flag), spec_cap(spec)) if c is not None]
    return min(caps, key=lambda c: c.usd) if caps else None


def shown_usd(amount: float) -> str:
    """An estimate in dollars, never rounded down to "$0.00"."""
    return f"${amount:,.2f}" if amount >= 0.01 else f"${amount:.2g}"


def budget_problem(cost_usd: float | None, calls: int, cap: Cap | None) -> str | None:
    """Why a run planned at ``cost_usd`` must not start under ``cap`` (None: it may).

    A run with no call to pay passes whatever its estimate; an unknown cost (unpriced
    model) under a cap is refused, since it could be anything.
    """
    if cap is None or calls == 0:
        return None
    if cost_usd is None:
        return f"{cap.label} given but the judge model has no known price"
    if cost_usd > cap.usd:
        return f"estimated cost {shown_usd(cost_usd)} exceeds {cap.label}"
    return None


def check_budget(
    cost_usd: float | None,
    calls: int,
    max_cost: float | Cap | None,
    narrow: str = "select fewer --systems/--meetings, ",
) -> None:
    """Refuse to start a run whose estimated cost exceeds its cap (exit status 2).

    Args:
        cost_usd: The plan's estimated cost (None: the model has no known price).
        calls: The plan's calls.
        max_cost: ``--max-cost`` in USD, or the cap that applies (:func:`spending_cap`);
            None: no budget.
        narrow: How the command's user judges less, with the flags it has, ending in
            ", " (``""`` when it has none).

    Raises:
        BudgetError: Over budget, or the cost is unknown while a budget is set.
    """
    cap = flag_cap(max_cost) if not isinstance(max_cost, Cap) else max_cost
    problem = budget_problem(cost_usd, calls, cap)
    if problem is None or cap is None:
        return
    if cost_usd is None:
        raise BudgetError(f"{problem}; add price=IN:OUT (USD per 1M tokens) to the judge spec")
    raise BudgetError(
        f"{problem}; {narrow}pick a cheaper judge, or raise {cap.knob} "
        "(--dry-run only prints the plan)"
    )


class BudgetError(ElitrBenchError):
    """The estimated cost exceeds ``--max-cost`` (or the spec's ``max_cost=``)."""
