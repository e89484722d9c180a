"""How our tables are written as text: the one Markdown table and the one number format.

``report``, ``minutes-check``, ``judge-check``, the CREAM arena and ``noise`` all print
tables; one writer and one formatter keep their cells alike (a missing value is a dash,
never ``nan``; a ``|`` inside a cell cannot split it into two columns). A small module at
the top of the package (like :mod:`elitr_bench.tokens`): it imports nothing of the
package, so every layer that writes a table can use it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

#: What a cell shows for a missing (or not finite) number.
MISSING = "-"


def fixed(
    value: float | None, digits: int = 2, *, missing: str = MISSING, percent: bool = False
) -> str:
    """A number with ``digits`` decimals; ``missing`` for None, NaN and infinities.

    Args:
        value: The number (a share with ``percent``).
        digits: Decimals shown.
        missing: The cell of a missing value (the AutoMin tables print the paper's ``–``).
        percent: Show ``100 * value`` followed by ``%``.
    """
    if value is None or not math.isfinite(value):
        return missing
    if percent:
        return f"{100 * value:.{digits}f}%"
    return f"{value:.{digits}f}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], align: str = ""
) -> list[str]:
    """A GitHub Markdown table as lines: header, rule, one line per row.

    Args:
        header: Column names.
        rows: Cells, as text (format numbers with :func:`fixed`).
        align: One letter per column, ``l`` (the default for columns not given) or
            ``r`` for right-aligned numbers.
    """
    rule = ("---:" if align[i : i + 1] == "r" else "---" for i in range(len(header)))
    lines = ["| " + " | ".join(_cell(c) for c in header) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


__all__ = ["MISSING", "fixed", "markdown_table"]
