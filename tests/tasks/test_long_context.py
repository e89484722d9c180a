"""The retrieval baseline (``elitr_qa_rag_*``) and ``--metadata context_budget``.

What a model developer reads off the score-versus-context curve is only right if the
prompts hold what the setting says: at most the budget's tokens of transcript, whole
speaker turns in transcript order, the same passages on every run, one cut per
conversation.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from elitr_bench.data import load_benchmark
from elitr_bench.middle_cut import ELISION, TURN_CUT, speaker_turns, turn_starts
from elitr_bench.tasks import retrieval
from elitr_bench.tasks.context import ModelTokenizer, budget_cut
from elitr_bench.tasks.options import OptionError, TaskOptions
from tests.support.evaluate import evaluate

MEETING = "meeting_en_dev_001"
#: Fig. 5 around the transcript (plain rendering, no chat template).
OPENING = "several lines.\n\n"
CLOSING = "\n\nAs a professional conversational assistant"


def _transcript(meeting: str = MEETING) -> str:
    return str(load_benchmark().meetings[meeting].transcript)


def _words(text: str) -> int:
    """A stand-in tokenizer: one token per space-separated word."""
    return len(text.split(" "))


#: Characters as tokens: a tokenizer that decodes exactly what it encoded.
CHARS = ModelTokenizer(
    encode=lambda text: [ord(c) for c in text],
    decode=lambda ids: "".join(chr(i) for i in ids),
    max_length=100_000,
    default_max_gen_toks=8,
)


def _blocks(text: str) -> list[str]:
    """The kept blocks of a cut or retrieved transcript (between elision markers)."""
    body = text.removeprefix(ELISION.lstrip("\n")).removesuffix(ELISION.rstrip("\n"))
    return body.split(ELISION)


def _assert_whole_turns_in_order(text: str, transcript: str) -> None:
    turns = speaker_turns(transcript)
    at = 0
    for block in _blocks(text):
        block_turns = speaker_turns(block)
        # each block is a run of consecutive whole turns, later than the one before
        start = turns.index(block_turns[0], at)
        assert turns[start : start + len(block_turns)] == block_turns
        at = start + len(block_turns)


def test_passages_are_whole_turns_merged_up_to_the_chunk() -> None:
    transcript = _transcript()
    turns = speaker_turns(transcript)
    found = retrieval.passages(turns, _words, 40)
    assert [p.first for p in found] == [0] + [p.last + 1 for p in found[:-1]]
    assert found[-1].last == len(turns) - 1
    for p in found:
        assert p.text == "\n".join(turns[p.first : p.last + 1])
        assert p.tokens <= 40 or p.first == p.last  # one long turn is never split


def test_retrieval_fits_the_budget_in_transcript_order_and_is_deterministic() -> None:
    transcript = _transcript()
    question = "When does [PERSON4] have the appointment for the visa?"
    first = retrieval.MeetingIndex(transcript, _words, 60)
    got = first.retrieve(question, 400)
    assert got.tokens == _words(got.text) <= 400 and got.text.count(ELISION) >= 2
    assert "visa" in got.text  # the passage that answers is retrieved
    _assert_whole_turns_in_order(got.text, transcript)
    assert list(got.turns) == sorted(got.turns)
    assert all(a[1] < b[0] - 1 for a, b in itertools.pairwise(got.turns))  # gaps between
    # the same passages on every call, from a built index and from the cached one
    again = retrieval.MeetingIndex(transcript, _words, 60)
    assert again.from_cache and not first.from_cache
    for index in (first, again):
        repeat = index.retrieve(question, 400)
        assert (repeat.text, repeat.turns) == (got.text, got.turns)


def test_a_meeting_without_speaker_labels_is_retrieved_line_by_line() -> None:
    transcript = _transcript("meeting_en_dev_006")  # no "(PERSONn)" label at all
    assert len(speaker_turns(transcript)) == 1
    assert retrieval.units(transcript) == transcript.split("\n")
    got = retrieval.MeetingIndex(transcript, _words, 60).retrieve("speaker adaptation data", 300)
    assert 100 < got.tokens <= 300 and "adaptation" in got.text


def test_index_cache_is_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    import bm25s

    transcript = _transcript("meeting_en_dev_002")
    built = retrieval.MeetingIndex(transcript, _words, 128)
    assert not built.from_cache and built.path.parent == retrieval.retrieval_cache_dir()

    def no_rebuild(*args: object, **kwargs: object) -> None:
        raise AssertionError("the cached index was rebuilt")

    with monkeypatch.context() as patch:  # only this patch: the cache dir stays the test's
        patch.setattr(bm25s.BM25, "index", no_rebuild)
        cached = retrieval.MeetingIndex(transcript, _words, 128)
    assert cached.from_cache and cached.path == built.path
    # another chunk size gives other passages: another index, not a stale one
    other = retrieval.MeetingIndex(transcript, _words, 64)
    assert other.path != built.path and not other.from_cache


@pytest.mark.parametrize("damage", ["garbled", "half-written"])
def test_a_damaged_index_is_replaced_on_disk(damage: str) -> None:
    """One rebuild, then the cache serves again (not a rebuild in memory on every run)."""
    transcript = _transcript("meeting_en_dev_003")
    built = retrieval.MeetingIndex(transcript, _words, 128)
    if damage == "garbled":
        (built.path / "params.index.json").write_text("{not json")
    else:
        (built.path / "params.index.json").unlink()
    rebuilt = retrieval.MeetingIndex(transcript, _words, 128)
    assert not rebuilt.from_cache and rebuilt.path == built.path
    again = retrieval.MeetingIndex(transcript, _words, 128)
    assert again.from_cache
    question = "What is the plan for the next meeting?"
    assert again.retrieve(question, 300).text == built.retrieve(question, 300).text
    leftovers = [p.name for p in built.path.parent.iterdir() if p.name.startswith(".")]
    assert not leftovers


def test_budget_and_chunk_that_cannot_fill_a_prompt_get_one_line() -> None:
    transcript = _transcript("meeting_en_dev_003")
    index = retrieval.MeetingIndex(transcript, _words, 128)
    retrieval.check_budget({MEETING: index}, index.smallest)  # one passage fits
    with pytest.raises(OptionError) as err:
        retrieval.check_budget({MEETING: index}, index.smallest - 1)
    message = str(err.value)
    assert message.startswith(f"--metadata rag_budget={index.smallest - 1}: below the smallest")
    assert f"{MEETING} ({index.smallest} tokens)" in message and "\n" not in message
    assert f"at least {index.smallest}" in message
    retrieval.check_chunk(256, 256)
    with pytest.raises(OptionError, match=r"^--metadata rag_chunk=512 exceeds rag_budget=256: "):
        retrieval.check_chunk(256, 512)


def test_a_retrieval_task_refuses_budgets_before_any_generation(tiny_llama: Path) -> None:
    model_args = f"pretrained={tiny_llama},max_length=4096,dtype=float32"
    for metadata, start in (
        ({"rag_budget": 64, "rag_chunk": 128}, "--metadata rag_chunk=128 exceeds rag_budget=64"),
        ({"rag_budget": 3, "rag_chunk": 2}, "--metadata rag_budget=3: below the smallest"),
    ):
        with pytest.raises(OptionError) as err:
            evaluate(
                "hf", model_args, ["elitr_qa_rag_dev"], limit=1, gen_kwargs="max_gen_toks=2",
                device="cpu", metadata={"judge": "none", **metadata},
            )  # fmt: skip
        assert str(err.value).startswith(start) and "\n" not in str(err.value)


def _assert_ends_of(cut: str, transcript: str) -> None:
    """A middle cut keeps the transcript's beginning and end, marked where a turn was cut.

    A side that ends inside a speaker turn carries :data:`TURN_CUT` (the tail after the
    turn's label, repeated); without the marks the head is a prefix of the transcript
    and the tail a suffix, each ending on a word at least.
    """
    assert cut.count(ELISION) == 1
    head, tail = cut.split(ELISION)
    whole = not head.endswith(TURN_CUT)
    head = head.removesuffix(" " + TURN_CUT)
    assert transcript.startswith(head)
    if head:  # a word, sentence or line ends there; whole turns: the next line starts one
        assert transcript[len(head)].isspace()
        if whole and turn_starts(transcript):
            assert transcript[len(head) :].lstrip().startswith("(")
    if TURN_CUT in tail.split("\n", 1)[0]:
        label, rest = tail.split(f"{TURN_CUT} ", 1)
        assert transcript.endswith(rest) and transcript[-len(rest) - 1].isspace()
        at = len(transcript) - len(rest)
        start = max([t for t in turn_starts(transcript) if t < at], default=0)
        assert transcript[start:].startswith(label.strip())  # the cut turn's speaker
    else:
        assert transcript.endswith(tail)


def test_budget_cut_keeps_the_budget() -> None:
    transcript = _transcript()
    for budget in (300, 5000):
        cut = budget_cut(CHARS, transcript, budget)
        assert 0.9 * budget <= len(cut) <= budget
        _assert_ends_of(cut, transcript)
    assert budget_cut(CHARS, transcript, len(transcript)) == transcript


@pytest.mark.parametrize("value", [0, -5, "lots", 2.5, True])
@pytest.mark.parametrize("name", ["context_budget", "rag_budget", "rag_chunk"])
def test_a_bad_budget_gets_one_line_naming_the_setting(name: str, value: object) -> None:
    with pytest.raises(OptionError) as err:
        TaskOptions.from_metadata({name: value})
    message = str(err.value)
    assert message.startswith(f"--metadata {name}=") and "positive number of tokens" in message
    assert "\n" not in message


def _transcript_part(prompt: str) -> str:
    return prompt.split(OPENING, 1)[1].split(CLOSING, 1)[0]


def test_context_budget_on_single_and_multi_turn_tasks(tiny_llama: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    budget = 300
    result = evaluate(
        "hf",
        f"pretrained={tiny_llama},max_length=4096,dtype=float32",
        ["elitr_qa_dev", "elitr_qa_mt_dev"],
        limit=3,
        gen_kwargs="max_gen_toks=4",
        device="cpu",
        metadata={"judge": "none", "context_budget": budget},
    )
    transcript = _transcript()
    for task in ("elitr_qa_dev", "elitr_qa_mt_dev"):
        meta = result["configs"][task]["metadata"]
        assert meta["context_budget"] == budget and meta["context_window"] == 4096
        rows = sorted(result["samples"][task], key=lambda r: int(r["doc"]["turn"]))
        prompts = [row["arguments"][0][0] for row in rows]
        for row, prompt in zip(rows, prompts, strict=True):
            part = _transcript_part(prompt)
            assert len(tokenizer(part, add_special_tokens=False)["input_ids"]) <= budget
            _assert_ends_of(part, transcript)
            assert row["prompt_tokens"] == len(tokenizer(prompt)["input_ids"])
        # one cut per meeting: every question sees the same transcript
        assert len({_transcript_part(p) for p in prompts}) == 1
        if task == "elitr_qa_mt_dev":
            for earlier, later in itertools.pairwise(prompts):
                assert later.startswith(earlier)


@pytest.mark.parametrize("task", ["elitr_qa_rag_dev", "elitr_qa_cs_rag_dev"])
def test_rag_task_prompts_hold_the_recorded_passages(tiny_llama: Path, task: str) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    result = evaluate(
        "hf",
        f"pretrained={tiny_llama},max_length=4096,dtype=float32",
        [task],
        limit=2,
        gen_kwargs="max_gen_toks=4",
        device="cpu",
        metadata={"judge": "none", "rag_budget": 256, "rag_chunk": 64},
    )
    meta = result["configs"][task]["metadata"]
    assert meta["retrieval"] == {
        "method": "bm25", "rag_budget": 256, "rag_chunk": 64, "tokens": "model"
    }  # fmt: skip
    turns = retrieval.units(_transcript())
    for row in result["samples"][task]:
        doc, part = row["doc"], _transcript_part(row["arguments"][0][0])
        assert len(tokenizer(part, add_special_tokens=False)["input_ids"]) <= 256
        assert doc["rag_tokens"] <= 256 and doc["retrieval_s"] >= 0
        # the recorded turn ranges are exactly the blocks of the prompt, in order
        blocks = ["\n".join(turns[a : b + 1]) for a, b in doc["rag_passages"]]
        assert _blocks(part) == blocks
        assert (doc.get("language") == "cs") == (task == "elitr_qa_cs_rag_dev")


def test_replay_refuses_the_retrieval_tasks() -> None:
    """The released answers were written from whole transcripts, not from passages."""
    from elitr_bench.models.replay import ReplayError

    with pytest.raises(ReplayError, match="retrieved passages"):
        evaluate(
            "elitr-replay",
            "system=gpt-4",
            ["elitr_qa_rag_dev"],
            limit=1,
            metadata={"judge": "none"},
        )
