"""``elitr-bench score`` writes what lm-eval would have written with that judge.

A replayed run is saved in lm-eval's own layout (its ``EvaluationTracker``) twice: judged
by the replay judge as it ran, and ``--predict_only``. Scoring the predict-only run with
the replay judge must give the judged run's results file: every metric, the groups,
``n-samples``, the real ``higher_is_better``, and samples that lm-eval's tools read as the
task. Then the refusals: files that are empty or are no samples of ours.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli.score import main
from elitr_bench.data.run_files import parse_samples_name
from elitr_bench.report import load_runs

TASKS = ["elitr_qa", "elitr_qa_mt_dev"]
LEAVES = ("elitr_qa_dev", "elitr_qa_test", "elitr_qa_mt_dev")


def _save_run(out: Path, metadata: Mapping[str, Any], predict_only: bool = False) -> Path:
    """Run the GPT-4 replay in-process and save it as ``lm_eval --output_path`` does."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    args = {"system": "gpt-4"}
    res = simple_evaluate(
        model="elitr-replay",
        model_args=args,
        tasks=TASKS,
        task_manager=TaskManager(include_defaults=False, metadata={**metadata, **args}),
        log_samples=True,
        limit=5,
        predict_only=predict_only,
    )
    assert res is not None
    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.log_experiment_args("elitr-replay", args, None, None, False)
    samples = res.pop("samples")
    tracker.save_results_aggregated(results=res, samples=samples)
    for task in res["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    (folder,) = out.iterdir()
    return folder


def _as_lm_eval_predict_only(folder: Path) -> None:
    """Rewrite a predict-only run as lm-eval writes one for its own tasks (``bypass``)."""
    (results_file,) = folder.glob("results_*.json")
    results = json.loads(results_file.read_text())
    for task in LEAVES:
        results["results"][task] = {
            "alias": task,
            "sample_len": results["results"][task]["sample_len"],
            "bypass,none": 999,
            "bypass_stderr,none": "N/A",
        }
        results["configs"][task]["metric_list"] = [{"metric": "bypass"}]
    results["higher_is_better"] = {t: {"bypass": True} for t in results["higher_is_better"]}
    results_file.write_text(json.dumps(results))
    for path in folder.glob("samples_*.jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            for metric in row.pop("metrics"):
                row.pop(metric, None)
            row.update({"metrics": ["bypass"], "bypass": None})
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = _save_run(tmp_path_factory.mktemp("judged"), {"judge": "replay"})
    (results_file,) = folder.glob("results_*.json")
    return dict(json.loads(results_file.read_text()))


@pytest.mark.parametrize("shape", ["ours", "lm-eval's own"])
def test_scoring_a_predict_only_run_gives_the_judged_runs_results(
    tmp_path: Path, judged_run: dict[str, Any], shape: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from datasets import load_dataset
    from lm_eval.utils import get_file_datetime, get_file_task_name, make_table

    folder = _save_run(tmp_path / "out", {}, predict_only=True)
    if shape != "ours":
        _as_lm_eval_predict_only(folder)
    assert main(["score", str(tmp_path / "out"), "--judge", "replay"]) == 0
    (written,) = folder.glob("results_rescored_*.json")
    rescored = json.loads(written.read_text())

    for name in (*LEAVES, "elitr_qa"):  # every metric and stderr, the group recomputed
        assert rescored["results"][name] == judged_run["results"][name], name
    assert rescored["results"]["elitr_qa"]["judge_score,replay"] > 5
    for section in ("higher_is_better", "n-samples", "n-shot", "versions", "group_subtasks"):
        assert rescored[section] == judged_run[section], section
    assert "bypass" not in json.dumps(rescored["higher_is_better"])
    assert "_stderr_stderr" not in json.dumps(rescored)  # one value per name (issue 25)
    assert rescored["config"]["model_args"]["system"] == "gpt-4"  # the run's own keys
    assert rescored["configs"]["elitr_qa_dev"]["metadata"]["judge_identity"]["backend"] == "replay"
    table = make_table(rescored) + make_table(rescored, "groups")
    assert "judge_score" in table and "replay" in table and "bypass" not in table

    # The samples keep the task's name: lm-eval's Hub logger reads them as the task, dated
    # like their results file; `datasets` loads them as the Hub details are loaded.
    stamp = written.stem.removeprefix("results_rescored_")
    for task in LEAVES:
        path = folder / f"samples_{task}_{stamp}.jsonl"
        assert get_file_task_name(path.name) == task and get_file_datetime(path.name) == stamp
        rows = load_dataset("json", data_files=str(path), split="train")
        assert len(rows) == 5 and set(rows["filter"]) == {"replay"}
        assert all(row["metrics"][0] != "bypass" for row in rows)
        name = parse_samples_name(path)
        assert name is not None and name.rescored and name.task == task
    # Our readers count the run once, from the rescoring.
    loaded = load_runs([tmp_path / "out"])
    assert {r.task for r in loaded.runs} == set(LEAVES) and len(loaded.runs) == 3
    assert all(r.results_path == written.resolve() for r in loaded.runs)
    # Scoring the folder again judges the lm-eval samples, not the rescoring.
    capsys.readouterr()
    assert main(["score", str(tmp_path / "out"), "--judge", "replay"]) == 0
    assert capsys.readouterr().out.count("elitr_qa_mt_dev:") == 1


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


def test_score_refuses_empty_and_foreign_files_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stamp = "2026-01-01T00-00-00.000001"
    empty = tmp_path / "run" / f"samples_elitr_qa_dev_{stamp}.jsonl"
    empty.parent.mkdir()
    empty.write_text("\n")
    assert main(["score", str(empty), "--judge", "lexical"]) == 2
    assert f"{empty} holds no samples (empty file)" in _one_line(capsys)
    assert main(["score", str(tmp_path / "run"), "--judge", "lexical"]) == 2  # its only file
    assert "holds no samples" in _one_line(capsys)

    results = tmp_path / "run" / f"results_{stamp}.json"
    results.write_text(json.dumps({"results": {}}))
    assert main(["score", str(results), "--judge", "lexical"]) == 2
    assert f"{results} is not an lm-eval samples file" in _one_line(capsys)

    other = tmp_path / "gsm" / f"samples_gsm8k_{stamp}.jsonl"  # another benchmark's run
    other.parent.mkdir()
    other.write_text(json.dumps({"doc_id": 0, "doc": {"question": "2+2?"}, "resps": [["4"]]}))
    assert main(["score", str(other), "--judge", "lexical"]) == 2
    assert f"{other} holds samples of gsm8k, which is not an ELITR-Bench task" in _one_line(capsys)
    foreign = tmp_path / "gsm" / f"samples_elitr_qa_dev_{stamp}.jsonl"  # renamed, not ours
    foreign.write_text(other.read_text())
    assert main(["score", str(foreign), "--judge", "lexical"]) == 2
    assert f"{foreign}:1 is no ELITR-Bench sample (its doc has no 'meeting_id')" in _one_line(
        capsys
    )
    notes = tmp_path / "notes" / f"samples_elitr_qa_dev_{stamp}.jsonl"
    notes.parent.mkdir()
    notes.write_text("just some text\n")
    assert main(["score", str(notes), "--judge", "lexical"]) == 2
    assert f"{notes}:1: not JSON (" in _one_line(capsys)
    group = tmp_path / "group" / f"samples_elitr_qa_{stamp}.jsonl"  # lm-eval writes per task
    group.parent.mkdir()
    doc = {"meeting_id": "meeting_en_dev_001", "question_id": "1", "question": "Who?"}
    group.write_text(json.dumps({"doc_id": 0, "doc": doc, "resps": [["me"]]}) + "\n")
    assert main(["score", str(group), "--judge", "lexical"]) == 2
    assert f"{group} holds samples of elitr_qa, which is a group" in _one_line(capsys)
    bare = tmp_path / "bare"  # a folder without any samples file is named too
    bare.mkdir()
    assert main(["score", str(bare), "--judge", "lexical"]) == 2
    assert f"no samples_*.jsonl found in {bare}" in _one_line(capsys)
    for folder in ("run", "gsm", "notes", "group"):  # nothing written
        assert not list((tmp_path / folder).glob("results_rescored_*"))


def test_score_on_a_full_disk_leaves_no_cut_file_and_partial_files_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25, point 5: the disk fills while ``score`` writes its second samples file."""
    import errno
    import os

    from elitr_bench.data import folder as folder_module

    folder = _save_run(tmp_path / "out", {}, predict_only=True)
    before = sorted(p.name for p in folder.iterdir())
    real = os.fsync
    written: list[str] = []

    def fsync(fd: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}")
        if ".samples_" in name:
            written.append(name)
            if len(written) == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    capsys.readouterr()
    with monkeypatch.context() as patch:
        patch.setattr(folder_module.os, "fsync", fsync)
        assert main(["score", str(tmp_path / "out"), "--judge", "replay"]) == 2
    printed = capsys.readouterr().err
    assert "Traceback" not in printed
    err = printed.strip().split("\r")[-1].strip()  # after the progress bar's last frame
    assert "\n" not in err
    assert err.startswith("error: ") and "cannot write (No space left" in err
    assert "re-run the same command" in err
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing cut, nothing new

    # Files a stopped writer left: a temp file and a samples file cut mid-line under
    # lm-eval's name with no results file (what older versions wrote in place).
    (folder / ".samples_elitr_qa_dev_x.jsonl.abc123.tmp").write_text('{"doc"')
    cut = folder / "samples_elitr_qa_dev_2099-01-01T00-00-00.000001.jsonl"
    cut.write_text('{"doc_id": 0, "doc": {"meeting_id": "m"}}\n{"doc_id": 1, "do')
    assert main(["score", str(tmp_path / "out"), "--judge", "replay"]) == 0
    err = capsys.readouterr().err
    assert f"score: note: {cut}: a samples file cut mid-line" in err
    assert ".abc123.tmp: a temp file left by a writer that was stopped" in err
    notes = load_runs([tmp_path / "out"]).notes
    assert any(str(cut) in n and "cut mid-line" in n for n in notes), notes
