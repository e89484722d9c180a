"""``overlength=truncate_middle`` cuts a transcript once, between speaker turns.

A multi-turn conversation cut again at every turn shows the model a different
transcript within one conversation and defeats prefix reuse (``hf-prefix`` re-prefilled
~60% of every turn on SmolLM2); a cut inside a line splits an utterance or a speaker
label.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from elitr_bench.middle_cut import ELISION, TURN_CUT, join_cut, speaker_turns
from tests.support.evaluate import evaluate
from tests.tasks.test_long_context import _assert_ends_of, _transcript_part


def _join(text: str, head: str, tail: str, slack: int | None = None) -> str:
    """:func:`join_cut` with its sides given as text, as tokens decode them."""
    assert text.startswith(head) and text.endswith(tail)
    return join_cut(text, len(head), len(text) - len(tail), slack)


def test_cut_ends_before_a_turn_and_resumes_at_one() -> None:
    # utterances span several lines: a side that stops or starts on a continuation
    # line ("and more", "really") hides who speaks, so the cut moves to the turn
    text = "(A1) hello there\n(B1) how are you\nand more\n(A1) fine thanks\nreally\n(B1) bye now"
    assert _join(text, "(A1) hello there\n(B1) how are you\nand m", "ly\n(B1) bye now") == (
        f"(A1) hello there{ELISION}(B1) bye now"
    )
    assert _join(text, "(A1) hello there\n(B1) how", "really\n(B1) bye now") == (
        f"(A1) hello there{ELISION}(B1) bye now"
    )
    # sides that already end before / start at a turn are kept whole
    head = "(A1) hello there\n(B1) how are you\nand more"
    assert _join(text, head, "(A1) fine thanks\nreally\n(B1) bye now") == (
        f"{head}{ELISION}(A1) fine thanks\nreally\n(B1) bye now"
    )
    assert "\n".join(speaker_turns(text)) == text
    assert speaker_turns(text)[1] == "(B1) how are you\nand more"
    # no speaker labels: whole lines; one long line: cut where the tokens say, and marked
    assert join_cut("a\nb\ncdefx\ny", 5, 9) == f"a\nb{ELISION}y"
    assert join_cut("abcdefxyz", 3, 6) == f"abc {TURN_CUT}{ELISION}{TURN_CUT} xyz"


def test_a_long_turn_straddling_the_cut_is_cut_inside_and_marked() -> None:
    """Dropping the whole straddling turn would empty a side; within the slack it is cut."""
    text = (
        "(A1) short\n(B1) One long turn. It goes on and on.\nA second line of it. "
        "And more words here and there and everywhere.\n(A1) reply"
    )
    head = "(A1) short\n(B1) One long turn. It goes on and"
    tail = "ore words here and there and everywhere.\n(A1) reply"
    # far from any turn start: the head ends at a sentence, the tail resumes at a word,
    # after the speaker's label and the mark
    assert _join(text, head, tail, slack=20) == (
        f"(A1) short\n(B1) One long turn. {TURN_CUT}{ELISION}(B1) {TURN_CUT} words here and "
        "there and everywhere.\n(A1) reply"
    )
    # no sentence end within a smaller slack: a word boundary
    assert _join(text, head + " o", tail, slack=5).startswith(
        f"(A1) short\n(B1) One long turn. It goes on and {TURN_CUT}{ELISION}"
    )
    # a line break within the slack is preferred to a sentence
    head = "(A1) short\n(B1) One long turn. It goes on and on.\nA sec"
    assert _join(text, head, tail, slack=10).startswith(
        f"(A1) short\n(B1) One long turn. It goes on and on. {TURN_CUT}{ELISION}"
    )
    # a turn start within the slack wins: the partial turn is dropped, nothing is marked
    assert _join(text, "(A1) short\n(B1) One", "reply", slack=10) == (
        f"(A1) short{ELISION}(A1) reply"  # and a tail that lost only the label gets it back
    )


def test_multi_turn_cuts_each_conversation_once_at_a_speaker_turn(tiny_llama: Path) -> None:
    result = evaluate(
        "hf",
        f"pretrained={tiny_llama},max_length=1024,dtype=float32",
        ["elitr_qa_mt_dev"],
        limit=4,
        gen_kwargs="max_gen_toks=8",
        device="cpu",
        metadata={"judge": "none", "overlength": "truncate_middle"},
    )
    rows = sorted(result["samples"]["elitr_qa_mt_dev"], key=lambda r: int(r["doc"]["turn"]))
    assert len({r["doc"]["meeting_id"] for r in rows}) == 1 and len(rows) == 4
    prompts = [row["arguments"][0][0] for row in rows]
    for earlier, later in itertools.pairwise(prompts):
        assert later.startswith(earlier)  # turn k's prompt is a prefix of turn k+1's
    assert prompts[0].count(ELISION) == 1
    transcript = result_transcript(rows[0]["doc"]["meeting_id"])
    # the cut ends before a turn and resumes at one (utterances span several lines), or,
    # where a long turn straddles it, inside that turn, marked, after its speaker's label
    _assert_ends_of(_transcript_part(prompts[0]), transcript)
    assert all(row["prompt_tokens"] <= 1024 - 8 for row in rows)


def result_transcript(meeting_id: str) -> str:
    from elitr_bench.data import load_benchmark

    bench = load_benchmark()
    return str(bench.meetings[meeting_id].transcript)


def test_overlength_line_suggests_max_length_only_below_the_model_positions() -> None:
    from elitr_bench.tasks.context import overlength_message

    over = [("meeting_en_dev_001", 9000)]
    at_window = overlength_message("elitr_qa_dev", over, 8192, positions=8192)
    assert "max_length" not in at_window and '"overlength": "skip"' in at_window
    below = overlength_message("elitr_qa_dev", over, 2048, positions=8192)
    assert "--model_args max_length=8192" in below
    assert "max_length" not in overlength_message("elitr_qa_dev", over, 2048)
