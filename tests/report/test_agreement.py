"""Table 4 and Fig. 2 of the report, and the layout of every figure.

Every evaluator is compared on the same items, with no duplicate series; figures follow
the paper's layout (setting order, 1-10 axes, legends outside the data, N per bin).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.report import agreement, build_report, figures
from elitr_bench.report.agreement import GOLD, RELEASED_GPT4, SILVER, AgreementData

Writer = Callable[..., Path]
RELEASED = ["GPT-4 judge (released)", "Prometheus (released)", "Gold Human", "Silver Human"]


@pytest.fixture(scope="module")
def check_file(tmp_path_factory: pytest.TempPathFactory, lm_eval_offline: None) -> Path:
    """``elitr-bench judge-check --judge replay`` output (the 390 human-scored answers)."""
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.metaeval.qa import run_judge_check

    path = tmp_path_factory.mktemp("check") / "check.json"
    path.write_text(json.dumps(run_judge_check(parse_judge_spec("replay,progress=false"))))
    return path


@pytest.fixture()
def drawn(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Every figure the report draws, laid out as saved, keyed by file name."""
    seen: dict[str, Any] = {}
    save = figures._save

    def spy(fig: Any, path: Path) -> Path:
        fig.tight_layout()
        fig.canvas.draw()
        _legend_clear_of_data(fig)  # before saving: saving closes the figure
        seen[path.name] = fig
        return save(fig, path)

    monkeypatch.setattr(figures, "_save", spy)
    yield seen


def _legend_clear_of_data(fig: Any) -> None:
    """No legend box overlaps any plotting area of the figure."""
    renderer = fig.canvas.get_renderer()
    boxes = [ax.get_window_extent(renderer) for ax in fig.axes if ax.get_label() != "<colorbar>"]
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            box = legend.get_window_extent(renderer)
            assert not any(box.overlaps(b) for b in boxes), "legend covers a plotting area"


def test_table4_reproduces_the_released_means_and_names_the_printed_difference(
    check_file: Path, tmp_path: Path, drawn: dict[str, Any]
) -> None:
    from elitr_bench.data import load_released_responses

    report = build_report([], tmp_path / "out", judge_checks=[check_file])
    t4 = report.table("table4")
    # The replay judge is the released GPT-4 judge: one column, not two identical ones.
    assert t4.columns == ("Model", "N", *RELEASED)
    assert [row[0] for row in t4.rows] == ["GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"]
    assert {row[1] for row in t4.rows} == {"130"}
    sums: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in load_released_responses("qa", "test2", "st", "all-eval"):
        for name, label in zip(
            ("gpt4", "prometheus", "gold_human", "silver_human"), RELEASED, strict=True
        ):
            sums[(r.system, label)].append(r.scores[name])
    for rec in t4.records:
        values = sums[(rec["system"], rec["evaluator"])]
        assert rec["n"] == len(values) == 130
        assert rec["mean"] == pytest.approx(math.fsum(values) / len(values))

    versus = {r["quantity"]: r for r in report.table("paper_table4_fig2b").records}
    differing = [q for q, r in versus.items() if not r["same"]]
    # Paper Table 4 prints 6.69 for Vicuna-13B-v1.5's GPT-4 judge; the released scores give
    # 6.68, less than one score point on one of the 130 answers away.
    assert differing == ["Table 4: Vicuna-13B-v1.5, GPT-4 judge (released)"]
    vicuna = versus[differing[0]]
    assert vicuna["paper"] == "6.69" and 0 < -vicuna["difference"] < 1 / 130
    assert versus["Fig. 2b: Pearson Gold Human ~ Silver Human"]["same"]
    assert len(versus) == 12 + 3 + 3

    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Evaluators per system (Table 4)" in md
    assert "same 390 items" in md

    fig2a = drawn["figure2a.png"]
    ax = fig2a.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert len(ticks) == 10 and all(t.startswith(f"{i}\nN=") for i, t in enumerate(ticks, 1))
    assert sum(int(t.split("N=")[1]) for t in ticks) == 390
    labels = ax.get_legend_handles_labels()[1]
    assert sorted(labels) == sorted([RELEASED[0], RELEASED[1], SILVER, "y = x"])
    assert ax.get_ylim() == (0.5, 10.5) and ax.get_xlim() == (0.5, 10.5)
    fig2b = drawn["figure2b.png"]
    assert [t.get_text() for t in fig2b.axes[0].get_yticklabels()] == RELEASED
    assert "N = 390" in fig2b.axes[0].get_title()
    assert set(drawn) == {"figure2a.png", "figure2b.png"}


def _key(i: int) -> agreement.ItemKey:
    return ("qa", "test2", "st", f"m{i % 4}", str(i), "Sys", f"h{i}")


def _toy() -> AgreementData:
    """Judge X on 60 items, humans on the first 40, judge Y on only 10 of those."""
    data = AgreementData(scores={}, sources={})
    for i in range(60):
        # X gives every item the humans did not score a 1, so shares over 60 items and
        # over the 40 common ones differ.
        data.add("judge X", _key(i), float(1 + i % 10) if i < 40 else 1.0, "runs", "Sys")
        if i < 40:
            data.add(GOLD, _key(i), float(1 + (i * 7) % 10), "released")
            data.add(SILVER, _key(i), float(1 + (i * 3) % 10), "released")
        if i < 10:
            data.add("judge Y", _key(i), float(10 - i), "runs")
    return data


