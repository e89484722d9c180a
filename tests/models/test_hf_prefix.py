"""``hf-prefix`` in process: same greedy answers as ``hf``, fewer prompt tokens prefilled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM

from elitr_bench import prompts
from elitr_bench.data import load_benchmark
from elitr_bench.models.hf_prefix import HFPrefixLM
from elitr_bench.models.kv_cache import PrefixCacheError, common_prefix

GREEDY = {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": 16}
TRANSCRIPT_CHARS = 3000  # ~1k tokens of real meeting text keeps the file under 20 s


def _args(model: Path) -> dict[str, Any]:
    return {"pretrained": str(model), "dtype": "float32", "device": "cpu", "batch_size": 1}


@pytest.fixture(scope="module")
def hf(sharp_llama: Path) -> HFLM:
    return HFLM(**_args(sharp_llama))


@pytest.fixture(scope="module")
def transcripts() -> list[str]:
    meetings = list(load_benchmark().meetings.values())
    return [m.transcript[:TRANSCRIPT_CHARS] for m in meetings[:3]]


class ForwardCounter:
    """Counts token positions passed to the model's forward (prefill and decode alike)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.tokens = 0
        self.calls = 0
        self._handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, _module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]
        self.tokens += int(ids.shape[-1])
        self.calls += 1

    def close(self) -> None:
        self._handle.remove()


def _record_ids(lm: HFLM) -> list[list[int]]:
    """Continuation ids every ``tok_decode`` of a list sees (call order)."""
    seen: list[list[int]] = []
    original = lm.tok_decode

    def tok_decode(tokens: Any, skip_special_tokens: bool = True) -> Any:
        if isinstance(tokens, list):
            seen.append(list(tokens))
        return original(tokens, skip_special_tokens=skip_special_tokens)

    lm.tok_decode = tok_decode
    return seen


def _run(
    lm: HFLM, contexts: list[str], gen: dict[str, Any] = GREEDY
) -> tuple[list[str], list[list[int]], ForwardCounter]:
    seen = _record_ids(lm)
    counter = ForwardCounter(lm.model)
    try:
        reqs = [Instance("generate_until", {}, (c, dict(gen)), i) for i, c in enumerate(contexts)]
        out = lm.generate_until(reqs, disable_tqdm=True)
    finally:
        counter.close()
        del lm.tok_decode  # back to the class method
    return out, seen, counter


def _prompt_tokens_fed(counter: ForwardCounter, generated: list[list[int]]) -> int:
    """Forward positions minus decode steps (the first token comes from the prefill)."""
    return counter.tokens - sum(len(g) - 1 for g in generated)


def _trie_size(sequences: list[list[int]]) -> int:
    return len({tuple(s[: i + 1]) for s in sequences for i in range(len(s))})


@pytest.fixture()
def single_turn(transcripts: list[str]) -> list[str]:
    questions = [
        "Who attended?",
        "What was decided about the demo?",
        "When is the next call?",
        "How many people?",
    ]
    contexts = [
        prompts.render_plain(prompts.conversation(t, [q], []))
        for t in transcripts[:2]
        for q in questions
    ]
    return [*contexts, "A short prompt with nothing to share."]


@pytest.mark.parametrize("extra", [{}, {"prefill_chunk": 64}])
def test_single_turn_matches_hf_and_prefills_each_transcript_once(
    hf: HFLM, sharp_llama: Path, single_turn: list[str], extra: dict[str, Any]
) -> None:
    ours = HFPrefixLM(**_args(sharp_llama), **extra)
    assert ours.model.config._attn_implementation == "sdpa"
    want, want_ids, hf_count = _run(hf, single_turn)
    got, got_ids, our_count = _run(ours, single_turn)

    assert got == want
    assert sorted(got_ids) == sorted(want_ids)
    assert len({tuple(i) for i in want_ids}) >= 4  # answers differ: the test can fail

    ids = [ours.tok_encode(c) for c in single_turn]
    shared = [i for i in ids if len(i) >= ours.min_prefix_tokens]
    assert ours.prefix_stats.requests == len(shared) == 8
    # each meeting's distinct tokens once (the ~50-token Fig. 5 head that both meetings
    # share is below min_prefix_tokens, so it is prefilled per meeting)
    ideal = _trie_size(shared[:4]) + _trie_size(shared[4:])
    assert ours.prefix_stats.prefilled_tokens == ideal
    assert _prompt_tokens_fed(hf_count, want_ids) == sum(map(len, ids))
    if not extra:  # chunked prefill runs the decoder body directly, outside the counted forward
        assert _prompt_tokens_fed(our_count, got_ids) == ideal + len(ids[-1])
    assert ours.prefix_stats.prefilled_tokens * 3 < sum(map(len, shared))


