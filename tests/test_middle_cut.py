"""The one search for how much of a transcript a middle cut keeps, for tasks and MESA alike."""

from __future__ import annotations

from typing import Any

import pytest

from elitr_bench import middle_cut
from elitr_bench.judges.mesa import fit as mesa_fit
from elitr_bench.middle_cut import ELISION, largest_fitting_cut
from elitr_bench.tasks import context

LIMIT = 10


def _excess(text: str) -> int:
    return len(text) - LIMIT


def test_a_plateau_of_cuts_is_left_by_bisection() -> None:
    # Keeping 3 to 12 units gives the same 11-unit cut: steps of one excess unit would
    # need more than the few tries the search takes, bisection finds the largest fit.
    def cut(keep: int) -> str:
        return "x" * (11 if 3 <= keep <= 12 else keep)

    assert largest_fitting_cut(cut, _excess, 11) == "xx"
    assert largest_fitting_cut(cut, _excess, 20) == "xx"
    assert largest_fitting_cut(lambda keep: "x" * keep, _excess, 30) == "x" * LIMIT


def test_nothing_fits_when_even_the_elision_alone_does_not() -> None:
    assert largest_fitting_cut(lambda keep: "x" * (keep + 11), _excess, 5) is None


def test_excess_tokens_stand_for_units_per_token() -> None:
    asked: list[int] = []

    def cut(keep: int) -> str:
        asked.append(keep)
        return "x" * keep

    # 100 characters, 4 to a token: 90 over is 23 tokens, minus 23 * 4 characters
    assert largest_fitting_cut(cut, lambda t: -(-len(t) // 4) - 2, 100, 4.0) == "x" * 8
    assert asked[:2] == [100, 8]


@pytest.mark.parametrize("caller", ["tasks", "mesa"])
def test_tasks_and_mesa_search_with_the_one_search(
    monkeypatch: pytest.MonkeyPatch, caller: str
) -> None:
    calls: list[int] = []

    def spy(*args: Any, **kwargs: Any) -> str | None:
        calls.append(1)
        return middle_cut.largest_fitting_cut(*args, **kwargs)

    transcript = "\n".join(f"(PERSON{i % 3}) said line {i} of the meeting." for i in range(60))
    if caller == "tasks":
        monkeypatch.setattr(context, "largest_fitting_cut", spy)
        chars = context.ModelTokenizer(
            encode=lambda text: [ord(c) for c in text],
            decode=lambda ids: "".join(map(chr, ids)),
            max_length=10_000,
            default_max_gen_toks=16,
        )
        cut = context.budget_cut(chars, transcript, 400)
        assert len(cut) <= 400
    else:
        monkeypatch.setattr(mesa_fit, "largest_fitting_cut", spy)
        cut = mesa_fit.middle_cut(transcript, 100, lambda text: -(-len(text) // 4))
        assert -(-len(cut) // 4) <= 100
    assert calls == [1] and ELISION in cut
