from __future__ import annotations

import json
from pathlib import Path

import pytest

from elitr_bench.noise import inject, noise_cache_dir, noisy_transcript, noisy_transcripts
from elitr_bench.noise.cache import cache_key


def test_cache_dir_honours_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELITR_BENCH_CACHE", str(tmp_path / "base"))
    assert noise_cache_dir() == tmp_path / "base" / "noise"


def test_first_use_generates_then_reuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synthetic_meeting: str
) -> None:
    monkeypatch.setenv("ELITR_BENCH_CACHE", str(tmp_path))
    first = noisy_transcript(synthetic_meeting, 0.4, seed=3)
    files = list((tmp_path / "noise").glob("*.json"))
    assert len(files) == 1

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("should have been read from the cache")

    monkeypatch.setattr("elitr_bench.noise.cache.generate", boom)
    assert noisy_transcript(synthetic_meeting, 0.4, seed=3) == first


def test_corrupt_cache_file_is_regenerated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synthetic_meeting: str
) -> None:
    monkeypatch.setenv("ELITR_BENCH_CACHE", str(tmp_path))
    first = noisy_transcript(synthetic_meeting, 0.2)
    (path,) = (tmp_path / "noise").glob("*.json")
    path.write_text('{"text": "trunc')
    assert noisy_transcript(synthetic_meeting, 0.2) == first
    assert json.loads(path.read_text())["text"] == first.text


def test_key_covers_every_input() -> None:
    base = ("text", 0.4, 2023, "abc", "calibrated", "default")
    keys = {
        cache_key(*base),
        cache_key("text2", *base[1:]),
        cache_key(base[0], 0.6, *base[2:]),
        cache_key(*base[:2], 1, *base[3:]),
        cache_key(*base[:3], "abd", *base[4:]),
        cache_key(*base[:4], "paper", base[5]),
        cache_key(*base[:5], "none"),
    }
    assert len(keys) == 7
    assert inject.ENGINE_VERSION >= 1


def test_batch_helper_orders_ids(synthetic_meeting: str) -> None:
    out = noisy_transcripts({"b": synthetic_meeting, "a": synthetic_meeting[:2000]}, [0.2, 0.4])
    assert list(out) == [("a", 0.2), ("a", 0.4), ("b", 0.2), ("b", 0.4)]
    assert out[("b", 0.4)] == noisy_transcript(synthetic_meeting, 0.4, use_cache=False)
