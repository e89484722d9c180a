"""``--model hf-prefix`` through the real ``lm_eval`` CLI gives ``--model hf``'s samples.

Each run is a fresh interpreter, so this also proves the start-up hook registers the
model name after a plain install.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_lm_eval
from tests.support.lm_eval_runs import lm_eval_args, read_results, read_samples

pytestmark = pytest.mark.slow


TASKS = ("elitr_qa_dev", "elitr_conv_dev")  # single-turn, and multi-turn with own answers


def _run(model: str, checkpoint: Path, out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    args = lm_eval_args(
        model, f"pretrained={checkpoint},max_length=2048,dtype=float32", TASKS,
        limit=4, out=out, max_gen_toks=16, chat=True,
        metadata={"overlength": "truncate_middle", "judge": "none"},
        extra=["--device", "cpu", "--batch_size", "1"],
    )  # fmt: skip
    proc = run_lm_eval(args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_results(out), read_samples(out, TASKS)


def test_cli_samples_identical_to_hf(sharp_llama: Path, tmp_path: Path) -> None:
    _, want = _run("hf", sharp_llama, tmp_path / "hf")
    results, got = _run("hf-prefix", sharp_llama, tmp_path / "prefix")

    assert len(got) == len(want) == 8
    for ours, theirs in zip(got, want, strict=True):
        assert ours["doc"] == theirs["doc"]
        assert ours["arguments"] == theirs["arguments"]
        assert ours["resps"] == theirs["resps"]
        assert ours["filtered_resps"] == theirs["filtered_resps"]
    answers = [s["resps"][0][0] for s in got]
    assert len(set(answers)) >= 3 and all(answers)  # the model's answers depend on the prompt

    info = results["config"]["prefix_cache"]
    assert info["enabled"] and info["requests"] == 8
    # meeting 1's questions share one cut transcript, and each turn extends the last
    assert info["reused_tokens"] > 0
    assert info["prefilled_tokens"] + info["reused_tokens"] == info["prompt_tokens"]
