"""Learn a rule set from reference / ASR-hypothesis pairs (e.g. the paper's RED-ACE data).

Both sides are normalised like measured words (:mod:`elitr_bench.noise.text`) and
aligned by jiwer's minimum-edit-distance word alignment. Each aligned slot is counted:
a substituted reference word ``w`` written as ``v`` adds one to ``w -> v``, a deleted
``w`` adds one to ``w -> ""``, an inserted ``v`` adds one to the insertion rule ``"" -> v``
and a correct ``w`` adds to ``w``'s count of correct outputs. Each word's rule is its
error counts divided by its number of errors (the distribution is conditional on an
error, as the paper's example rule, which lists no identity entry); the global rates are
S/N, D/N and I/N over all reference words N.

This is how a user rebuilds the paper's rules: the paper combined RED-ACE's train, dev
and test splits (525,308 entries) into one set of 86,148 rules (App. A).
:func:`red_ace_pairs` reads the same data from the Hugging Face hub
(``google/red_ace_asr_error_detection_and_correction``) or from local JSON-lines copies.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jiwer

from elitr_bench.data.run_files import parse_json_lines
from elitr_bench.noise.errors import NoiseError
from elitr_bench.noise.rules import Rates, RuleSet
from elitr_bench.noise.text import MEASURE_TRANSFORM

RED_ACE_HUB_ID = "google/red_ace_asr_error_detection_and_correction"
#: Split order used when reading RED-ACE, so that counts do not depend on dict order.
RED_ACE_SPLITS: tuple[str, ...] = ("train", "validation", "dev", "test")
_BATCH = 2000


@dataclass(frozen=True)
class PairCounts:
    """Alignment counts over a set of pairs.

    Attributes:
        pairs: Pairs with at least one reference word.
        reference_words: N.
        hits: Correct words.
        substitutions: S.
        deletions: D.
        insertions: I.
        errors: Reference word -> Counter of what it became (``""`` = deleted).
        inserted: Counter of inserted words.
    """

    pairs: int
    reference_words: int
    hits: int
    substitutions: int
    deletions: int
    insertions: int
    errors: dict[str, Counter[str]]
    inserted: Counter[str]


def count_alignments(pairs: Iterable[tuple[str, str]]) -> PairCounts:
    """Align each (reference, hypothesis) pair with jiwer and count edits per word."""
    errors: dict[str, Counter[str]] = defaultdict(Counter)
    inserted: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    n_pairs = 0
    batch: list[tuple[str, str]] = []

    def flush() -> None:
        nonlocal n_pairs
        refs, hyps = zip(*batch, strict=True)
        out = jiwer.process_words(
            list(refs),
            list(hyps),
            reference_transform=MEASURE_TRANSFORM,
            hypothesis_transform=MEASURE_TRANSFORM,
        )
        for ref, hyp, chunks in zip(out.references, out.hypotheses, out.alignments, strict=True):
            n_pairs += 1
            for chunk in chunks:
                ref_words = ref[chunk.ref_start_idx : chunk.ref_end_idx]
                hyp_words = hyp[chunk.hyp_start_idx : chunk.hyp_end_idx]
                if chunk.type == "equal":
                    totals["hits"] += len(ref_words)
                elif chunk.type == "substitute":
                    totals["substitutions"] += len(ref_words)
                    for w, v in zip(ref_words, hyp_words, strict=True):
                        errors[w][v] += 1
                elif chunk.type == "delete":
                    totals["deletions"] += len(ref_words)
                    for w in ref_words:
                        errors[w][""] += 1
                elif chunk.type == "insert":
                    totals["insertions"] += len(hyp_words)
                    inserted.update(hyp_words)
        batch.clear()

    for reference, hypothesis in pairs:
        if not _has_words(reference):
            continue
        batch.append((reference, hypothesis))
        if len(batch) >= _BATCH:
            flush()
    if batch:
        flush()
    n = totals["hits"] + totals["substitutions"] + totals["deletions"]
    return PairCounts(
        pairs=n_pairs,
        reference_words=n,
        hits=totals["hits"],
        substitutions=totals["substitutions"],
        deletions=totals["deletions"],
        insertions=totals["insertions"],
        errors=dict(errors),
        inserted=inserted,
    )


def _has_words(text: str) -> bool:
    words = MEASURE_TRANSFORM(text)
    return bool(words and words[0])


def rules_from_counts(counts: PairCounts, *, min_count: int = 1, provenance: str = "") -> RuleSet:
    """Turn alignment counts into a rule set (see module docstring).

    Args:
        counts: Output of :func:`count_alignments`.
        min_count: Drop outcomes seen fewer times than this (1 keeps all, as the paper).
        provenance: Text stored in the rule set; a summary of the counts is appended.

    Raises:
        NoiseError: If the pairs contain no reference words or no errors at all.
    """
    if counts.reference_words == 0:
        raise NoiseError("no reference words in the pairs; check the reference column/field")
    rules: dict[str, dict[str, float]] = {}
    for word in sorted(counts.errors):
        kept = {v: c for v, c in counts.errors[word].items() if c >= min_count}
        total = sum(kept.values())
        if total:
            rules[word] = {v: c / total for v, c in sorted(kept.items())}
    if not rules:
        raise NoiseError(
            f"the pairs show no errors seen >= {min_count} times; "
            "nothing to learn (are reference and hypothesis swapped or identical?)"
        )
    ins = {v: c for v, c in counts.inserted.items() if c >= min_count}
    ins_total = sum(ins.values())
    n = counts.reference_words
    rates = Rates(
        substitution=counts.substitutions / n,
        deletion=counts.deletions / n,
        insertion=counts.insertions / n,
    )
    summary = (
        f"{counts.pairs} pairs, N={n}, S={counts.substitutions}, D={counts.deletions}, "
        f"I={counts.insertions}, {len(rules)} rules, min_count={min_count}"
    )
    return RuleSet(
        rules=rules,
        insertions={v: c / ins_total for v, c in sorted(ins.items())} if ins_total else {},
        rates=rates,
        provenance=f"{provenance}; {summary}" if provenance else summary,
    )


def rules_from_pairs(
    pairs: Iterable[tuple[str, str]], *, min_count: int = 1, provenance: str = ""
) -> RuleSet:
    """Learn a rule set from (reference, ASR hypothesis) pairs."""
    return rules_from_counts(count_alignments(pairs), min_count=min_count, provenance=provenance)


def read_pairs(path: str | Path) -> Iterator[tuple[str, str]]:
    """Read (reference, hypothesis) pairs from a file.

    ``.jsonl``/``.json`` files hold one object a line with ``reference`` and
    ``hypothesis`` fields (RED-ACE's ``truth``/``asr_hypothesis`` are accepted too);
    any other file is tab-separated ``reference<TAB>hypothesis`` lines.

    Raises:
        NoiseError: Naming the file and line of the first malformed record.
    """
    p = Path(path)
    try:
        handle = p.open(encoding="utf-8")
    except OSError as err:
        raise NoiseError(f"{p}: cannot read pairs file ({err.strerror}); check the path") from None
    with handle:
        if p.suffix.lower() in (".jsonl", ".json"):
            fix = "pairs files hold one JSON object a line"
            for number, record in parse_json_lines(handle, p, fix, NoiseError):
                where = f"{p}:{number}"
                if not isinstance(record, dict):
                    raise NoiseError(f"{where}: expected a JSON object per line")
                yield _pair_from_record(record, where)
            return
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{p}:{number}"
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 2:
                raise NoiseError(
                    f"{where}: expected 'reference<TAB>hypothesis', found {len(parts) - 1} tabs"
                )
            yield parts[0], parts[1]


def _pair_from_record(record: dict[str, Any], where: str) -> tuple[str, str]:
    """(reference, hypothesis) from a project-style or RED-ACE-style record."""
    if "reference" in record and "hypothesis" in record:
        return str(record["reference"]), _words(record["hypothesis"], "hypothesis", where)
    if "truth" in record:
        if "asr_hypothesis" in record:
            return str(record["truth"]), _words(record["asr_hypothesis"], "asr_hypothesis", where)
        if "asr" in record:  # the original RED-ACE release: [[word, confidence], ...]
            asr = record["asr"]
            if not isinstance(asr, list) or not all(isinstance(x, list) and x for x in asr):
                raise NoiseError(f"{where}: field 'asr' must be a list of [word, confidence]")
            return str(record["truth"]), " ".join(str(x[0]) for x in asr)
    raise NoiseError(
        f"{where}: record needs 'reference' and 'hypothesis' (or RED-ACE's 'truth' and "
        f"'asr_hypothesis'); found fields {sorted(record)}"
    )


def _words(value: Any, field: str, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(str(w) for w in value)
    raise NoiseError(f"{where}: field {field!r} must be a string or a list of words")


def red_ace_pairs(source: str | Path = RED_ACE_HUB_ID) -> Iterator[tuple[str, str]]:
    """Every (truth, ASR hypothesis) pair of RED-ACE, all splits in a fixed order.

    Args:
        source: A local ``.jsonl`` file, a directory of ``*.jsonl`` files (read in
            split order, then by name), or a Hugging Face dataset id loaded with
            ``datasets.load_dataset`` (needs network access or a populated HF cache).

    Raises:
        NoiseError: If the source cannot be found or a record lacks the fields.
    """
    path = Path(source)
    if path.is_file():
        yield from read_pairs(path)
        return
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"), key=_split_rank)
        if not files:
            raise NoiseError(f"{path}: no *.jsonl files (expected RED-ACE train/dev/test.jsonl)")
        for file in files:
            yield from read_pairs(file)
        return
    if str(source).startswith((".", "/", "~")) or str(source).endswith((".jsonl", ".json")):
        raise NoiseError(f"{source}: no such file or directory")
    yield from _hub_pairs(str(source))


def _split_rank(path: Path) -> tuple[int, str]:
    stem = path.stem.lower()
    rank = RED_ACE_SPLITS.index(stem) if stem in RED_ACE_SPLITS else len(RED_ACE_SPLITS)
    return rank, path.name


def _hub_pairs(dataset_id: str) -> Iterator[tuple[str, str]]:
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is a project dependency
        raise NoiseError("reading RED-ACE from the hub needs `pip install datasets`") from None
    try:
        loaded = datasets.load_dataset(dataset_id)
    except Exception as err:  # datasets raises many types for network/cache problems
        raise NoiseError(
            f"{dataset_id}: cannot load from the Hugging Face hub ({type(err).__name__}); "
            "download the RED-ACE jsonl files and pass their directory instead"
        ) from None
    names = sorted(loaded.keys(), key=lambda s: (_split_rank(Path(s + ".jsonl")), s))
    for split in names:
        for number, record in enumerate(loaded[split], start=1):
            yield _pair_from_record(dict(record), f"{dataset_id}[{split}]:{number}")
