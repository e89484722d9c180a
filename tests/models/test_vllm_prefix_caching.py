"""``--model vllm`` with automatic prefix caching runs our tasks (skipped without vllm).

vLLM hashes KV blocks by their token prefix, so with ``enable_prefix_caching=True`` the
transcript shared by a meeting's questions (and by the turns of a conversation) is
computed once; lm-eval passes unknown ``--model_args`` on to ``vllm.LLM``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_lm_eval

pytest.importorskip("vllm")

pytestmark = pytest.mark.slow


def test_vllm_with_prefix_caching_runs_elitr_qa(sharp_llama: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    model_args = f"pretrained={sharp_llama},enable_prefix_caching=True,max_model_len=2048"
    args = [
        "--model", "vllm",
        "--model_args", model_args + ",dtype=float32",
        "--tasks", "elitr_qa_dev",
        "--limit", "4",
        "--gen_kwargs", "max_gen_toks=8",
        "--apply_chat_template",
        "--log_samples",
        "--output_path", str(out),
        "--metadata", json.dumps({"overlength": "truncate_middle", "judge": "none"}),
    ]  # fmt: skip
    proc = run_lm_eval(args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    assert "enable_prefix_caching=True" in str(results["config"]["model_args"])
    samples = [json.loads(x) for x in next(out.rglob("samples_*.jsonl")).read_text().splitlines()]
    assert len(samples) == 4 and all(isinstance(s["resps"][0][0], str) for s in samples)
