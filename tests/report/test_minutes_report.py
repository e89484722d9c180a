"""``elitr-bench report`` on minutes runs: Table 7 layout, filler savings, metric-vs-human plots."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from elitr_bench.data.minutes import load_automin_human_scores
from elitr_bench.report.build import build_report

MEETINGS = ("meeting_en_test2023_002", "meeting_en_test2023_003", "meeting_en_test2023_004")
STAMP = "2026-01-01T00-00-00.000000"


def _judged(meeting: str, system: str, minutes: str, adequacy: float | None) -> str:
    judge = {
        "meeting_id": meeting,
        "system": system,
        "method": "gpt-afgr",
        "scores": {"afgr_adequacy": adequacy, "afgr_fluency": None},
        "status": "partial" if adequacy is not None else "unscored",
        "reason": "no fluency score",
        "details": {
            "filler": {"turns": 10, "filler_turns": 4, "tokens_before": 1000, "tokens_after": 700}
        },
    }
    return json.dumps({"response": minutes, "judge": judge})


def write_run(
    root: Path, model: str, model_args: str, rows: list[dict[str, Any]], judged: bool
) -> Path:
    """An lm-eval output folder of automin23_en with the given per-meeting values."""
    folder = root / model_args.replace("=", "_") / "model"
    folder.mkdir(parents=True)
    metadata: dict[str, Any] = {"judge_identity": {"backend": "none"}}
    if judged:
        metadata = {
            "judge_identity": {"backend": "openai", "model": "gpt-4-0613", "method": "gpt-afgr"},
            "judge_usage": {"requests": 12, "estimated_cost_usd": 0.5},
        }
    results = {
        "results": {"automin23_en": {}},
        "config": {"model": model, "model_args": model_args},
        "configs": {"automin23_en": {"metadata": metadata}},
    }
    (folder / f"results_{STAMP}.json").write_text(json.dumps(results))
    lines = []
    for i, row in enumerate(rows):
        minutes = f"- minutes of {row['meeting']}"
        sample = {
            "doc_id": i,
            "doc": {"meeting_id": row["meeting"], "split": "test2023"},
            "resps": [[minutes]],
            "filtered_resps": [
                _judged(row["meeting"], "", minutes, row.get("adequacy")) if judged else minutes
            ],
            "rouge1": row["rouge1"],
            "lines": 3.0,
            "overlength_skipped": 0.0,
            "metrics": ["rouge1", "lines", "overlength_skipped"],
        }
        lines.append(json.dumps(sample))
    (folder / f"samples_automin23_en_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture
def minutes_runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    write_run(
        root,
        "elitr-replay",
        "system=gpt4",
        [
            {"meeting": MEETINGS[0], "rouge1": 0.40, "adequacy": 8.0},
            {"meeting": MEETINGS[1], "rouge1": 0.50, "adequacy": 9.0},
            {"meeting": MEETINGS[2], "rouge1": 0.45, "adequacy": None},
        ],
        judged=True,
    )
    write_run(
        root,
        "elitr-replay",
        "system=ntr",
        [{"meeting": m, "rouge1": r} for m, r in zip(MEETINGS, (0.30, 0.35, 0.20), strict=True)],
        judged=False,
    )
    write_run(
        root, "hf", "pretrained=tiny", [{"meeting": MEETINGS[0], "rouge1": 0.1}], judged=False
    )
    return root


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_minutes_report_tables_and_scatter(minutes_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    report = build_report([minutes_runs], out)
    text = (out / "report.md").read_text()
    assert "## Meeting minutes (AutoMin Task A)" in text
    assert not any("automin23_en" in n for n in report.notes)  # no "skipped" QA notes
    assert "metric `" not in text and "CI `" not in text  # the QA header needs QA runs

    table7 = {(r["system"], r["metric"]): r for r in _csv(out / "tables" / "minutes_table7.csv")}
    assert float(table7[("gpt4", "rouge1")]["mean"]) == pytest.approx(0.45)
    assert float(table7[("gpt4", "rouge1")]["std"]) == pytest.approx((0.005 / 3) ** 0.5)
    assert float(table7[("gpt4", "afgr_adequacy")]["mean"]) == pytest.approx(8.5)
    assert table7[("gpt4", "afgr_adequacy")]["n"] == "2"  # the unscored meeting is left out
    assert ("gpt4", "afgr_fluency") not in table7  # never scored: no number at all
    assert float(table7[("ntr", "rouge1")]["mean"]) == pytest.approx(0.85 / 3)
    assert any(system.startswith("hf") for system, _ in table7)  # our own model's run
    rows = text.split("Minutes: automatic metrics per system/model")[1].split("Data:")[0]
    assert rows.index("| GPT-4 |") < rows.index("| NTR |")  # sorted by ROUGE-1

    [saving] = _csv(out / "tables" / "minutes_filler_savings.csv")
    assert (saving["system"], saving["tokens_saved"], saving["meetings"]) == ("gpt4", "900", "3")
    assert saving["judge_cost_usd"] == "0.5"

    human = {
        (h.system, h.meeting_id): h.value
        for h in load_automin_human_scores("document")
        if h.criterion == "adequacy"
    }
    points = sorted(
        (human[(s, m)], r)
        for s, values in (("gpt4", (0.40, 0.50, 0.45)), ("ntr", (0.30, 0.35, 0.20)))
        for m, r in zip(MEETINGS, values, strict=True)
    )
    expected = stats.pearsonr([p[0] for p in points], [p[1] for p in points])[0]
    versus = {
        (r["metric"], r["criterion"]): r for r in _csv(out / "tables" / "minutes_vs_human.csv")
    }
    assert versus[("rouge1", "adequacy")]["n"] == "6"
    assert float(versus[("rouge1", "adequacy")]["pearson"]) == pytest.approx(expected)
    figure = out / "figures" / "minutes_scatter_rouge1.png"
    assert figure.stat().st_size > 10_000 and f"figures/{figure.name}" in text
