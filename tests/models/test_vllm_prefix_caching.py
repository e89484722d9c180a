"""``lm_eval --model vllm`` with automatic prefix caching, on SmolLM2, from vLLM's own venv.

vLLM hashes KV blocks by their token prefix, so with ``enable_prefix_caching=True`` the
transcript shared by a meeting's questions (and by the turns of a conversation) is computed
once; lm-eval passes unknown ``--model_args`` on to ``vllm.LLM``. The test drives the real
``lm_eval`` console script of the venv ``make install-vllm`` builds (vLLM's CPU wheel pins
its own torch and transformers), once for the three kinds of task, since loading the engine
is the cost: single-turn QA, multi-turn QA with the released answers as history, and Conv,
where each turn carries the model's own earlier answers. The 512-token window forces the
over-length cut, counted with vLLM's tokenizer. A fourth task, ``elitr_qa_dev`` under
``context_budget`` (a task YAML of the test's own, since ``--metadata`` is one for the
whole launch), checks the budget cut counted with vLLM's tokenizer in the same launch. The
answers are then compared with transformers' greedy decoding of the same prompts in this
venv.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import elitr_bench
from elitr_bench.middle_cut import ELISION
from tests.support.lm_eval_runs import lm_eval_args
from tests.support.vllm_server import engine_env

pytestmark = pytest.mark.slow

TASKS = ("elitr_qa_dev", "elitr_qa_mt_dev", "elitr_conv_dev")
WINDOW = 512
MAX_GEN = 32
#: Top-1 minus top-2 logit (float32) below which two kernels may pick different tokens.
NEAR_TIE = 0.05
#: ``elitr_qa_dev`` with its transcripts cut to ``BUDGET`` tokens (a name that no
#: ``samples_<task>_*`` glob of the other tasks matches).
BUDGET_TASK, BUDGET = "vllm_budget_qa", 150


def _budget_task(folder: Path) -> Path:
    """An include path holding ``elitr_qa_dev`` under ``context_budget``, as a user writes it."""
    base = Path(elitr_bench.__file__).parent / "tasks" / "elitr_qa" / "_elitr_qa_base.yaml"
    folder.mkdir()
    (folder / f"{BUDGET_TASK}.yaml").write_text(
        f"include: {base}\ntask: {BUDGET_TASK}\ntest_split: dev\n"
        f"metadata:\n  version: 1.0\n  context_budget: {BUDGET}\n"
    )
    return folder


def _samples(out: Path, tasks: tuple[str, ...] = TASKS) -> dict[str, list[dict[str, Any]]]:
    found = {}
    for task in tasks:
        path = next(out.rglob(f"samples_{task}_*.jsonl"))
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        found[task] = sorted(rows, key=lambda s: s["doc_id"])
    return found


def _prompt(sample: dict[str, Any]) -> str:
    return str(sample["arguments"]["gen_args_0"]["arg_0"])


def _run_vllm(vllm_venv: Path, smollm2: Path, out: Path) -> Path:
    """One ``lm_eval --model vllm`` launch on the three tasks; its output folder."""
    model_args = (
        f"pretrained={smollm2},dtype=float32,max_model_len={WINDOW},enable_prefix_caching=True,"
        # vLLM 0.32's CPU engine dies on a seeded request whose prefill is chunked
        f"enable_chunked_prefill=False,max_num_batched_tokens={WINDOW},enforce_eager=True"
    )
    args = lm_eval_args(
        "vllm", model_args, (*TASKS, BUDGET_TASK),
        limit=2, out=out, max_gen_toks=MAX_GEN, chat=True,
        metadata={"overlength": "truncate_middle", "judge": "none"},
        extra=["--include_path", str(_budget_task(out / "tasks"))],
    )  # fmt: skip
    args.insert(0, str(vllm_venv / "bin" / "lm_eval"))
    env = engine_env()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def test_vllm_runs_single_turn_multi_turn_and_conv(
    vllm_venv: Path, smollm2: Path, tmp_path: Path
) -> None:
    """One launch (loading the engine is the cost; one test, so xdist never splits it)."""
    vllm_run = _run_vllm(vllm_venv, smollm2, tmp_path)
    _check_tasks(vllm_run, smollm2)
    _check_budget(vllm_run, smollm2)
    _check_answers_are_transformers_greedy_answers(vllm_run, smollm2)


def _check_tasks(vllm_run: Path, smollm2: Path) -> None:
    from transformers import AutoTokenizer

    results = json.loads(next(vllm_run.rglob("results_*.json")).read_text())
    assert results["config"]["model_args"]["enable_prefix_caching"] is True
    samples = _samples(vllm_run)
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    for task in TASKS:
        assert len(samples[task]) == 2, task
        # the over-length policy cut every prompt once, sized with vLLM's tokenizer, so
        # that vLLM got the whole prompt (lm-eval would otherwise cut its start silently)
        assert results["results"][task]["overlength_truncated,none"] == 2, task
        for sample in samples[task]:
            prompt = _prompt(sample)
            assert prompt.startswith("<|im_start|>system\n") and prompt.count("[...]") == 1
            assert prompt.endswith("<|im_start|>assistant\n")
            assert sample["prompt_tokens"] + MAX_GEN <= WINDOW
            assert len(tokenizer(prompt)["input_ids"]) == sample["prompt_tokens"]
            answer = sample["resps"][0][0]
            assert answer.strip() and "<|im_end|>" not in answer
    # English, not token soup
    answers = [s["resps"][0][0] for rows in samples.values() for s in rows]
    assert sum(a.count(" the ") + a.count(" is ") for a in answers) >= 2, answers
    # multi-turn: turn 2's prompt extends turn 1's (one cut transcript) by the model's own
    # answer to turn 1 and turn 2's question
    for task in ("elitr_qa_mt_dev", "elitr_conv_dev"):
        first, second = sorted(samples[task], key=lambda s: int(s["doc"]["turn"]))
        assert _prompt(second).startswith(_prompt(first))
        history = _prompt(second)[len(_prompt(first)) :]
        assert history.endswith(f"{second['doc']['question']}<|im_end|>\n<|im_start|>assistant\n")
        assert history.startswith(first["resps"][0][0].strip() + "<|im_end|>\n"), history


def _check_budget(vllm_run: Path, smollm2: Path) -> None:
    """``context_budget`` cut each transcript to the budget, counted with vLLM's tokenizer.

    lm-eval's ``vllm`` model has ``tok_encode`` but no ``tok_decode``; the cut decodes with
    its tokenizer instead. Each prompt's transcript (between Fig. 5's opening and closing)
    holds at most ``BUDGET`` tokens, near all of it, and the sample records that count.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    results = json.loads(next(vllm_run.rglob("results_*.json")).read_text())
    assert results["configs"][BUDGET_TASK]["metadata"]["context_budget"] == BUDGET
    # the budget left the prompts inside the window: nothing more to cut
    assert results["results"][BUDGET_TASK]["overlength_truncated,none"] == 0
    rows = _samples(vllm_run, (BUDGET_TASK,))[BUDGET_TASK]
    assert len(rows) == 2
    for row in rows:
        prompt = _prompt(row)
        transcript = prompt.split("several lines.\n\n", 1)[1].split("\n\nAs a professional")[0]
        assert transcript.count(ELISION) == 1
        kept = len(tokenizer(transcript, add_special_tokens=False)["input_ids"])
        assert 0.8 * BUDGET <= kept <= BUDGET, kept
        assert row["transcript_tokens"] == kept
        assert row["resps"][0][0].strip()


