"""Scale-out on lm-eval's own engine: two ``accelerate`` processes give one process's run.

A single-turn task (lm-eval deals its questions out across ranks) and a multi-turn task
(our tasks keep each meeting's conversation on one rank) run once in one process and once
under ``accelerate launch`` with two CPU processes (gloo); the samples files must hold
the same documents, prompts, answers and per-sample metrics, and the results the same
numbers. The model is the context-sensitive tiny Llama, so an answer changes when its
prompt does; prompts are cut to the context (``truncate_middle``), which is where a
meeting's questions on different ranks could be cut differently.

lm-eval's ``hf`` model splits the documents only when it sees several GPUs;
:mod:`tests.support.cpu_dp` is that model taking its rank from accelerate on CPU (see its
docstring), run through lm-eval's real command line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_lm_eval
from tests.support.commands import run_command

pytestmark = pytest.mark.slow

TASKS = ("elitr_qa_dev", "elitr_qa_mt_dev")
#: Compared per sample (everything but the order the ranks' samples were gathered in).
FIELDS = ("doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics")


def _args(model: str, model_path: Path, out: Path) -> list[str]:
    return [
        "--model", model,
        "--model_args", f"pretrained={model_path},max_length=1024,dtype=float32",
        "--tasks", ",".join(TASKS),
        "--limit", "20",  # meetings 1 (17 questions) and 2 (3): one per rank in multi-turn
        "--gen_kwargs", "max_gen_toks=4",
        "--metadata", json.dumps({"judge": "lexical", "overlength": "truncate_middle"}),
        "--log_samples", "--output_path", str(out),
    ]  # fmt: skip


def _run(out: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    (results_file,) = out.rglob("results_*.json")
    samples = {}
    for task in TASKS:
        (path,) = out.rglob(f"samples_{task}_*.jsonl")
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        samples[task] = sorted(rows, key=lambda r: r["doc_id"])
    return json.loads(results_file.read_text()), samples


def test_two_accelerate_processes_give_the_samples_and_scores_of_one(
    sharp_llama: Path, tmp_path: Path
) -> None:
    single = run_lm_eval(_args("hf", sharp_llama, tmp_path / "one"))
    assert single.returncode == 0, single.stderr[-3000:]

    env = {
        "ACCELERATE_USE_CPU": "1",  # accelerate's --cpu would start a single process
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu"]
    launch += ["--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
    launch += ["--dynamo_backend", "no", "-m", "tests.support.cpu_dp"]
    two = _args("hf-cpu-dp", sharp_llama, tmp_path / "two")
    multi = run_command([*launch, *two], env=env, cwd=ROOT, timeout=900)
    assert multi.returncode == 0, multi.stderr[-3000:]
    for task in TASKS:  # both ranks built their own requests
        assert f"Building contexts for {task} on rank 1" in multi.stderr

    one_results, one = _run(tmp_path / "one")
    two_results, two = _run(tmp_path / "two")
    for task in TASKS:
        assert [r["doc_id"] for r in two[task]] == list(range(20))
        for a, b in zip(one[task], two[task], strict=True):
            assert {f: a[f] for f in FIELDS} == {f: b[f] for f in FIELDS}, (task, a["doc_id"])
            assert {m: a[m] for m in a["metrics"]} == {m: b[m] for m in b["metrics"]}
        # The same numbers; a stderr summed in another order may differ in its last bit.
        # Numbers get a tolerance, everything else (alias, "N/A" stderrs) must be equal.
        one_row, two_row = one_results["results"][task], two_results["results"][task]
        assert one_row.keys() == two_row.keys()
        for key, value in one_row.items():
            if isinstance(value, float) and isinstance(two_row[key], float):
                assert value == pytest.approx(two_row[key], rel=1e-12), (task, key)
            else:
                assert value == two_row[key], (task, key)
        assert len({r["resps"][0][0] for r in one[task]}) > 10  # answers follow prompts
    assert one_results["n-samples"] == two_results["n-samples"]
    truncated = [r["overlength_truncated"] for t in TASKS for r in one[t]]
    assert sum(truncated) == 40  # every prompt was cut: the cut is what ranks must agree on
