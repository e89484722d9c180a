"""lm-eval's own test suite with and without lm-eval-elitr installed: same pass/fail set?

Runs the suite twice, in twin environments that differ only in our distribution's files
(``tests/support/plugin_env.py``: the "without" twin has no ``.pth`` of ours, no
``dist-info``, no editable path), offline (``HF_HUB_OFFLINE=1``), each test under a
timeout, and prints the outcome counts of both runs and every test whose outcome
differs. Exit status 1 when an outcome differs, 0 otherwise (and when skipped).

lm-eval's tests are not installed with lm-eval, so fetch the ones of the installed
version first (``pip show lm-eval``), e.g. for 0.4.13::

    pip download lm-eval==0.4.13 --no-deps --no-binary :all: -d /tmp/lm-eval-sdist
    tar -xzf /tmp/lm-eval-sdist/lm_eval-0.4.13.tar.gz -C /tmp/lm-eval-sdist
    # the sdist carries the top-level test files only; conftest, helpers and test
    # configs come from a git checkout of lm-evaluation-harness near that version:
    git -C lm-evaluation-harness archive HEAD tests | tar -x -C /tmp/lm-eval-tests
    cp /tmp/lm-eval-sdist/lm_eval-0.4.13/tests/*.py /tmp/lm-eval-tests/tests/
    python bench/lm_eval_suite.py --tests /tmp/lm-eval-tests/tests

Without ``--tests`` (or ``LM_EVAL_TESTS``) pointing at an existing folder the script
says so and exits 0, so ``make bench`` skips it. Tests that need the network fail or
error the same way in both runs; only a difference between the runs counts.

Usage: python bench/lm_eval_suite.py --tests DIR [--timeout 300] [-- PYTEST_ARGS...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from tests.support.plugin_env import Twin, clean_env, make_twins  # noqa: E402


def outcomes(junit: Path) -> dict[str, str]:
    """Test id -> ``passed``/``failed``/``error``/``skipped`` from a JUnit XML report."""
    result: dict[str, str] = {}
    if not junit.exists():
        return result
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        state = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                state = {"failure": "failed"}.get(child.tag, child.tag)
                break
        result[name] = state
    return result


def run_suite(twin: Twin, tests: Path, junit: Path, timeout: int, extra: list[str]) -> float:
    """Run pytest on ``tests`` with ``twin``'s interpreter; returns the wall time."""
    cmd = [
        str(twin.python),
        "-m",
        "pytest",
        str(tests),
        "-q",
        "-p",
        "no:cacheprovider",
        "--continue-on-collection-errors",
        f"--timeout={timeout}",
        f"--junitxml={junit}",
        *extra,
    ]
    env = clean_env(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    start = time.perf_counter()
    with (junit.with_suffix(".log")).open("w") as log:
        subprocess.run(cmd, cwd=tests.parent, env=env, stdout=log, stderr=subprocess.STDOUT)
    return time.perf_counter() - start


def compare(with_plugin: dict[str, str], without: dict[str, str]) -> list[tuple[str, str, str]]:
    """Tests whose outcome differs: ``(test, with plugin, without)``."""
    names = sorted(set(with_plugin) | set(without))
    return [
        (n, with_plugin.get(n, "absent"), without.get(n, "absent"))
        for n in names
        if with_plugin.get(n, "absent") != without.get(n, "absent")
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=Path, default=os.environ.get("LM_EVAL_TESTS"))
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test")
    parser.add_argument("--work", type=Path, help="folder for the twins and reports")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()
    tests: Path | None = args.tests
    if tests is None or not (tests / "conftest.py").is_file():
        print(
            f"lm-eval test files not found ({tests or 'pass --tests DIR'}): skipped; "
            "see this script's docstring for how to fetch them"
        )
        return 0
    tests = tests.resolve()
    work = args.work or Path(tempfile.mkdtemp(prefix="elitr-lm-eval-suite-"))
    twins = make_twins(work / "envs")
    results: list[dict[str, str]] = []
    for twin in twins:
        junit = work / f"{twin.label.replace(' ', '-')}.xml"
        seconds = run_suite(twin, tests, junit, args.timeout, list(args.pytest_args))
        found = outcomes(junit)
        counts = Counter(found.values())
        print(
            f"{twin.label}: {len(found)} tests in {seconds:.0f} s: "
            + ", ".join(f"{k} {counts[k]}" for k in ("passed", "failed", "error", "skipped"))
            + f" (log {junit.with_suffix('.log')})"
        )
        results.append(found)
    differences = compare(results[0], results[1])
    if not differences:
        print("same outcome for every test with and without the plugin")
        return 0
    print(f"{len(differences)} test(s) differ (test: with plugin / without):")
    for name, a, b in differences:
        print(f"  {name}: {a} / {b}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