def test_a_misplaced_cache_changes_answers(
    hf: HFLM, sharp_llama: Path, single_turn: list[str]
) -> None:
    """Negative control: keep one stale token when cropping and the answers no longer match."""
    broken = HFPrefixLM(**_args(sharp_llama))
    ops = broken._cache_ops
    crop = ops.crop

    def crop_one_short(cache: Any, length: int) -> None:
        crop(cache, min(length + 1, ops.length(cache)))

    ops.crop = crop_one_short  # type: ignore[method-assign]
    want, _, _ = _run(hf, single_turn)
    got, _, _ = _run(broken, single_turn)
    assert got != want


QUESTIONS = ["Who led the meeting?", "What did they decide?", "Who disagreed?"]


def _turn_contexts(transcripts: list[str], answers: list[list[str]], lm: HFLM) -> list[str]:
    """Turn k of every conversation: Fig. 5 + transcript, q1, a1, ..., qk, chat-templated."""
    turn = len(answers[0])
    contexts = []
    for transcript, given in zip(transcripts, answers, strict=True):
        messages = prompts.conversation(transcript, QUESTIONS[: turn + 1], given)
        contexts.append(lm.apply_chat_template([m.as_dict() for m in messages]))
    return contexts


def test_multi_turn_matches_hf_and_prefills_only_new_tokens(
    hf: HFLM, sharp_llama: Path, transcripts: list[str]
) -> None:
    ours = HFPrefixLM(**_args(sharp_llama))
    per_request: list[list[int]] = []
    finish = ours._finish

    def finish_and_record(cont: list[int], until: list[str]) -> str:
        per_request.append(list(cont))
        return finish(cont, until)

    ours._finish = finish_and_record  # type: ignore[method-assign,assignment]
    answers: list[list[str]] = [[], []]
    previous: list[list[int]] = []
    previous_prompts: list[list[int]] = []
    for turn in range(3):
        per_request.clear()
        contexts = _turn_contexts(transcripts[:2], answers, ours)
        want, want_ids, _ = _run(hf, contexts)
        got, got_ids, counter = _run(ours, contexts)
        assert got == want and sorted(got_ids) == sorted(want_ids)
        ids = [ours.tok_encode(c) for c in contexts]
        fed = _prompt_tokens_fed(counter, got_ids)
        if turn == 0:
            assert fed == sum(map(len, ids))
        else:
            # previous prompt + its answer (all but the last generated token) is cached
            reused = [common_prefix(prev, now) for prev, now in zip(previous, ids, strict=True)]
            for n, prompt in zip(reused, previous_prompts, strict=True):
                assert n >= len(prompt) - 1  # at most the turn boundary re-tokenizes
            assert fed == sum(len(now) - n for now, n in zip(ids, reused, strict=True))
            assert fed < sum(map(len, ids)) // 4
        # what the cache holds: the prompt and every generated token but the last
        previous = [(i + g)[: len(i) + len(g) - 1] for i, g in zip(ids, per_request, strict=True)]
        previous_prompts = ids
        for given, reply in zip(answers, got, strict=True):
            given.append(reply)
    assert ours.prefix_stats.reused_from_store > 0
    assert len(ours.prefix_store) == 2


