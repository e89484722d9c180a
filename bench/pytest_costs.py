"""What each test costs: a pytest plugin writing every test's wall and CPU seconds.

``python -m pytest -p bench.pytest_costs -n 0 tests/X.py`` appends one line per test to
``$ELITR_TEST_COSTS`` (default ``test-costs.tsv``): the test id, its wall seconds and the
CPU seconds of the pytest process and all its descendants alive at the end (an lm_eval fork
server and the launches it forked, a vLLM server, any subprocess), over the test's set-up,
call and tear-down. On a shared machine the wall time grows with the load and the CPU time
hardly does, so the CPU seconds are what to compare before and after a change. A fixture
of module or session scope counts in the first test that uses it. Linux only (``/proc``).
The table in docs/extending.md#development was measured with it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator

import pytest

_TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and its live descendants, their reaped children included."""
    procs: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rindex(")") + 2 :].split()
        # fields[1] is the parent; [11:15] utime, stime, cutime, cstime (stat's 14-17)
        procs[int(name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in procs.items():
        children.setdefault(parent, []).append(pid)
    total, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen or pid not in procs:
            continue
        seen.add(pid)
        total += procs[pid][1]
        stack.extend(children.get(pid, []))
    return total / _TICKS


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """Time one test's set-up, call and tear-down; append its line."""
    cpu, wall = tree_cpu(os.getpid()), time.monotonic()
    yield
    cpu, wall = tree_cpu(os.getpid()) - cpu, time.monotonic() - wall
    with open(os.environ.get("ELITR_TEST_COSTS", "test-costs.tsv"), "a") as handle:
        handle.write(f"{item.nodeid}\t{wall:.2f}\t{cpu:.2f}\n")


if __name__ == "__main__":  # `make bench` runs every script here: say how this one is used
    print(__doc__)
