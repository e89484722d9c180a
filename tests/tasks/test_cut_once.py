"""``overlength=truncate_middle`` cuts a transcript once, between speaker turns.

A multi-turn conversation cut again at every turn shows the model a different
transcript within one conversation and defeats prefix reuse (``hf-prefix`` re-prefilled
~60% of every turn on SmolLM2); a cut inside a line splits an utterance or a speaker
label.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from elitr_bench.tasks.context import ELISION, snap_to_turns, speaker_turns
from tests.support.evaluate import evaluate


def test_cut_ends_before_a_turn_and_resumes_at_one() -> None:
    # utterances span several lines: a side that stops or starts on a continuation
    # line ("and more", "really") hides who speaks, so the cut moves to the turn
    text = "(A1) hello there\n(B1) how are you\nand more\n(A1) fine thanks\nreally\n(B1) bye now"
    assert snap_to_turns("(A1) hello there\n(B1) how are you\nand m", "ly\n(B1) bye now", text) == (
        f"(A1) hello there{ELISION}(B1) bye now"
    )
    assert snap_to_turns("(A1) hello there\n(B1) how", "really\n(B1) bye now", text) == (
        f"(A1) hello there{ELISION}(B1) bye now"
    )
    # sides that already end before / start at a turn are kept whole
    head = "(A1) hello there\n(B1) how are you\nand more"
    assert snap_to_turns(head, "(A1) fine thanks\nreally\n(B1) bye now", text) == (
        f"{head}{ELISION}(A1) fine thanks\nreally\n(B1) bye now"
    )
    assert "\n".join(speaker_turns(text)) == text
    assert speaker_turns(text)[1] == "(B1) how are you\nand more"
    # no speaker labels: whole lines; one long line: cut where the tokens say
    assert snap_to_turns("a\nb\nc", "x\ny", "a\nb\ncdefx\ny") == f"a\nb{ELISION}y"
    assert snap_to_turns("abc", "xyz", "abcdefxyz") == f"abc{ELISION}xyz"


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
    before, after = prompts[0].split(ELISION)
    transcript = result_transcript(rows[0]["doc"]["meeting_id"])
    # the cut ends before a turn and resumes at one (utterances span several lines)
    turns = speaker_turns(transcript)
    kept_head = before.split("several lines.\n\n", 1)[1]  # after Fig. 5's opening
    assert any(transcript.startswith(kept_head + "\n" + t) for t in turns[1:])
    assert after.startswith("(PERSON") and after.split("\n")[0] in transcript.split("\n")
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