def _check_answers_are_transformers_greedy_answers(vllm_run: Path, smollm2: Path) -> None:
    """Same prompts, float32: each token vLLM chose is transformers' greedy pick, or a tie.

    Checked on each task's second request, the one vLLM may serve from cached blocks (the
    transcript it shares with the first). One forward pass of transformers over the prompt
    followed by vLLM's answer gives the logits at every answer position: vLLM's token (and
    its end token where it stopped early) must be the top-1 there, or within ``NEAR_TIE``.
    vLLM's CPU kernels (its own attention and GEMMs) sum in another order than
    transformers' SDPA and matmuls,
    so logits differ in the last bits and a greedy pick may flip where the top two are
    that close; anywhere else a difference means vLLM computed something else (a wrong
    cache block, a cut prompt), and the test fails.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    end = int(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    same, ties = 0, []
    for rows in _samples(vllm_run).values():
        for sample in rows[1:]:
            prompt = tokenizer(_prompt(sample), add_special_tokens=False)["input_ids"]
            answer = tokenizer(sample["resps"][0][0], add_special_tokens=False)["input_ids"]
            chosen = answer + ([end] if len(answer) < MAX_GEN else [])
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([prompt + answer])).logits[0]
            steps = logits[len(prompt) - 1 : len(prompt) - 1 + len(chosen)]
            gaps = steps.max(dim=-1).values - steps[torch.arange(len(chosen)), chosen]
            flips = [(i, round(float(g), 5)) for i, g in enumerate(gaps) if g > 0]
            assert all(g < NEAR_TIE for _, g in flips), (flips, sample["resps"][0][0])
            same += not flips
            ties += flips
    print(f"vllm vs transformers greedy: {same}/{len(TASKS)} identical; ties at {ties}")
