"""bench/gpu_longcontext.py keeps working: its CPU mode end to end, its FLOP count by hand."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_longcontext.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_longcontext", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_longcontext"] = module
    spec.loader.exec_module(module)
    return module


def test_forward_flops_by_hand() -> None:
    bench = _load()
    shape = bench.Shape(
        "t",
        layers=2,
        hidden=8,
        heads=2,
        kv_heads=1,
        mlp=16,
        vocab=10,
        rope_theta=1e4,
        max_positions=64,
    )
    # per layer: Q and O 8x8 each, K and V 8x4 each, MLP 3 x 8x16 -> 2*64 + 2*32 + 384 = 576
    assert shape.non_embedding_params() == 2 * 576
    # 3 new tokens after 5 cached: causal span 3*5 + 3*4/2 = 21 query-key pairs per head
    want = 2 * 1152 * 3 + 4 * 2 * 2 * 4 * 21 + 2 * 10 * 8
    assert bench.forward_flops(shape, new=3, cached=5) == want
    assert bench.forward_flops(shape, new=3, cached=5, batch=2) == 2 * want


def test_llama_shape_has_eight_billion_parameters() -> None:
    bench = _load()
    shape = bench.SHAPES["llama-3.1-8b"]
    embeddings = 2 * shape.vocab * shape.hidden  # input embedding and untied LM head
    norms = (2 * shape.layers + 1) * shape.hidden  # two RMSNorms per block and a final one
    assert shape.non_embedding_params() + embeddings + norms == 8_030_261_248  # model card


@pytest.mark.parametrize(
    ("name", "tflops"),
    [
        ("NVIDIA H100 80GB HBM3", 989.0),
        ("NVIDIA H100 PCIe", 756.0),
        ("NVIDIA H200", 989.0),
        ("NVIDIA A100-SXM4-80GB", 312.0),
        ("NVIDIA GeForce GTX 1080", None),
    ],
)
def test_peak_from_device_name(name: str, tflops: float | None) -> None:
    assert _load().peak_tflops(name) == tflops


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**(env or os.environ), "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=600
    )


def _vllm_venv_or_none() -> Path | None:
    """The vLLM venv; None (outside CI) when it is missing, as the ``vllm_venv`` fixture."""
    from tests.conftest import _in_ci
    from tests.support.vllm_server import missing_reason, vllm_venv

    venv = vllm_venv()
    reason = missing_reason(venv)
    if reason is not None and _in_ci():
        pytest.fail(f"vLLM unavailable in CI: {reason}", pytrace=False)
    return None if reason is not None else venv


@pytest.mark.slow
@pytest.mark.vllm  # its vllm apc row starts an engine: the longest test of the suite
def test_cpu_mode_runs_every_back_end_on_real_prompts(tmp_path: Path, tiny_llama: Path) -> None:
    """Every row of the tiny shape on the CPU, in one run (one engine start for vLLM).

    Stock hf at batch 1 and 2, hf-prefix serial and batched: same answers, fewer prefills.
    Then the ``vllm apc`` row (skipped with a line outside CI without the vLLM venv): the
    parent sends every call's prompt ids and ``hf b1``'s decoded token counts; the child
    records how many tokens vLLM generated per request. They must be equal, the counts
    must be ``hf b1``'s (the random model and its end hook decode the single-turn prompts
    again here, whose order lm-eval sorts by length), the conversation's second turn must
    find its transcript in vLLM's prefix cache, and the row must print its wall time and
    its ratio to stock's best.
    """
    from tests.support.vllm_server import engine_env

    venv = _vllm_venv_or_none()
    env = engine_env()  # the vllm apc row's engine in its child process, on one thread
    vllm = ["--vllm-venv", str(venv), "--vllm-keep", str(tmp_path)] if venv else ["--no-vllm"]
    proc = _run(
        # the shortest dev transcript (the prefills' cost grows with its square), 3 questions
        "--shape", "tiny", "--meeting-ids", "meeting_en_dev_006", "--questions", "3",
        "--max-gen-toks", "6",
        "--mean-answer-tokens", "5", "--stock-batch-sizes", "2", "--modes", "st,mt", *vllm,
        # the tokenizer the script trains by default, as the worker's fixture built it
        "--tokenizer", str(tiny_llama),
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout
    assert "say nothing about speed" in out
    ours = "hf b1, hf b2, hf-prefix serial, hf-prefix batched"
    tail = ", vllm apc (in " if venv else "\n"
    assert f"back ends: {ours}{tail}" in out
    for mode in ("st", "mt"):
        block = out.split(f"\n[{mode}]")[1]
        assert "stock's best: hf b" in block
        rows = {
            m.group(1): (int(m.group(2).replace(",", "")), m.group(3), m.group(4))
            for m in re.finditer(
                r"^\s+(hf b\d+|hf-prefix \w+)\s+([\d,]+)\s.*\s(\d+/\d+)\s+([\d.]+x)$", block, re.M
            )
        }
        assert set(rows) == {"hf b1", "hf b2", "hf-prefix serial", "hf-prefix batched"}
        assert all(same == "3/3" for _, same, _ in rows.values()), rows
        # The questions share the transcript: hf-prefix prefills it once, hf three times.
        for name in ("hf-prefix serial", "hf-prefix batched"):
            assert rows["hf b1"][0] > 1.8 * rows[name][0] > 0
        assert "1.00x" in {speed for _, _, speed in rows.values()}  # stock's best itself
    if venv is None:
        pytest.skip("vllm apc row not checked: no vLLM venv (make install-vllm)")
    _check_vllm_row(out, tmp_path)


def _check_vllm_row(out: str, kept: Path) -> None:
    import torch
    from transformers import AutoTokenizer

    assert re.search(
        r"^vllm apc: vLLM \S+, engine loaded in \d+ s \(not in the ratios\); .* decoded hf b1's "
        r"token count for 6/6 requests; answers not compared",
        out,
        re.M,
    ), out[-3000:]
    for mode in ("st", "mt"):
        block = out.split(f"\n[{mode}]")[1]
        row = re.search(r"^\s+vllm apc\s+([\d,]+)\s+([\d.]+)\s.*\sn/a\s+([\d.]+x)$", block, re.M)
        assert row, block
    sent = json.loads((kept / "requests.json").read_text())
    replies = json.loads((kept / "replies.json").read_text())
    assert list(replies["modes"]) == ["st", "mt"]
    for mode in ("st", "mt"):
        calls = zip(sent["modes"][mode], replies["modes"][mode], strict=True)
        assert all(reply["generated"] == call["counts"] for call, reply in calls)
    # Prefix caching is on: turn 2 of the conversation prefills little beyond turn 1's prompt.
    (turn2_ids,) = sent["modes"]["mt"][1]["prompts"]
    assert 0 < replies["modes"]["mt"][1]["prefill_tokens"] < len(turn2_ids) / 4
    (st,) = sent["modes"]["st"]
    assert len(set(st["counts"])) > 1  # answers of different lengths: no order hides a swap
    bench = _load()
    tok = AutoTokenizer.from_pretrained(kept / "model")
    model = bench.build_model(bench.SHAPES["tiny"], len(tok), "cpu", torch.float32)
    bench.AnswerEnd(mean=5, eos=tok.eos_token_id).attach(model)
    for ids, count in zip(st["prompts"], st["counts"], strict=True):
        answer = model.generate(
            input_ids=torch.tensor([ids]), max_new_tokens=6, do_sample=False,
            eos_token_id=tok.eos_token_id, pad_token_id=tok.eos_token_id,
        )  # fmt: skip
        assert answer.shape[1] - len(ids) == count


def test_answer_end_hook_ends_a_real_batch_where_each_row_ends_alone() -> None:
    """The random model, hook attached, decodes a left-padded batch on the CPU.

    Every row's answer (up to its end token) is the one the same prompt gets decoded
    alone, and the answers end at different lengths: the end token depends on each row's
    own tokens and positions, not on the padding or the other rows.
    """
    import torch

    bench = _load()
    vocab, eos = 500, 2
    model = bench.build_model(bench.SHAPES["tiny"], vocab, "cpu", torch.float32)
    bench.AnswerEnd(mean=3, eos=eos).attach(model)
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(10, vocab, (n,), generator=gen).tolist() for n in (5, 17, 11, 23, 8)]

    def decode(rows: list[list[int]]) -> list[list[int]]:
        width = max(map(len, rows))
        ids = torch.full((len(rows), width), eos)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for b, row in enumerate(rows):
            ids[b, width - len(row) :] = torch.tensor(row)
            mask[b, width - len(row) :] = 1
        out = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=12, do_sample=False,
            pad_token_id=eos, eos_token_id=eos,
        )  # fmt: skip
        answers = []
        for answer in out[:, width:].tolist():
            end = answer.index(eos) + 1 if eos in answer else len(answer)
            answers.append(answer[:end])  # after its end token a row is padding
        return answers

    alone = [decode([p])[0] for p in prompts]
    assert decode(prompts) == alone
    ended = [a for a in alone if a[-1] == eos]
    assert ended and len({len(a) for a in ended}) > 1  # ends, at varied lengths


def test_gpu_shape_without_gpu_says_how_to_run() -> None:
    proc = _run("--shape", "llama-3.1-8b", "--modes", "st")
    assert proc.returncode == 0  # a skip, so that `make bench` passes on CPU machines
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "skipped: no CUDA GPU here, and --shape llama-3.1-8b needs one; --shape tiny runs the "
        "same code on the CPU (its numbers say nothing about speed)"
    ]
