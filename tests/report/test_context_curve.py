"""``elitr-bench report``'s score-versus-context figure, from synthetic runs.

A model's runs at several ``context_budget`` values form a line ending at its window (the
full-context run), retrieval runs are stars at their ``rag_budget``, the numbers are in a
table beside the plot, and none of these runs leaks into the paper's tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from elitr_bench.data import load_benchmark
from elitr_bench.report import build_report
from tests.report.conftest import write_synthetic_run

JUDGE = {"backend": "openai", "model": "gpt-4-0613", "rubric": "gpt4-rubric"}
WINDOW = 8192
BUDGETS = (512, 1024, 2048, 4096)


def _runs(root: Path, model: str, base: float) -> None:
    def run(name: str, task: str, metadata: dict[str, Any], score: float) -> None:
        write_synthetic_run(
            root, f"{model}-{name}", task=task, setting="qa", mode="st", split="dev",
            judge=JUDGE, model_args=f"pretrained=org/{model}",
            metadata={"context_window": WINDOW, **metadata},
            score=lambda q, s=score: s + (int(q.question_id) % 3) * 0.5,
        )  # fmt: skip

    for k, budget in enumerate(BUDGETS):
        run(f"b{budget}", "elitr_qa_dev", {"context_budget": budget}, base + k)
    run("full", "elitr_qa_dev", {}, base + len(BUDGETS))
    # a retrieval run records context_budget too when one --metadata served both tasks
    retrieval = {"method": "bm25", "rag_budget": 2048, "rag_chunk": 128, "tokens": "model"}
    run("rag", "elitr_qa_rag_dev", {"retrieval": retrieval, "context_budget": 512}, base + 2.5)


def test_context_figure_lines_stars_and_table(tmp_path: Path, drawn: dict[str, Figure]) -> None:
    root = tmp_path / "runs"
    _runs(root, "Llama-3.1-8B-Instruct", 2.0)
    _runs(root, "Qwen2.5-7B-Instruct", 1.0)
    report = build_report([root], tmp_path / "out")
    records = report.table("context_judge_score").records
    llama = [r for r in records if r["model"] == "Llama-3.1-8B-Instruct"]
    assert [(r["kind"], r["tokens"]) for r in llama] == [
        *(("budget", b) for b in BUDGETS),
        ("full", WINDOW),
        ("retrieval", 2048),
    ]
    first = llama[0]["value"]
    assert [r["value"] - first for r in llama] == pytest.approx([0, 1, 2, 3, 4, 2.5])
    assert all(r["ci_low"] < r["value"] < r["ci_high"] for r in records)  # clustered CI
    # Table 2 holds the full-context runs only
    t2 = report.table("table2_judge_score").records
    assert {r["model"] for r in t2} == {"Llama-3.1-8B-Instruct", "Qwen2.5-7B-Instruct"}
    assert all(r["n_runs"] == 1 for r in t2)
    fig = drawn["context.png"]
    plot, side = fig.axes[:2]
    bars = [c for c in plot.containers if isinstance(c, ErrorbarContainer)]
    curves = [c.lines[0] for c in bars if c.lines[0].get_linestyle() != "None"]
    stars = [c.lines[0] for c in bars if c.lines[0].get_marker() == "*"]
    assert len(curves) == 2 and len(stars) == 2
    assert list(curves[0].get_xdata()) == [*BUDGETS, WINDOW]
    assert list(stars[0].get_xdata()) == [2048]
    assert {str(s.get_color()) for s in stars} == {str(c.get_color()) for c in curves}
    assert plot.get_xscale() == "log" and "tokens" in plot.get_xlabel()
    assert [t.get_text() for t in plot.get_xticklabels()] == ["512", "1k", "2k", "4k", "8k\n(full)"]
    texts = {cell.get_text().get_text() for cell in side.tables[0].get_celld().values()}
    assert "BM25 2048" in texts and "full 8192" in texts
    rag = llama[-1]
    assert f"{rag['value']:.2f} [{rag['ci_low']:.2f}, {rag['ci_high']:.2f}]" in texts
    assert (tmp_path / "out" / "figures" / "context.png").is_file()


def test_no_context_section_without_budget_or_retrieval_runs(
    tmp_path: Path, drawn: dict[str, Figure]
) -> None:
    write_synthetic_run(
        tmp_path / "runs", "full", task="elitr_qa_dev", setting="qa", mode="st", split="dev",
        judge=JUDGE, metadata={"context_window": WINDOW},
        score=lambda q: 5.0 + int(q.question_id) % 2,
    )  # fmt: skip
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    assert "context.png" not in drawn
    with pytest.raises(KeyError):
        report.table("context_judge_score")


def test_a_retrieval_run_is_told_by_its_documents(tmp_path: Path) -> None:
    """Documents with passages make a retrieval run, whatever its results file kept.

    A rescoring of a run that also held elitr_qa may lose the task's ``retrieval`` record;
    the run must still stay out of Table 2.
    """
    for name, fields in (("full", {}), ("rag", {"rag_passages": [[0, 3]], "rag_tokens": 90})):
        write_synthetic_run(
            tmp_path / "runs", name, task="elitr_qa_dev", setting="qa", mode="st", split="dev",
            judge=JUDGE, metadata={"context_window": WINDOW}, doc_fields=fields,
            score=lambda q, n=name: (2.0 if n == "rag" else 4.0) + int(q.question_id) % 2,
        )  # fmt: skip
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    points = [
        (r["kind"], r["budget"], r["tokens"]) for r in report.table("context_judge_score").records
    ]
    assert points == [("full", WINDOW, WINDOW), ("retrieval", 2048, 90)]  # at its passages
    (t2,) = [r for r in report.table("table2_judge_score").records if r["split"] == "dev"]
    assert t2["n_runs"] == 1 and t2["value"] > 4.0


def test_czech_runs_are_their_own_rows_and_lines(tmp_path: Path, drawn: dict[str, Figure]) -> None:
    """A model's Czech runs are never pooled with its English ones as if they were seeds.

    The Czech tasks' documents say ``language: cs``; Table 2 and the context figure keep
    those runs apart.
    """
    scores = {"en": 8.0, "cs": 2.0}
    for language, task in (("en", "elitr_qa_dev"), ("cs", "elitr_qa_cs_dev")):
        for budget in (512, None):
            metadata: dict[str, Any] = {"context_window": WINDOW}
            if budget:
                metadata["context_budget"] = budget
            write_synthetic_run(
                tmp_path / "runs", f"{language}-{budget}", task=task, setting="qa", mode="st",
                split="dev", judge=JUDGE, metadata=metadata,
                doc_fields={"language": "cs"} if language == "cs" else None,
                score=lambda q, s=scores[language], b=budget: s - (1.0 if b else 0.0),
            )  # fmt: skip
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    t2 = {r["row"]: r for r in report.table("table2_judge_score").records}
    assert set(t2) == {"toy-model", "toy-model (cs)"}
    assert t2["toy-model"]["value"] == 8.0 and t2["toy-model (cs)"]["value"] == 2.0
    assert t2["toy-model (cs)"]["language"] == "cs" and t2["toy-model"]["n_runs"] == 1
    context = report.table("context_judge_score").records
    lines = {(r["row"], r["tokens"]): r["value"] for r in context}
    assert lines == {
        ("toy-model", 512): 7.0, ("toy-model", WINDOW): 8.0,
        ("toy-model (cs)", 512): 1.0, ("toy-model (cs)", WINDOW): 2.0,
    }  # fmt: skip
    runs = {r["task"]: r["language"] for r in report.table("runs").records}
    assert runs == {"elitr_qa_dev": "en", "elitr_qa_cs_dev": "cs"}
    plot = drawn["context.png"].axes[0]
    labels = [t.get_text() for t in plot.get_legend().get_texts()]
    assert any("(cs)" in t for t in labels) and any("(cs)" not in t for t in labels), labels


def test_a_budget_run_is_drawn_at_the_tokens_its_cut_kept(
    tmp_path: Path, drawn: dict[str, Figure]
) -> None:
    """The curve's x is what the prompts held: each meeting once, not the nominal budget."""
    kept = {"meeting_en_dev_001": 900, "meeting_en_dev_002": 1000}

    def tokens(q: Any) -> dict[str, Any]:
        return {"transcript_tokens": kept.get(q.meeting_id, 950)}

    for name, metadata, fields in (
        ("b1024", {"context_budget": 1024}, tokens),
        ("old", {"context_budget": 2048}, None),  # a run from before the cut recorded it
        ("full", {}, None),
    ):
        write_synthetic_run(
            tmp_path / "runs", name, task="elitr_qa_dev", setting="qa", mode="st", split="dev",
            judge=JUDGE, metadata={"context_window": WINDOW, **metadata}, sample_fields=fields,
            score=lambda q: 5.0 + int(q.question_id) % 2,
        )  # fmt: skip
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    records = report.table("context_judge_score").records
    meetings = {q.meeting_id for q in load_benchmark().questions("qa", "dev")}
    mean = round(sum(kept.get(m, 950) for m in meetings) / len(meetings))
    assert mean != round(sum(tokens(q)["transcript_tokens"] for q in _dev()) / len(_dev()))
    points = [(r["kind"], r["budget"], r["tokens"]) for r in records]
    assert points == [("budget", 1024, mean), ("budget", 2048, 2048), ("full", WINDOW, WINDOW)]
    plot, side = drawn["context.png"].axes[:2]
    bars = [c for c in plot.containers if isinstance(c, ErrorbarContainer)]
    assert list(bars[0].lines[0].get_xdata()) == [mean, 2048, WINDOW]
    texts = {cell.get_text().get_text() for cell in side.tables[0].get_celld().values()}
    assert f"budget 1024: {mean}" in texts and "budget 2048" in texts
    # ticks at the budgets, the point just left of its tick
    assert [t.get_text() for t in plot.get_xticklabels()] == ["1k", "2k", "8k\n(full)"]


def _dev() -> list[Any]:
    return list(load_benchmark().questions("qa", "dev"))
