"""Report logic on small fabricated lm-eval output dirs (fast, exact expectations)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from elitr_bench.cli import main
from elitr_bench.judges.metrics import parse_filtered
from elitr_bench.report import ReportError, build_report, load_runs

Writer = Callable[..., Path]
JUDGE_A = {
    "backend": "openai",
    "model": "gpt-4-0613",
    "rubric": "gpt4-rubric",
    "prompt_hash": "abc",
    "sampling": {"temperature": 0.0, "seed": 1, "samples": 1},
}
JUDGE_B = {
    "backend": "hf",
    "model": "prometheus",
    "rubric": "prometheus-rubric",
    "prompt_hash": "def",
}


def base_score(q: Any) -> float:
    return float(len(q.question) % 10 + 1)


def qa_st(split: str) -> dict[str, Any]:
    task = "elitr_qa_dev" if split == "dev" else "elitr_qa_test"
    return {"task": task, "setting": "qa", "mode": "st", "split": split}


def test_parse_filtered_reads_repr_json_and_dicts() -> None:
    ident = {"backend": "replay", "model": ""}
    value = {"response": "It's 'x'", "judge": {"score": float("nan"), "identity": ident}}
    parsed = parse_filtered([[str(value)]])
    assert parsed is not None and parsed["response"] == "It's 'x'"
    assert parsed["judge"]["identity"] == ident
    assert parse_filtered([json.dumps({"response": "a"})]) == {"response": "a"}
    assert parse_filtered([{"response": "b"}]) == {"response": "b"}
    assert parse_filtered(["plain text answer"]) is None
    assert parse_filtered(["{__import__('os').system('true')}"]) is None


def test_seeded_runs_make_table9_and_average_in_table2(tmp_path: Path, synthetic: Writer) -> None:
    offsets = {2023: 0.0, 2024: -1.0, 2025: 0.5}
    for seed, off in offsets.items():
        synthetic(
            tmp_path / "runs",
            f"s{seed}",
            **qa_st("test2"),
            seed=seed,
            judge=JUDGE_A,
            score=lambda q, o=off: min(10.0, max(1.0, base_score(q) + o)),
        )
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    runs = load_runs([tmp_path / "runs"]).runs
    run_means = [statistics.fmean(r.values("judge_score")) for r in runs]
    t9 = report.table("table9_judge_score").records[0]
    assert t9["n_runs"] == 3 and t9["mean"] == pytest.approx(statistics.fmean(run_means))
    assert t9["sd"] == pytest.approx(statistics.stdev(run_means))
    assert sorted(t9["seeds"])[0].startswith("random_seed=2023 gen_seed=2023")
    t2 = {r["split"]: r for r in report.table("table2_judge_score").records}
    assert set(t2) == {"test2"} and t2["test2"]["value"] == pytest.approx(t9["mean"])
    assert t2["test2"]["n_meetings"] == 8 and t2["test2"]["n_questions"] == 130
    assert "×3" in report.table("table2_judge_score").rows[0][2]
    assert t2["test2"]["ci_low"] < t2["test2"]["value"] < t2["test2"]["ci_high"]


def test_a_run_saved_twice_counts_once(tmp_path: Path, synthetic: Writer) -> None:
    """The same command run twice into one dir (``make demo`` twice) is one run, not n=2."""
    for name in ("first", "again"):
        synthetic(tmp_path / "runs", name, **qa_st("dev"), judge=JUDGE_A, score=base_score)
    # Same model and seed, but other scores: a real repeat, kept and flagged.
    synthetic(
        tmp_path / "runs",
        "rescored",
        **qa_st("dev"),
        judge=JUDGE_A,
        score=lambda q: 11.0 - base_score(q),
    )
    loaded = load_runs([tmp_path / "runs"])
    assert [r.run_id for r in loaded.runs] == ["R1", "R2"]
    copies = [n for n in loaded.notes if "identical copy of R" in n]
    assert len(copies) == 1 and "counted once" in copies[0]
    assert any("R2 repeats R1" in n and "different answers or scores" in n for n in loaded.notes)
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    assert report.table("table9_judge_score").records[0]["n_runs"] == 2


def test_unscored_samples_are_left_out_and_counted(tmp_path: Path, synthetic: Writer) -> None:
    def score(q: Any) -> float | None:
        return None if q.question_id == "1" else base_score(q)

    synthetic(tmp_path / "runs", "a", **qa_st("dev"), judge=JUDGE_A, score=score)
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    run = report.table("runs").records[0]
    assert run["n_unscored"] == 10 and run["n_scored"] == 131
    assert run["mean_judge_score"] == pytest.approx(run["reported_judge_score"])
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| ok |" in md and "openai:gpt-4-0613/gpt4-rubric" in md


def test_two_judges_are_two_rows_and_feed_agreement(tmp_path: Path, synthetic: Writer) -> None:
    synthetic(tmp_path / "runs", "ja", **qa_st("dev"), judge=JUDGE_A, score=base_score)
    synthetic(
        tmp_path / "runs",
        "jb",
        **qa_st("dev"),
        judge=JUDGE_B,
        score=lambda q: float(max(1, min(10, 11 - base_score(q) + len(q.answer) % 3))),
    )
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    rows = [r["row"] for r in report.table("table2_judge_score").records]
    assert len(rows) == 2 and all("[" in r for r in rows)
    runs = load_runs([tmp_path / "runs"]).runs
    a, b = (r.values("judge_score") for r in runs)
    pearson = {(r["a"], r["b"]): r for r in report.table("agreement_pearson").records}
    cell = pearson[("hf:prometheus/prometheus-rubric", "openai:gpt-4-0613/gpt4-rubric")]
    assert cell["n"] == 141
    assert cell["pearson"] == pytest.approx(stats.pearsonr(b, a).statistic)
    assert cell["spearman"] == pytest.approx(stats.spearmanr(b, a).statistic)
    shares = {r["evaluator"]: r for r in report.table("agreement_clusters").records}
    share = shares["openai:gpt-4-0613/gpt4-rubric"]
    assert share["[6-10]"] == pytest.approx(sum(x >= 6 for x in a) / len(a))
    assert (tmp_path / "out" / "figures" / "figure2b.png").stat().st_size > 5000


def test_noise_runs_make_figure1(tmp_path: Path, synthetic: Writer) -> None:
    synthetic(tmp_path / "runs", "clean", **qa_st("test2"), judge=JUDGE_A, score=base_score)
    for wer in (0.2, 0.6):
        synthetic(
            tmp_path / "runs",
            f"wer{wer}",
            task=f"elitr_qa_wer{int(wer * 100)}_test",
            setting="qa",
            mode="st",
            split="test2",
            judge=JUDGE_A,
            target_wer=wer,
            effective=lambda m, w=wer: w / 2 + int(m[-1]) / 100,
            score=lambda q, w=wer: max(1.0, base_score(q) - 5 * w),
        )
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    recs = {r["target_wer"]: r for r in report.table("figure1_judge_score").records}
    assert sorted(recs) == [0.0, 0.2, 0.6]
    meetings = [f"meeting_en_test2_00{i}" for i in range(1, 9)]
    expected = statistics.fmean(0.3 + int(m[-1]) / 100 for m in meetings)
    assert recs[0.6]["effective_wer"] == pytest.approx(expected)
    assert recs[0.0]["value"] > recs[0.2]["value"] > recs[0.6]["value"]
    t2 = report.table("table2_judge_score").records
    assert len(t2) == 1  # noisy runs stay out of Table 2
    assert (tmp_path / "out" / "figures" / "figure1.png").stat().st_size > 5000


def test_figure3_averages_the_differing_questions_of_dev_and_test(
    tmp_path: Path, synthetic: Writer
) -> None:
    from elitr_bench.report.tables import differing_questions

    differ = differing_questions()
    assert (len(differ["dev"]), len(differ["test2"])) == (16, 17)
    for split in ("dev", "test2"):
        for setting, mode in (("qa", "st"), ("qa", "mt"), ("conv", "mt")):
            synthetic(
                tmp_path / "runs",
                f"{setting}{mode}{split}",
                task=f"t_{setting}_{mode}_{split}",
                setting=setting,
                mode=mode,
                split=split,
                judge=JUDGE_A,
                score=lambda q, m=mode: base_score(q) - (1 if m == "mt" else 0),
            )
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    from elitr_bench.data import load_benchmark

    bench = load_benchmark()
    means = []
    for split in ("dev", "test2"):
        qs = [
            q
            for q in bench.questions("conv", split)
            if (q.meeting_id, q.question_id) in differ[split]
        ]
        means.append(statistics.fmean(base_score(q) - 1 for q in qs))
    rec = {(r["setting"], r["mode"]): r for r in report.table("figure3_judge_score").records}
    assert rec[("conv", "mt")]["value"] == pytest.approx(statistics.fmean(means))
    assert rec[("conv", "mt")]["n_dev"] == 16 and rec[("conv", "mt")]["n_test2"] == 17
    t2 = report.table("table2_judge_score")
    assert "-" not in t2.rows[0][1:]  # all three settings, dev, test and mean filled
    assert (tmp_path / "out" / "figures" / "figure3.png").stat().st_size > 5000


def test_runs_without_judge_fall_back_to_labelled_f1(tmp_path: Path, synthetic: Writer) -> None:
    synthetic(tmp_path / "runs", "nojudge", **qa_st("dev"), judge=None, score=base_score)
    report = build_report([tmp_path / "runs"], tmp_path / "out")
    assert any("token F1" in n and "NOT comparable" in n for n in report.notes)
    t2 = report.table("table2_f1")
    assert "fallback" in t2.title and t2.records[0]["metric"] == "f1"
    synthetic(
        tmp_path / "runs",
        "judged",
        **qa_st("dev"),
        judge=JUDGE_A,
        score=base_score,
        model_args="pretrained=org/other-model",
    )
    mixed = build_report([tmp_path / "runs"], tmp_path / "out2")
    assert [r["model"] for r in mixed.table("table2_judge_score").records] == ["other-model"]
    assert [r["model"] for r in mixed.table("table2_f1").records] == ["toy-model"]


def test_bad_input_is_one_clear_line(
    tmp_path: Path, synthetic: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ReportError, match="does not exist"):
        build_report([tmp_path / "missing"], tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="no lm-eval results_"):
        build_report([tmp_path / "empty"], tmp_path / "out")
    folder = synthetic(tmp_path / "runs", "x", **qa_st("dev"), judge=JUDGE_A, score=base_score)
    samples = next(folder.glob("samples_*.jsonl"))
    samples.write_text(samples.read_text()[:-40])
    assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and samples.name in err and "re-run" in err
    assert main(["report", "--out", str(tmp_path / "out")]) == 2
    assert main(["report", "--judge-check", str(samples), "--out", str(tmp_path / "o")]) == 2
    assert "judge-check" in capsys.readouterr().err


def test_bootstrap_option_resamples_meetings(tmp_path: Path, synthetic: Writer) -> None:
    synthetic(tmp_path / "runs", "a", **qa_st("dev"), judge=JUDGE_A, score=base_score)
    synthetic(tmp_path / "runs", "b", **qa_st("test2"), judge=JUDGE_A, score=base_score)
    out = tmp_path / "out"
    argv = ["report", str(tmp_path / "runs"), "--out", str(out), "--ci", "bootstrap"]
    assert main([*argv, "--resamples", "2000", "--seed", "3"]) == 0
    recs = json.loads((out / "tables" / "table2_judge_score.json").read_text())
    assert {r["ci_method"] for r in recs} == {"bootstrap"} and len(recs) == 3
    for r in recs:
        assert r["ci_low"] < r["value"] < r["ci_high"]
    cluster_t = build_report([tmp_path / "runs"], tmp_path / "out2").table("table2_judge_score")
    assert [r["value"] for r in cluster_t.records] == [r["value"] for r in recs]
    assert "2000 resamples, seed 3" in (out / "report.md").read_text()


def test_section_builders_are_the_extension_point(tmp_path: Path, synthetic: Writer) -> None:
    from elitr_bench.report.build import SECTION_BUILDERS, Report, ReportInputs

    synthetic(tmp_path / "runs", "a", **qa_st("dev"), judge=JUDGE_A, score=base_score)
    seen: list[ReportInputs] = []

    def other_runs(inputs: ReportInputs, report: Report) -> None:
        seen.append(inputs)
        report.section("Other runs", f"{len(inputs.run_paths)} path(s) read by another builder")

    report = build_report(
        [tmp_path / "runs"], tmp_path / "out", builders=[*SECTION_BUILDERS, other_runs]
    )
    assert seen[0].run_paths == (tmp_path / "runs",) and len(seen[0].runs) == 1
    assert [h for h, _ in report.sections][-1] == "Other runs"
    assert "1 path(s) read by another builder" in (tmp_path / "out" / "report.md").read_text()
    with pytest.raises(ReportError, match="no ELITR-Bench runs"):
        build_report([tmp_path / "runs"], tmp_path / "out2", builders=[])
