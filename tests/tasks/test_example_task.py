"""A task YAML from an ``--include_path`` folder runs with our task class, package untouched.

What makes it ours is the class its YAML names (``task_kind``) and, once it has run, the
documents its samples hold: the start-up judge check, ``report`` and ``score`` (given the
folder, as ``lm_eval`` was) treat it as they treat ``automin23_en``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.errors import JudgeNotReadyError
from elitr_bench.tasks.preflight import check_run_judges, our_task_kinds
from tests.conftest import run_lm_eval
from tests.judges.test_early_judge_check import run_marked
from tests.support.openai_server import LoopbackOpenAI

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "task"
OURS = Path(__file__).resolve().parents[2] / "elitr_bench" / "tasks"


def test_the_start_up_check_knows_an_include_path_task_by_its_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_defaults=False, include_path=[str(OURS), str(FOLDER)])
    kinds = our_task_kinds(["my_automin_en", "automin23_en", "elitr_qa_dev"], manager)
    assert kinds == {"my_automin_en": "minutes", "automin23_en": "minutes", "elitr_qa_dev": "qa"}
    # A YAML path works as for lm_eval --tasks PATH.
    assert our_task_kinds([str(FOLDER / "my_automin_en.yaml")]) == {"my_automin_en": "minutes"}
    # Its judge is checked as a minutes judge, before anything is built.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(JudgeNotReadyError, match="no API key") as err:
        check_run_judges(
            tasks=["my_automin_en"], model="hf", task_manager=manager,
            metadata={"judge": "openai:gpt-4o,rubric=gpt-afgr"},
        )  # fmt: skip
    assert "lexical" not in str(err.value)  # minutes: no QA-only keyless judge offered


@pytest.mark.slow
def test_a_missing_key_stops_an_include_path_task_before_the_model_is_built(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "built"
    judge = {"judge": "openai:gpt-4o,rubric=gpt-afgr"}
    args = ["--model", "marker-lm", "--include_path", str(FOLDER), "--tasks", "my_automin_en",
            "--limit", "1", "--metadata", json.dumps(judge)]  # fmt: skip
    proc = run_marked(marker, args, {"OPENAI_API_KEY": "", "ELITR_JUDGE": ""})
    assert proc.returncode != 0 and not marker.exists(), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("elitr-bench: error: judge openai:gpt-4o,rubric=gpt-afgr: no API key;")


@pytest.mark.slow
def test_an_include_path_task_reuses_the_minutes_class_and_its_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with LoopbackOpenAI() as server:
        server.handler = lambda request: "Adequacy: 8\nFluency: 9\nGrammatical correctness: 10"
        spec = f"openai:gpt-4-32k,rubric=gpt-art,filler=false,reask=0,base_url={server.base_url}"
        proc = run_lm_eval(
            [
                "--include_path", str(FOLDER), "--tasks", "my_automin_en", "--limit", "1",
                "--model", "elitr-replay", "--model_args", "system=gpt4",
                "--metadata", json.dumps({"judge": spec}),
                "--output_path", str(out), "--log_samples",
            ],
            env={"ELITR_JUDGE_CACHE": str(tmp_path / "cache.sqlite"), "ELITR_JUDGE": ""},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        # score re-judges it when told the folder, as lm_eval was; without it, says so.
        monkeypatch.setenv("ELITR_JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
        assert main(["score", str(out), "--judge", spec]) == 2
        assert "pass it to score as to lm_eval" in capsys.readouterr().err
        assert main(["score", str(out), "--judge", spec, "--include_path", str(FOLDER)]) == 0
    by = "openai:gpt-4-32k:gpt-art"
    for name in ("results_2*.json", "results_rescored_*.json"):
        [results_file] = out.rglob(name)
        results = json.loads(results_file.read_text())["results"]["my_automin_en"]
        assert results[f"rouge1,{by}"] > 0 and results[f"art_adequacy,{by}"] == 8.0

    # report and score read its samples as minutes, as they read automin23_en's.
    from elitr_bench.data.minutes import minutes_samples_files
    from elitr_bench.report.minutes import minutes_samples
    from elitr_bench.report.runs import foreign_input
    from elitr_bench.scoring.qa import find_samples, split_by_kind

    samples = minutes_samples_files(out)[0]  # the rescoring replaces the run's file
    assert [p.name for p in samples] == sorted(p.name for p in out.rglob("samples_*.jsonl"))[-1:]
    assert minutes_samples([out])[0] == samples
    assert foreign_input(out) is None
    [logged] = find_samples([out])  # lm-eval's own file, which score judges again
    assert split_by_kind([logged]) == ([], [logged])


def test_the_docs_list_exactly_the_files_the_example_needed() -> None:
    """``docs/extending.md`` "Adding a task" names every file of ``examples/task``."""
    import re

    doc = (FOLDER.parents[1] / "docs" / "extending.md").read_text(encoding="utf-8")
    block = doc.split("<!-- task-files -->")[1].split("<!-- /task-files -->")[0]
    listed = set(re.findall(r"^- `([^`]+)`:", block, re.M))
    files = {p.relative_to(FOLDER).as_posix() for p in FOLDER.rglob("*") if p.is_file()}
    assert listed == {f for f in files if "__pycache__" not in f}
