"""The score-versus-context curve of a real model, as a model developer draws it.

SmolLM2-135M-Instruct through the real ``lm_eval`` CLI at two context budgets and on the
retrieval task, then ``elitr-bench report``: only a real tokenizer and chat template show
that the budgets hold in the prompts the model saw. Kept small (one question per task,
four new tokens, budgets of a few hundred tokens) so the suite stays quick on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from elitr_bench.cli import main
from elitr_bench.tasks.context import ELISION
from tests.conftest import run_lm_eval


def _run(checkpoint: Path, out: Path, tasks: str, metadata: dict[str, Any]) -> None:
    args = [
        "--model", "hf",
        "--model_args", f"pretrained={checkpoint},dtype=float32",
        "--device", "cpu",
        "--batch_size", "1",
        "--tasks", tasks,
        "--limit", "1",
        "--gen_kwargs", "max_gen_toks=4",
        "--apply_chat_template",
        "--log_samples",
        "--output_path", str(out),
        "--metadata", json.dumps({"judge": "lexical", **metadata}),
    ]  # fmt: skip
    proc = run_lm_eval(args)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _samples(out: Path, task: str) -> list[dict[str, Any]]:
    path = next(out.rglob(f"samples_{task}_*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_two_budgets_and_retrieval_draw_the_curve(smollm2: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    # one --metadata for both kinds of task: elitr_qa_rag_dev reads rag_budget only
    small, large = tmp_path / "b256", tmp_path / "b512"
    both = {"context_budget": 256, "rag_budget": 256}
    _run(smollm2, small, "elitr_qa_dev,elitr_qa_rag_dev", both)
    _run(smollm2, large, "elitr_qa_dev", {"context_budget": 512})
    for out, budget in ((small, 256), (large, 512)):
        (row,) = _samples(out, "elitr_qa_dev")
        prompt = row["arguments"]["gen_args_0"]["arg_0"]
        transcript = prompt.split("several lines.\n\n", 1)[1].split("\n\nAs a professional")[0]
        assert transcript.count(ELISION) == 1
        assert len(tokenizer(transcript, add_special_tokens=False)["input_ids"]) <= budget
        seen = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        assert row["prompt_tokens"] == len(seen)  # what the model saw
    (rag,) = _samples(small, "elitr_qa_rag_dev")
    assert rag["doc"]["rag_tokens"] <= 256 and rag["doc"]["rag_passages"]

    report = tmp_path / "report"
    assert main(["report", str(small), str(large), "--out", str(report)]) == 0
    assert (report / "figures" / "context.png").stat().st_size > 10_000
    tables = json.loads((report / "report.json").read_text())["tables"]
    points = [(r["kind"], r["tokens"]) for r in tables["context_judge_score"]["records"]]
    assert points == [("budget", 256), ("budget", 512), ("retrieval", 256)]
