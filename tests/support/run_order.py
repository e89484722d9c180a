"""The order ``make test`` hands tests to its xdist workers: long ones first, loads balanced.

``--dist worksteal`` splits the collected list into W contiguous runs of equal *count*
(xdist's ``check_schedule``: the first idle worker gets ``len // W`` items, the next
``len // (W - 1)`` of the rest, ...), and a worker that empties its queue later steals half
of the longest remaining queue, counted in tests, from its end. So the order decides
how the CPU time is split: runs of equal count can hold very unequal work (the vLLM
engine tests alone are a quarter of the suite), and a long test left at the end of a run
keeps one core busy while the other idles.

:func:`deal` takes each test's tier (0 = an engine start on vLLM's venv, ..., 5 = a unit
test) and returns the order: the engine tests stay together at the head of the first run
(they share one server and read its log as theirs alone), the other long tiers go one by
one to the run with the least estimated work (longest first), and the short tiers fill
each run up to its count, so every run starts with its long tests and ends with the short
ones that stealing moves.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Mean CPU seconds of a test of each tier (test + every process it started), measured in
#: a whole ``make test`` run with ``-p bench.pytest_costs`` (issue 48's code, 2 cores):
#: engine tests 41, real model 19, the one other vLLM engine 32, other ``slow`` 5.6,
#: modules launching ``lm_eval`` 0.25, the rest 0.1.
TIER_SECONDS: tuple[float, ...] = (41.0, 19.0, 32.0, 5.6, 0.25, 0.1)
#: Tiers from this one on fill the runs up to their counts instead of being balanced.
SHORT_TIER = 4


def run_sizes(total: int, workers: int) -> list[int]:
    """How many tests xdist's worksteal hands each worker at first, in order."""
    sizes = []
    left = total
    for i in range(workers):
        size = left // (workers - i)
        sizes.append(size)
        left -= size
    return sizes


def deal(tiers: Sequence[int], workers: int) -> list[int]:
    """The indices of ``tiers`` in the order to collect them for ``workers`` workers.

    Args:
        tiers: Each test's tier, in collection order (0 = engine start, 5 = unit test).
        workers: The xdist worker count (1: only sorted by tier).

    Returns:
        A permutation of ``range(len(tiers))``: stably sorted by tier when ``workers`` is
        1; otherwise W contiguous runs of :func:`run_sizes`, the first starting with every
        tier-0 test.
    """
    order = sorted(range(len(tiers)), key=lambda i: tiers[i])
    if workers <= 1 or len(order) < workers:
        return order
    sizes = run_sizes(len(order), workers)
    runs: list[list[int]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    long_tests = [i for i in order if tiers[i] < SHORT_TIER]
    for i in long_tests:
        if tiers[i] == 0:
            k = 0
        else:  # the least loaded run that still has room
            k = min(
                (w for w in range(workers) if len(runs[w]) < sizes[w]),
                key=lambda w: (load[w], w),
            )
        runs[k].append(i)
        load[k] += TIER_SECONDS[tiers[i]]
    # The short tests are dealt round-robin to the runs with room, so each run gets a like
    # mix of the tiers. They run out first when the engine tests alone overfill the first
    # run (a selection of mostly vLLM tests): its count cannot hold them all together.
    short = [i for i in order if tiers[i] >= SHORT_TIER]
    taken = 0
    while taken < len(short):
        for w in range(workers):
            if taken < len(short) and len(runs[w]) < sizes[w]:
                runs[w].append(short[taken])
                taken += 1
    return [i for run in runs for i in run]