def test_sampling_and_zero_budget_take_the_stock_path(
    hf: HFLM, sharp_llama: Path, single_turn: list[str]
) -> None:
    ours = HFPrefixLM(**_args(sharp_llama), prefix_cache_mb=0)
    sampled = {**GREEDY, "do_sample": True, "temperature": 1.0, "max_gen_toks": 2}
    _run(ours, single_turn[:2], sampled)
    assert ours.prefix_stats.requests == 0
    # no store: a lone long prompt has nothing to share and goes to hf's path too
    _run(ours, single_turn[:1])
    assert ours.prefix_stats.requests == 0 and len(ours.prefix_store) == 0


def test_bad_model_args_fail_before_loading() -> None:
    with pytest.raises(PrefixCacheError, match="prefix_cache_mb=-1"):
        HFPrefixLM(pretrained="unused", prefix_cache_mb=-1)
    with pytest.raises(PrefixCacheError, match="prefill_chunk"):
        HFPrefixLM(pretrained="unused", prefill_chunk=-5)
    with pytest.raises(PrefixCacheError, match="prefix_batch=sometimes: use auto, on or off"):
        HFPrefixLM(pretrained="unused", prefix_batch="sometimes")


def test_auto_decodes_serially_on_the_cpu(sharp_llama: Path) -> None:
    """On a CPU the copied prefix caches cost more than the batch saves (performance-baselines)."""
    assert not HFPrefixLM(**_args(sharp_llama)).prefix_batch
    assert HFPrefixLM(**_args(sharp_llama), prefix_batch="ON").prefix_batch


def test_batched_decode_gives_serial_answers_and_prefills_each_prefix_once(
    hf: HFLM, sharp_llama: Path, single_turn: list[str], transcripts: list[str]
) -> None:
    """prefix_batch=on: a meeting's questions in one batch over one prefill, answers unchanged.

    ``max_batch_size=3`` splits each meeting's 4 questions into batches of 3 and 1, so the
    second batch reuses the first one's trunk; the multi-turn calls batch the two
    conversations' turn k, each row from its own stored turn k-1 with a different cached
    length, so the left padding and the masked gap before a shorter suffix are exercised.
    """
    ours = HFPrefixLM(**_args(sharp_llama), prefix_batch="on", max_batch_size=3)
    serial = HFPrefixLM(**_args(sharp_llama), prefix_batch="off")
    assert ours.prefix_batch and not serial.prefix_batch
    want, want_ids, _ = _run(hf, single_turn)
    got, got_ids, counter = _run(ours, single_turn)
    assert got == want and sorted(got_ids) == sorted(want_ids)
    assert len({tuple(i) for i in want_ids}) >= 4  # answers differ: the test can fail
    ids = [ours.tok_encode(c) for c in single_turn]
    shared = [i for i in ids if len(i) >= ours.min_prefix_tokens]
    assert ours.prefix_stats.prefilled_tokens == _trie_size(shared[:4]) + _trie_size(shared[4:])
    # decode steps are shared: per meeting a batch of 3 and one of 1, plus the short prompt
    # alone on hf's path, each one forward per generated token (serial: 9 x 16)
    steps = GREEDY["max_gen_toks"]
    assert all(len(g) == steps for g in got_ids)
    assert counter.calls == (2 * 2 + 1) * steps

    before = ours.prefix_stats.prefilled_tokens
    answers: list[list[str]] = [[], []]
    for _turn in range(3):
        # different lengths: the second conversation's transcript is cut shorter
        contexts = _turn_contexts([transcripts[0], transcripts[1][:2000]], answers, ours)
        want, want_ids, _ = _run(hf, contexts)
        mid, _, _ = _run(serial, contexts)
        got, got_ids, _ = _run(ours, contexts)
        assert got == want == mid and sorted(got_ids) == sorted(want_ids)
        for given, reply in zip(answers, got, strict=True):
            given.append(reply)
    assert ours.prefix_stats.reused_from_store == serial.prefix_stats.reused_from_store > 0
    assert ours.prefix_stats.prefilled_tokens - before == serial.prefix_stats.prefilled_tokens


