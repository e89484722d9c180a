"""The model-independent prefix scheduler and the byte-bounded store (no model needed)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from elitr_bench.models.kv_cache import (
    BatchRow,
    LengthCache,
    LengthCacheOps,
    PrefillStats,
    PrefixCacheError,
    PrefixStore,
    batch_runs,
    common_prefix,
    distinct_prefix_tokens,
    prefix_schedule,
    serve_batched,
    serve_with_prefix_reuse,
)


def _trie_size(sequences: list[list[int]]) -> int:
    """Distinct prefixes = tokens an ideal cache prefills once each."""
    return len({tuple(s[: i + 1]) for s in sequences for i in range(len(s))})


def _fake_generate(answer_len: int = 3) -> Callable[[int, list[int], LengthCache, int], list[int]]:
    """A stand-in model: 'generates' fixed ids and grows the length-only cache."""

    def generate(index: int, ids: list[int], cache: LengthCache, cached: int) -> list[int]:
        assert cache.tokens == cached < len(ids)
        out = [9000 + index, 9100 + index, 9200 + index][:answer_len]
        cache.tokens = len(ids) + len(out) - 1  # the last generated token is never fed
        return out

    return generate


def _questions_on_meetings(rng: random.Random) -> list[list[int]]:
    """Single-turn prompts, shuffled: 5 short questions on each of 3 long transcripts."""
    transcripts = [
        [rng.randrange(50, 5000) for _ in range(rng.randrange(300, 600))] for _ in range(3)
    ]
    seqs = [
        t + [rng.randrange(50, 5000) for _ in range(rng.randrange(5, 15))]
        for t in transcripts
        for _ in range(5)
    ]
    rng.shuffle(seqs)
    return seqs


def test_common_prefix() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([5], [6]) == 0


def test_distinct_prefix_tokens_counts_trie_nodes() -> None:
    rng = random.Random(3)
    seqs = [[rng.randrange(3) for _ in range(rng.randrange(0, 12))] for _ in range(40)]
    assert distinct_prefix_tokens(seqs) == _trie_size(seqs)
    assert distinct_prefix_tokens([[1, 2, 3], [1, 2], [1, 2, 3]]) == 3


def test_schedule_groups_shared_prefixes_and_respects_threshold() -> None:
    a, b = list(range(100)), list(range(1000, 1100))
    seqs = [[*a, 7], [*b, 1], [*a, 3, 4], [1000, 1], [*b, 2]]
    sched = prefix_schedule(seqs, min_prefix_tokens=50)
    order = list(sched.order)
    # members of a group are adjacent; the short one shares only 1 token (< 50)
    assert {order.index(0), order.index(2)} in ({0, 1}, {1, 2}, {2, 3}, {3, 4})
    assert abs(order.index(1) - order.index(4)) == 1
    shares = dict(zip(order, sched.share_next, strict=True))
    assert shares[order[-1]] == 0
    assert sorted(s for s in sched.share_next if s) == [100, 100]
    assert sched.shares_with_neighbour()[3] is False


def test_single_turn_prefills_each_unique_token_once() -> None:
    rng = random.Random(0)
    seqs = _questions_on_meetings(rng)
    ops = LengthCacheOps(bytes_per_token=10)
    store: PrefixStore[LengthCache] = PrefixStore(ops, budget_bytes=10**9)
    stats = PrefillStats()
    out = serve_with_prefix_reuse(
        seqs, ops, store, _fake_generate(), min_prefix_tokens=64, stats=stats
    )
    assert [o[0] - 9000 for o in out] == list(range(len(seqs)))  # results in request order
    assert stats.prompt_tokens == sum(map(len, seqs))
    assert stats.prefilled_tokens == _trie_size(seqs)
    assert stats.prefilled_tokens + stats.reused_tokens == stats.prompt_tokens
    assert len(store) == 3  # one sequence kept per meeting


def test_second_call_prefills_only_new_tokens() -> None:
    rng = random.Random(1)
    convs = [[rng.randrange(50, 5000) for _ in range(400)] for _ in range(4)]
    ops = LengthCacheOps(bytes_per_token=10)
    store: PrefixStore[LengthCache] = PrefixStore(ops, budget_bytes=10**9)
    first = serve_with_prefix_reuse(convs, ops, store, _fake_generate(), min_prefix_tokens=64)
    # turn 2: previous prompt + its answer + a new question (as the multi-turn tasks send)
    turn2 = [c + a + [11, 12, 13, 14] for c, a in zip(convs, first, strict=True)]
    stats = PrefillStats()
    serve_with_prefix_reuse(turn2, ops, store, _fake_generate(), min_prefix_tokens=64, stats=stats)
    # the last answer token was never fed to the model, so it is prefilled with the question
    assert stats.prefilled_tokens == 4 * (1 + 4)
    assert stats.reused_from_store == sum(len(c) + 2 for c in convs)
    assert len(store) == 4


def test_store_evicts_least_recently_used_of_earlier_calls() -> None:
    ops = LengthCacheOps(bytes_per_token=100)
    store: PrefixStore[LengthCache] = PrefixStore(ops, budget_bytes=25_000)
    store.begin_call()
    assert store.put([1] * 100, LengthCache(100))  # 10 kB
    assert store.put([2] * 100, LengthCache(100))  # 20 kB
    assert not store.put([3] * 100, LengthCache(100))  # would evict an entry of this call
    store.begin_call()
    key, n = store.best_match([1] * 100 + [5])
    assert n == 100 and key is not None
    assert store.put([3] * 100, LengthCache(100))  # evicts [1]*100, the least recently used
    assert store.nbytes <= store.budget_bytes and store.evicted == 1
    assert store.best_match([1] * 10)[1] == 0 and store.best_match([3] * 10)[1] == 10
    assert not store.put([4] * 300, LengthCache(300))  # larger than the whole budget
    assert len(store) == 2 and store.dropped == 2


def test_cyclic_conversations_over_budget_keep_a_stable_subset() -> None:
    """Plain LRU would miss every time; our policy keeps serving the same two."""
    rng = random.Random(2)
    convs = [[rng.randrange(50, 5000) for _ in range(500)] for _ in range(4)]
    ops = LengthCacheOps(bytes_per_token=1)
    store: PrefixStore[LengthCache] = PrefixStore(ops, budget_bytes=1100)  # room for two
    hits = []
    for _turn in range(4):
        stats = PrefillStats()
        answers = serve_with_prefix_reuse(
            convs, ops, store, _fake_generate(), min_prefix_tokens=64, stats=stats
        )
        hits.append(stats.reused_from_store // 500)
        convs = [c + a + [7] for c, a in zip(convs, answers, strict=True)]
    assert hits == [0, 2, 2, 2]


def test_negative_budget_is_a_clear_error() -> None:
    with pytest.raises(PrefixCacheError, match="prefix_cache_mb must be >= 0"):
        PrefixStore(LengthCacheOps(1), budget_bytes=-1)


def test_zero_budget_keeps_nothing_but_still_shares_within_a_call() -> None:
    ops = LengthCacheOps(bytes_per_token=1)
    store: PrefixStore[LengthCache] = PrefixStore(ops, budget_bytes=0)
    shared = list(range(100, 400))
    seqs = [[*shared, 1], [*shared, 2, 3]]
    stats = PrefillStats()
    serve_with_prefix_reuse(seqs, ops, store, _fake_generate(), min_prefix_tokens=10, stats=stats)
    assert stats.prefilled_tokens == len(shared) + 1 + 2 and len(store) == 0


class FakeBatchModel:
    """Length-only stand-ins for ``extend`` and ``generate_batch`` that check their inputs."""

    def __init__(self, answer_len: int = 3) -> None:
        self.answer_len = answer_len
        self.batches: list[list[int]] = []
        #: Columns of each batch's cache: its rows' longest cached span + longest suffix.
        self.widths: list[int] = []

    def extend(self, ids: list[int], cache: LengthCache, cached: int) -> None:
        assert cache.tokens == cached <= len(ids)
        cache.tokens = len(ids)

    def generate_batch(
        self, rows: list[BatchRow[LengthCache]]
    ) -> tuple[list[list[int]], list[LengthCache | None]]:
        self.batches.append([r.index for r in rows])
        self.widths.append(max(r.cached for r in rows) + max(len(r.ids) - r.cached for r in rows))
        out: list[list[int]] = []
        caches: list[LengthCache | None] = []
        for r in rows:
            assert r.cache.tokens >= r.cached and r.cached < len(r.ids)
            answer = [9000 + r.index, 9100 + r.index, 9200 + r.index][: self.answer_len]
            out.append(answer)
            caches.append(LengthCache(len(r.ids) + len(answer) - 1) if r.keep else None)
        return out, caches


def test_batch_runs_keep_shared_runs_apart_and_bound_the_size() -> None:
    a, b = list(range(100)), list(range(1000, 1100))
    seqs = [[*a, i] for i in range(5)] + [[*b, 1], [7, 7], [8, 8]]
    sched = prefix_schedule(seqs, min_prefix_tokens=50)
    runs = batch_runs(sched, max_batch=2)
    members = [sorted(sched.order[p] for p in batch) for batch, _ in runs]
    assert members == [[0, 1], [2, 3], [4], [6, 7], [5]]  # [7, 7] < [8, 8] < b
    assert [shared for _, shared in runs] == [True, True, True, False, False]
    with pytest.raises(PrefixCacheError, match="max_batch_size=0"):
        batch_runs(sched, max_batch=0)


@pytest.mark.parametrize("max_batch", [1, 2, 4, 16])
def test_batched_serving_prefills_what_serial_serving_does(max_batch: int) -> None:
    """Any batch size: each meeting's transcript once, turn 2 only its new tokens."""
    rng = random.Random(4)
    seqs = _questions_on_meetings(rng)
    ops = LengthCacheOps(bytes_per_token=10)
    store: PrefixStore[LengthCache] = PrefixStore(ops, budget_bytes=10**9)
    stats = PrefillStats()
    model = FakeBatchModel()
    out = serve_batched(
        seqs, ops, store, model.extend, model.generate_batch,
        min_prefix_tokens=64, max_batch=max_batch, stats=stats,
    )  # fmt: skip
    assert [o[0] - 9000 for o in out] == list(range(len(seqs)))
    assert stats.prefilled_tokens == _trie_size(seqs)
    assert stats.prefilled_tokens + stats.reused_tokens == stats.prompt_tokens
    assert len(store) == 3
    assert max(map(len, model.batches)) == min(max_batch, 5)

    # multi-turn: the conversations share nothing, so they are batched across, each
    # from its own stored sequence
    convs = [[rng.randrange(50, 5000) for _ in range(400)] for _ in range(4)]
    first = serve_batched(
        convs, ops, store, model.extend, model.generate_batch,
        min_prefix_tokens=64, max_batch=max_batch,
    )  # fmt: skip
    turn2 = [c + a + [11, 12, 13, 14] for c, a in zip(convs, first, strict=True)]
    stats = PrefillStats()
    model.batches.clear()
    serve_batched(
        turn2, ops, store, model.extend, model.generate_batch,
        min_prefix_tokens=64, max_batch=max_batch, stats=stats,
    )  # fmt: skip
    assert stats.prefilled_tokens == 4 * (1 + 4)
    assert stats.reused_from_store == sum(len(c) + 2 for c in convs)
    assert [len(b) for b in model.batches] == [min(max_batch, 4)] * (4 // min(max_batch, 4))


def test_a_batch_is_bounded_by_its_cache_width_not_its_longest_prompt() -> None:
    """Rows with mixed cached/suffix splits: the batch cache is wider than any prompt.

    Turn 2 of two long conversations adds a short question to a long stored turn 1, of
    two short ones a long document to a short one: the batch cache holds the longest
    cached span (1,000) plus the longest suffix (900), 1,900 columns for prompts of at
    most 1,002 tokens. A memory bound sized by the longest prompt allows 3 rows of 4,000
    columns' budget; their cache takes 5,700.
    """
    rng = random.Random(7)
    ops = LengthCacheOps(bytes_per_token=1)
    store: PrefixStore[LengthCache] = PrefixStore(ops, budget_bytes=10**9)
    model = FakeBatchModel()
    longs = [[rng.randrange(50, 5000) for _ in range(1000)] for _ in range(2)]
    shorts = [[rng.randrange(50, 5000) for _ in range(100)] for _ in range(2)]
    serve_batched(
        longs + shorts, ops, store, model.extend, model.generate_batch,
        min_prefix_tokens=64, max_batch=8,
    )  # fmt: skip
    turn2 = [[*s, 11, 12] for s in longs]
    turn2 += [s + [rng.randrange(50, 5000) for _ in range(900)] for s in shorts]
    budget = 4000  # columns the memory holds

    def rows_fit(columns: int) -> int:
        return max(1, budget // columns)

    model.batches.clear()
    model.widths.clear()
    stats = PrefillStats()
    out = serve_batched(
        turn2, ops, store, model.extend, model.generate_batch,
        min_prefix_tokens=64, max_batch=rows_fit(max(map(len, turn2))), rows_fit=rows_fit,
        stats=stats,
    )  # fmt: skip
    assert rows_fit(max(map(len, turn2))) == 3 and max(model.widths) == 1900
    assert all(len(b) * w <= budget for b, w in zip(model.batches, model.widths, strict=True))
    assert sorted(i for b in model.batches for i in b) == [0, 1, 2, 3]
    assert [o[0] - 9000 for o in out] == [0, 1, 2, 3]
    assert stats.reused_from_store == 2 * 1000 + 2 * 100  # every row from its turn 1
    assert stats.prefilled_tokens == 2 * 2 + 2 * 900
