from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from elitr_bench.noise import NoiseError, load_rules, read_pairs, red_ace_pairs, rules_from_pairs
from elitr_bench.noise.build import count_alignments

# Hand-made reference / hypothesis pairs whose alignment is unambiguous:
#  1. "sat" -> "sad" (S), "the" before "mat" deleted (D)
#  2. "world" -> "word" (S), one "word" inserted (I)
#  3. "sat" -> "sad" again (S), "the" -> "a" (S)
#  4. perfect (4 hits)
#  5. "uh" inserted (I)
PAIRS = [
    ("The cat sat on the mat.", "the cat sad on mat"),
    ("Hello world", "hello word word"),
    ("the dog sat", "a dog sad"),
    ("all is well here", "All is well, here."),
    ("we go now", "we uh go now"),
]


def test_counts_and_rules_from_known_pairs() -> None:
    counts = count_alignments(PAIRS)
    assert counts.pairs == 5
    assert counts.reference_words == 6 + 2 + 3 + 4 + 3
    assert (counts.substitutions, counts.deletions, counts.insertions) == (4, 1, 2)
    assert counts.hits == 18 - 5
    assert counts.errors["sat"] == {"sad": 2}
    assert counts.errors["the"] == {"": 1, "a": 1}
    assert counts.inserted == {"word": 1, "uh": 1}

    rules = rules_from_pairs(PAIRS, provenance="unit test")
    assert rules.rules == {"sat": {"sad": 1.0}, "the": {"": 0.5, "a": 0.5}, "world": {"word": 1.0}}
    assert rules.insertions == {"uh": 0.5, "word": 0.5}
    assert rules.rates.substitution == pytest.approx(4 / 18)
    assert rules.rates.deletion == pytest.approx(1 / 18)
    assert rules.rates.insertion == pytest.approx(2 / 18)
    assert rules.provenance.startswith("unit test; 5 pairs, N=18, S=4, D=1, I=2")


def test_min_count_prunes_rare_outcomes() -> None:
    rules = rules_from_pairs(PAIRS, min_count=2)
    assert rules.rules == {"sat": {"sad": 1.0}}
    assert rules.insertions == {}
    # Rates still describe all the data, not only the kept outcomes.
    assert rules.rates.substitution == pytest.approx(4 / 18)


def test_no_errors_is_an_error() -> None:
    with pytest.raises(NoiseError, match="no errors"):
        rules_from_pairs([("a b", "a b")])
    with pytest.raises(NoiseError, match="no reference words"):
        rules_from_pairs([("", "a b")])


def test_tsv_pairs_and_saved_rules_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{r}\t{h}\n" for r, h in PAIRS))
    assert list(read_pairs(path)) == PAIRS
    rules = rules_from_pairs(read_pairs(path))
    assert load_rules(rules.save(tmp_path / "rules.json")).rules == rules.rules


def _red_ace_record(i: int, truth: str, hyp: str) -> dict[str, object]:
    """A record shaped like the hub's RED-ACE jsonl lines."""
    words = hyp.split()
    return {
        "id": f"1089-134686-{i:04d}",
        "truth": truth,
        "asr_model": "default",
        "asr_hypothesis": words,
        "confidence_scores": [0.9] * len(words),
        "error_labels": [0] * len(words),
    }


def test_red_ace_local_directory_matches_pairs(tmp_path: Path) -> None:
    split_of = ["train", "train", "dev", "test", "test"]
    for split in ("test", "dev", "train"):  # written out of order on purpose
        lines = [
            json.dumps(_red_ace_record(i, r, h))
            for i, ((r, h), s) in enumerate(zip(PAIRS, split_of, strict=True))
            if s == split
        ]
        (tmp_path / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    pairs = list(red_ace_pairs(tmp_path))
    assert pairs == PAIRS  # train, dev, test order
    assert rules_from_pairs(pairs).hash == rules_from_pairs(PAIRS).hash


def test_red_ace_original_release_shape(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"id": "x", "truth": "a cat", "asr": [["a", 0.9], ["cut", 0.4]]}))
    assert list(red_ace_pairs(path)) == [("a cat", "a cut")]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("p.tsv", "only one column\n", "p.tsv:1: expected 'reference<TAB>hypothesis'"),
        ("p.jsonl", '{"truth": "a"}\n', "p.jsonl:1: record needs 'reference' and 'hypothesis'"),
        ("p.jsonl", '{"reference": "a", "hypothesis": "b"}\n{oops\n', "p.jsonl:2: not JSON ("),
        ("p.jsonl", '{"reference": "a", "hypothesis": 3}\n', "must be a string or a list"),
    ],
)
def test_malformed_pairs(tmp_path: Path, name: str, content: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(NoiseError, match=re.escape(expected)):
        list(read_pairs(path))


def test_red_ace_missing_local_path(tmp_path: Path) -> None:
    with pytest.raises(NoiseError, match="no such file"):
        list(red_ace_pairs(str(tmp_path / "nope.jsonl")))
    with pytest.raises(NoiseError, match=r"no \*\.jsonl files"):
        list(red_ace_pairs(tmp_path))


def test_red_ace_hub_unreachable_is_one_clear_line() -> None:
    # Tests run with HF_DATASETS_OFFLINE=1, so the hub id cannot be fetched.
    with pytest.raises(NoiseError) as info:
        list(red_ace_pairs("google/red_ace_asr_error_detection_and_correction"))
    assert "cannot load from the Hugging Face hub" in str(info.value)
    assert "\n" not in str(info.value)
