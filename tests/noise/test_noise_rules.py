from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from elitr_bench.noise import NoiseError, Rates, RuleSet, default_rules, load_rules

PAPER_EXAMPLE = {  # App. A, the rule for "earlier" (sums to 1 up to rounding)
    "earlier": {
        "early": 0.4651,
        "Elliot": 0.0233,
        "Early": 0.0233,
        "Hurley": 0.0233,
        "earliest": 0.1860,
        "other": 0.0465,
        "earrings": 0.0233,
        "early.": 0.0233,
        "area": 0.0233,
        "earlier.": 0.0698,
        "Julia": 0.0233,
        "audio": 0.0233,
        "Aaliyah": 0.0233,
        "Italia": 0.0233,
    }
}
SIMULATOR_INFO = {"p_insert": 0.02, "p_delete": 0.03, "p_transmit": 0.95, "p_substitute": 0.1}


def _ruleset() -> RuleSet:
    return RuleSet(
        rules={"cat": {"cut": 0.75, "": 0.25}, "sat": {"sad": 1.0}},
        insertions={"uh": 1.0},
        rates=Rates(substitution=0.1, deletion=0.05, insertion=0.02),
        provenance="hand-made",
    )


@pytest.mark.parametrize("name", ["rules.json", "rules.json.gz"])
def test_save_and_load_round_trip(tmp_path: Path, name: str) -> None:
    rules = _ruleset()
    loaded = load_rules(rules.save(tmp_path / name))
    assert loaded.rules == rules.rules
    assert loaded.insertions == rules.insertions
    assert loaded.rates == rules.rates
    assert loaded.provenance == "hand-made"
    assert loaded.hash == rules.hash


def test_hash_depends_on_content_not_provenance() -> None:
    a = _ruleset()
    b = RuleSet(rules=a.rules, insertions=a.insertions, rates=a.rates, provenance="other")
    c = RuleSet(rules={"cat": {"cut": 1.0}}, insertions=a.insertions, rates=a.rates)
    assert a.hash == b.hash != c.hash


def test_paper_format_with_simulator_rates(tmp_path: Path) -> None:
    path = tmp_path / "paper.json"
    path.write_text(json.dumps({"<CORPUS_INFO_WORD>": SIMULATOR_INFO, **PAPER_EXAMPLE}))
    rules = load_rules(path)
    dist = rules.rules["earlier"]
    assert sum(dist.values()) == pytest.approx(1.0)
    total = sum(PAPER_EXAMPLE["earlier"].values())
    assert dist["early"] == pytest.approx(0.4651 / total, rel=1e-9)
    # S/N = p_transmit * p_substitute / (1 - p_insert), D/N = p_delete / (1 - p_insert).
    assert rules.rates.substitution == pytest.approx(0.95 * 0.1 / 0.98)
    assert rules.rates.deletion == pytest.approx(0.03 / 0.98)
    assert rules.rates.insertion == pytest.approx(0.02 / 0.98)


def test_simulator_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "rules.jsonl"
    lines = [{"<CORPUS_INFO_WORD>": SIMULATOR_INFO}, {"": {"uh": 2, "the": 2}}, PAPER_EXAMPLE]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    rules = load_rules(path)
    assert rules.insertions == {"uh": 0.5, "the": 0.5}
    assert set(rules.rules) == {"earlier"}


