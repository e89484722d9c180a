"""The ELITR-Bench answer prompt against the paper's own text, not against our constant."""

from __future__ import annotations

from elitr_bench.prompts import ANSWER_PROMPT, answer_preamble
from tests.support.papers import paper_text


def _figure5() -> str:
    """Fig. 5 as the paper's text rendering prints it: after Table 12's caption, before its own."""
    lines = paper_text("000").splitlines()  # ELITR-Bench; fails, never skips, without it
    start = next(i for i, line in enumerate(lines) if line.startswith("Table 12:"))
    end = next(i for i, line in enumerate(lines) if line.startswith("Figure 5:"))
    assert start < end
    return "\n".join(lines[start + 1 : end]).strip()


def test_answer_prompt_is_the_papers_figure_5() -> None:
    printed = _figure5()
    assert printed.count("{transcript}") == 1  # the one meeting-specific span (in blue)
    assert printed == ANSWER_PROMPT
    head, tail = printed.split("{transcript}")
    assert answer_preamble("T {x}") == f"{head}T {{x}}{tail}"  # filled verbatim, braces kept
