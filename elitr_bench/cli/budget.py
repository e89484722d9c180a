"""Command-line values shared by the paid judge commands.

``mesa``, ``arena``, ``score`` and ``judge-check`` take the same budget flags.
"""

from __future__ import annotations

import argparse


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
        "judge has no price; add price=IN:OUT to its spec); with max_cost= in the judge "
        "spec too, the smaller applies",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help=f"print the plan ({what}) and stop with status 0: nothing is sent or written",
    )
