"""A batch file of ours runs unchanged through vLLM's offline ``run_batch`` (SmolLM2, CPU).

``elitr-bench score --batch-write`` writes the judge requests of the first six
``elitr_qa_dev`` questions; vLLM's batch runner, in the venv of ``make install-vllm``,
answers them with no server; ``--batch-read`` files the answers and writes what still
waits (restatements) until nothing does, and the rescored results hold the judge's
readings of SmolLM2's replies. Greedy and without re-asks, so two rounds at most, on one
engine start (tests/support/vllm_batch_rounds.py calls the runner's own ``run_batch``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.data.loaders import load_questions
from tests.conftest import ROOT
from tests.support.vllm_server import SERVED_NAME, engine_env

pytestmark = pytest.mark.slow

TASK = "elitr_qa_dev"
LIMIT = 6


def write_run(folder: Path) -> None:
    """The samples file lm_eval writes for ``elitr_qa_dev --limit 6`` (answers given here)."""
    folder.mkdir(parents=True)
    rows = []
    for i, question in enumerate(load_questions("qa", "dev")[:LIMIT]):
        doc = {**asdict(question), "mode": "st"}
        text = question.answer if i % 2 == 0 else "I could not find it in the meeting."
        rows.append(
            {
                "doc_id": i,
                "doc": doc,
                "target": question.answer,
                "arguments": {},
                "resps": [[text]],
                "filtered_resps": [json.dumps({"response": text, "judge": {"status": "skipped"}})],
                "filter": "judge",
                "metrics": ["judge_unscored"],
            }
        )
    name = f"samples_{TASK}_2024-05-01T10-00-00.123456.jsonl"
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def run_rounds(venv: Path, checkpoint: Path, plan: dict[str, object], folder: Path) -> list[dict]:
    """The rounds of vLLM's batch runner and ``score`` (tests/support/vllm_batch_rounds.py).

    One engine for all rounds, with the flags the suite's vLLM server gets, at a smaller
    window (the judge prompts are short), in vLLM's own engine processes: the batch
    runner's async engine took more CPU kept in one process (63 s against 41 s).
    """
    plan_file = folder / "plan.json"
    plan_file.write_text(json.dumps(plan))
    cmd = [
        str(venv / "bin" / "python"), str(ROOT / "tests" / "support" / "vllm_batch_rounds.py"),
        str(plan_file), "--",
        "--model", str(checkpoint), "--served-model-name", SERVED_NAME,
        "--dtype", "float32", "--max-model-len", "2048",
        "--no-enable-chunked-prefill", "--max-num-batched-tokens", "2048", "--enforce-eager",
    ]  # fmt: skip
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=engine_env(VLLM_ENABLE_V1_MULTIPROCESSING="1"),
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rounds: list[dict] = json.loads(proc.stdout.strip().splitlines()[-1])
    return rounds


def test_vllm_run_batch_answers_our_batch_file_and_the_scores_are_read_back(
    tmp_path: Path, vllm_venv: Path, smollm2: Path
) -> None:
    run = tmp_path / "run"
    write_run(run)
    judge = (
        f"openai:{SERVED_NAME},progress=false,cache={tmp_path / 'c.sqlite'},"
        "temperature=0,reask=0,max_tokens=96"
    )
    given = tmp_path / "in1.jsonl"
    assert main(["score", str(run), "--judge", judge, "--batch-write", str(given)]) == 0
    first = [json.loads(line) for line in given.read_text().splitlines()]
    assert len(first) == LIMIT and {line["body"]["model"] for line in first} == {SERVED_NAME}
    code = "import sys; from elitr_bench.cli import main; sys.exit(main(sys.argv[1:]))"
    score = [sys.executable, "-c", code, "score", str(run), "--judge", judge]
    plan = {"first": str(given), "folder": str(tmp_path), "score": score, "rounds": 3}
    rounds = run_rounds(vllm_venv, smollm2, plan, tmp_path)
    assert all(r["score_status"] == 0 for r in rounds), rounds[-1]["score_stderr"]
    answered_lines = last = 0
    for done in rounds:
        asked = [json.loads(line) for line in Path(done["input"]).read_text().splitlines()]
        outputs = [json.loads(line) for line in Path(done["output"]).read_text().splitlines()]
        assert {o["custom_id"] for o in outputs} == {line["custom_id"] for line in asked}
        last = sum(o["response"]["status_code"] == 200 for o in outputs)
        answered_lines += last
    assert not (tmp_path / f"in{len(rounds) + 1}.jsonl").exists(), "requests still wait"
    results = json.loads(next(run.glob("results_rescored_*.json")).read_text())
    usage = results["judge_usage"][TASK]
    # every reply SmolLM2 gave is read (scored or unscored with its reason), none lost: the
    # last round's as paid now, the earlier rounds' from the cache
    assert answered_lines >= LIMIT and usage["judged_now"] == LIMIT
    assert usage["batched"] == last and usage["cache_hits"] >= answered_lines - last
    rescored = next(p for p in run.glob(f"samples_{TASK}_*.jsonl") if "2024-05-01" not in p.name)
    statuses = [
        json.loads(json.loads(line)["filtered_resps"][0][0])["judge"]["status"]
        for line in rescored.read_text().splitlines()
    ]
    assert len(statuses) == LIMIT and set(statuses) <= {"scored", "unscored"}
