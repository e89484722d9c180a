"""A run re-judged by ``elitr-bench score`` counts once, from its newest rescoring.

QA: a fabricated run folder is rescored twice by the real ``score`` command (lexical
judge, offline), from a relative path as a user would type it. Minutes: ``score`` for
minutes needs an LLM judge, so its two files are written here in the shape
``judges/minutes/score.py`` writes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli.score import main as score_main
from elitr_bench.data.errors import DataError
from elitr_bench.data.minutes import load_run_minutes
from elitr_bench.data.run_files import current_samples, newest_versions, run_results_of
from elitr_bench.judges import parse_judge_spec
from elitr_bench.metaeval.minutes_inputs import read_run
from elitr_bench.report import load_runs
from elitr_bench.report.minutes import minutes_samples
from tests.report.test_report_synthetic import JUDGE_A, base_score, qa_st

Writer = Callable[..., Path]


def test_report_reads_the_newest_rescoring_instead_of_the_run(
    tmp_path: Path, synthetic: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's own judge, rescored twice (finishing a run whose judge failed)."""

    def score(q: Any) -> float | None:  # the run's judge left some answers unscored
        return None if q.question_id == "1" else base_score(q)

    lexical = parse_judge_spec("lexical").identity()
    folder = synthetic(tmp_path / "runs", "a", **qa_st("dev"), judge=lexical, score=score)
    original_samples = next(folder.glob("samples_*.jsonl"))
    monkeypatch.chdir(tmp_path)  # rescored_from then holds relative paths
    for _ in range(2):
        assert score_main(["score", "runs/a", "--judge", "lexical"]) == 0
    first, second = sorted(folder.glob("results_rescored_*.json"))

    loaded = load_runs([tmp_path / "runs"])
    assert len(loaded.runs) == 1
    (run,) = loaded.runs
    assert run.results_path == second.resolve()
    stamp = second.stem.removeprefix("results_rescored_")
    assert run.samples_path.name == f"samples_elitr_qa_dev_{stamp}.jsonl"  # lm-eval's name
    assert run.model.model == "hf" and run.seeds["random_seed"] == "0"  # the run's own config
    assert run.has("f1") and run.has("judge_score")
    left_out = [n for n in loaded.notes if "left out" in n]
    assert len(left_out) == 2
    assert any(original_samples.name in n and first.name not in n for n in left_out)
    assert all(stamp in n for n in left_out)
    assert not any("repeats" in n or "identical copy" in n for n in loaded.notes)

    # Only the original given: nothing to prefer; only the rescoring given: its config.
    (original_results,) = folder.glob("results_2*.json")
    alone = load_runs([original_results])
    assert len(alone.runs) == 1 and alone.runs[0].samples_path == original_samples.resolve()
    rescored = load_runs([second]).runs[0]
    assert rescored.model.model == "hf" and rescored.seeds["random_seed"] == "0"


def test_a_rescoring_by_another_judge_adds_its_scores_only(
    tmp_path: Path, synthetic: Writer
) -> None:
    folder = synthetic(tmp_path / "runs", "a", **qa_st("dev"), judge=JUDGE_A, score=base_score)
    assert score_main(["score", str(folder), "--judge", "lexical"]) == 0
    loaded = load_runs([tmp_path / "runs"])
    original, other = loaded.runs
    assert original.results_path.name.startswith("results_2") and original.has("f1")
    assert other.results_path.name.startswith("results_rescored_")
    assert original.judge is not None and original.judge.identity == JUDGE_A
    assert other.judge is not None and other.judge.identity["backend"] == "lexical"
    assert other.has("judge_score") and not other.has("f1") and not other.has("rouge_l")
    assert len(other.values("judge_score")) == len(original.values("judge_score")) == 141
    assert any("with another judge (lexical/gpt4-rubric)" in n for n in loaded.notes)


def test_newest_versions_follow_chains_and_siblings(tmp_path: Path) -> None:
    def f(name: str) -> Path:
        return tmp_path / name

    base = f("samples_t_2026-01-01T00-00-00.000001.jsonl")
    r1 = f("samples_t_rescored_2026-01-02T00-00-00.000001.jsonl")
    r2 = f("samples_t_rescored_2026-01-03T00-00-00.000001.jsonl")
    r3 = f("samples_t_rescored_2026-01-02T12-00-00.000001.jsonl")  # rescoring of r1
    other = f("samples_u_2026-01-01T00-00-00.000001.jsonl")
    stale = newest_versions([(r1, base), (r2, base), (r3, r1)])
    assert stale == {p.resolve(): r2.resolve() for p in (base, r1, r3)}
    assert other.resolve() not in stale


