"""Through the real ``lm_eval`` CLI: a broken judge loses no answer; our errors are one line.

Two subprocess runs of the fast replay model: one whose loopback judge starts refusing
requests part-way (then ``elitr-bench score``, as the final line says, finishes it), and
one with a misspelt ``--metadata`` key.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli.score import main
from elitr_bench.data.run_files import parse_samples_name
from elitr_bench.judges.metrics import parse_filtered
from tests.conftest import run_lm_eval
from tests.judges.conftest import TEST_KEY, response_in
from tests.judges.test_judge_failures import FailAfter
from tests.support.openai_server import LoopbackOpenAI

pytestmark = pytest.mark.slow

REPLAY = ["--model", "elitr-replay", "--model_args", "system=gpt-4"]


def _samples(out: Path, rescored: bool = False) -> dict[str, list[dict[str, Any]]]:
    found = {}
    for path in out.rglob("samples_*.jsonl"):
        name = parse_samples_name(path)
        if name is not None and name.rescored == rescored:
            found[name.task] = [json.loads(line) for line in path.read_text().splitlines()]
    return found


def test_judge_failing_mid_run_keeps_answers_and_score_finishes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = FailAfter(4, status=503)  # 6 answers: 4 judged, then the judge is down
    with LoopbackOpenAI(script, model="gpt-4-0613") as server:
        judge = f"openai:gpt-4-0613,base_url={server.base_url},retries=0,concurrency=1"
        proc = run_lm_eval(
            [
                *REPLAY,
                "--tasks",
                "elitr_qa",
                "--limit",
                "3",
                "--log_samples",
                "--output_path",
                str(out),
                "--metadata",
                json.dumps({"judge": judge}),
            ]
        )
        assert proc.returncode == 3, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("elitr-bench: error: the judge failed on 2 of 6 answers"), last
        assert proc.stderr.count("elitr-bench: error:") == 1, proc.stderr[-3000:]  # once, last
        assert "HTTP 503" in last and TEST_KEY not in proc.stderr + proc.stdout

        # Every answer is in the samples; the unjudged ones say why, with no score.
        results = json.loads(next(out.rglob("results_*.json")).read_text())
        samples = _samples(out)
        assert {t: len(rows) for t, rows in samples.items()} == {
            "elitr_qa_dev": 3,
            "elitr_qa_test": 3,
        }
        judged = [parse_filtered(r["filtered_resps"]) or {} for r in samples["elitr_qa_test"]]
        errors = [j for j in judged if j["judge"]["status"] == "error"]
        assert len(errors) == 2 and all("HTTP 503" in j["judge"]["reason"] for j in errors)
        assert all(j["judge"]["score"] is None and j["response"] for j in errors)
        test = results["results"]["elitr_qa_test"]
        by = "openai:gpt-4-0613"  # the filter name says who judged
        assert (
            test[f"judge_errors,{by}"] == 2
            and results["results"]["elitr_qa_dev"][f"judge_errors,{by}"] == 0
        )
        assert test[f"f1,{by}"] > 0 and results["n-shot"]["elitr_qa_test"] == 0
        for path in out.rglob("*"):
            if path.is_file():
                assert TEST_KEY not in path.read_text(errors="ignore"), path

        # The line's own command finishes the run: exactly the two missing items are sent.
        command = shlex.split(last.split("finish with: ", 1)[1])
        assert command[:3] == ["elitr-bench", "score", str(out)]
        script.healthy = True
        before = len(server.requests)
        assert main(command[1:]) == 0
        sent = sorted(response_in(r) for r in server.requests[before:])
    assert sent == sorted(j["response"] for j in errors)
    done = json.loads(next(out.rglob("results_rescored_*.json")).read_text())
    for task in ("elitr_qa_dev", "elitr_qa_test"):
        assert done["results"][task][f"judge_errors,{by}"] == 0
        assert done["results"][task][f"f1,{by}"] == results["results"][task][f"f1,{by}"]
    final = _samples(out, rescored=True)
    test_scores = [row["judge_score"] for row in final["elitr_qa_test"]]
    assert len(test_scores) == 3
    assert done["results"]["elitr_qa_test"][f"judge_score,{by}"] == pytest.approx(
        sum(test_scores) / 3
    )
    dev_score = done["results"]["elitr_qa_dev"][f"judge_score,{by}"]
    assert dev_score == results["results"]["elitr_qa_dev"][f"judge_score,{by}"]  # kept as is
    assert done["results"]["elitr_qa"][f"judge_score,{by}"] == pytest.approx(
        (dev_score + sum(test_scores) / 3) / 2
    )
    assert done["config"]["model"] == "elitr-replay"
    # A complete results file: the run's own sections, every metric, the real directions.
    for section in ("n-samples", "n-shot", "versions", "task_hashes", "group_subtasks"):
        assert done[section] == results[section], section
    assert set(done["results"]["elitr_qa_test"]) == set(results["results"]["elitr_qa_test"])
    assert done["higher_is_better"] == results["higher_is_better"]


def test_misspelt_option_is_one_line_without_traceback() -> None:
    proc = run_lm_eval(
        [
            *REPLAY,
            "--tasks",
            "elitr_qa_dev",
            "--limit",
            "1",
            "--metadata",
            json.dumps({"judg": "replay"}),
        ]
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        "elitr-bench: error: --metadata key 'judg' is not an option of the ELITR tasks; "
        "did you mean 'judge' (judge spec: openai:MODEL, hf:PATH, replay, lexical or none)? "
        """e.g. --metadata '{"judge": "replay"}'"""
    )
