"""The score-versus-context curve of a real model, as a model developer draws it.

SmolLM2-135M-Instruct through the real ``lm_eval`` CLI at two context budgets and on the
retrieval task, then ``elitr-bench report``: only a real tokenizer and chat template show
that the budgets hold in the prompts the model saw. Kept small (one question per task,
four new tokens, budgets of a few hundred tokens) so the suite stays quick on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from elitr_bench.cli import main
from elitr_bench.data import load_benchmark
from elitr_bench.middle_cut import ELISION
from elitr_bench.tasks.context import ModelTokenizer, budget_cut, fit_middle
from tests.conftest import run_lm_eval
from tests.tasks.test_long_context import _assert_ends_of

#: Budgets of the fill test: small ones where the slack is a few words, up to the model's
#: 8,192 positions (which holds some meetings whole). At 300, ``meeting_en_dev_002`` once
#: had no cut: its cuts keeping 282-294 tokens were all one 301-token text, and the
#: one-token steps of the search ran out before leaving that plateau.
FILL_BUDGETS = (256, 300, 512, 1024, 2048, 4096, 8192)


def _run(checkpoint: Path, out: Path, tasks: str, metadata: dict[str, Any]) -> None:
    args = [
        "--model", "hf",
        "--model_args", f"pretrained={checkpoint},dtype=float32",
        "--device", "cpu",
        "--batch_size", "1",
        "--tasks", tasks,
        "--limit", "1",
        "--gen_kwargs", "max_gen_toks=4",
        "--apply_chat_template",
        "--log_samples",
        "--output_path", str(out),
        "--metadata", json.dumps({"judge": "lexical", **metadata}),
    ]  # fmt: skip
    proc = run_lm_eval(args)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _samples(out: Path, task: str) -> list[dict[str, Any]]:
    path = next(out.rglob(f"samples_{task}_*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_two_budgets_and_retrieval_draw_the_curve(smollm2: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    # one --metadata for both kinds of task: elitr_qa_rag_dev reads rag_budget only
    small, large = tmp_path / "b256", tmp_path / "b512"
    both = {"context_budget": 256, "rag_budget": 256}
    _run(smollm2, small, "elitr_qa_dev,elitr_qa_rag_dev", both)
    _run(smollm2, large, "elitr_qa_dev", {"context_budget": 512})
    kept: dict[int, int] = {}
    for out, budget in ((small, 256), (large, 512)):
        (row,) = _samples(out, "elitr_qa_dev")
        prompt = row["arguments"]["gen_args_0"]["arg_0"]
        transcript = prompt.split("several lines.\n\n", 1)[1].split("\n\nAs a professional")[0]
        assert transcript.count(ELISION) == 1
        kept[budget] = len(tokenizer(transcript, add_special_tokens=False)["input_ids"])
        assert 0.8 * budget <= kept[budget] <= budget
        assert row["transcript_tokens"] == kept[budget]  # recorded: what the cut kept
        seen = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        assert row["prompt_tokens"] == len(seen)  # what the model saw
        results = json.loads(next(out.rglob("results_*.json")).read_text())
        reported = results["results"]["elitr_qa_dev"]
        assert [v for k, v in reported.items() if k.startswith("transcript_tokens,")] == [
            kept[budget]
        ]
    (rag,) = _samples(small, "elitr_qa_rag_dev")
    assert rag["doc"]["rag_tokens"] <= 256 and rag["doc"]["rag_passages"]

    report = tmp_path / "report"
    assert main(["report", str(small), str(large), "--out", str(report)]) == 0
    assert (report / "figures" / "context.png").stat().st_size > 10_000
    tables = json.loads((report / "report.json").read_text())["tables"]
    points = [
        (r["kind"], r["budget"], r["tokens"]) for r in tables["context_judge_score"]["records"]
    ]
    assert points == [
        ("budget", 256, kept[256]),
        ("budget", 512, kept[512]),
        ("retrieval", 256, rag["doc"]["rag_tokens"]),
    ]  # the curve is drawn at the tokens the prompts held


def _counter(checkpoint: Path) -> ModelTokenizer:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    return ModelTokenizer(
        encode=lambda text: list(tokenizer(text, add_special_tokens=False)["input_ids"]),
        decode=lambda ids: str(tokenizer.decode(ids)),
        max_length=8192,
        default_max_gen_toks=0,
    )


def test_context_budget_fills_the_budget_for_every_meeting(smollm2: Path) -> None:
    """Every meeting keeps >= 90% of a budget of 1,024 tokens or more, and never more.

    With cuts only at speaker turns, a 1,517-token turn straddling the cut of
    ``meeting_en_dev_005`` left 49% of a 2,048-token budget: the curve then plotted a
    run at twice the tokens its model saw.
    """
    counter = _counter(smollm2)
    meetings = load_benchmark().meetings
    assert len(meetings) == 18
    fills: dict[tuple[str, int], float] = {}
    for meeting_id, meeting in sorted(meetings.items()):
        text = meeting.transcript
        total = counter.count(text)
        for budget in FILL_BUDGETS:
            cut = budget_cut(counter, text, budget)
            kept = counter.count(cut)
            assert kept <= budget, (meeting_id, budget, kept)
            if total <= budget:
                assert cut == text
                continue
            _assert_ends_of(cut, text)
            fills[(meeting_id, budget)] = kept / budget
    low = {k: round(f, 3) for k, f in fills.items() if k[1] >= 1024 and f < 0.9}
    assert not low, low
    assert len([k for k in fills if k[1] >= 1024]) > 50  # most meetings are cut there


def test_truncate_middle_removes_little_more_than_needed(smollm2: Path) -> None:
    """A prompt over the window loses what it must, and at most 10% of what fits beside.

    The cut of ``truncate_middle`` (here around a stand-in for Fig. 5 and a question,
    counted together as the task counts its prompts) is the budget's.
    """
    counter = _counter(smollm2)
    opening, closing = "Here is a meeting transcript.\n\n", "\n\nWhen was the next meeting?"
    for limit in (1024, 2048, 4096):
        for meeting_id, meeting in sorted(load_benchmark().meetings.items()):
            text = meeting.transcript

            def excess(cut: str, limit: int = limit) -> int:
                return counter.count(opening + cut + closing) - limit

            needed = excess(text)
            if needed <= 0:
                continue
            cut = fit_middle(counter, text, excess)
            assert cut is not None and excess(cut) <= 0
            removed = counter.count(text) - counter.count(cut)
            fits = counter.count(text) - needed  # transcript tokens that fit the limit
            assert removed - needed <= 0.1 * fits, (meeting_id, limit, removed, needed)
