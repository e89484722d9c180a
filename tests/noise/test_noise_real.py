"""Calibration and protection on the 18 real ELITR-Bench transcripts (paper targets)."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import pytest

from elitr_bench.cli.noise import register
from elitr_bench.data import load_benchmark
from elitr_bench.noise import PAPER_TARGETS, default_rules, generate
from elitr_bench.noise.text import PROTECTED_PATTERN
from tests.support import wer_oracle


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="elitr-bench")
    register(parser.add_subparsers(dest="command", required=True))
    return parser


@pytest.fixture(scope="module")
def transcripts() -> dict[str, str]:
    meetings = load_benchmark().meetings
    assert len(meetings) == 18
    return {mid: m.transcript for mid, m in meetings.items()}


def test_calibration_within_002_on_all_real_transcripts(transcripts: dict[str, str]) -> None:
    rules = default_rules()
    misses = []
    plain: dict[float, list[float]] = {t: [] for t in PAPER_TARGETS}
    for meeting_id, text in sorted(transcripts.items()):
        labels = PROTECTED_PATTERN.findall(text)
        for target in PAPER_TARGETS:
            noisy = generate(text, target, rules=rules)
            if abs(noisy.effective_wer - target) > 0.02:
                misses.append((meeting_id, target, noisy.effective_wer))
            assert PROTECTED_PATTERN.findall(noisy.text) == labels, (meeting_id, target)
            plain[target].append(noisy.whitespace_wer)
    assert misses == []
    # Under plain whitespace tokens (not calibrated on) docs/tasks.md promises: mean within
    # 0.01 of the target, every meeting within 0.03.
    for target, values in plain.items():
        assert abs(sum(values) / len(values) - target) < 0.01, (target, values)
        assert max(abs(v - target) for v in values) < 0.03, (target, values)


def test_reported_wer_is_jiwer_on_the_transcript_written_to_disk(
    transcripts: dict[str, str], tmp_path: Path
) -> None:
    """The CSV's WER and edit counts are jiwer's, recomputed here on the file the CLI wrote."""
    meeting = "meeting_en_test2_001"
    out = tmp_path / "out"
    args = _parser().parse_args(["noise", "--wer", "0.6", "--meetings", meeting, "--out", str(out)])
    assert args.handler(args) == 0
    written = (out / "wer-0.60" / f"{meeting}.txt").read_text(encoding="utf-8")
    with (out / "noise_wer.csv").open(encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    clean = transcripts[meeting]
    truth = wer_oracle.measure(clean, written)
    assert row["effective_wer"] == f"{truth.wer:.4f}"
    assert abs(truth.wer - 0.6) <= 0.02
    assert int(row["reference_words"]) == len(wer_oracle.words(clean))
    counts = (row["substitutions"], row["deletions"], row["insertions"])
    assert tuple(map(int, counts)) == (truth.substitutions, truth.deletions, truth.insertions)
    assert row["whitespace_wer"] == f"{wer_oracle.plain_wer(clean, written):.4f}"
    # Line breaks are kept, except where every word of a line was deleted.
    assert 0.9 * clean.count("\n") <= written.count("\n") <= clean.count("\n")
