"""The retrieval baseline (``elitr_qa_rag_*``): BM25 over a meeting's speaker turns.

Model developers ask of a long-context benchmark whether reading the whole transcript
beats retrieving a few passages of it. The baseline answers from the passages a BM25
retriever (``bm25s``, Lucene's BM25 on sparse matrices) ranks highest for the question:

* passages are whole speaker turns (:func:`~elitr_bench.middle_cut.speaker_turns`)
  merged in transcript order up to ``rag_chunk`` tokens, so no utterance is split and
  every passage says who speaks; text without a speaker label (one meeting,
  ``meeting_en_dev_006``, has none at all) is taken line by line instead, or it would be
  one passage longer than any budget (:func:`units`);
* the best-ranked passages are taken while they fit ``rag_budget`` tokens (ties: the
  earlier passage first), then put back in transcript order, joined with the
  :data:`~elitr_bench.middle_cut.ELISION` marker where turns were skipped.

A meeting's index is built once and kept under ``<cache root>/retrieval/<key>/`` (the
root of the noise and data caches), named by the SHA-256 of everything that determines
it: the passages' texts, the BM25 parameters and this module's and bm25s' versions.
Tokens are the model's tokenizer's when the task knows it, so the budget is comparable
with ``context_budget``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elitr_bench.data.store import cache_root
from elitr_bench.middle_cut import ELISION, SPEAKER_TURN, speaker_turns
from elitr_bench.tasks.options import OptionError
from elitr_bench.tokens import CHARS_PER_TOKEN

log = logging.getLogger(__name__)

CACHE_SUBDIR = "retrieval"
#: Bumped when passages or scoring change, so older cached indexes are not reused.
INDEX_VERSION = 2
#: BM25 settings (bm25s' defaults, Lucene's variant), part of the cache key.
BM25_PARAMS: dict[str, Any] = {"method": "lucene", "k1": 1.5, "b": 0.75}
#: Query and passages are tokenised alike: lower-cased words, English stop words dropped.
STOPWORDS = "en"
#: Methods a task's YAML may name in ``dataset_kwargs.retrieval``.
METHODS: tuple[str, ...] = ("bm25",)


def units(transcript: str) -> list[str]:
    """What passages are made of: speaker turns, and the lines of unlabelled text.

    Joined with line breaks they give the transcript back; ``rag_passages`` indexes them.
    """
    out: list[str] = []
    for turn in speaker_turns(transcript):
        out.extend([turn] if SPEAKER_TURN.match(turn) else turn.split("\n"))
    return out


@dataclass(frozen=True)
class Passage:
    """Consecutive whole units (:func:`units`) ``first``..``last`` (0-based, inclusive)."""

    first: int
    last: int
    text: str
    tokens: int


@dataclass(frozen=True)
class Retrieved:
    """The passages put into one question's prompt.

    Attributes:
        text: The passages in transcript order, joined by the elision marker.
        turns: Ranges ``[first, last]`` of :func:`units` (speaker turns; 0-based,
            inclusive) of the kept blocks.
        tokens: Tokens of ``text``.
        seconds: Time to score the passages and select them (the index was built before).
    """

    text: str
    turns: tuple[tuple[int, int], ...]
    tokens: int
    seconds: float


def passages(turns: Sequence[str], count: Callable[[str], int], chunk: int) -> list[Passage]:
    """Merge consecutive turns while the passage stays within ``chunk`` tokens.

    A turn longer than ``chunk`` is a passage of its own: turns are never split.
    """
    out: list[Passage] = []
    start = 0
    while start < len(turns):
        end = start
        text = turns[start]
        tokens = count(text)
        while end + 1 < len(turns):
            longer = text + "\n" + turns[end + 1]
            n = count(longer)
            if n > chunk:
                break
            end, text, tokens = end + 1, longer, n
        out.append(Passage(start, end, text, tokens))
        start = end + 1
    return out


def check_chunk(rag_budget: int, rag_chunk: int) -> None:
    """Refuse passages that may be larger than the whole budget.

    Raises:
        OptionError: ``rag_chunk`` exceeds ``rag_budget``: passages that large never fit,
            and a meeting whose passages are all that large gives an empty prompt.
    """
    if rag_chunk > rag_budget:
        raise OptionError(
            f"--metadata rag_chunk={rag_chunk} exceeds rag_budget={rag_budget}: passages "
            f"of up to {rag_chunk} tokens would not fit the budget; use a rag_chunk of at "
            f"most {rag_budget} (default 128) or raise rag_budget"
        )


def check_budget(indexes: dict[str, MeetingIndex], rag_budget: int) -> None:
    """Refuse a budget that holds no passage of some meeting.

    Raises:
        OptionError: ``rag_budget`` is below a meeting's smallest passage (with its
            elision marker), so every prompt about that meeting would hold no transcript.
    """
    short = sorted((m, i.smallest) for m, i in indexes.items() if i.smallest > rag_budget)
    if short:
        listing = ", ".join(f"{m} ({n} tokens)" for m, n in short[:3])
        more = f" and {len(short) - 3} more" if len(short) > 3 else ""
        raise OptionError(
            f"--metadata rag_budget={rag_budget}: below the smallest passage of "
            f"{len(short)} meeting(s), {listing}{more}, whose prompts would hold no "
            f"transcript; use a rag_budget of at least {max(n for _, n in short)}"
        )


def _tokenize(texts: list[str]) -> list[list[str]]:
    import bm25s

    return list(bm25s.tokenize(texts, stopwords=STOPWORDS, return_ids=False, show_progress=False))


def index_key(texts: Sequence[str]) -> str:
    """Hex digest naming the cached index of these passages."""
    import bm25s

    parts = {
        "version": INDEX_VERSION,
        "bm25s": bm25s.__version__,
        "params": BM25_PARAMS,
        "stopwords": STOPWORDS,
        "passages": hashlib.sha256(json.dumps(list(texts)).encode("utf-8")).hexdigest(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def retrieval_cache_dir() -> Path:
    """Directory of cached indexes (honours ``ELITR_BENCH_CACHE``)."""
    return cache_root() / CACHE_SUBDIR


class MeetingIndex:
    """A meeting's passages and their BM25 index (read from the cache when there)."""

    def __init__(self, transcript: str, count: Callable[[str], int], chunk: int) -> None:
        """Split the transcript into passages and load or build their index.

        Args:
            transcript: The meeting's transcript.
            count: Tokens of a text (the model's tokenizer, or an estimate).
            chunk: Most tokens of a passage (``rag_chunk``).
        """
        pieces = units(transcript)
        self.n_turns = len(pieces)
        self.passages = passages(pieces, count, chunk)
        self.count = count
        self.path = retrieval_cache_dir() / index_key([p.text for p in self.passages])
        self.from_cache = False
        self.retriever = self._load() or self._build()

    def _load(self) -> Any | None:
        import bm25s

        if not (self.path / "params.index.json").is_file():
            return None
        try:
            retriever = bm25s.BM25.load(str(self.path), show_progress=False)
        except (OSError, ValueError, KeyError) as exc:  # a damaged cache is rebuilt
            log.warning("retrieval index %s unreadable (%s); rebuilding it", self.path, exc)
            return None
        self.from_cache = True
        return retriever

    def _build(self) -> Any:
        import bm25s

        retriever = bm25s.BM25(**BM25_PARAMS)
        corpus = bm25s.tokenize(
            [p.text for p in self.passages], stopwords=STOPWORDS, show_progress=False
        )
        retriever.index(corpus, show_progress=False)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=self.path.parent, prefix=".tmp-")
        try:
            retriever.save(tmp, show_progress=False)
            self._publish(Path(tmp))
        except OSError as exc:
            log.warning("retrieval index %s not cached (%s); using it from memory", self.path, exc)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return retriever

    def _publish(self, built: Path) -> None:
        """Move a freshly saved index to its place, replacing a damaged one there.

        ``os.replace`` onto a non-empty folder fails, so an index that could not be read
        (or a folder left half-written) is first moved aside and deleted; otherwise every
        run would rebuild it in memory. Another process may publish the same index at the
        same time: whichever lands last stays, and both are the same.
        """
        try:
            os.replace(built, self.path)
            return
        except OSError:
            if not self.path.exists():
                raise
        aside = Path(tempfile.mkdtemp(dir=self.path.parent, prefix=".damaged-"))
        try:
            os.replace(self.path, aside / "index")
            os.replace(built, self.path)
        finally:
            shutil.rmtree(aside, ignore_errors=True)

    @property
    def smallest(self) -> int:
        """Tokens the smallest passage takes of a budget (its elision marker included)."""
        return min((p.tokens for p in self.passages), default=0) + self.count(ELISION)

    def scores(self, question: str) -> list[float]:
        """BM25 score of every passage for the question (0 for passages sharing no word)."""
        query = _tokenize([question])[0]
        if not query:
            return [0.0] * len(self.passages)
        return [float(x) for x in self.retriever.get_scores(query)]

    def retrieve(self, question: str, budget: int) -> Retrieved:
        """The best-ranked passages that fit ``budget`` tokens, in transcript order."""
        began = time.perf_counter()
        scores = self.scores(question)
        ranked = sorted(range(len(self.passages)), key=lambda i: (-scores[i], i))
        gap = self.count(ELISION)
        chosen: list[int] = []
        used = 0
        for i in ranked:
            cost = self.passages[i].tokens + gap
            if used + cost <= budget:
                chosen.append(i)
                used += cost
        text, turns = self.join(chosen)
        tokens = self.count(text)
        while tokens > budget and chosen:  # joins tokenised differently: drop the last ranked
            chosen.pop()
            text, turns = self.join(chosen)
            tokens = self.count(text)
        return Retrieved(text, turns, tokens, time.perf_counter() - began)

    def join(self, chosen: Sequence[int]) -> tuple[str, tuple[tuple[int, int], ...]]:
        """The chosen passages in transcript order and the turn ranges of their blocks."""
        blocks: list[list[Passage]] = []
        for i in sorted(chosen):
            if blocks and blocks[-1][-1].last + 1 == self.passages[i].first:
                blocks[-1].append(self.passages[i])
            else:
                blocks.append([self.passages[i]])
        if not blocks:
            return ELISION.strip("\n"), ()
        body = ELISION.join("\n".join(p.text for p in block) for block in blocks)
        if blocks[0][0].first > 0:
            body = ELISION.lstrip("\n") + body
        if blocks[-1][-1].last < self.n_turns - 1:
            body += ELISION.rstrip("\n")
        return body, tuple((b[0].first, b[-1].last) for b in blocks)


def approximate_tokens(text: str) -> int:
    """Tokens at the package's one ratio (rounded up), for a model whose tokenizer is unseen."""
    return -(-len(text) // CHARS_PER_TOKEN)
