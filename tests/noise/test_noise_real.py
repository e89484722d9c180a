"""Calibration and protection on the 18 real ELITR-Bench transcripts (paper targets)."""

from __future__ import annotations

import pytest

from elitr_bench.data import load_benchmark
from elitr_bench.noise import PAPER_TARGETS, default_rules, generate, measure_wer
from elitr_bench.noise.text import PROTECTED_PATTERN


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


def test_reported_wer_is_independent_jiwer_measurement(transcripts: dict[str, str]) -> None:
    text = transcripts["meeting_en_test2_001"]
    noisy = generate(text, 0.6)
    assert noisy.effective_wer == measure_wer(text, noisy.text).wer
    # Line breaks are kept, except where every word of a line was deleted.
    assert 0.9 * text.count("\n") <= noisy.text.count("\n") <= text.count("\n")
