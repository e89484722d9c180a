"""Cost of the start-up hook on interpreter start (issue: must add under 50 ms).

Runs ``python -c pass`` with the hook on and off, interleaved in one run so machine
noise hits both alike, and prints medians, their difference and ratio.

Usage: python bench/startup_hook.py [--runs 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def _once(env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - start


def _import_cost_us() -> int:
    """Cumulative import time of our package at start-up, from ``-X importtime``.

    The off switch still imports the tiny hook module, so this is what the ``.pth``
    line costs in full.
    """
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"],
        capture_output=True,
        text=True,
        check=True,
    )
    total = 0
    for line in proc.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == "elitr_bench":
            total = int(parts[1])
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    on = {k: v for k, v in os.environ.items() if k != "ELITR_BENCH_NO_HOOK"}
    off = {**on, "ELITR_BENCH_NO_HOOK": "1"}
    with_hook, without = [], []
    for _ in range(args.runs):
        with_hook.append(_once(on))
        without.append(_once(off))
    a, b = statistics.median(with_hook), statistics.median(without)
    print(
        f"interpreter start, median of {args.runs}: hook on {a * 1e3:.1f} ms, off {b * 1e3:.1f} ms"
    )
    print(f"added by the hook: {(a - b) * 1e3:+.1f} ms (ratio on/off {a / b:.3f}; budget 50 ms)")
    print(
        f"start-up import of elitr_bench + hook (-X importtime): {_import_cost_us() / 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
