"""Inject simulated ASR errors into a transcript at a target word error rate.

Generative model (both modes). Every *corruptible* token (a whitespace token that is a
word under the measurement convention of :mod:`elitr_bench.noise.text` and is not
protected) may be preceded by inserted words drawn from the rules' insertion
distribution, and may itself be replaced by a draw from its rule (a replacement word,
a two-word split, or ``""`` = deletion). Replacements keep the token's surrounding
punctuation and capitalisation; a deleted token passes its trailing punctuation to the
previous word of the line. Line breaks and the whitespace of untouched text are kept.

Determinism and nesting. All random numbers are drawn once per (transcript, seed,
protection) from ``numpy.random.default_rng(seed)`` before any rate is known: per
corruptible token one uniform decides *whether* it is corrupted (deleted, in paper mode),
one whether a kept token is substituted (paper mode), one *what* replaces it, one *how
many* words are inserted before it, and six *which* words. A corruption level only
moves thresholds over these fixed numbers, so the same seed gives the same bytes, and
the errors at WER 0.2 are a subset of the errors at WER 0.4 for the same seed (noise
levels differ only by added noise, as a monotone robustness curve needs).

``calibrated`` mode (default). A multiplier ``s`` scales the rule set's rates: a token
is corrupted with probability ``min(1, s * (S+D)/N)`` and the number of words inserted
before it is geometric with mean ``s * I/N + max(0, s * (S+D)/N - 1)``. The second
term takes over once every corruptible word is already wrong, so that targets of 1.0
and above stay reachable even though protected tokens are never changed. ``s`` is found
by Brent's method (``scipy.optimize.brentq``) on the WER measured against the clean
text, stopping once within ``TOLERANCE`` (0.002) of the target. During the search the
WER is rapidfuzz's word-level Levenshtein distance over the normalised word lists (the
same minimum edit distance jiwer computes, without building the alignment); the
reported ``effective_wer`` is re-measured with jiwer on the final text. Words without a rule get
an orthographic stand-in: deletion with the rules' share of deletions among errors,
otherwise one of the three rule words closest in spelling (rapidfuzz ratio).

``paper`` mode reproduces the uncalibrated scaling of the ASR error simulator that the
paper adapted (App. A, footnote 17) for comparison with Table 5. The rates are first
expressed in the simulator's terms over all alignment slots (``pi = I/T``,
``pd = D/T``, ``ps = S/(S+C)``); a single factor ``c`` is taken as the positive root of
``pd*ps*c**2 + (pi+pd+ps)*c = target`` and multiplies ``pi``, ``pd`` and ``ps``. Each
token is then preceded by a geometric number of insertions with continuation
probability ``pi'/(1+pi')``, kept ("transmitted") with probability
``(1-pi'-pd')/(1-pi')`` and otherwise deleted, and a kept token is substituted with
probability ``ps'`` by a draw from its rule without the deletion entry (a uniformly
drawn vocabulary word when it has no rule). Nothing is measured while injecting, which
is why the effective WER drifts from the target. Like the paper, which protected
nothing, paper mode corrupts speaker labels, de-identified entities and tags too
(``protect`` defaults to ``none`` in this mode; pass ``protect="default"`` to keep them).
What still differs from the paper: the rules (ours are not built from RED-ACE, see
:mod:`elitr_bench.noise.rules`), and tokens are whitespace words rather than Moses tokens,
so punctuation is never a target and never inserted (the simulator's ``--punct random``
treats punctuation marks as tokens).
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein
from scipy.optimize import brentq

from elitr_bench.noise.errors import NoiseError
from elitr_bench.noise.rules import RuleSet, resolve_rules
from elitr_bench.noise.text import (
    PROTECT_CHOICES,
    is_protected,
    match_case,
    measure_wer,
    split_affixes,
    tokenize,
    whitespace_wer,
    word_keys,
)

MODES: tuple[str, ...] = ("calibrated", "paper")
DEFAULT_SEED = 2023
#: Calibration stops once the measured WER is this close to the target.
TOLERANCE = 0.002
#: Most words inserted before one token (the geometric draw is capped here).
MAX_INSERTIONS = 6
MAX_TARGET = 2.0
#: Bumped whenever the same inputs would give different bytes; part of the cache key.
ENGINE_VERSION = 1
_FALLBACK_NEIGHBOURS = 3
_SENTENCE_END = ".?!"


@dataclass(frozen=True)
class NoisyTranscript:
    """A transcript with injected ASR-like errors and how it was made.

    Attributes:
        text: The noisy transcript.
        target_wer: Requested WER.
        effective_wer: WER of ``text`` against the clean transcript, measured with jiwer.
        seed: Random seed.
        rules_hash: :attr:`RuleSet.hash` of the rules used.
        scale: Rate multiplier found by calibration (``calibrated``) or the
            simulator's factor ``c`` (``paper``).
        mode: ``calibrated`` or ``paper``.
        protect: Protection policy (``default`` or ``none``).
        reference_words: Words of the clean transcript (N).
        substitutions: Substituted words (S) in the measured alignment.
        deletions: Deleted words (D).
        insertions: Inserted words (I).
        whitespace_wer: WER of ``text`` over plain whitespace tokens, case and
            punctuation kept (:func:`~elitr_bench.noise.text.whitespace_wer`); reported,
            never calibrated on.
    """

    text: str
    target_wer: float
    effective_wer: float
    seed: int
    rules_hash: str
    scale: float
    mode: str
    protect: str
    reference_words: int
    substitutions: int
    deletions: int
    insertions: int
    whitespace_wer: float


@dataclass(frozen=True)
class _Draws:
    """A transcript cut into tokens with its fixed random numbers."""

    tokens: tuple[str, ...]
    separators: tuple[str, ...]
    norm: np.ndarray  # normalised form of every token ("" for punctuation-only)
    positions: np.ndarray  # token index of each corruptible token
    keys: tuple[str, ...]  # rule key of each corruptible token
    u: np.ndarray  # (corruptible, 4 + MAX_INSERTIONS) uniforms
    reference: list[str]  # reference words


_U_ERROR, _U_SUBST, _U_CHOICE, _U_INSERT, _U_WORDS = 0, 1, 2, 3, 4


def _prepare(text: str, seed: int, protect: str) -> _Draws:
    toks = tokenize(text)
    norm = word_keys(toks.tokens)
    positions = [
        i
        for i, (tok, key) in enumerate(zip(toks.tokens, norm, strict=True))
        if key.strip() and not is_protected(tok, protect)
    ]
    rng = np.random.default_rng(seed)
    u = rng.random((len(positions), 4 + MAX_INSERTIONS))
    return _Draws(
        tokens=toks.tokens,
        separators=toks.separators,
        norm=np.array(norm, dtype=object),
        positions=np.array(positions, dtype=np.int64),
        keys=tuple(norm[i] for i in positions),
        u=u,
        reference=" ".join(norm).split(),
    )


_FALLBACKS: dict[str, dict[str, dict[str, float]]] = {}
_RULE_KEYS: dict[str, tuple[str, ...]] = {}


def _fallback(rules: RuleSet, key: str) -> dict[str, float]:
    """Stand-in distribution for a word without a rule (calibrated mode), memoised."""
    memo = _FALLBACKS.setdefault(rules.hash, {})
    if key in memo:
        return memo[key]
    share = rules.rates.deletion / rules.rates.error if rules.rates.error > 0 else 0.0
    choices = _RULE_KEYS.setdefault(rules.hash, tuple(sorted(rules.rules)))
    found = process.extract(key, choices, scorer=fuzz.ratio, limit=_FALLBACK_NEIGHBOURS)
    scored = [(w, float(score)) for w, score, _ in found if w != key and score > 0]
    dist: dict[str, float] = {"": 1.0}
    if scored:
        total = sum(score for _, score in scored)
        dist = {w: (1 - share) * score / total for w, score in scored}
        if share > 0:
            dist[""] = share
    memo[key] = dist
    return dist


class _Sampler:
    """Inverse-CDF draws from one distribution, words in sorted order for stability."""

    def __init__(self, dist: Mapping[str, float]) -> None:
        self.words = sorted(dist)
        self.cumulative = np.cumsum([dist[w] for w in self.words])

    def pick(self, u: np.ndarray) -> list[str]:
        idx = np.searchsorted(self.cumulative, u * self.cumulative[-1], side="right")
        idx = np.minimum(idx, len(self.words) - 1)
        return [self.words[i] for i in idx.tolist()]


def _insertion_words(rules: RuleSet) -> dict[str, float]:
    if rules.insertions:
        return dict(rules.insertions)
    mass: dict[str, float] = {}
    for dist in rules.rules.values():
        for w, p in dist.items():
            if w:
                mass[w] = mass.get(w, 0.0) + p
    top = sorted(mass.items(), key=lambda kv: (-kv[1], kv[0]))[:50]
    total = sum(p for _, p in top)
    return {w: p / total for w, p in top} if top else {"uh": 1.0}


@dataclass(frozen=True)
class _Outcomes:
    """What each corruptible token becomes if corrupted, in display and normalised form."""

    display: list[str]  # "" = deleted
    trail: list[str]  # punctuation passed to the previous word on deletion
    norm: np.ndarray
    insert_display: list[list[str]]
    insert_norm: np.ndarray  # (corruptible, MAX_INSERTIONS)


def _outcomes(draws: _Draws, rules: RuleSet, mode: str) -> _Outcomes:
    vocabulary = rules.vocabulary
    by_key: dict[str, list[int]] = {}
    for j, key in enumerate(draws.keys):
        by_key.setdefault(key, []).append(j)
    choices: list[str] = [""] * len(draws.keys)
    for key, members in by_key.items():
        u = draws.u[members, _U_CHOICE]
        dist = rules.rules.get(key)
        if mode == "paper":
            dist = {w: p for w, p in (dist or {}).items() if w} or None
            if dist is None:  # no rule: a uniformly drawn vocabulary word, as the simulator
                idx = np.minimum((u * len(vocabulary)).astype(np.int64), len(vocabulary) - 1)
                picked = [vocabulary[i] for i in idx.tolist()]
            else:
                picked = _Sampler(dist).pick(u)
        else:
            picked = _Sampler(dist if dist is not None else _fallback(rules, key)).pick(u)
        for j, word in zip(members, picked, strict=True):
            choices[j] = word
    display: list[str] = []
    trail: list[str] = []
    for j, choice in enumerate(choices):
        lead, core, tail = split_affixes(draws.tokens[int(draws.positions[j])])
        if choice:
            display.append(f"{lead}{match_case(choice, core)}{tail}")
            trail.append("")
        else:
            display.append("")
            trail.append(tail)
    flat_words = _Sampler(_insertion_words(rules)).pick(draws.u[:, _U_WORDS:].reshape(-1))
    insert_display = [
        flat_words[j * MAX_INSERTIONS : (j + 1) * MAX_INSERTIONS] for j in range(len(display))
    ]
    norm = np.array(word_keys(display), dtype=object)
    ins_norm = np.array(word_keys(flat_words), dtype=object)
    return _Outcomes(
        display=display,
        trail=trail,
        norm=norm,
        insert_display=insert_display,
        insert_norm=ins_norm.reshape(len(display), MAX_INSERTIONS),
    )


def _insert_counts(u: np.ndarray, mean: float) -> np.ndarray:
    """Geometric counts with the given mean from fixed uniforms, capped; monotone in mean."""
    if mean <= 0:
        return np.zeros(u.shape, dtype=np.int64)
    q = mean / (1.0 + mean)
    with np.errstate(divide="ignore"):
        counts = np.floor(np.log(u) / math.log(q))
    return np.clip(np.nan_to_num(counts, posinf=MAX_INSERTIONS), 0, MAX_INSERTIONS).astype(np.int64)


@dataclass(frozen=True)
class _Decision:
    corrupted: np.ndarray  # bool per corruptible token
    inserted: np.ndarray  # int per corruptible token


def _hypothesis_words(draws: _Draws, out: _Outcomes, decision: _Decision) -> list[str]:
    n_tok = len(draws.tokens)
    grid = np.full((n_tok, MAX_INSERTIONS + 1), "", dtype=object)
    grid[:, MAX_INSERTIONS] = draws.norm
    pos = draws.positions
    if len(pos):
        grid[pos[decision.corrupted], MAX_INSERTIONS] = out.norm[decision.corrupted]
        slots = np.arange(MAX_INSERTIONS)[None, :] < decision.inserted[:, None]
        grid[pos, :MAX_INSERTIONS] = np.where(slots, out.insert_norm, "")
    return " ".join(grid.ravel().tolist()).split()


def _render(draws: _Draws, out: _Outcomes, decision: _Decision) -> str:
    texts = list(draws.tokens)
    trails = [""] * len(texts)
    corruptible = set(draws.positions.tolist())
    protected = {i for i, key in enumerate(draws.norm.tolist()) if key and i not in corruptible}
    for j, i in enumerate(draws.positions.tolist()):
        word = out.display[j] if decision.corrupted[j] else texts[i]
        if not word and decision.corrupted[j]:
            trails[i] = out.trail[j]
        n = int(decision.inserted[j])
        if n:
            word = (
                " ".join([*out.insert_display[j][:n], word])
                if word
                else " ".join(out.insert_display[j][:n])
            )
        texts[i] = word
    pieces: list[str] = []
    pending: str | None = None
    last_word = -1  # index in pieces of the last emitted word that may take punctuation
    for i, word in enumerate(texts):
        sep = draws.separators[i]
        merged = sep if pending is None else (pending if "\n" in pending else sep)
        if not word:
            final = "".join(ch for ch in trails[i] if ch in _SENTENCE_END)
            if final and last_word >= 0 and "\n" not in merged:
                previous = pieces[last_word]
                if previous[-1:] not in _SENTENCE_END:
                    pieces[last_word] = previous.rstrip(",;:") + final
            pending = merged
            continue
        pieces.append(merged)
        pieces.append(word)
        last_word = len(pieces) - 1 if i not in protected else -1
        pending = None
    tail = draws.separators[-1]
    pieces.append(tail if pending is None else (pending if "\n" in pending else tail))
    return "".join(pieces)


def _calibrated_decision(draws: _Draws, rules: RuleSet, s: float) -> _Decision:
    error = rules.rates.error
    p_error = min(1.0, s * error)
    mean_ins = s * rules.rates.insertion + max(0.0, s * error - 1.0)
    return _Decision(
        corrupted=draws.u[:, _U_ERROR] < p_error,
        inserted=_insert_counts(draws.u[:, _U_INSERT], mean_ins),
    )


def paper_factor(rules: RuleSet, target: float) -> tuple[float, float, float, float]:
    """The simulator's scaling for ``target``: ``(c, p_insert', p_delete', p_substitute')``.

    See the module docstring; rates are converted from per-reference-word to the
    simulator's per-slot convention before solving.
    """
    r = rules.rates
    slots = 1.0 + r.insertion
    pi, pd = r.insertion / slots, r.deletion / slots
    ps = r.substitution / (1.0 - r.deletion) if r.deletion < 1 else 0.0
    linear, quadratic = pi + pd + ps, pd * ps
    if target <= 0 or linear <= 0:
        return 0.0, 0.0, 0.0, 0.0
    if quadratic > 0:
        c = (-linear + math.sqrt(linear * linear + 4 * quadratic * target)) / (2 * quadratic)
    else:
        c = target / linear
    return c, c * pi, c * pd, c * ps


def _paper_decision(
    draws: _Draws, rules: RuleSet, target: float
) -> tuple[float, _Decision, np.ndarray]:
    """Simulator-style decisions; also returns which tokens were kept (not deleted)."""
    c, pi, pd, ps = paper_factor(rules, target)
    transmit = (1.0 - pi - pd) / (1.0 - pi) if pi < 1 else 0.0
    p_continue = pi / (1.0 + pi)
    mean_ins = p_continue / (1.0 - p_continue)  # geometric continuation -> mean
    kept = draws.u[:, _U_ERROR] < transmit
    substituted = kept & (draws.u[:, _U_SUBST] < ps)
    decision = _Decision(
        corrupted=(~kept) | substituted,
        inserted=_insert_counts(draws.u[:, _U_INSERT], mean_ins),
    )
    return c, decision, kept


def _with_deletions(out: _Outcomes, draws: _Draws, deleted: np.ndarray) -> _Outcomes:
    """Outcomes where the ``deleted`` tokens vanish whatever their rule would give."""
    display, trail, norm = list(out.display), list(out.trail), out.norm.copy()
    for j in np.flatnonzero(deleted).tolist():
        _, _, tail = split_affixes(draws.tokens[int(draws.positions[j])])
        display[j], trail[j], norm[j] = "", tail, ""
    return _Outcomes(display, trail, norm, out.insert_display, out.insert_norm)


class _Search:
    """Measured WER as a function of the multiplier, remembering the closest point."""

    def __init__(self, draws: _Draws, out: _Outcomes, rules: RuleSet, target: float) -> None:
        self.draws, self.out, self.rules, self.target = draws, out, rules, target
        self.best: tuple[float, float] = (math.inf, 0.0)  # (|error|, s)
        self.n_ref = max(1, len(draws.reference))

    def wer(self, s: float) -> float:
        decision = _calibrated_decision(self.draws, self.rules, s)
        hyp = _hypothesis_words(self.draws, self.out, decision)
        value = Levenshtein.distance(self.draws.reference, hyp) / self.n_ref
        gap = abs(value - self.target)
        if gap < self.best[0]:
            self.best = (gap, s)
        return value


class _Close(Exception):
    """Raised inside the root finder once the target is hit within tolerance."""


def _calibrate(draws: _Draws, out: _Outcomes, rules: RuleSet, target: float) -> float:
    search = _Search(draws, out, rules, target)

    def gap(s: float) -> float:
        g = search.wer(s) - target
        if abs(g) <= TOLERANCE:
            raise _Close
        return g

    lo, hi = 0.0, max(target / max(rules.rates.wer, 1e-6), 1e-3)
    try:
        limit = 1.0 / max(rules.rates.error, 1e-6) + 60.0 / max(rules.rates.error, 1e-3)
        while gap(hi) < 0:
            lo, hi = hi, hi * 1.6
            if hi > limit:
                raise NoiseError(
                    f"target WER {target} is out of reach for rules {rules.name or rules.hash} "
                    f"on this transcript (best {search.wer(search.best[1]):.3f}); lower it"
                )
        brentq(gap, lo, hi, xtol=1e-9, maxiter=100)
    except _Close:
        pass
    return search.best[1]


_PREPARED: OrderedDict[tuple[str, int, str, str, str], tuple[_Draws, _Outcomes]] = OrderedDict()
_PREPARED_MAX = 4


def _prepared(
    text: str, seed: int, protect: str, rules: RuleSet, mode: str
) -> tuple[_Draws, _Outcomes | None]:
    """Tokens, random numbers and outcomes, reused across targets of one transcript."""
    key = (hashlib.sha256(text.encode("utf-8")).hexdigest(), seed, protect, rules.hash, mode)
    if key in _PREPARED:
        _PREPARED.move_to_end(key)
        return _PREPARED[key]
    draws = _prepare(text, seed, protect)
    if not len(draws.positions):
        return draws, None
    value = (draws, _outcomes(draws, rules, mode))
    _PREPARED[key] = value
    while len(_PREPARED) > _PREPARED_MAX:
        _PREPARED.popitem(last=False)
    return value


def default_protect(mode: str) -> str:
    """Protection policy used when none is given: the paper protected no tokens.

    ``calibrated`` keeps speaker labels, de-identified entities and event tags intact
    (``default``), because a corrupted ``(PERSON4)`` changes who said what, which the
    questions ask about; ``paper`` follows the paper's procedure (``none``).
    """
    return "none" if mode == "paper" else "default"


def _check_args(target_wer: float, protect: str, mode: str) -> None:
    if not isinstance(target_wer, (int, float)) or not 0 <= target_wer <= MAX_TARGET:
        raise NoiseError(f"target_wer={target_wer!r} must be a number in [0, {MAX_TARGET}]")
    if protect not in PROTECT_CHOICES:
        raise NoiseError(f"protect={protect!r} is not one of {PROTECT_CHOICES}")
    if mode not in MODES:
        raise NoiseError(f"mode={mode!r} is not one of {MODES}")


def generate(
    text: str,
    target_wer: float,
    seed: int = DEFAULT_SEED,
    rules: RuleSet | str | Path | None = None,
    protect: str | None = None,
    mode: str = "calibrated",
) -> NoisyTranscript:
    """Inject noise without touching the disk cache (arguments as :func:`.cache.noisy_transcript`).

    Raises:
        NoiseError: For a bad setting, an empty or fully protected transcript, or a
            target the rules cannot reach on this transcript.
    """
    protect = default_protect(mode) if protect is None else protect
    _check_args(target_wer, protect, mode)
    ruleset = resolve_rules(rules)
    draws, prepared = _prepared(text, seed, protect, ruleset, mode)
    if not draws.reference:
        raise NoiseError("the transcript has no words; WER is undefined for an empty reference")
    if target_wer == 0 or prepared is None:
        if target_wer > 0:
            raise NoiseError("every word of the transcript is protected; use protect='none'")
        return _result(text, text, target_wer, seed, ruleset, 0.0, mode, protect)
    out = prepared
    if mode == "paper":
        scale, decision, kept = _paper_decision(draws, ruleset, target_wer)
        out = _with_deletions(out, draws, ~kept)
    else:
        scale = _calibrate(draws, out, ruleset, target_wer)
        decision = _calibrated_decision(draws, ruleset, scale)
    noisy = _render(draws, out, decision)
    return _result(text, noisy, target_wer, seed, ruleset, scale, mode, protect)


def _result(
    clean: str,
    noisy: str,
    target: float,
    seed: int,
    rules: RuleSet,
    scale: float,
    mode: str,
    protect: str,
) -> NoisyTranscript:
    measured = measure_wer(clean, noisy)
    return NoisyTranscript(
        text=noisy,
        target_wer=float(target),
        effective_wer=measured.wer,
        seed=seed,
        rules_hash=rules.hash,
        scale=float(scale),
        mode=mode,
        protect=protect,
        reference_words=measured.reference_words,
        substitutions=measured.substitutions,
        deletions=measured.deletions,
        insertions=measured.insertions,
        whitespace_wer=whitespace_wer(clean, noisy),
    )
