"""A task YAML from an ``--include_path`` folder runs with our task class, package untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_lm_eval
from tests.support.openai_server import LoopbackOpenAI

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "task"


@pytest.mark.slow
def test_an_include_path_task_reuses_the_minutes_class_and_its_judge(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with LoopbackOpenAI() as server:
        server.handler = lambda request: "Adequacy: 8\nFluency: 9\nGrammatical correctness: 10"
        spec = f"openai:gpt-4-32k,rubric=gpt-art,filler=false,reask=0,base_url={server.base_url}"
        proc = run_lm_eval(
            [
                "--include_path", str(FOLDER), "--tasks", "my_automin_en", "--limit", "1",
                "--model", "elitr-replay", "--model_args", "system=gpt4",
                "--metadata", json.dumps({"judge": spec}),
                "--output_path", str(out),
            ],
            env={"ELITR_JUDGE_CACHE": str(tmp_path / "cache.sqlite"), "ELITR_JUDGE": ""},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    [results_file] = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())["results"]["my_automin_en"]
    by = "openai:gpt-4-32k:gpt-art"
    assert results[f"rouge1,{by}"] > 0 and results[f"art_adequacy,{by}"] == 8.0
