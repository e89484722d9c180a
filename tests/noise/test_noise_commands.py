from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pytest

from elitr_bench.cli.noise import CSV_FIELDS, register
from elitr_bench.noise import load_rules
from elitr_bench.noise.text import PROTECTED_PATTERN


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="elitr-bench")
    commands = parser.add_subparsers(dest="command", required=True)
    register(commands)
    return parser


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return int(args.handler(args))


def test_noise_writes_transcripts_and_tables(tmp_path: Path) -> None:
    out = tmp_path / "out"
    meetings = ["meeting_en_test2_001", "meeting_en_test2_005"]
    assert _run(["noise", "--wer", "0.2", "0.6", "--meetings", *meetings, "--out", str(out)]) == 0
    for target in ("0.20", "0.60"):
        for meeting in meetings:
            text = (out / f"wer-{target}" / f"{meeting}.txt").read_text(encoding="utf-8")
            assert PROTECTED_PATTERN.search(text)
    with (out / "noise_wer.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == CSV_FIELDS
    assert len(rows) == 4
    for row in rows:
        assert abs(float(row["effective_wer"]) - float(row["target_wer"])) <= 0.02
        assert row["mode"] == "calibrated" and row["seed"] == "2023"
    markdown = (out / "noise_wer.md").read_text(encoding="utf-8")
    assert "| Target WER (%) | Effective WER (%) |" in markdown
    assert "| 20.00 |" in markdown and "meeting_en_test2_005" in markdown
    manifest = json.loads((out / "noise_manifest.json").read_text())
    assert manifest["meetings"] == meetings and manifest["targets"] == [0.2, 0.6]


def test_noise_paper_mode_and_rules_option(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("we can register now\twe can't register\nsee you later\tsee uh you letter\n")
    assert _run(["noise", "build-rules", "--pairs", str(pairs), "--out", str(rules)]) == 0
    assert load_rules(rules).rules["later"] == {"letter": 1.0}
    out = tmp_path / "paper"
    argv = ["noise", "--wer", "0.4", "--mode", "paper", "--rules", str(rules)]
    assert _run([*argv, "--meetings", "meeting_en_dev_006", "--out", str(out)]) == 0
    (row,) = list(csv.DictReader((out / "noise_wer.csv").open(encoding="utf-8")))
    assert row["mode"] == "paper" and row["rules_hash"] == load_rules(rules).hash


def test_build_rules_from_red_ace_directory(tmp_path: Path) -> None:
    data = tmp_path / "red_ace"
    data.mkdir()
    record = {"id": "1", "truth": "the cat sat", "asr_hypothesis": ["the", "cat", "sad"]}
    (data / "test.jsonl").write_text(json.dumps(record) + "\n")
    rules = tmp_path / "rules.json.gz"
    assert _run(["noise", "build-rules", "--red-ace", str(data), "--out", str(rules)]) == 0
    assert load_rules(rules).rules == {"sat": {"sad": 1.0}}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["noise", "--out", "x"], "--wer is required"),
        (["noise", "--wer", "0.2"], "--out DIR is required"),
        (["noise", "build-rules", "--out", "r.json"], "one of the arguments --pairs --red-ace"),
        (["noise", "build-rules", "--pairs", "p.tsv"], "--out"),
    ],
)
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        _run(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_both_forms_parse() -> None:
    plain = _parser().parse_args(["noise", "--wer", "0.4", "--out", "d"])
    assert plain.noise_command is None and plain.noise_wer == [0.4]
    build = _parser().parse_args(["noise", "build-rules", "--red-ace", "--out", "r.json"])
    assert build.noise_command == "build-rules"
    assert build.red_ace == "google/red_ace_asr_error_detection_and_correction"
    assert build.rules_out == Path("r.json")
