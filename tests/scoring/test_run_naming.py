"""The names ``elitr-bench score`` gives what it writes, one rule for QA and minutes runs.

A rescoring is stamped as lm-eval stamps a run; a second and third run of one folder get
``-2``, ``-3`` so no two runs share a file name; numbering is per folder, so a run alone
in its folder is named as lm-eval would name it (the QA and minutes writers used to
differ: the minutes one numbered across all the runs of a call).
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from elitr_bench.data import run_files
from elitr_bench.data.run_files import new_stamp, parse_samples_name, rescoring_runs
from elitr_bench.judges import parse_judge_spec
from elitr_bench.scoring.minutes import score_minutes_samples
from elitr_bench.scoring.qa import score_runs
from tests.judges.test_cream_arena import write_run
from tests.report.conftest import write_synthetic_run
from tests.report.test_report_synthetic import qa_st
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

NOW = "2026-03-04T05-06-07.000008"
STAMPS = ("2026-01-01T00-00-00.000001", "2026-01-02T00-00-00.000001")


def test_a_new_stamp_is_lm_evals() -> None:
    assert new_stamp(datetime(2026, 3, 4, 5, 6, 7, 8)) == NOW


def test_runs_are_numbered_per_folder(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    files = [
        a / f"samples_elitr_qa_dev_{STAMPS[0]}.jsonl",
        a / f"samples_elitr_qa_test_{STAMPS[0]}.jsonl",  # the same run: one stamp
        b / f"samples_elitr_qa_dev_{STAMPS[0]}.jsonl",
        a / f"samples_elitr_qa_dev_{STAMPS[1]}.jsonl",
    ]
    assert rescoring_runs(files, NOW) == [
        (NOW, files[:2]),
        (NOW, [files[2]]),
        (f"{NOW}-2", [files[3]]),
    ]
    # a numbered stamp is still read as a stamp, and sorts after the plain one
    numbered = a / f"samples_elitr_qa_dev_{NOW}-2.jsonl"
    assert parse_samples_name(numbered) == run_files.SamplesName("elitr_qa_dev", f"{NOW}-2", False)
    assert run_files.stamp_of(numbered) > NOW


def written_stamps(written: list[tuple[Path, object]]) -> list[tuple[str, str]]:
    return sorted(
        (path.parent.name, path.name.removeprefix("results_rescored_").removesuffix(".json"))
        for path, _ in written
    )


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both writers stamp this call ``NOW``."""
    import elitr_bench.scoring.qa as qa

    monkeypatch.setattr(qa, "new_stamp", lambda now=None: NOW)


@pytest.mark.usefixtures("frozen")
def test_qa_runs_are_named_by_the_rule(tmp_path: Path) -> None:
    for name, seed in (("a", 1), ("a", 2), ("b", 1)):  # two runs in a, one in b
        write_synthetic_run(
            tmp_path, name, **qa_st("dev"), score=lambda q: 5.0, judge=None, seed=seed
        )
    written = score_runs([tmp_path], parse_judge_spec("lexical"))
    assert written_stamps(written) == [("a", NOW), ("a", f"{NOW}-2"), ("b", NOW)]
    for path, payload in written:
        assert isinstance(payload, dict) and payload["rescored_date"] in path.name
        (samples,) = path.parent.glob(f"samples_elitr_qa_dev_{payload['rescored_date']}.jsonl")
        assert parse_samples_name(samples).rescored  # type: ignore[union-attr]


def minutes_run(root: Path, name: str) -> Path:
    """A minutes run as lm-eval logs it, its documents with a reference (for ROUGE)."""
    folder = write_run(root, name, "full")
    (samples,) = folder.glob("samples_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text("utf-8").splitlines()]
    for row in rows:
        row["doc"]["references"] = ["- The team agreed on the plan."]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return folder


@pytest.mark.usefixtures("frozen")
def test_minutes_runs_are_named_by_the_same_rule(tmp_path: Path) -> None:
    first = minutes_run(tmp_path, "a")
    for name in list(first.iterdir()):  # a second run in a, under another stamp
        shutil.copy(name, first / name.name.replace(STAMPS[0], STAMPS[1]))
    minutes_run(tmp_path, "b")

    def judge(request: RecordedRequest) -> str:
        return "Adequacy: 5\nRelevance: 6\nTopicality: 7"

    with LoopbackOpenAI(judge) as loop:
        spec = f"openai:gpt-4o,rubric=gpt-art,base_url={loop.base_url},progress=false"
        written = score_minutes_samples([tmp_path], parse_judge_spec(spec))
    assert written_stamps(written) == [("a", NOW), ("a", f"{NOW}-2"), ("b", NOW)]
    for path, payload in written:
        assert isinstance(payload, dict) and payload["rescored_date"] in path.name
        sources = json.loads(path.read_text("utf-8"))["rescored_from"]
        assert Path(sources["automin23_en"]).parent == path.parent
