"""A task YAML from an ``--include_path`` folder runs with our task class, package untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_lm_eval

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "task"


@pytest.mark.slow
def test_an_include_path_task_reuses_the_minutes_class(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = run_lm_eval(
        [
            "--include_path", str(FOLDER), "--tasks", "my_automin_en", "--limit", "1",
            "--model", "elitr-replay", "--model_args", "system=gpt4",
            "--output_path", str(out),
        ]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    [results_file] = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())["results"]["my_automin_en"]
    assert results["rouge1,none"] > 0