def _minutes_run(folder: Path, legacy: bool = False) -> tuple[Path, Path]:
    """A replayed automin23_en run of two meetings and a later rescoring of it.

    ``legacy``: the rescored samples named as older versions of ``score`` named them.
    """
    folder.mkdir(parents=True)
    task, stamp, later = "automin23_en", "2026-01-01T00-00-00.000001", "2026-01-02T00-00-00.5"
    identity = {"backend": "openai", "model": "judge-x", "rubric": "gpt-afgr"}
    rows, rescored_rows = [], []
    for i, meeting in enumerate(("en_train_001", "en_train_002")):
        row = {
            "doc_id": i,
            "doc": {"meeting_id": meeting},
            "resps": [[f"minutes of {meeting}"]],
            "filter": "elitr_minutes_judge",
            "metrics": ["rouge1", "judge_errors"],
            "rouge1": 0.25 + i / 10,
            "judge_errors": 1.0,  # the run's judge failed
        }
        rows.append(row)
        judged = {
            "response": f"minutes of {meeting}",
            "judge": {"status": "scored", "scores": {"adequacy": 4.0 - i}, "identity": identity},
        }
        again = {
            **row,
            "filtered_resps": [json.dumps(judged)],
            "metrics": ["rouge1", "adequacy", "judge_errors"],
            "adequacy": 4.0 - i,
            "judge_errors": 0.0,
        }
        rescored_rows.append(again)
    original = folder / f"samples_{task}_{stamp}.jsonl"
    original.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {"model": "elitr-replay", "model_args": "system=gpt4"}
    (folder / f"results_{stamp}.json").write_text(
        json.dumps({"results": {task: {}}, "configs": {task: {}}, "config": config})
    )
    rescored = folder / f"samples_{task}_{'rescored_' if legacy else ''}{later}.jsonl"
    rescored.write_text("".join(json.dumps(r) + "\n" for r in rescored_rows))
    (folder / f"results_rescored_{later}.json").write_text(
        json.dumps(
            {
                "results": {task: {}},
                "judge": identity,
                "judge_usage": {task: {"requests": 2}},
                "rescored_from": {task: str(original)},
            }
        )
    )
    return original, rescored


@pytest.mark.parametrize("legacy", [False, True])
def test_minutes_readers_take_the_rescoring_once(tmp_path: Path, legacy: bool) -> None:
    folder = tmp_path / "run"
    original, rescored = _minutes_run(folder, legacy)
    assert run_results_of(rescored) == run_results_of(original) == next(folder.glob("results_2*"))

    run = read_run(folder)
    assert run.name == "gpt4" and run.model == "elitr-replay" and run.tasks == ["automin23_en"]
    assert run.values["adequacy"] == {("gpt4", "en_train_001"): 4.0, ("gpt4", "en_train_002"): 3.0}
    assert run.values["rouge1"][("gpt4", "en_train_002")] == pytest.approx(0.35)
    assert run.judge["model"] == "judge-x" and run.usage == {"requests": 2}
    assert len(run.notes) == 1 and original.name in run.notes[0]

    minutes = load_run_minutes(folder)  # read twice before: "already read" error
    assert minutes.tasks == ("automin23_en",) and minutes.model == "elitr-replay"
    assert [m.meeting_id for m in minutes.minutes] == ["en_train_001", "en_train_002"]
    assert rescored.name in minutes.minutes[0].source

    files, notes = minutes_samples([folder])
    assert files == [rescored] and len(notes) == 1
    assert current_samples([original]) == ([original], [])


def test_minutes_readers_set_aside_qa_runs_of_the_same_folder(tmp_path: Path) -> None:
    # ``make demo`` writes the QA runs and the minutes run into one output folder.
    folder = tmp_path / "demo"
    _minutes_run(folder / "minutes")
    qa = folder / "qa"
    qa.mkdir(parents=True)
    qa_sample = {"doc": {"meeting_id": "meeting_en_dev_001"}, "resps": [["an answer"]]}
    (qa / "samples_elitr_qa_dev_2026-01-01T00-00-00.000001.jsonl").write_text(
        json.dumps(qa_sample) + "\n"
    )
    (qa / "results_2026-01-01T00-00-00.000001.json").write_text(
        json.dumps({"config": {"model": "elitr-replay", "model_args": "system=gpt-4"}})
    )
    assert read_run(folder).name == "gpt4"
    assert load_run_minutes(folder).tasks == ("automin23_en",)

    with pytest.raises(DataError, match=r"no samples of a minutes task .* only of elitr_qa_dev"):
        read_run(qa)
    with pytest.raises(DataError, match=r"no samples of a minutes task"):
        load_run_minutes(qa)
