"""bench/real_model_cpu.py keeps working: the same code on the tiny random Llama, end to end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "real_model_cpu.py"


def test_the_bench_runs_both_back_ends_on_one_meeting(tiny_llama: Path) -> None:
    cmd = [
        sys.executable, str(SCRIPT), "--checkpoint", str(tiny_llama), "--meetings", "1",
        "--max-length", "1024", "--max-gen-toks", "4", "--tasks", "elitr_qa_mt_dev",
    ]  # fmt: skip
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=600, check=False, env=dict(os.environ)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    # meeting_en_dev_001 holds 17 questions; both back ends answered all of them alike
    assert "[elitr_qa_mt_dev] first 1 meeting(s), 17 questions" in out
    assert "answers identical hf vs hf-prefix: 17/17" in out, out
    ratios = [float(x) for x in re.findall(r"prefill tokens ([0-9.]+)x", out)]
    assert len(ratios) == 1 and ratios[0] > 3, out  # one cut transcript, reused every turn
