"""``elitr-bench report`` refuses empty and foreign inputs with one line naming the file.

Before, a folder whose only samples file was empty reported "1 minutes runs", and a folder
of another benchmark's lm-eval results said only "no ELITR-Bench runs with samples found".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elitr_bench.cli import main
from tests.conftest import run_lm_eval
from tests.report.conftest import write_synthetic_run

JUDGE = {"backend": "openai", "model": "gpt-4-0613", "rubric": "gpt4-rubric"}
STAMP = "2026-01-01T00-00-00.000001"


def refusal(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    """The one line ``report`` prints for a refused input (exit status 2, nothing written)."""
    out = Path(str(args[-1]))
    assert main(["report", *map(str, args[:-1]), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("elitr-bench: error: ") and "\n" not in err, err
    assert "Traceback" not in err
    assert not (out / "report.md").exists()
    return err


def qa_run(root: Path, name: str = "run") -> Path:
    return write_synthetic_run(
        root,
        name,
        task="elitr_qa_dev",
        setting="qa",
        mode="st",
        split="dev",
        judge=JUDGE,
        score=lambda q: 7.0,
    )


def minutes_run(root: Path, lines: list[str]) -> Path:
    """An ``automin23_en`` output folder (results file + samples file with ``lines``)."""
    root.mkdir(parents=True)
    results = {
        "results": {"automin23_en": {"alias": "automin23_en", "rouge1,none": 0.4}},
        "configs": {"automin23_en": {"task": "automin23_en", "metadata": {}}},
        "config": {"model": "elitr-replay", "model_args": "system=gpt4"},
    }
    (root / f"results_{STAMP}.json").write_text(json.dumps(results))
    (root / f"samples_automin23_en_{STAMP}.jsonl").write_text("".join(lines))
    return root


def test_empty_samples_files_are_named_not_counted_as_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The case: the only samples file of a minutes run is empty.
    folder = minutes_run(tmp_path / "minutes", [])
    err = refusal(capsys, folder, tmp_path / "out")
    assert f"samples_automin23_en_{STAMP}.jsonl: empty samples file" in err
    assert "minutes run" not in capsys.readouterr().out
    # The same for a QA run: before, "no ELITR-Bench runs with samples found".
    qa = qa_run(tmp_path / "qa")
    samples = next(qa.glob("samples_*.jsonl"))
    samples.write_text("\n\n")
    err = refusal(capsys, qa, tmp_path / "out")
    assert f"{samples}: empty samples file" in err and "--log_samples" in err


def test_truncated_and_foreign_lines_are_named_with_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = {"doc": {"meeting_id": "meeting_en_test2023_001"}, "resps": [["- minutes"]]}
    cut = json.dumps(sample) + "\n" + json.dumps(sample)[:25]  # killed while writing line 2
    folder = minutes_run(tmp_path / "cut", [cut])
    err = refusal(capsys, folder, tmp_path / "out")
    assert f"samples_automin23_en_{STAMP}.jsonl:2: not JSON" in err and "truncated" in err
    # JSON lines that are no lm-eval samples of our task, under our task's file name.
    qa = qa_run(tmp_path / "qa")
    samples = next(qa.glob("samples_*.jsonl"))
    samples.write_text('{"id": 1, "text": "hello"}\n{"id": 2}\n')
    err = refusal(capsys, qa, tmp_path / "out")
    assert f"{samples}: no line holds an ELITR-Bench question" in err
    folder = minutes_run(tmp_path / "other", ['{"id": 1}\n'])
    err = refusal(capsys, folder, tmp_path / "out")
    assert f"samples_automin23_en_{STAMP}.jsonl:1: no doc.meeting_id" in err


def test_a_json_file_that_is_no_lm_eval_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "foreign"
    folder.mkdir()
    (folder / f"results_{STAMP}.json").write_text(json.dumps({"hello": "world", "scores": [1]}))
    err = refusal(capsys, folder, tmp_path / "out")
    assert f"results_{STAMP}.json: no 'results' key, so not an lm-eval results file" in err
    err = refusal(capsys, tmp_path / "notes.json", tmp_path / "out")
    assert "notes.json does not exist" in err
    (tmp_path / "notes.json").write_text("{}")
    err = refusal(capsys, tmp_path / "notes.json", tmp_path / "out")
    assert "notes.json: not an lm-eval results_*.json file" in err


def test_results_without_samples_say_to_log_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qa = qa_run(tmp_path / "qa")
    next(qa.glob("samples_*.jsonl")).unlink()
    err = refusal(capsys, qa, tmp_path / "out")
    assert f"{qa}: results of elitr_qa_dev but no samples file of them" in err
    assert "--log_samples" in err


@pytest.fixture(scope="module")
def other_benchmark(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real lm-eval output folder of another benchmark (lm-eval's dummy model, local data)."""
    root = tmp_path_factory.mktemp("other-benchmark")
    data = root / "toy.jsonl"
    data.write_text("".join(json.dumps({"q": f"{i}+1=", "a": str(i + 1)}) + "\n" for i in range(4)))
    (root / "toy_arith.yaml").write_text(
        "task: toy_arith\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {data}\n"
        "test_split: test\noutput_type: generate_until\n"
        'doc_to_text: "{{q}}"\ndoc_to_target: "{{a}}"\n'
        "generation_kwargs:\n  until: ['\\n']\n"
        "metric_list:\n  - metric: exact_match\n    aggregation: mean\n"
        "    higher_is_better: true\n"
    )
    out = root / "results"
    proc = run_lm_eval(
        [
            "--model",
            "dummy",
            "--tasks",
            "toy_arith",
            "--include_path",
            str(root),
            "--output_path",
            str(out),
            "--log_samples",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert list(out.rglob("samples_toy_arith_*.jsonl"))
    return out


def test_another_benchmarks_lm_eval_folder_is_refused_by_name(
    tmp_path: Path, other_benchmark: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refusal(capsys, other_benchmark, tmp_path / "out")
    assert f"{other_benchmark}: lm-eval results of toy_arith, none of them ours" in err
    # Next to a run of ours, a foreign RUN_DIR argument is still a mistake and named.
    qa = qa_run(tmp_path / "qa")
    err = refusal(capsys, qa, other_benchmark, tmp_path / "out")
    assert str(other_benchmark) in err and "toy_arith" in err


def test_a_folder_holding_our_runs_and_others_reports_ours(
    tmp_path: Path, other_benchmark: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A leaderboard's output folder holds many benchmarks: ours are reported, others noted."""
    import shutil

    parent = tmp_path / "leaderboard"
    qa_run(parent, "elitr")
    shutil.copytree(other_benchmark, parent / "toy")
    assert main(["report", str(parent), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("report: 1 task run, ")
    assert "samples_toy_arith_" in printed and "no ELITR-Bench documents" in printed