def test_every_agreement_table_compares_the_same_items() -> None:
    data = _toy()
    panel = agreement.choose_panel(data, GOLD)
    assert panel.evaluators == ("judge X", GOLD, SILVER)
    assert len(panel.items) == 40 and panel.left_out == (("judge Y", 10),)
    corr = agreement.correlation_tables(data, panel)
    assert {r["n"] for r in corr[0].records} == {40}
    bins, plot = agreement.bin_tables(data, panel)
    dist, shares, by_cluster = bins
    assert sum(plot["bins"].values()) == 40
    assert {r["n"] for r in shares.records} == {40}
    x_share = next(r for r in shares.records if r["evaluator"] == "judge X")
    x_scores = [data.scores["judge X"][_key(i)] for i in range(40)]
    assert x_share["[1-2]"] == pytest.approx(sum(v <= 2 for v in x_scores) / 40)
    assert sum(r["n"] for r in by_cluster.records if r["evaluator"] == "judge X") == 40
    for rec in dist.records:
        assert rec["n"] == plot["bins"][rec["bin"]]
    t4 = agreement.table4(data, panel)
    assert t4 is not None and t4.rows[0][:2] == ("Sys", "40")
    pairwise = agreement.pairwise_table(data, panel)
    assert pairwise is not None
    n = {(r["a"], r["b"]): r["n"] for r in pairwise.records}
    assert n[("judge Y", "judge X")] == 10 and n[("judge X", GOLD)] == 40
    notes = " ".join(agreement.panel_notes(data, panel))
    assert "same 40 items" in notes and "judge Y scored only 10 of Gold Human's 40" in notes


def test_an_evaluator_repeating_another_is_shown_once() -> None:
    data = AgreementData(scores={}, sources={})
    for i in range(20):
        data.add(RELEASED_GPT4, _key(i), float(1 + i % 10), "released")
        data.add(GOLD, _key(i), float(1 + (i * 3) % 10), "released")
        if i < 15:
            data.add("replay/gpt4-rubric", _key(i), float(1 + i % 10), "judge-check")
        # Same scores where both scored, but an item the released judge lacks: not a repeat.
        data.add("other/gpt4-rubric", _key(i if i < 19 else 99), float(1 + i % 10), "runs")
    agreement.merge_duplicates(data)
    assert data.merged == {"replay/gpt4-rubric": RELEASED_GPT4}
    assert set(data.scores) == {RELEASED_GPT4, GOLD, "other/gpt4-rubric"}
    assert agreement.pick_reference(data, "replay") == RELEASED_GPT4


def test_figures_follow_the_paper_setting_order_on_fixed_axes(
    tmp_path: Path, synthetic: Writer, drawn: dict[str, Any]
) -> None:
    judge = {"backend": "openai", "model": "gpt-4-0613", "rubric": "gpt4-rubric"}

    def score(q: Any) -> float:
        return float(1 + len(q.answer) % 10)

    # Written in alphabetical order of the settings, the reverse of the paper's.
    for setting, mode, task in (
        ("conv", "mt", "elitr_conv_dev"),
        ("qa", "mt", "elitr_qa_mt_dev"),
        ("qa", "st", "elitr_qa_dev"),
    ):
        for split in ("dev", "test2"):
            synthetic(
                tmp_path / "runs",
                f"{task}-{split}",
                task=task.replace("dev", split),
                setting=setting,
                mode=mode,
                split=split,
                judge=judge,
                score=score,
            )
    for wer in (0.4, 1.0):
        synthetic(
            tmp_path / "runs",
            f"wer{wer}",
            task=f"elitr_qa_wer{int(wer * 100)}_dev",
            setting="qa",
            mode="st",
            split="dev",
            judge=judge,
            target_wer=wer,
            score=lambda q, w=wer: max(1.0, score(q) - 4 * w),
        )
    build_report([tmp_path / "runs"], tmp_path / "out")
    t2 = drawn["table2.png"].axes[0]

    def under_bars(ax: Any) -> list[str]:
        """One model: the settings are named under their own bars, in the paper's order."""
        return [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()]

    assert under_bars(t2) == [
        "Single-turn QA dev",
        "Single-turn QA test",
        "Multi-turn QA dev",
        "Multi-turn QA test",
        "Multi-turn Conv dev",
        "Multi-turn Conv test",
    ]
    f3 = drawn["figure3.png"].axes[0]
    assert under_bars(f3) == [
        "Single-turn QA",
        "Multi-turn QA",
        "Multi-turn Conv",
    ]
    f1 = drawn["figure1.png"].axes  # target and effective WER panels share the y axis
    for ax in (t2, f3, *f1):
        assert ax.get_ylim() == (0.5, 10.5)
    for ax in (t2, f3, f1[0]):
        assert [t.get_text() for t in ax.get_yticklabels()] == [str(i) for i in range(1, 11)]
    assert set(drawn) == {"table2.png", "figure3.png", "figure1.png"}
