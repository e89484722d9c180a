"""The one Markdown table writer and number formatter every table of the package uses."""

from __future__ import annotations

import math

from elitr_bench.markdown import fixed, markdown_table
from elitr_bench.metaeval.minutes_tables import AutoMinTable


def test_fixed_writes_missing_and_non_finite_numbers_as_a_dash() -> None:
    assert (
        fixed(0.4361) == "0.44" and fixed(3, 0) == "3" and fixed(0.1234, 1, percent=True) == "12.3%"
    )
    assert fixed(None) == fixed(math.nan) == fixed(math.inf, 3) == "-"
    assert fixed(None, missing="–") == "–"


def test_a_pipe_or_line_break_in_a_cell_stays_in_its_cell() -> None:
    lines = markdown_table(("#", "fact"), [("1", "a | b\nc")], "r")
    assert lines == ["| # | fact |", "|---:|---|", "| 1 | a \\| b c |"]


def test_minutes_check_tables_escape_their_cells() -> None:
    # Table 7's last column says "row 1 (Σ|Δ| 0.014)": unescaped, its pipes split the cell.
    table = AutoMinTable("t", "T", ["System", "nearest"], [["GPT-4", "row 1 (Σ|Δ| 0.014)"]])
    assert "| GPT-4 | row 1 (Σ\\|Δ\\| 0.014) |" in table.markdown()
