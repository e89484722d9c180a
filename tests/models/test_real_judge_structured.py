"""SmolLM2 as an ``hf:`` judge through the real ``lm_eval``: restatements decode under the schema.

Left free, SmolLM2 answers the restatement message in prose ("The final score is 10."),
which no strict reader takes; under the schema (xgrammar, ``structured=auto``) every
restatement is exactly the JSON object asked for. The answers are the released GPT-4
ones (``elitr-replay``), so the judge is the only model that runs; two questions whose
first replies end in prose (at this seed) keep it short.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from elitr_bench.judges.rubrics import GPT4
from tests.conftest import run_lm_eval
from tests.llm.test_structured_decoding import conforms_all


def _judged(checkpoint: Path, out: Path) -> list[dict[str, Any]]:
    # batch_size=1: each reply is sampled from the seed alone, never from how the two
    # requests happened to be batched, so the same replies end in prose on every run.
    judge = f"hf:{checkpoint},max_tokens=64,batch_size=1,reask=0,cache=off,progress=false"
    args = [
        "--model", "elitr-replay",
        "--model_args", "system=gpt-4",
        "--tasks", "elitr_qa_dev",
        "--samples", json.dumps({"elitr_qa_dev": [2, 3]}),
        "--log_samples",
        "--output_path", str(out),
        "--metadata", json.dumps({"judge": judge}),
    ]  # fmt: skip
    # One thread, as under xdist: the sampled replies are the same however pytest runs.
    proc = run_lm_eval(args, env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = next(out.rglob("samples_elitr_qa_dev_*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [json.loads(row["filtered_resps"][0][0])["judge"] for row in rows]


def test_every_restatement_of_a_real_hf_judge_parses(smollm2: Path, tmp_path: Path) -> None:
    judged = _judged(smollm2, tmp_path)
    samples = [s for j in judged for s in j["samples"]]
    restated = [s for s in samples if s["restated"]]
    assert len(samples) == 2 and restated, samples  # the restatement turn was reached
    schema = dict(GPT4.grammar.restatement.schema)  # type: ignore[union-attr]
    for sample in restated:
        text = sample.get("restatement") or sample["raw"]  # the restatement's own text
        obj = json.loads(text)
        # Exactly the schema's object, written compactly: the grammar's text, not the model's.
        assert conforms_all(obj, schema) and text == json.dumps(obj), sample
        assert sample["native"] == obj["score"] and not sample["reason"], sample
