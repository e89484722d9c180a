"""What installing lm-eval-elitr costs every Python process at start-up.

Builds two twin environments (``tests/support/plugin_env.py``) that differ only in our
distribution's files: "with" has our ``.pth`` files and ``dist-info``, "without" has
nothing of ours. Each arm starts ``python -c pass`` as a whole process, interleaved in
one run so machine noise hits both alike; the medians of wall time and of CPU time
(user + system, steadier on a busy machine), their difference and ratio are printed.
This is done with the other distributions' ``.pth`` files kept (the environment as
installed) and without them, where our share is easiest to see.

It also prints a noise floor (the baseline twin against itself), the modules an
interpreter holds after start-up with the plugin but not without it (should be none),
and ``python -c "import lm_eval"`` both ways, which is where the hook does its work.

Usage: python bench/startup_hook.py [--runs 40]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from tests.support.plugin_env import Twin, clean_env, make_twins  # noqa: E402

MODULES = "import sys; print('\\n'.join(sorted(sys.modules)))"


def _once(twin: Twin, code: str, cwd: str) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one whole interpreter process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([str(twin.python), "-c", code], env=clean_env(), cwd=cwd, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


Medians = tuple[tuple[float, float], tuple[float, float]]


def _compare(pair: tuple[Twin, Twin], code: str, runs: int, cwd: str) -> Medians:
    """Medians of (wall, cpu) for each twin, runs interleaved."""
    first: list[tuple[float, float]] = []
    second: list[tuple[float, float]] = []
    for _ in range(runs):
        first.append(_once(pair[0], code, cwd))
        second.append(_once(pair[1], code, cwd))

    def med(xs: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.median(x[0] for x in xs), statistics.median(x[1] for x in xs)

    return med(first), med(second)


def _report(title: str, medians: Medians, runs: int, names: str = "with plugin/without") -> None:
    (wa, ca), (wb, cb) = medians
    left, right = names.split("/")
    print(f"{title} (median of {runs})")
    print(
        f"  wall: {left} {wa * 1e3:.1f} ms, {right} {wb * 1e3:.1f} ms, "
        f"difference {(wa - wb) * 1e3:+.1f} ms, ratio {wa / wb:.3f}"
    )
    print(
        f"  cpu:  {left} {ca * 1e3:.1f} ms, {right} {cb * 1e3:.1f} ms, "
        f"difference {(ca - cb) * 1e3:+.1f} ms, ratio {ca / cb:.3f}"
    )


def _modules(twin: Twin, cwd: str) -> set[str]:
    proc = subprocess.run(
        [str(twin.python), "-c", MODULES],
        env=clean_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(proc.stdout.split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--import-runs", type=int, default=5)
    parser.add_argument("--work", type=Path, help="folder for the twin venvs (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="elitr-startup-") as tmp:
        work = args.work or Path(tmp)
        cwd = tmp  # never the project folder: '' on sys.path would find elitr_bench there
        installed = make_twins(work / "installed")
        quiet = make_twins(work / "quiet", keep_other_pth=False)
        for pair in (installed, quiet):  # warm the file cache before measuring
            _compare(pair, "pass", 3, cwd)
        _report(
            "python -c pass, other .pth files kept",
            _compare(installed, "pass", args.runs, cwd),
            args.runs,
        )
        _report(
            "python -c pass, no other .pth files",
            _compare(quiet, "pass", args.runs, cwd),
            args.runs,
        )
        _report(
            "noise floor: the same no-plugin twin against itself",
            _compare((quiet[1], quiet[1]), "pass", args.runs, cwd),
            args.runs,
            names="without (A)/without (B)",
        )
        extra = _modules(quiet[0], cwd) - _modules(quiet[1], cwd)
        print(f"modules loaded at start-up only with the plugin: {sorted(extra) or 'none'}")
        _report(
            'python -c "import lm_eval" (the hook loads here)',
            _compare(quiet, "import lm_eval", args.import_runs, cwd),
            args.import_runs,
        )


if __name__ == "__main__":
    main()
