"""The order ``make test`` hands its tests to xdist workers (tests/support/run_order.py)."""

from __future__ import annotations

import pytest

from tests.support.run_order import SHORT_TIER, TIER_SECONDS, deal, run_sizes


def _runs(tiers: list[int], workers: int) -> list[list[int]]:
    order = deal(tiers, workers)
    runs, start = [], 0
    for size in run_sizes(len(tiers), workers):
        runs.append([tiers[i] for i in order[start : start + size]])
        start += size
    return runs


def _work(run: list[int]) -> float:
    return sum(TIER_SECONDS[t] for t in run)


def test_run_sizes_are_what_worksteal_hands_out() -> None:
    assert run_sizes(2508, 2) == [1254, 1254]
    assert run_sizes(10, 3) == [3, 3, 4]
    assert sum(run_sizes(2509, 4)) == 2509


def test_one_worker_only_sorts_and_keeps_collection_order_within_a_tier() -> None:
    tiers = [5, 3, 0, 5, 2, 0]
    assert deal(tiers, 1) == [2, 5, 4, 1, 0, 3]


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_the_suites_mix_is_split_into_like_shares_with_the_engines_first(workers: int) -> None:
    # the tiers of issue 48's suite: 5 engine tests, 10 real-model, 1 engine of its own,
    # 56 other slow, 156 in lm_eval-launching modules, 2,280 unit tests
    tiers = [5] * 2280 + [3] * 56 + [0] * 5 + [4] * 156 + [1] * 10 + [2]
    order = deal(tiers, workers)
    assert sorted(order) == list(range(len(tiers)))
    runs = _runs(tiers, workers)
    assert runs[0][:5] == [0] * 5 and all(0 not in run for run in runs[1:])
    for run in runs:  # long tests first, then the short ones that stealing takes
        assert run == sorted(run)
    works = [_work(run) for run in runs]
    # Within one real-model test of each other (dealt in turn, the first run held 1.6 times
    # the second), except a first run whose engine tests alone exceed a share.
    engines = 5 * TIER_SECONDS[0] + len(runs[0][5:]) * TIER_SECONDS[5]
    rest = works[1:] if engines > sum(works) / workers else works
    assert max(rest) - min(rest) <= TIER_SECONDS[1], works
    assert max(works) == works[0] or max(works) - works[0] <= TIER_SECONDS[1], works


def test_a_run_never_takes_more_than_its_count() -> None:
    tiers = [1] * 7 + [5]  # more long tests than one run can hold
    runs = _runs(tiers, 2)
    assert [len(run) for run in runs] == [4, 4]
    assert sum(t < SHORT_TIER for run in runs for t in run) == 7


def test_engine_tests_that_overfill_the_first_run_stay_together() -> None:
    # e.g. ``pytest -n 2 tests/models/test_vllm_server.py``: three engine tests, runs of 1 and 2
    assert deal([0, 0, 0], 2) == [0, 1, 2]
    assert deal([5, 0, 0, 0, 3], 2) == [1, 2, 3, 4, 0]
