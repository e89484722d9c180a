"""The ``vllm apc`` row of the bench scripts: vLLM runs in its own venv, in a child process.

vLLM pins its own torch and transformers, so it cannot share the process (nor the venv) of
the in-process ``hf`` rows. A bench script with a vLLM row runs itself again with the
Python of ``make install-vllm``'s venv (``.venv-vllm`` in the checkout, or
``ELITR_BENCH_VLLM_VENV``, or ``--vllm-venv``) and a ``--vllm-child`` argument; the child
loads the engine, runs the row and writes what it measured to a JSON file the parent reads.
bench/real_model_cpu.py and bench/gpu_longcontext.py share this launcher.
"""

from __future__ import annotations

import argparse
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The row's name in the printed tables.
ROW = "vllm apc"
#: Environment variable naming the vLLM venv (the test suite reads the same one).
ENV_VENV = "ELITR_BENCH_VLLM_VENV"


def add_arguments(parser: argparse.ArgumentParser, child_help: str = argparse.SUPPRESS) -> None:
    """``--vllm-venv``, ``--no-vllm``, ``--vllm-args`` and the child's hidden ``--vllm-child``."""
    parser.add_argument(
        "--vllm-venv",
        default=os.environ.get(ENV_VENV) or str(ROOT / ".venv-vllm"),
        help=f"the venv of make install-vllm (the {ROW} row runs there; missing: skipped)",
    )
    parser.add_argument("--no-vllm", action="store_true", help=f"leave out the {ROW} row")
    parser.add_argument(
        "--vllm-args", default="", help="more vllm.LLM arguments, k=v,... (enforce_eager=True)"
    )
    parser.add_argument("--vllm-child", type=Path, help=child_help)


def extra_args(text: str) -> dict[str, Any]:
    """``--vllm-args`` (``k=v,k=v``) as ``vllm.LLM`` keyword arguments, typed as lm-eval does."""
    from lm_eval.utils import simple_parse_args_string

    return dict(simple_parse_args_string(text)) if text else {}


def missing(venv: str | Path) -> str | None:
    """The line a run without the row prints when ``venv`` has no Python (None: it has)."""
    if (Path(venv) / "bin" / "python").exists():
        return None
    return f"{ROW}: skipped (no vLLM venv at {venv}: make install-vllm)"


def child_env(kv_cache_gib: str) -> dict[str, str]:
    """This environment for the child, with what vLLM's CPU engine needs.

    ``VLLM_CPU_KVCACHE_SPACE`` (GiB; only the CPU engine reads it) bounds the KV cache,
    which otherwise takes a share of the machine's memory; an ``OMP_NUM_THREADS`` of ours
    is dropped, since vLLM's CPU worker binds its own OpenMP threads, unless the engine
    runs in the child itself (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, as in the test suite),
    where nothing binds them; and this checkout comes first on the path, so the venv's
    editable install imports this tree.
    """
    in_process = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0"
    env = {k: v for k, v in os.environ.items() if in_process or k != "OMP_NUM_THREADS"}
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", kv_cache_gib)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def run_child(
    script: str | Path, argv: Sequence[str], venv: str | Path, wrote: Path, kv_cache_gib: str
) -> str | None:
    """Run ``script argv`` with the venv's Python; None once it exited 0 and wrote ``wrote``.

    Otherwise the line the table prints instead of the row. The child's output goes to
    this process's terminal, so a failure's traceback is right above that line.
    """
    reason = missing(venv)
    if reason is not None:
        return reason
    python = Path(venv) / "bin" / "python"
    proc = subprocess.run(
        [str(python), str(script), *argv], env=child_env(kv_cache_gib), check=False
    )
    if proc.returncode != 0 or not wrote.exists():
        return f"{ROW}: failed (exit {proc.returncode}; its output is above)"
    return None