def test_keys_are_normalised_and_merged(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    data = {"<CORPUS_INFO_WORD>": SIMULATOR_INFO, "Don't": {"dont": 1}, "don't": {"done": 1}}
    path.write_text(json.dumps(data))
    assert load_rules(path).rules == {"dont": {"dont": 0.5, "done": 0.5}}


BAD_FILES = [
    ("not json {", "not valid JSON"),
    ("[1, 2]", "top level must be a JSON object"),
    ('{"earlier": {"early": 1}}', "no global error rates"),
    ('{"format": "elitr-bench-noise-rules", "version": 2, "rates": {}, "rules": {}}', "version"),
    ('{"format": "other-format", "rules": {}}', "unknown format"),
    ('{"format": "elitr-bench-noise-rules", "version": 1, "rules": {"a": {"b": 1}}}', "'rates'"),
    (
        '{"format": "elitr-bench-noise-rules", "version": 1, '
        '"rates": {"substitution": 0.1, "deletion": 0.1}, "rules": {"a": {"b": 1}}}',
        "lacks 'insertion'",
    ),
    (
        '{"format": "elitr-bench-noise-rules", "version": 1, '
        '"rates": {"substitution": 0.1, "deletion": 0.1, "insertion": 0}, "rules": {"a": [1]}}',
        "rule 'a' must map replacements to probabilities",
    ),
    (
        '{"format": "elitr-bench-noise-rules", "version": 1, '
        '"rates": {"substitution": 0.1, "deletion": 0.1, "insertion": 0}, '
        '"rules": {"a": {"b": -0.5}}}',
        "rule 'a' -> 'b' is -0.5",
    ),
    (
        '{"format": "elitr-bench-noise-rules", "version": 1, '
        '"rates": {"substitution": 0.1, "deletion": 0.1, "insertion": 0}, '
        '"rules": {"a": {"b": "0.5"}}}',
        "probabilities must be numbers",
    ),
    (
        '{"format": "elitr-bench-noise-rules", "version": 1, '
        '"rates": {"substitution": 0.1, "deletion": 0.1, "insertion": 0}, '
        '"rules": {"a": {"b": 0}}}',
        "no positive probability",
    ),
    (
        '{"format": "elitr-bench-noise-rules", "version": 1, '
        '"rates": {"substitution": 0.9, "deletion": 0.2, "insertion": 0}, '
        '"rules": {"a": {"b": 1}}}',
        "exceed 1",
    ),
    ('{"<CORPUS_INFO_WORD>": {"p_insert": 0.1}}', "lacks 'p_delete'"),
    ('{"<CORPUS_INFO_WORD>": {"p_insert": 0.1, "p_delete": 0.1, "p_substitute": 0.1}}', "no word"),
    (
        '{"<CORPUS_INFO_WORD>": {"p_insert": 0, "p_delete": 0, "p_substitute": 0}}\n[1]',
        ":2: must be a JSON object",
    ),
    ("", "empty"),
]


@pytest.mark.parametrize(("content", "expected"), BAD_FILES)
def test_malformed_rules_files_fail_in_one_line_naming_the_file(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "bad_rules.json"
    path.write_text(content)
    with pytest.raises(NoiseError) as info:
        load_rules(path)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    assert expected in message
    assert isinstance(info.value, ValueError)


def test_missing_and_corrupt_gzip_files(tmp_path: Path) -> None:
    with pytest.raises(NoiseError, match=r"missing\.json: cannot read rules file"):
        load_rules(tmp_path / "missing.json")
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(NoiseError, match=r"bad\.json\.gz: not a valid gzip file"):
        load_rules(bad)


def test_packaged_default_rules() -> None:
    rules = default_rules()
    package_file = Path(__file__).parents[2] / "elitr_bench" / "noise" / "default_rules.json.gz"
    assert package_file.stat().st_size < 2_000_000
    assert len(rules.rules) > 10_000
    assert "CMU Pronouncing Dictionary" in rules.provenance
    assert rules.insertions and abs(sum(rules.insertions.values()) - 1) < 1e-9
    for dist in list(rules.rules.values())[:200]:
        assert sum(dist.values()) == pytest.approx(1.0)
    # Phonetic neighbours, e.g. a homophone-like confusion for a common word.
    assert "early" in rules.rules["earlier"]
    raw = json.loads(gzip.decompress(package_file.read_bytes()))
    assert raw["format"] == "elitr-bench-noise-rules"
