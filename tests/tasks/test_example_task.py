"""A task YAML from an ``--include_path`` folder runs with our task class, package untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_lm_eval
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


def test_preflight_treats_an_include_path_task_of_our_class_as_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The class, not the folder, makes a task ours: its judge is checked before the model."""
    from lm_eval.tasks import TaskManager

    from elitr_bench.judges.errors import JudgeNotReadyError
    from elitr_bench.tasks.preflight import check_run_judges, our_task_kinds

    manager = TaskManager(include_path=str(FOLDER), include_defaults=False)
    assert our_task_kinds(["my_automin_en"], manager) == {"my_automin_en": "minutes"}

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(JudgeNotReadyError, match="OPENAI_API_KEY"):
        check_run_judges(
            tasks=["my_automin_en"],
            model="hf",
            metadata={"judge": "openai:gpt-4o,rubric=gpt-afgr"},
            task_manager=manager,
        )

    # Through the real CLI: the missing key stops the run in one line, before the model loads.
    marker = tmp_path / "built"
    env = {"OPENAI_API_KEY": "", "ELITR_JUDGE": ""}
    proc = subprocess.run(
        [
            sys.executable, "-m", "tests.support.marker_model", str(marker),
            "--model", "marker-lm", "--include_path", str(FOLDER), "--tasks", "my_automin_en",
            "--limit", "1", "--metadata", json.dumps({"judge": "openai:gpt-4o,rubric=gpt-afgr"}),
        ],
        capture_output=True, text=True, env={**os.environ, **env}, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode != 0 and not marker.exists(), proc.stderr[-2000:]
    assert "OPENAI_API_KEY" in proc.stderr.strip().splitlines()[-1]