def test_batched_decode_bounds_rows_by_the_batch_cache_width(
    hf: HFLM, sharp_llama: Path, transcripts: list[str]
) -> None:
    """Rows with mixed cached/suffix splits fit the memory bound the batch really needs.

    Turn 2 of a long conversation adds a short question to its long stored turn 1; turn 2
    of a short one adds a long text to its short turn 1. Their batch cache holds the long
    cached span plus the long suffix, wider than either prompt: sized by the longest
    prompt, two rows would be allowed where one fits.
    """
    ours = HFPrefixLM(**_args(sharp_llama), prefix_batch="on")
    batches: list[tuple[int, int]] = []  # (rows, columns incl. answer) of each batch
    splits: list[tuple[int, int]] = []  # (cached, suffix) of each row
    gen = {**GREEDY, "max_gen_toks": 4}

    first = [transcripts[0], transcripts[1][:1000]]
    enc = [ours.tok_encode(c) for c in first]
    assert common_prefix(enc[0], enc[1]) < ours.min_prefix_tokens  # nothing shared: a batch
    assert min(len(e) for e in enc) > ours.min_prefix_tokens  # each row reuses its turn 1
    limit = [10**9]  # columns the memory holds (turn 2: two rows at the longest prompt)

    def longest_of(split: tuple[int, int]) -> int:
        return sum(split) + gen["max_gen_toks"]

    def max_rows(tokens: int) -> int:
        return max(1, limit[0] // tokens)

    original = ours._generate_batch

    def generate_batch(rows: list[Any], *args: Any) -> Any:
        width = max(r.cached for r in rows) + max(len(r.ids) - r.cached for r in rows)
        batches.append((len(rows), width + gen["max_gen_toks"]))
        splits.extend((r.cached, len(r.ids) - r.cached) for r in rows)
        return original(rows, *args)

    ours.max_rows = max_rows  # type: ignore[method-assign]
    ours._generate_batch = generate_batch  # type: ignore[method-assign]
    answers, _, _ = _run(ours, first, gen)
    second = [first[0] + answers[0] + "\nAnd who spoke?", first[1] + answers[1] + transcripts[2]]
    longest = max(len(ours.tok_encode(c)) for c in second) + gen["max_gen_toks"]
    limit[0] = 2 * longest  # by the longest prompt, both rows fit
    batches.clear()
    splits.clear()
    got, _, _ = _run(ours, second, gen)
    want, _, _ = _run(hf, second, gen)
    assert got == want
    # one row long cached, the other long new: together wider than any prompt
    assert len(splits) == 2 and splits[0][0] > 2 * splits[0][1] and splits[1][1] > splits[1][0]
    joint = max(c for c, _ in splits) + max(n for _, n in splits) + gen["max_gen_toks"]
    assert 2 * joint > limit[0]  # two rows of that width do not fit: decoded apart
    assert batches == [(1, longest_of(splits[0])), (1, longest_of(splits[1]))]
    assert all(rows * width <= limit[0] for rows, width in batches), batches
    assert ours.prefix_stats.reused_from_store > 0  # the rows came from their turn 1


class _CharTokenizer:
    """One token per character (ids are code points): enough for lm-eval's stop criteria."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]

    def batch_decode(self, rows: torch.Tensor) -> list[str]:
        return ["".join(chr(int(i)) for i in row) for row in rows]

    def decode(self, row: torch.Tensor) -> str:
        return "".join(chr(int(i)) for i in row)


def test_row_stop_ends_each_row_at_its_own_stop_sequence() -> None:
    """Per-row flags from lm-eval's own stop criteria: a row ends alone, the others go on."""
    from elitr_bench.models.hf_prefix import RowStop

    prompt = "ctx:"  # a stop sequence inside the prompt never counts
    answers = ["ab\n\ncd", "abcdef", "Q:wxyz"]
    stop = RowStop(_CharTokenizer(), ["\n\n", "Q:"], len(prompt), len(answers))
    flags = []
    for step in range(1, 7):
        ids = torch.tensor([[ord(c) for c in prompt + a[:step]] for a in answers])
        flags.append(stop(ids, None).tolist())
    assert flags[0] == [False, False, False]
    assert flags[1] == [False, False, True]  # "Q:" after 2 tokens: only row 2 ends
    assert flags[3] == [True, False, True]  # "ab\n\n" after 4
    assert flags[-1] == [True, False, True]  # a finished row stays finished
    assert stop.lengths == [4, None, 2]
