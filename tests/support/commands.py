"""Our console script and other commands, run the way a user's shell runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def elitr_bench_command() -> list[str]:
    """The ``elitr-bench`` console script of this interpreter (``python -m`` without one)."""
    exe = Path(sys.executable).with_name("elitr-bench")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "elitr_bench.cli"]


def run_command(
    argv: list[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``argv`` in this environment with ``env`` on top; output captured, any exit status."""
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def run_without_hook(
    argv: list[str], *, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``argv`` with the start-up hook off: as where ``.pth`` files are not read."""
    return run_command(argv, env={"ELITR_BENCH_NO_HOOK": "1"}, cwd=cwd, timeout=timeout)
