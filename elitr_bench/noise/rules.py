"""Word-substitution rule sets: the paper's JSON format plus global error rates.

A rule maps a (normalised, lower-case) word to a probability distribution over what an
ASR system wrote instead of it: replacement words, or ``""`` for a deletion
(ELITR-Bench App. A: "a token and a probability distribution over similar tokens (or an
empty character)"). The distributions are *conditional on an error*: whether a word is
corrupted at all is governed by the global rates, which is what a target WER scales.
The rule keyed ``""`` is the distribution of inserted words.

File formats read by :func:`load_rules` (``.gz`` compression is recognised by name):

* the project's format, written by :meth:`RuleSet.save`::

    {"format": "elitr-bench-noise-rules", "version": 1, "provenance": "...",
     "rates": {"substitution": 0.10, "deletion": 0.03, "insertion": 0.02},
     "rules": {"": {"uh": 0.2, ...}, "earlier": {"early": 0.47, "": 0.05, ...}, ...}}

  ``rates`` are per reference word: S/N, D/N and I/N of the data the rules came from;
* the paper's bare mapping ``{"earlier": {"early": 0.4651, ...}, ...}`` as one JSON
  object or as JSON lines (one ``{"word": {...}}`` object a line, as written by the ASR
  error simulator the paper adapted). Such files must carry their global rates in the
  simulator's ``"<CORPUS_INFO_WORD>"`` entry (``p_insert``, ``p_delete``, ``p_transmit``,
  ``p_substitute``), which are converted to per-reference-word rates.

Distributions are renormalised on loading (rounded files rarely sum to exactly 1); keys
are normalised like measured words, and keys that collide after normalisation are
merged by averaging their distributions.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from elitr_bench.data.run_files import parse_json_lines
from elitr_bench.noise.errors import NoiseError
from elitr_bench.noise.text import word_key

FORMAT_NAME = "elitr-bench-noise-rules"
FORMAT_VERSION = 1
CORPUS_INFO_WORD = "<CORPUS_INFO_WORD>"
DEFAULT_RULES_FILE = "default_rules.json.gz"

Distribution = Mapping[str, float]


@dataclass(frozen=True)
class Rates:
    """Error rates per reference word of the ASR output the rules describe.

    Attributes:
        substitution: Substituted reference words / reference words.
        deletion: Deleted reference words / reference words.
        insertion: Inserted hypothesis words / reference words.
    """

    substitution: float
    deletion: float
    insertion: float

    @property
    def error(self) -> float:
        """Probability that a reference word is substituted or deleted."""
        return self.substitution + self.deletion

    @property
    def wer(self) -> float:
        """Expected WER of the source data, (S + D + I) / N."""
        return self.substitution + self.deletion + self.insertion


@dataclass(frozen=True)
class RuleSet:
    """A loaded rule set.

    Attributes:
        rules: Normalised word -> distribution over replacements (``""`` = deletion),
            conditional on the word being an error. Each distribution sums to 1.
        insertions: Distribution of inserted words (may be empty).
        rates: Global per-reference-word error rates.
        provenance: Free text saying where the rules came from.
        name: Short label for logs and tables (file name or ``"default"``).
    """

    rules: Mapping[str, Distribution]
    insertions: Distribution
    rates: Rates
    provenance: str = ""
    name: str = ""

    @cached_property
    def hash(self) -> str:
        """Content hash (16 hex digits) of rules, insertions and rates, not provenance."""
        payload = json.dumps(
            {
                "rates": [self.rates.substitution, self.rates.deletion, self.rates.insertion],
                "insertions": self.insertions,
                "rules": self.rules,
            },
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    @cached_property
    def vocabulary(self) -> tuple[str, ...]:
        """Every non-empty replacement or inserted word, sorted (for uniform fallbacks)."""
        words: set[str] = set(self.insertions)
        for dist in self.rules.values():
            words.update(dist)
        words.discard("")
        return tuple(sorted(words))

    def to_json(self) -> dict[str, Any]:
        """The project's file format as a JSON-ready dict (keys sorted on dump)."""
        rules: dict[str, Any] = {"": dict(self.insertions)} if self.insertions else {}
        rules.update({k: dict(v) for k, v in self.rules.items()})
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "provenance": self.provenance,
            "rates": {
                "substitution": self.rates.substitution,
                "deletion": self.rates.deletion,
                "insertion": self.rates.insertion,
            },
            "rules": rules,
        }

    def save(self, path: str | Path, *, digits: int | None = None) -> Path:
        """Write the rule set in the project's format (gzip if the name ends in ``.gz``).

        Args:
            path: Output file.
            digits: Round probabilities to this many decimals to shrink the file.
        """
        data = self.to_json()
        if digits is not None:
            data["rules"] = {
                k: {w: round(p, digits) for w, p in v.items() if round(p, digits) > 0}
                for k, v in data["rules"].items()
            }
        text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.name.endswith(".gz"):
            # No file name and mtime=0 in the header keep the compressed bytes reproducible.
            with (
                out.open("wb") as raw,
                gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz,
            ):
                gz.write(text.encode("utf-8"))
        else:
            out.write_text(text + "\n", encoding="utf-8")
        return out


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise NoiseError(
            f"{path}: cannot read rules file ({err.strerror}); check the path"
        ) from None
    if path.name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise NoiseError(f"{path}: not a valid gzip file ({err}); re-create it") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NoiseError(f"{path}: rules file is not UTF-8 text") from None


