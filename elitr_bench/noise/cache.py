"""The entry point for tasks: noisy transcripts generated on first use, then read from disk.

Files live under ``<cache root>/noise`` where the cache root is ``$ELITR_BENCH_CACHE`` or
the user cache directory (platformdirs), the same root as the data layer's cache. A
file's name is the SHA-256 of everything that determines its bytes: engine version,
rules hash, seed, target WER, transcript hash, mode and protection policy. A file that
cannot be read back (truncated write, hand edit) is regenerated, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from elitr_bench.data.store import cache_root
from elitr_bench.noise.inject import (
    DEFAULT_SEED,
    ENGINE_VERSION,
    NoisyTranscript,
    default_protect,
    generate,
)
from elitr_bench.noise.rules import RuleSet, resolve_rules

CACHE_SUBDIR = "noise"


def noise_cache_dir() -> Path:
    """Directory of cached noisy transcripts (honours ``ELITR_BENCH_CACHE``)."""
    return cache_root() / CACHE_SUBDIR


def cache_key(
    text: str, target_wer: float, seed: int, rules_hash: str, mode: str, protect: str
) -> str:
    """Hex digest naming the cache file of one noisy transcript."""
    parts = {
        "engine": ENGINE_VERSION,
        "rules": rules_hash,
        "seed": int(seed),
        "target": f"{float(target_wer):.6f}",
        "transcript": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "mode": mode,
        "protect": protect,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def _read(path: Path) -> NoisyTranscript | None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        return NoisyTranscript(**{f.name: data[f.name] for f in fields(NoisyTranscript)})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, noisy: NoisyTranscript) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(asdict(noisy), handle, ensure_ascii=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def noisy_transcript(
    text: str,
    target_wer: float,
    seed: int = DEFAULT_SEED,
    rules: RuleSet | str | Path | None = None,
    protect: str | None = None,
    mode: str = "calibrated",
    *,
    use_cache: bool = True,
) -> NoisyTranscript:
    """A noisy version of ``text`` at ``target_wer``, deterministic in its arguments.

    Args:
        text: Clean transcript.
        target_wer: Target word error rate in [0, 2]; the paper uses 0.2 to 1.0.
        seed: Random seed (the paper's seed, 2023, by default).
        rules: Rule set, path to a rules file, or ``None`` for the packaged default.
        protect: ``default`` keeps speaker labels, de-identified entities and event tags
            intact; ``none`` lets them be corrupted too. ``None`` picks the mode's
            default (:func:`~elitr_bench.noise.inject.default_protect`): ``default`` for
            ``calibrated``, ``none`` for ``paper``, which protected nothing.
        mode: ``calibrated`` (hits the target within 0.002) or ``paper`` (the paper's
            uncalibrated scaling, for comparison).
        use_cache: Read and write the disk cache (see module docstring).

    Raises:
        NoiseError: For an invalid setting, rules file, or unreachable target.
    """
    ruleset = resolve_rules(rules)
    protect = default_protect(mode) if protect is None else protect
    if not use_cache:
        return generate(text, target_wer, seed, ruleset, protect, mode)
    path = noise_cache_dir() / (
        cache_key(text, target_wer, seed, ruleset.hash, mode, protect) + ".json"
    )
    cached = _read(path)
    if cached is not None:
        return cached
    noisy = generate(text, target_wer, seed, ruleset, protect, mode)
    _write(path, noisy)
    return noisy


def noisy_transcripts(
    texts: Mapping[str, str],
    targets: Sequence[float],
    seed: int = DEFAULT_SEED,
    rules: RuleSet | str | Path | None = None,
    protect: str | None = None,
    mode: str = "calibrated",
    *,
    use_cache: bool = True,
) -> dict[tuple[str, float], NoisyTranscript]:
    """:func:`noisy_transcript` for every (text id, target), in sorted id order."""
    ruleset = resolve_rules(rules)
    return {
        (tid, float(t)): noisy_transcript(
            texts[tid], t, seed, ruleset, protect, mode, use_cache=use_cache
        )
        for tid in sorted(texts)
        for t in targets
    }
