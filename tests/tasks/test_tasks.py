"""Task behaviour in-process (fast): documents, prompts, options, context policy, replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lm_eval.tasks import TaskManager

from elitr_bench.data import load_benchmark, load_released_responses
from elitr_bench.tasks.options import OptionError, TaskOptions
from tests.support.evaluate import evaluate


def test_replay_serves_exactly_the_released_answers() -> None:
    result = evaluate(
        "elitr-replay", "system=vicuna-13b", ["elitr_qa_dev"], metadata={"judge": "lexical"}
    )
    released = {
        (r.meeting_id, r.question_id): r.response
        for r in load_released_responses("qa", "dev", "st")
        if r.system == "Vicuna-13B-v1.5"
    }
    samples = result["samples"]["elitr_qa_dev"]
    assert len(samples) == 141
    for row in samples:
        assert row["resps"][0][0] == released[(row["doc"]["meeting_id"], row["doc"]["question_id"])]
    assert 0 < result["results"]["elitr_qa_dev"]["f1,lexical"] < 1


def test_replay_rejects_unknown_system() -> None:
    with pytest.raises(ValueError, match=r"system='gpt-5'.*choose one of GPT-3.5, GPT-4"):
        evaluate("elitr-replay", "system=gpt-5", ["elitr_qa_dev"], metadata={"judge": "none"})


def test_replay_rejects_unreleased_question_set() -> None:
    from types import SimpleNamespace

    from elitr_bench.models.replay import ReplayError, ReplayLM

    lm = ReplayLM(system="gpt-3.5")  # GPT-3.5 was released single-turn only
    doc = {
        "setting": "conv",
        "split": "dev",
        "mode": "mt",
        "meeting_id": "meeting_en_dev_001",
        "question_id": "1",
    }
    with pytest.raises(
        ReplayError, match=r"GPT-3\.5 released no mt answer for conv_dev meeting_en_dev_001 q1"
    ):
        lm.generate_until([SimpleNamespace(doc=doc, task_name="elitr_conv_dev")])
    doc |= {"setting": "qa", "mode": "st"}
    assert lm.generate_until([SimpleNamespace(doc=doc, task_name="elitr_qa_dev")])[0].startswith(
        "The participants"
    )


def test_options_parse_and_fail_in_one_line() -> None:
    assert TaskOptions.from_metadata(
        {"prompt_role": "System", "qa_markers": "true"}
    ) == TaskOptions(prompt_role="system", qa_markers=True)
    with pytest.raises(
        OptionError, match=r"^--metadata prompt_role='assistant': expected one of user, system$"
    ):
        TaskOptions.from_metadata({"prompt_role": "assistant"})
    with pytest.raises(
        OptionError, match="overlength='cut': expected one of error, skip, truncate_middle"
    ):
        TaskOptions.from_metadata({"overlength": "cut"})
    with pytest.raises(OptionError, match="qa_markers='maybe'"):
        TaskOptions.from_metadata({"qa_markers": "maybe"})


def test_bad_metadata_fails_before_generation() -> None:
    with pytest.raises(OptionError, match="prompt_role"):
        evaluate(
            "elitr-replay",
            "system=gpt-4",
            ["elitr_qa_dev"],
            metadata={"prompt_role": "bot", "judge": "none"},
        )


def test_overlength_skip_counts_and_scores_only_what_fits(tiny_llama: Path) -> None:
    bench = load_benchmark()
    first = bench.questions("qa", "test2")[0].meeting_id
    n_first = sum(q.meeting_id == first for q in bench.questions("qa", "test2"))
    limit = n_first + 3  # three questions of the (much longer) second meeting
    result = evaluate(
        "hf",
        f"pretrained={tiny_llama},max_length=6000,dtype=float32",
        ["elitr_qa_test"],
        limit=limit,
        gen_kwargs="max_gen_toks=2",
        device="cpu",
        metadata={"overlength": "skip", "judge": "none"},
    )
    res = result["results"]["elitr_qa_test"]
    assert res["overlength_skipped,none"] == 3
    assert res["overlength_truncated,none"] == 0
    samples = result["samples"]["elitr_qa_test"]
    listed = [m["metric"] for m in result["configs"]["elitr_qa_test"]["metric_list"]]
    assert "prompt_tokens" in listed and "judge_score" not in listed  # judge=none
    assert all(set(listed) <= set(row) for row in samples)  # every listed metric, always
    scored = [row for row in samples if row["f1"] is not None]
    assert len(scored) == n_first
    assert all(row["doc"]["meeting_id"] == first for row in scored)
    assert all(0 < row["prompt_tokens"] <= 6000 - 2 for row in scored)
    skipped = [row for row in samples if row["f1"] is None]
    assert all(row["overlength_skipped"] == 1 and row["rouge_l"] is None for row in skipped)
    assert all(row["prompt_tokens"] > 6000 - 2 for row in skipped)  # measured, hence skipped
    assert res["f1,none"] == pytest.approx(sum(r["f1"] for r in scored) / n_first)


def test_judge_problems_fail_before_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    from elitr_bench.judges import JudgeConfigError, JudgeNotReadyError

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ELITR_JUDGE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(JudgeConfigError, match="telepathy"):
        evaluate(
            "elitr-replay", "system=gpt-4", ["elitr_qa_dev"], metadata={"judge": "telepathy:x"}
        )
    # Default judge (the paper's gpt-4-0613) without a key: refused before any request.
    with pytest.raises(JudgeNotReadyError, match="OPENAI_API_KEY"):
        evaluate("elitr-replay", "system=gpt-4", ["elitr_qa_dev"])
    # --predict_only needs no judge at all.
    result = evaluate("elitr-replay", "system=gpt-4", ["elitr_qa_dev"], predict_only=True, limit=3)
    assert len(result["samples"]["elitr_qa_dev"]) == 3


def test_replay_judge_reproduces_table_2_single_turn_dev() -> None:
    result = evaluate(
        "elitr-replay", "system=gpt-3.5", ["elitr_qa_dev"], metadata={"judge": "replay"}
    )
    # Table 2, GPT-3.5 row, Single-turn QA Dev: 7.04.
    assert round(result["results"]["elitr_qa_dev"]["judge_score,replay"], 2) == 7.04
    assert result["results"]["elitr_qa_dev"]["judge_unscored,replay"] == 0


def test_noisy_tasks_refuse_replay_and_record_their_noise() -> None:
    from elitr_bench.models.replay import ReplayError

    with pytest.raises(ReplayError, match="no responses on noisy transcripts were released"):
        evaluate("elitr-replay", "system=gpt-4", ["elitr_qa_wer20_dev"], metadata={"judge": "none"})
    with pytest.raises(OptionError, match=r"fixed WER of 0\.6"):
        evaluate(
            "elitr-replay",
            "system=gpt-4",
            ["elitr_qa_wer60_dev"],
            metadata={"judge": "none", "wer": 0.3},
        )
    with pytest.raises(OptionError, match=r"wer='1.5': expected a word error rate in \(0, 1\]"):
        TaskOptions.from_metadata({"wer": "1.5"})


def test_any_wer_on_the_clean_tasks() -> None:
    manager = TaskManager(include_defaults=False, metadata={"judge": "none", "wer": 0.35})
    task = manager.load(["elitr_qa_test"])["tasks"]["elitr_qa_test"]
    docs = list(task.test_docs())
    assert {d["target_wer"] for d in docs} == {0.35}
    assert all(abs(d["effective_wer"] - 0.35) <= 0.02 for d in docs)
    clean = load_benchmark().meetings[docs[0]["meeting_id"]].transcript
    noisy = task.transcript(docs[0])
    assert noisy != clean and "(PERSON" in noisy


def test_replay_multiturn_reproduces_released_means() -> None:
    result = evaluate(
        "elitr-replay",
        "system=gpt-4",
        ["elitr_qa_mt_dev", "elitr_conv_dev"],
        metadata={"judge": "replay"},
    )
    # Golden: the released GPT-4 judge scores of gpt-4's multi-turn dev answers
    # (generated-responses.zip, qa/dev/mt and conv/dev/mt, gpt-4-eval) sum to 1202 over
    # 141 questions in both settings: 1202 / 141 = 8.5248, which prints as 8.52 under any
    # rounding (it is no tie at 8.525). Table 2 prints 8.53 in both cells (Multi-turn,
    # QA and Conv, Dev, GPT-4 row); that is 1203 / 141 = 8.5319, one judge point more than
    # the released files hold. The single-turn dev cell (8.21) matches: 1158 / 141 = 8.2128.
    for task in ("elitr_qa_mt_dev", "elitr_conv_dev"):
        assert result["results"][task]["judge_score,replay"] == pytest.approx(1202 / 141)
        assert len(result["samples"][task]) == 141


def test_gold_history_and_differing_only(tiny_llama: Path) -> None:
    bench = load_benchmark()
    conv = bench.questions("conv", "dev")
    qa = {(q.meeting_id, q.question_id): q.question for q in bench.questions("qa", "dev")}
    differing = [q for q in conv if qa[(q.meeting_id, q.question_id)] != q.question]
    assert len(differing) == 16  # App. C.2
    result = evaluate(
        "hf",
        f"pretrained={tiny_llama},max_length=1024,dtype=float32",
        ["elitr_conv_dev"],
        limit=3,
        gen_kwargs="max_gen_toks=2",
        device="cpu",
        metadata={
            "judge": "none",
            "history": "gold",
            "differing_only": True,
            "overlength": "truncate_middle",
        },
    )
    # Only the differing questions are the task's documents, and every one is scored.
    assert result["n-samples"]["elitr_conv_dev"] == {"original": 16, "effective": 3}
    rows = result["samples"]["elitr_conv_dev"]
    assert [(r["doc"]["meeting_id"], r["doc"]["question"]) for r in rows] == [
        (q.meeting_id, q.question) for q in differing[:3]
    ]
    assert all(r["f1"] is not None for r in rows)
    # Gold history: turn k carries the reference answers of turns 1..k-1 of its meeting,
    # the questions that are not logged (same wording in QA and Conv) included.
    for row in rows:
        earlier = [
            q
            for q in conv
            if q.meeting_id == row["doc"]["meeting_id"] and q.turn < row["doc"]["turn"]
        ]
        prompt = row["arguments"][0][0]
        assert earlier and all(q.question in prompt and q.answer in prompt for q in earlier)


def test_meetings_are_never_split_across_ranks() -> None:
    manager = TaskManager(include_defaults=False, metadata={"judge": "none"})
    task = manager.load(["elitr_conv_test"])["tasks"]["elitr_conv_test"]
    seen: dict[str, set[int]] = {}
    total = 0
    for rank in range(3):
        for _, doc in task.doc_iterator(rank=rank, world_size=3):
            seen.setdefault(doc["meeting_id"], set()).add(rank)
            total += 1
    assert total == 130 and all(len(ranks) == 1 for ranks in seen.values())
    assert {next(iter(r)) for r in seen.values()} == {0, 1, 2}


def test_multiturn_overlength_error_names_meeting_and_turn(
    tiny_llama: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lm_eval.models.huggingface import HFLM

    from elitr_bench.tasks.context import ContextLengthError

    def no_generation(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the context check must fail before any generation")

    monkeypatch.setattr(HFLM, "generate_until", no_generation)
    with pytest.raises(
        ContextLengthError, match=r"elitr_qa_mt_dev \(turn 1\): 2 prompt\(s\) exceed"
    ):
        evaluate(
            "hf",
            f"pretrained={tiny_llama},max_length=1024,dtype=float32",
            ["elitr_qa_mt_dev"],
            samples={"elitr_qa_mt_dev": [0, 1, 20, 21]},
            gen_kwargs="max_gen_toks=2",
            device="cpu",
            metadata={"judge": "none"},
        )


def test_truncate_middle_cuts_each_meeting_once(tiny_llama: Path) -> None:
    result = evaluate(
        "hf",
        f"pretrained={tiny_llama},max_length=1024,dtype=float32",
        ["elitr_qa_dev"],
        limit=3,
        gen_kwargs="max_gen_toks=2",
        device="cpu",
        metadata={"judge": "none", "overlength": "truncate_middle"},
    )
    rows = result["samples"]["elitr_qa_dev"]
    prompts = [row["arguments"][0][0] for row in rows]
    heads = {p[: -len(row["doc"]["question"])] for p, row in zip(prompts, rows, strict=True)}
    assert len(heads) == 1 and "\n[...]\n" in next(iter(heads))  # one shared, cut transcript
    assert all(row["prompt_tokens"] <= 1024 - 2 for row in rows)
    assert result["results"]["elitr_qa_dev"]["overlength_truncated,none"] == 3