def _parse_document(text: str, where: str) -> dict[str, Any]:
    """One JSON object, or JSON lines of objects merged in order."""
    stripped = text.strip()
    if not stripped:
        raise NoiseError(f"{where}: rules file is empty")
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as first:
        lines = stripped.split("\n")
        try:
            json.loads(lines[0])
        except json.JSONDecodeError:  # no JSON lines either: a broken JSON document
            raise NoiseError(
                f"{where}: not valid JSON ({first.msg} at line {first.lineno} column {first.colno})"
            ) from None
        merged: dict[str, Any] = {}
        fix = "JSON-lines rules need one object per line"
        for number, item in parse_json_lines(lines, where, fix, NoiseError):
            if not isinstance(item, dict):
                raise NoiseError(
                    f"{where}:{number}: must be a JSON object, got {_kind(item)}"
                ) from None
            merged.update(item)
        return merged
    if not isinstance(data, dict):
        raise NoiseError(f"{where}: top level must be a JSON object, got {_kind(data)}")
    return data


def _kind(value: Any) -> str:
    return type(value).__name__ if value is not None else "null"


def _probability(value: Any, what: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NoiseError(f"{where}: {what} is {value!r}; probabilities must be numbers")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise NoiseError(f"{where}: {what} is {value!r}; probabilities must be >= 0 and finite")
    return number


def _distribution(word: str, value: Any, where: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise NoiseError(
            f"{where}: rule {word!r} must map replacements to probabilities, got {_kind(value)}"
        )
    dist: dict[str, float] = {}
    for replacement, prob in value.items():
        p = _probability(prob, f"rule {word!r} -> {replacement!r}", where)
        if p > 0:
            dist[str(replacement).strip()] = dist.get(str(replacement).strip(), 0.0) + p
    total = sum(dist.values())
    if total <= 0:
        raise NoiseError(f"{where}: rule {word!r} has no positive probability; drop the rule")
    return {w: p / total for w, p in dist.items()}


def _probabilities(
    value: dict[str, Any], names: tuple[str, ...], key: str, where: str, fix: str = ""
) -> dict[str, float]:
    """The named probabilities of the object under ``key``; a missing one is one line."""
    got = {}
    for name in names:
        if name not in value:
            raise NoiseError(f"{where}: {key!r} lacks {name!r}{fix}")
        got[name] = _probability(value[name], f"{key}.{name}", where)
    return got


def _rates_from_project(value: Any, where: str) -> Rates:
    if not isinstance(value, dict):
        raise NoiseError(f"{where}: 'rates' must be an object with substitution/deletion/insertion")
    names = ("substitution", "deletion", "insertion")
    got = _probabilities(value, names, "rates", where, "; give S/N, D/N and I/N of the data")
    if got["substitution"] + got["deletion"] > 1:
        raise NoiseError(f"{where}: rates.substitution + rates.deletion exceed 1")
    if got["substitution"] + got["deletion"] + got["insertion"] <= 0:
        raise NoiseError(f"{where}: all rates are 0; the rules would never change a word")
    return Rates(**got)


def _rates_from_simulator(value: Any, where: str) -> Rates:
    """Convert the simulator's per-output-token rates to per-reference-word rates.

    The simulator counts over all alignment slots T = I + D + S + C and stores
    ``p_insert = I/T``, ``p_delete = D/T``, ``p_transmit = (S+C)/T`` and
    ``p_substitute = S/(S+C)``; with N = T - I reference words this gives
    S/N = p_transmit * p_substitute / (1 - p_insert) and so on.
    """
    if not isinstance(value, dict):
        raise NoiseError(f"{where}: {CORPUS_INFO_WORD!r} must be an object of rates")
    got = _probabilities(value, ("p_insert", "p_delete", "p_substitute"), CORPUS_INFO_WORD, where)
    p_ins, p_del, p_sub = got["p_insert"], got["p_delete"], got["p_substitute"]
    default_transmit = 1.0 - p_ins - p_del
    p_tr = _probability(
        value.get("p_transmit", default_transmit), f"{CORPUS_INFO_WORD}.p_transmit", where
    )
    if p_ins >= 1 or p_sub > 1:
        raise NoiseError(f"{where}: {CORPUS_INFO_WORD!r} has p_insert >= 1 or p_substitute > 1")
    n = 1.0 - p_ins
    return Rates(substitution=p_tr * p_sub / n, deletion=p_del / n, insertion=p_ins / n)


def parse_rules(data: Mapping[str, Any], where: str, name: str = "") -> RuleSet:
    """Validate a decoded rules document (either format) into a :class:`RuleSet`.

    Args:
        data: The decoded JSON object.
        where: File name used in error messages.
        name: Label stored on the rule set.

    Raises:
        NoiseError: With a one-line message naming ``where`` and the fault.
    """
    provenance = ""
    if data.get("format") == FORMAT_NAME:
        version = data.get("version")
        if version != FORMAT_VERSION:
            raise NoiseError(
                f"{where}: format version {version!r} is not supported (expected {FORMAT_VERSION})"
            )
        if "rates" not in data:
            raise NoiseError(f"{where}: missing 'rates' (substitution, deletion, insertion)")
        rates = _rates_from_project(data["rates"], where)
        raw_rules = data.get("rules")
        if not isinstance(raw_rules, dict):
            raise NoiseError(f"{where}: 'rules' must be an object mapping words to distributions")
        provenance = str(data.get("provenance", ""))
    else:
        if "format" in data and isinstance(data["format"], str):
            raise NoiseError(
                f"{where}: unknown format {data['format']!r}; expected {FORMAT_NAME!r} or the "
                "paper's bare word -> distribution mapping"
            )
        raw_rules = dict(data)
        info = raw_rules.pop(CORPUS_INFO_WORD, None)
        if info is None:
            raise NoiseError(
                f"{where}: no global error rates; add a 'rates' object (project format) or a "
                f"{CORPUS_INFO_WORD!r} entry with p_insert/p_delete/p_substitute"
            )
        rates = _rates_from_simulator(info, where)
        raw_rules.pop("<vocab>", None)

    insertions: dict[str, float] = {}
    grouped: dict[str, list[dict[str, float]]] = {}
    for word, value in raw_rules.items():
        if not isinstance(word, str):  # pragma: no cover - JSON keys are strings
            continue
        dist = _distribution(word, value, where)
        if word.strip() == "":
            dist.pop("", None)
            insertions = dist
            continue
        key = word_key(word).strip()
        if not key or any(ch.isspace() for ch in key):
            continue  # punctuation-only or multi-word sources cannot be matched to a word
        grouped.setdefault(key, []).append(dist)
    rules: dict[str, dict[str, float]] = {}
    for key, dists in grouped.items():
        merged: dict[str, float] = {}
        for dist in dists:
            for w, p in dist.items():
                merged[w] = merged.get(w, 0.0) + p / len(dists)
        rules[key] = merged
    if not rules:
        raise NoiseError(f"{where}: the rules file defines no word rules")
    total = sum(insertions.values())
    if insertions:
        insertions = {w: p / total for w, p in insertions.items() if w}
    return RuleSet(
        rules=rules, insertions=insertions, rates=rates, provenance=provenance, name=name
    )


def load_rules(path: str | Path) -> RuleSet:
    """Load a rules file in the project's or the paper's format.

    Raises:
        NoiseError: If the file is missing, not JSON, or violates the format; the
            message is one line naming the file and the problem.
    """
    p = Path(path)
    data = _parse_document(_read_text(p), str(p))
    return parse_rules(data, str(p), name=p.name)


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    """The rule set shipped in the package (see :mod:`elitr_bench.noise.build_default`)."""
    resource = resources.files("elitr_bench.noise").joinpath(DEFAULT_RULES_FILE)
    where = f"elitr_bench/noise/{DEFAULT_RULES_FILE}"
    try:
        raw = resource.read_bytes()
    except OSError:
        raise NoiseError(
            f"{where}: packaged default rules are missing; rebuild them with "
            "`python -m elitr_bench.noise.build_default`"
        ) from None
    data = _parse_document(gzip.decompress(raw).decode("utf-8"), where)
    return parse_rules(data, where, name="default")


def resolve_rules(rules: RuleSet | str | Path | None) -> RuleSet:
    """Accept a rule set, a path to a rules file, or ``None`` for the default rules."""
    if rules is None:
        return default_rules()
    if isinstance(rules, RuleSet):
        return rules
    return load_rules(rules)
