"""``elitr-bench score DIR`` on a folder holding QA runs and minutes runs (``make demo``).

Each judge scores the runs it fits and skips the others with a one-line note; it refuses
only when nothing in DIR fits. A QA judge used to mark every minutes item ``error``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from elitr_bench.cli import main
from tests.report.test_report_synthetic import base_score, qa_st

Writer = Callable[..., Path]
MINUTES_JUDGE = "openai:gpt-4o,rubric=gpt-afgr"


def minutes_run(folder: Path) -> Path:
    """An automin23_en run of two meetings, as lm-eval logs it (no judge yet)."""
    folder.mkdir(parents=True)
    stamp = "2026-01-01T00-00-00.000001"
    rows = [
        {"doc_id": i, "doc": {"meeting_id": m}, "resps": [[f"- minutes of {m}"]], "filter": "none"}
        for i, m in enumerate(("meeting_en_test2023_001", "meeting_en_test2023_002"))
    ]
    samples = folder / f"samples_automin23_en_{stamp}.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / f"results_{stamp}.json").write_text(
        json.dumps({"results": {"automin23_en": {}}, "configs": {"automin23_en": {}}})
    )
    return samples


def mixed(root: Path, synthetic: Writer) -> tuple[Path, Path]:
    qa = synthetic(root, "qa", **qa_st("dev"), score=base_score)
    minutes_run(root / "minutes")
    return qa, root / "minutes"


def test_a_qa_judge_scores_the_qa_runs_and_skips_the_minutes(
    tmp_path: Path, synthetic: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    qa, minutes = mixed(tmp_path / "runs", synthetic)
    before = sorted(p.name for p in minutes.iterdir())
    assert main(["score", str(tmp_path / "runs"), "--judge", "lexical"]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if line.startswith("score: skipping")]
    assert len(notes) == 1 and "1 minutes samples file(s) (automin23_en)" in notes[0]
    assert "rubric=gpt-afgr" in notes[0]
    assert "error" not in captured.err
    (written,) = qa.glob("results_rescored_*.json")
    payload = json.loads(written.read_text("utf-8"))
    assert payload["judge_errors"] == 0 and list(payload["judge_usage"]) == ["elitr_qa_dev"]
    assert list(payload["rescored_from"]) == ["elitr_qa_dev"]
    assert sorted(p.name for p in minutes.iterdir()) == before  # minutes untouched


def test_a_minutes_judge_gets_only_the_minutes_runs(
    tmp_path: Path,
    synthetic: Writer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from elitr_bench.cli import score as commands

    qa, minutes = mixed(tmp_path / "runs", synthetic)
    given: list[list[str]] = []

    def fake_minutes_score(args: argparse.Namespace, config: object, batch: object) -> int:
        assert batch is None  # no batch=on: one by one
        given.append(list(args.paths))
        return 0

    monkeypatch.setattr(commands, "check_judge_ready", lambda *a, **k: None)  # offline
    monkeypatch.setattr(commands, "_score_minutes", fake_minutes_score)
    assert main(["score", str(tmp_path / "runs"), "--judge", MINUTES_JUDGE]) == 0
    assert given == [[str(next(minutes.glob("samples_automin23_en_*.jsonl")))]]
    err = capsys.readouterr().err
    assert "score: skipping 1 QA samples file(s) (elitr_qa_dev)" in err
    assert not list(qa.glob("*rescored*"))


def test_refuses_only_when_nothing_fits_the_judge(
    tmp_path: Path, synthetic: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    qa = synthetic(tmp_path / "qa-only", "qa", **qa_st("dev"), score=base_score)
    before = sorted(p.name for p in qa.iterdir())
    assert main(["score", str(tmp_path / "qa-only"), "--judge", MINUTES_JUDGE]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1
    assert "a minutes judge cannot score QA answers (elitr_qa_dev)" in err[0]
    assert "--judge replay" in err[0]
    assert sorted(p.name for p in qa.iterdir()) == before

    minutes_run(tmp_path / "minutes-only")
    assert main(["score", str(tmp_path / "minutes-only"), "--judge", "lexical"]) == 2
    assert "a QA judge cannot score minutes (automin23_en)" in capsys.readouterr().err


def test_a_minutes_judge_without_key_names_a_way_out_for_minutes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # replay/lexical/none cannot score minutes: the hint is a keyless local server instead.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    minutes_run(tmp_path / "minutes")
    assert main(["score", str(tmp_path / "minutes"), "--judge", MINUTES_JUDGE]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no API key" in err
    assert "--judge openai:MODEL,base_url=http://127.0.0.1:PORT/v1" in err
    assert "replay" not in err
