"""Reusing key/value caches across requests that share a token prefix.

Every ELITR prompt opens with the same 5k-18k-token transcript: the ~15 questions of a
meeting share it (single-turn), and each turn of a conversation extends the previous
turn's prompt (multi-turn). This module holds the model-independent part of reusing
that work, so the bench can count prefill tokens with exactly the logic the model runs:

* :func:`common_prefix` and :func:`prefix_schedule` decide, from token ids only, in
  which order to serve a call's requests and how many tokens each one shares with the
  next (requests sorted lexicographically, so every group of requests sharing a prefix
  is contiguous and the shared part can stay in one working cache);
* :class:`PrefixStore` keeps finished sequences' caches between calls, bounded by bytes
  and evicted least-recently-used first;
* :func:`serve_with_prefix_reuse` runs the schedule against any :class:`CacheOps`
  (torch ``DynamicCache`` in the model, a length-only stand-in in the bench).

The working cache is cropped back to the shared prefix after each request instead of
being copied, so at any time there is one working cache plus what the store holds.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np

from elitr_bench.data.errors import ElitrBenchError

C = TypeVar("C")


class PrefixCacheError(ElitrBenchError):
    """Bad prefix-cache setting in ``--model_args``."""


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token-id sequences."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    left = np.asarray(a[:n], dtype=np.int64)
    right = np.asarray(b[:n], dtype=np.int64)
    diff = np.flatnonzero(left != right)
    return int(diff[0]) if diff.size else n


def distinct_prefix_tokens(sequences: Sequence[Sequence[int]]) -> int:
    """Token positions an ideal cache computes: nodes of the prefix trie of ``sequences``.

    In lexicographic order each sequence adds exactly the tokens after its common
    prefix with the previous one, so no trie needs to be built.
    """
    ordered = sorted(list(s) for s in sequences)
    total = 0
    previous: list[int] = []
    for seq in ordered:
        total += len(seq) - common_prefix(previous, seq)
        previous = seq
    return total


@dataclass(frozen=True)
class Schedule:
    """Serving order of one call's requests and what each shares with the next.

    Attributes:
        order: Request indices in serving order (lexicographic order of their ids).
        share_next: For each position in ``order``, the tokens that request shares with
            the next one (0 when below ``min_prefix_tokens`` or for the last request).
    """

    order: tuple[int, ...]
    share_next: tuple[int, ...]

    def shares_with_neighbour(self) -> dict[int, bool]:
        """Request index -> whether it shares a prefix with the request before or after."""
        out: dict[int, bool] = {}
        for pos, index in enumerate(self.order):
            before = pos > 0 and self.share_next[pos - 1] > 0
            out[index] = before or self.share_next[pos] > 0
        return out


def prefix_schedule(sequences: Sequence[Sequence[int]], min_prefix_tokens: int) -> Schedule:
    """Sort requests so that those sharing a prefix are adjacent.

    In lexicographic order the common prefix of any two requests is the minimum of the
    adjacent common prefixes between them, so keeping only "what I share with the next
    request" in the working cache never throws away anything a later request needs.
    """
    order = sorted(range(len(sequences)), key=lambda i: list(sequences[i]))
    share: list[int] = []
    for pos, index in enumerate(order):
        if pos + 1 == len(order):
            share.append(0)
            continue
        n = common_prefix(sequences[index], sequences[order[pos + 1]])
        share.append(n if n >= min_prefix_tokens else 0)
    return Schedule(order=tuple(order), share_next=tuple(share))


class CacheOps(Protocol[C]):
    """What the scheduler needs from a cache implementation."""

    def empty(self) -> C:
        """A new, empty cache."""
        ...

    def length(self, cache: C) -> int:
        """Tokens held by ``cache``."""
        ...

    def crop(self, cache: C, length: int) -> None:
        """Shrink ``cache`` in place to its first ``length`` tokens."""
        ...

    def nbytes(self, cache: C) -> int:
        """Memory held by ``cache`` (what the store's budget counts)."""
        ...

    def park(self, cache: C) -> C:
        """Move a finished cache to the store's device (identity when it is the same)."""
        ...

    def unpark(self, cache: C) -> C:
        """Move a stored cache back to the model's device."""
        ...


@dataclass
class _Entry(Generic[C]):
    ids: list[int]
    cache: C
    nbytes: int
    call: int


class PrefixStore(Generic[C]):
    """Finished sequences' caches kept across calls, within a byte budget.

    Memory policy: the caches held here never exceed ``budget_bytes`` in total (a cache
    bigger than the whole budget is not kept). Taking an entry removes it (no copy); the
    sequence it grew into is put back afterwards, so a conversation occupies one entry
    that is replaced turn after turn. To make room, entries not used in the current
    ``generate_until`` call are evicted least recently used first; an entry this call
    already stored or reused is never evicted for another one of the same call (the new
    one is dropped instead). Multi-turn calls visit the conversations in the same order
    every turn, where plain LRU would evict each conversation just before it is needed;
    this policy keeps a stable subset of them instead.
    """

    def __init__(self, ops: CacheOps[C], budget_bytes: int) -> None:
        if budget_bytes < 0:
            raise PrefixCacheError(
                f"prefix_cache_mb must be >= 0 (got {budget_bytes / 2**20:g}); "
                "use 0 to disable reuse across calls"
            )
        self.ops = ops
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[int, _Entry[C]] = OrderedDict()
        self._next_key = 0
        self._call = 0
        self.evicted = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes currently held."""
        return sum(e.nbytes for e in self._entries.values())

    def sequences(self) -> list[list[int]]:
        """Token ids of the stored sequences, least recently used first."""
        return [e.ids for e in self._entries.values()]

    def begin_call(self) -> None:
        """Mark the start of a ``generate_until`` call (entries stored so far become older)."""
        self._call += 1

    def best_match(self, ids: Sequence[int]) -> tuple[int | None, int]:
        """Key and common-prefix length of the stored sequence sharing most with ``ids``."""
        best_key: int | None = None
        best_len = 0
        for key, entry in self._entries.items():
            n = common_prefix(entry.ids, ids)
            if n > best_len:
                best_key, best_len = key, n
        return best_key, best_len

    def take(self, key: int) -> tuple[list[int], C]:
        """Remove an entry and hand its ids and cache (on the model's device) to the caller."""
        entry = self._entries.pop(key)
        return entry.ids, self.ops.unpark(entry.cache)

    def put(self, ids: list[int], cache: C) -> bool:
        """Keep a finished sequence's cache, evicting entries of earlier calls as needed.

        Returns:
            Whether the cache was kept (False when it does not fit without evicting an
            entry of the current call, or alone exceeds the budget).
        """
        size = self.ops.nbytes(cache)
        older = [k for k, e in self._entries.items() if e.call < self._call]  # LRU first
        room = self.budget_bytes - self.nbytes + sum(self._entries[k].nbytes for k in older)
        if size > room:
            self.dropped += 1
            return False
        for key in older:
            if self.nbytes + size <= self.budget_bytes:
                break
            del self._entries[key]
            self.evicted += 1
        self._entries[self._next_key] = _Entry(ids, self.ops.park(cache), size, self._call)
        self._next_key += 1
        return True

    def clear(self) -> None:
        """Drop every stored cache."""
        self._entries.clear()


@dataclass
class PrefillStats:
    """Prompt tokens run through the model versus taken from a cache."""

    requests: int = 0
    prompt_tokens: int = 0
    prefilled_tokens: int = 0
    reused_from_group: int = 0
    reused_from_store: int = 0

    @property
    def reused_tokens(self) -> int:
        """Prompt tokens whose keys/values came from a cache."""
        return self.reused_from_group + self.reused_from_store

    def served(self, prompt: int, cached: int) -> None:
        """Count a request of ``prompt`` tokens whose first ``cached`` came from a cache."""
        self.requests += 1
        self.prompt_tokens += prompt
        self.prefilled_tokens += prompt - cached


#: ``generate(index, ids, cache, cached)``: prefill ``ids[cached:]`` into ``cache`` (which
#: holds ``ids[:cached]``), decode, and return the generated ids; ``cache`` then holds
#: the prompt and the generated tokens the model was fed.
Generate = Callable[[int, list[int], C, int], list[int]]


def _take_best(
    store: PrefixStore[C], ids: Sequence[int], min_prefix_tokens: int
) -> tuple[C, int] | None:
    """Take the stored cache sharing most with ``ids``, with that shared length.

    ``None`` (and the store left as it was) when the best match shares fewer than
    ``min_prefix_tokens`` tokens, too short a prefix to be worth reusing.
    """
    key, hit = store.best_match(ids)
    if key is None or hit < min_prefix_tokens:
        return None
    _, cache = store.take(key)
    return cache, hit


def _crop_to(ops: CacheOps[C], cache: C, cached: int, limit: int) -> int:
    """Crop ``cache`` to the ``cached`` tokens it shares, at most ``limit``; returns that length."""
    cached = max(0, min(cached, limit, ops.length(cache)))
    ops.crop(cache, cached)
    return cached


def _from_store(
    ops: CacheOps[C], store: PrefixStore[C], ids: Sequence[int], min_prefix_tokens: int, limit: int
) -> tuple[C, int, bool]:
    """The cache a request starts from when no working cache serves it.

    The stored cache sharing most with ``ids`` (else a new, empty one), cropped to the
    tokens they share and at most ``limit`` (a request needs at least one uncached token
    to produce its first logits).

    Returns:
        The cache, the tokens of ``ids`` it holds, and whether it came from the store.
    """
    found = _take_best(store, ids, min_prefix_tokens)
    cache, hit = found if found is not None else (ops.empty(), 0)
    return cache, _crop_to(ops, cache, hit, limit), found is not None


def _finished(ops: CacheOps[C], ids: list[int], generated: list[int], cache: C) -> list[int]:
    """The ids a finished request's cache holds: its prompt and the answer tokens fed."""
    return (ids + generated)[: ops.length(cache)]


def _begin_call(
    sequences: Sequence[Sequence[int]],
    store: PrefixStore[C],
    min_prefix_tokens: int,
    stats: PrefillStats | None,
) -> tuple[PrefillStats, Schedule, list[list[int]]]:
    """Start one serving call, one-row or batched: its counters, its order and empty results."""
    stats = stats if stats is not None else PrefillStats()
    store.begin_call()
    return stats, prefix_schedule(sequences, min_prefix_tokens), [[] for _ in sequences]


def serve_with_prefix_reuse(
    sequences: Sequence[list[int]],
    ops: CacheOps[C],
    store: PrefixStore[C],
    generate: Generate[C],
    *,
    min_prefix_tokens: int,
    stats: PrefillStats | None = None,
) -> list[list[int]]:
    """Serve requests in prefix order, reusing the working cache and the store.

    Args:
        sequences: Prompt token ids, one list per request.
        ops: Cache operations.
        store: Caches kept from earlier calls (and receiving this call's).
        generate: Runs one request, see :data:`Generate`.
        min_prefix_tokens: Shorter shared prefixes are not worth keeping a cache for.
        stats: Counters to update.

    Returns:
        Generated ids per request, in the order of ``sequences``.
    """
    stats, schedule, results = _begin_call(sequences, store, min_prefix_tokens, stats)
    trunk: C | None = None
    trunk_ids: list[int] = []
    for pos, index in enumerate(schedule.order):
        ids = sequences[index]
        if trunk is not None:
            cache, from_store = trunk, False
            cached = _crop_to(ops, cache, common_prefix(trunk_ids, ids), len(ids) - 1)
        else:
            cache, cached, from_store = _from_store(
                ops, store, ids, min_prefix_tokens, len(ids) - 1
            )
        generated = generate(index, ids, cache, cached)
        results[index] = generated
        stats.served(len(ids), cached)
        if from_store:
            stats.reused_from_store += cached
        else:
            stats.reused_from_group += cached
        full = _finished(ops, ids, generated, cache)
        keep = schedule.share_next[pos]
        if keep:
            ops.crop(cache, min(keep, len(full)))
            trunk, trunk_ids = cache, full[:keep]
        else:
            trunk, trunk_ids = None, []
            store.put(full, cache)
    return results


@dataclass
class LengthCache:
    """A stand-in cache that only tracks its length, for counting without a model."""

    tokens: int = 0


class LengthCacheOps:
    """:class:`CacheOps` over :class:`LengthCache`, sized by a fixed bytes-per-token."""

    def __init__(self, bytes_per_token: int) -> None:
        self.bytes_per_token = bytes_per_token

    def empty(self) -> LengthCache:
        """A new, empty cache."""
        return LengthCache()

    def length(self, cache: LengthCache) -> int:
        """Tokens held."""
        return cache.tokens

    def crop(self, cache: LengthCache, length: int) -> None:
        """Shrink to ``length`` tokens."""
        cache.tokens = min(cache.tokens, length)

    def nbytes(self, cache: LengthCache) -> int:
        """Bytes a real cache of this length would hold."""
        return cache.tokens * self.bytes_per_token

    def park(self, cache: LengthCache) -> LengthCache:
        """No device to move to."""
        return cache

    def unpark(self, cache: LengthCache) -> LengthCache:
        """No device to move to."""
        return cache


@dataclass(frozen=True)
class BatchRow(Generic[C]):
    """One request of a batch: its prompt and a cache holding the prompt's first tokens.

    Attributes:
        index: Position of the request in the call.
        ids: Prompt token ids.
        cache: Holds ``ids[:cached]`` (rows of one batch may share the same cache object,
            which the batch must not change).
        cached: Tokens of ``ids`` already in ``cache``; at least one token is left to feed.
        keep: Whether the row's finished cache goes to the store (only then is it copied
            out of the batch).
    """

    index: int
    ids: list[int]
    cache: C
    cached: int
    keep: bool = False


def batch_columns(rows: Sequence[BatchRow[C]]) -> int:
    """Columns of a batch's cache: the longest cached span plus the longest uncached suffix.

    Each row's cached tokens sit right-aligned in the first part and its suffix in the
    second, so a row with a long cache and another with a long suffix make the batch up
    to twice as wide as its longest prompt; memory is bounded by this width, not by the
    longest prompt.
    """
    return max(r.cached for r in rows) + max(len(r.ids) - r.cached for r in rows)


#: ``extend(ids, cache, cached)``: prefill ``ids[cached:]`` into ``cache`` (one row, no logits).
Extend = Callable[[list[int], C, int], None]
#: ``generate_batch(rows)``: feed every row's uncached tokens, decode the rows together and
#: return each row's generated ids and, for the rows marked ``keep``, a cache of its own
#: holding its prompt and answer (None for the others).
GenerateBatch = Callable[[list[BatchRow[C]]], tuple[list[list[int]], list[C | None]]]


def batch_runs(schedule: Schedule, max_batch: int) -> list[tuple[list[int], bool]]:
    """Cut the serving order into batches of at most ``max_batch`` positions in ``schedule.order``.

    Requests that share a prefix with a neighbour (a meeting's questions) are batched
    with each other only, so each batch has one shared prefix to prefill once; requests
    that share nothing in this call (turn k of different conversations, each continuing
    its own stored turn k-1) are batched together, each row with its own cache.

    Returns:
        ``(positions, shared)`` per batch; ``shared``: cut from a run of requests that
        share a prefix (a run's last batch may hold one request).
    """
    if max_batch < 1:
        raise PrefixCacheError(f"max_batch_size={max_batch}: must be >= 1")
    shared: list[tuple[list[int], bool]] = []
    alone: list[int] = []
    run: list[int] = []
    for pos in range(len(schedule.order)):
        run.append(pos)
        if schedule.share_next[pos] == 0:
            if len(run) > 1:
                shared.extend((run[i : i + max_batch], True) for i in range(0, len(run), max_batch))
            else:
                alone.append(pos)
            run = []
    singles = [(alone[i : i + max_batch], False) for i in range(0, len(alone), max_batch)]
    return shared + singles


def _batch_share(schedule: Schedule, batch: list[int], lengths: list[int]) -> int:
    """Tokens every row of a batch cut from a shared run shares (one left to feed).

    A lone row: the most it shares with a neighbour.
    """
    first = batch[0]
    if len(batch) > 1:
        shared = min(schedule.share_next[p] for p in batch[:-1])
    else:
        shared = max(schedule.share_next[first], schedule.share_next[first - 1] if first else 0)
    return min([shared, *(n - 1 for n in lengths)])


def _alone_rows(
    sequences: Sequence[list[int]],
    indices: list[int],
    keep: list[bool],
    ops: CacheOps[C],
    store: PrefixStore[C],
    extend: Extend[C],
    min_prefix_tokens: int,
    stats: PrefillStats,
) -> list[BatchRow[C]]:
    """Rows of unrelated requests, each from its best stored sequence.

    A row without one (fewer than ``min_prefix_tokens`` shared) first prefills its own
    prompt alone, so no row's long prompt is padded into the batch.
    """
    rows: list[BatchRow[C]] = []
    for i, kept in zip(indices, keep, strict=True):
        ids = sequences[i]
        cache, cached, _ = _from_store(ops, store, ids, min_prefix_tokens, len(ids) - 1)
        stats.reused_from_store += cached
        if cached < min_prefix_tokens and len(ids) - 1 > cached:
            extend(ids[: len(ids) - 1], cache, cached)  # alone: nothing to pad
            stats.prefilled_tokens += len(ids) - 1 - cached
            cached = len(ids) - 1
        rows.append(BatchRow(i, ids, cache, cached, keep=kept))
    return rows


def serve_batched(
    sequences: Sequence[list[int]],
    ops: CacheOps[C],
    store: PrefixStore[C],
    extend: Extend[C],
    generate_batch: GenerateBatch[C],
    *,
    min_prefix_tokens: int,
    max_batch: int,
    rows_fit: Callable[[int], int] | None = None,
    stats: PrefillStats | None = None,
) -> list[list[int]]:
    """Serve requests in batches over shared prefixes (see :func:`batch_runs`).

    A batch of requests sharing a prefix prefills that prefix once into a one-row trunk
    cache (reusing the previous batch's trunk or a stored sequence where they match), and
    every row starts from it. A batch of unrelated requests takes each row's best stored
    sequence; a row without one first prefills its own prompt alone, so no row's long
    prompt is padded into the batch. ``generate_batch`` then feeds the rest of every row
    and decodes them together. As in :func:`serve_with_prefix_reuse`, the last request
    of each run (the one sharing nothing with the next) leaves its sequence in the store.

    ``rows_fit(columns)``: how many rows a batch whose cache is ``columns`` wide may have
    (:func:`batch_columns`, known only once each row's cache is taken); a batch with more
    is decoded in parts of that many rows.

    Returns:
        Generated ids per request, in the order of ``sequences``.
    """
    stats, schedule, results = _begin_call(sequences, store, min_prefix_tokens, stats)
    trunk: C | None = None
    trunk_ids: list[int] = []
    for batch, in_run in batch_runs(schedule, max_batch):
        indices = [schedule.order[pos] for pos in batch]
        if in_run:
            shared = _batch_share(schedule, batch, [len(sequences[i]) for i in indices])
            head = sequences[indices[0]][:shared]
            from_store = 0
            cached = common_prefix(trunk_ids, head) if trunk is not None else 0
            if trunk is not None and cached >= min_prefix_tokens:
                start = trunk
                cached = _crop_to(ops, start, cached, shared)
            else:
                start, cached, stored = _from_store(ops, store, head, min_prefix_tokens, shared)
                from_store = cached if stored else 0
            extend(head, start, cached)
            trunk, trunk_ids = start, head
            stats.prefilled_tokens += shared - cached
            stats.reused_from_store += from_store
            stats.reused_from_group += (len(batch) - 1) * shared + (cached - from_store)
            rows = [
                BatchRow(i, sequences[i], start, shared, keep=schedule.share_next[p] == 0)
                for p, i in zip(batch, indices, strict=True)
            ]
        else:
            keep = [schedule.share_next[pos] == 0 for pos in batch]
            rows = _alone_rows(
                sequences, indices, keep, ops, store, extend, min_prefix_tokens, stats
            )
            trunk, trunk_ids = None, []
        size = len(rows) if rows_fit is None else max(1, rows_fit(batch_columns(rows)))
        for at in range(0, len(rows), size):
            part = rows[at : at + size]
            generated, caches = generate_batch(part)
            for row, gen, finished in zip(part, generated, caches, strict=True):
                results[row.index] = gen
                stats.served(len(row.ids), row.cached)
                if row.keep and finished is not None:
                    store.put(_finished(ops, row.ids, gen, finished), finished)
    return results
