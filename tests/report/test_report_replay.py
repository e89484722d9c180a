"""The report on real lm-eval runs of the replayed released responses."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from elitr_bench.cli import main
from elitr_bench.report import build_report

#: Paper Table 2, single-turn ELITR-Bench-QA dev column (one seeded run, as released).
TABLE2_ST_DEV = {"GPT-3.5": 7.04, "GPT-4": 8.21, "LongChat-7B-v1.5": 6.60}
#: Paper Table 10 p-values (test set, single-turn QA).
TABLE10 = {"GPT-3.5": 0.466, "GPT-4": 0.372, "LongChat-7B-v1.5": 0.032}


@pytest.fixture(scope="module")
def replay_report(
    replay_runs: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("replay-report")
    return out, build_report([replay_runs], out)


def test_table2_single_turn_dev_reproduces_the_paper(replay_report: tuple[Path, object]) -> None:
    _, report = replay_report
    recs = report.table("table2_judge_score").records  # type: ignore[attr-defined]
    dev = {
        r["model"]: r for r in recs if (r["setting"], r["mode"], r["split"]) == ("qa", "st", "dev")
    }
    assert set(dev) == set(TABLE2_ST_DEV)
    for model, expected in TABLE2_ST_DEV.items():
        assert dev[model]["value"] == pytest.approx(expected, abs=0.01)
        assert dev[model]["n_questions"] == 141 and dev[model]["n_meetings"] == 10
        assert dev[model]["ci_low"] < expected < dev[model]["ci_high"]
    mean = {r["model"]: r for r in recs if r["split"] == "mean"}
    test = {r["model"]: r for r in recs if r["split"] == "test2"}
    for model in TABLE2_ST_DEV:
        assert mean[model]["value"] == pytest.approx(
            (dev[model]["value"] + test[model]["value"]) / 2
        )


def test_table10_p_values_reproduce_the_paper(replay_report: tuple[Path, object]) -> None:
    _, report = replay_report
    recs = report.table("table10_judge_score_qa_st_test2").records  # type: ignore[attr-defined]
    got = {r["model"]: r for r in recs}
    for model, p in TABLE10.items():
        assert got[model]["p_value"] == pytest.approx(p, abs=0.0005)
        assert (got[model]["n_middle"], got[model]["n_other"]) == (34, 96)


def test_table3_counts_match_the_paper(replay_report: tuple[Path, object]) -> None:
    out, report = replay_report
    t3 = report.table("table3_judge_score_qa_st_test2")  # type: ignore[attr-defined]
    assert t3.columns[1:] == (
        "Who (N=45)",
        "What (N=57)",
        "When (N=20)",
        "How many (N=8)",
        "Begin (N=43)",
        "Middle (N=34)",
        "End (N=22)",
        "Several (N=31)",
    )
    md = (out / "report.md").read_text()
    for section in (
        "Runs used",
        "Judge identities",
        "Table 2 layout",
        "Table 3 layout",
        "Table 10 layout",
        "Figure 3 data",
        "replay/gpt4-rubric",
    ):
        assert section in md
    assert (out / "tables" / "table2_judge_score.csv").read_text().count("\n") == 1 + 3 * 3


def test_figures_are_real_pngs(replay_report: tuple[Path, object]) -> None:
    import matplotlib.image as mpimg

    out, _ = replay_report
    for name in ("table2.png", "figure3.png"):
        path = out / "figures" / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        img = mpimg.imread(path)
        assert img.shape[0] > 300 and img.shape[1] > 500
        assert np.unique(img.reshape(-1, img.shape[-1]), axis=0).shape[0] > 20


def test_cli_with_judge_check_and_rescored_run(
    replay_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A judge-check file plus a run re-judged by `elitr-bench score` feed Fig. 2."""
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.metaeval.qa import run_judge_check
    from elitr_bench.scoring.qa import score_samples

    check = tmp_path / "check.json"
    check.write_text(json.dumps(run_judge_check(parse_judge_spec("replay,progress=false"))))
    runs = tmp_path / "runs"
    shutil.copytree(replay_runs / "gpt-4", runs / "gpt4")
    score_samples([runs], parse_judge_spec("lexical,progress=false"))
    out = tmp_path / "out"
    assert main(["report", str(runs), "--judge-check", str(check), "--out", str(out)]) == 0
    assert "report:" in capsys.readouterr().out
    with (out / "tables" / "agreement_pearson.csv").open() as fh:
        cells = {(r["a"], r["b"]): r for r in csv.DictReader(fh)}
    # The replay judge-check is the released GPT-4 judge: shown once, with the paper's
    # Fig. 2b numbers, every cell on the same 390 human-scored answers.
    assert {a for a, _ in cells} == {
        "GPT-4 judge (released)",
        "Prometheus (released)",
        "Gold Human",
        "Silver Human",
    }
    assert round(float(cells[("GPT-4 judge (released)", "Gold Human")]["pearson"]), 2) == 0.82
    assert round(float(cells[("Silver Human", "Gold Human")]["pearson"]), 2) == 0.89
    assert {int(c["n"]) for c in cells.values()} == {390}
    # The lexical re-scoring covers 130 of the 390 answers: left out of the common-item
    # tables, compared pairwise on the items it shares with each evaluator.
    with (out / "tables" / "agreement_pearson_pairwise.csv").open() as fh:
        pairs = {(r["a"], r["b"]): int(r["n"]) for r in csv.DictReader(fh)}
    assert pairs[("lexical/gpt4-rubric", "GPT-4 judge (released)")] == 271
    assert pairs[("lexical/gpt4-rubric", "Gold Human")] == 130
    md = (out / "report.md").read_text()
    assert "lexical/gpt4-rubric scored only 130 of Gold Human's 390 items" in md
    assert "replay/gpt4-rubric gave exactly the scores of GPT-4 judge (released)" in md
    with (out / "tables" / "table2_judge_score.csv").open() as fh:
        rows = {r["row"] for r in csv.DictReader(fh)}
    assert rows == {"GPT-4 [replay/gpt4-rubric]", "GPT-4 [lexical/gpt4-rubric]"}
    assert (out / "figures" / "figure2a.png").stat().st_size > 10_000


def test_multi_turn_columns_reproduce_the_released_scores(
    replay_mt_runs: Path, tmp_path: Path
) -> None:
    report = build_report([replay_mt_runs], tmp_path / "out")
    recs = report.table("table2_judge_score").records
    dev = {(r["setting"], r["mode"]): r["value"] for r in recs if r["split"] == "dev"}
    # Golden: the released files give 1202 / 141 = 8.5248 in both settings, where Table 2
    # prints 8.53 (one judge point more; see tests/tasks/test_tasks.py).
    assert dev[("qa", "mt")] == pytest.approx(1202 / 141)
    assert dev[("conv", "mt")] == pytest.approx(1202 / 141)
