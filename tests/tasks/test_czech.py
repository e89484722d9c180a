"""The Czech question sets (czech.zip) and the ``elitr_cs`` tasks built on them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from lm_eval.tasks import TaskManager

from elitr_bench.data import DataError, load_benchmark, load_questions
from elitr_bench.data import loaders as data_loaders
from tests.support.commands import elitr_bench_command, run_without_hook
from tests.support.evaluate import evaluate

ENTITY = re.compile(r"\[[A-Z]+\d*\]|\([A-Z]+\d*\)")
COUNTS = {"dev": 141, "test2": 130}


def _shape(q: Any) -> tuple[str, str, str, str, int]:
    return (q.meeting_id, q.question_id, q.question_type, q.answer_position, q.turn)


@pytest.mark.parametrize("setting", ["qa", "conv"])
@pytest.mark.parametrize("split", ["dev", "test2"])
def test_czech_sets_are_the_english_items_translated(setting: str, split: str) -> None:
    czech = load_questions(setting, split, "cs")  # type: ignore[arg-type]
    english = load_questions(setting, split, "en")  # type: ignore[arg-type]
    assert len(czech) == COUNTS[split]
    assert [_shape(q) for q in czech] == [_shape(q) for q in english]
    assert all(c.question != e.question for c, e in zip(czech, english, strict=True))
    # De-identified entities survive translation (all but a couple of answers).
    kept = sum(
        sorted(ENTITY.findall(c.answer)) == sorted(ENTITY.findall(e.answer))
        for c, e in zip(czech, english, strict=True)
    )
    assert kept >= len(czech) - 2


def test_a_czech_file_out_of_step_with_the_english_one_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = data_loaders.read_zip_json

    def shuffled(path: Path, member: str) -> Any:
        payload = real(path, member)
        if member.startswith("czech/"):
            meeting = payload["meetings"][0]
            meeting["questions"] = meeting["questions"][::-1]
        return payload

    monkeypatch.setattr(data_loaders, "read_zip_json", shuffled)
    data_loaders._load_czech_for.cache_clear()
    try:
        with pytest.raises(DataError, match=r"czech\.zip:czech/.*does not match the English set"):
            load_questions("qa", "dev", "cs")
    finally:
        data_loaders._load_czech_for.cache_clear()
    with pytest.raises(DataError, match="unknown question language 'de'"):
        load_questions("qa", "dev", "de")


def test_czech_tasks_ask_czech_questions_about_the_english_transcripts() -> None:
    manager = TaskManager(include_defaults=False, metadata={"judge": "none"})
    assert {"elitr_qa_cs", "elitr_conv_cs", "elitr_cs"} <= set(manager.all_groups) | set(
        manager.all_tags
    )
    tasks = manager.load(["elitr_qa_cs_dev", "elitr_conv_cs_test"])["tasks"]
    meetings = load_benchmark().meetings
    for name, (setting, split, differing) in {
        "elitr_qa_cs_dev": ("qa", "dev", 16),
        "elitr_conv_cs_test": ("conv", "test2", 17),
    }.items():
        task = tasks[name]
        docs = list(task.test_docs())
        czech = load_questions(setting, split, "cs")  # type: ignore[arg-type]
        assert [d["question"] for d in docs] == [q.question for q in czech]
        assert [d["answer"] for d in docs] == [q.answer for q in czech]
        assert {d["language"] for d in docs} == {"cs"}
        assert sum(d["differs_in_conv"] for d in docs) == differing  # App. C.2 counts
        doc = docs[0]
        assert task.transcript(doc) == meetings[doc["meeting_id"]].transcript
        prompt = task.doc_to_text(doc)
        assert doc["question"] in prompt or doc["question"] in task.initial_prompt(doc) + prompt
    assert tasks["elitr_conv_cs_test"].mode == "mt"


def test_replay_refuses_the_czech_tasks() -> None:
    from elitr_bench.models.replay import ReplayError

    with pytest.raises(ReplayError, match="only answers to the English questions were released"):
        evaluate(
            "elitr-replay", "system=gpt-4", ["elitr_qa_cs_dev"], metadata={"judge": "none"}, limit=1
        )


@pytest.mark.slow
def test_czech_multiturn_through_elitr_bench_run_with_the_hook_off(
    tiny_llama: Path, tmp_path: Path
) -> None:
    """One real run: Czech single- and multi-turn, lexical judge, ``.pth`` hook disabled.

    ``elitr-bench run`` must bring tasks *and* the models registry up by itself here.
    """
    out = tmp_path / "out"
    args = [
        "run", "--model", "hf",
        "--model_args", f"pretrained={tiny_llama},max_length=1024,dtype=float32",
        "--tasks", "elitr_qa_cs_dev,elitr_conv_cs_dev",
        "--gen_kwargs", "max_gen_toks=4", "--limit", "2", "--apply_chat_template",
        "--log_samples", "--output_path", str(out),
        "--metadata", json.dumps({"overlength": "truncate_middle", "judge": "lexical"}),
    ]  # fmt: skip
    proc = run_without_hook([*elitr_bench_command(), *args], timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())["results"]
    assert 1 <= results["elitr_conv_cs_dev"]["lexical_score,lexical"] <= 10
    rows = [json.loads(line) for line in next(out.rglob("samples_elitr_conv_cs_dev_*")).open()]
    turn1, turn2 = sorted(rows, key=lambda r: r["doc"]["turn"])
    czech = load_questions("conv", "dev", "cs")
    assert [turn1["doc"]["question"], turn2["doc"]["question"]] == [
        czech[0].question,
        czech[1].question,
    ]
    prompt2 = turn2["arguments"]["gen_args_0"]["arg_0"]
    assert turn1["doc"]["question"] in prompt2 and turn1["resps"][0][0].strip() in prompt2
    assert prompt2.rstrip().endswith("<|assistant|>") and turn2["doc"]["question"] in prompt2
