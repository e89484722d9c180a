"""minutes-check: statistics on toy data, input files, and the command on the released minutes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from elitr_bench.data.errors import DataError
from elitr_bench.data.records import HumanScores
from elitr_bench.judges.minutes.check import (
    add_derived,
    correlations,
    human_system_means,
    meta_evaluate,
    pairwise_accuracy,
)
from elitr_bench.judges.minutes.commands import parse_run, parse_systems
from elitr_bench.judges.minutes.inputs import merge_values, read_metric_file
from elitr_bench.judges.minutes.paper import TABLE6_EN, TABLE9, TABLE9_SYSTEMS


def test_pairwise_accuracy_counts_ties() -> None:
    metric = {"a": 3.0, "b": 2.0, "c": 2.0, "d": 1.0}
    human = {"a": 4.0, "b": 4.0, "c": 3.0, "d": 5.0}
    result = pairwise_accuracy(metric, human, ["a", "b", "c", "d", "zz"])
    # pairs: ab m+ h0 no | ac ++ yes | ad +- no | bc 0+ no | bd +- no | cd +- no
    assert (result.agree, result.pairs, result.metric_ties, result.human_ties) == (1, 6, 1, 1)
    assert result.missing == ("zz",) and result.accuracy == pytest.approx(1 / 6)
    tie = pairwise_accuracy({"a": 1.0, "b": 1.0}, {"a": 2.0, "b": 2.0}, ["a", "b"])
    assert tie.accuracy == 1.0  # a metric tie agrees with a human tie


def test_correlations_and_undefined_cases() -> None:
    perfect = correlations([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 9.0])
    assert perfect["spearman"] == pytest.approx(1.0) and perfect["kendall"] == pytest.approx(1.0)
    assert 0.9 < (perfect["pearson"] or 0) < 1.0
    assert correlations([1.0, 2.0], [1.0, 2.0])["pearson"] is None
    assert correlations([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])["kendall"] is None


def _human() -> list[HumanScores]:
    rows = []
    for system, doc, hunks in (("a", (5.0, 4.0), (4.0, 2.0)), ("b", (3.0, 3.0), (5.0, 5.0))):
        for i, (d, h) in enumerate(zip(doc, hunks, strict=True)):
            meeting = f"m{i}"
            rows.append(HumanScores(meeting, system, "document", "adequacy", d))
            # meeting m0 has 3 hunks, m1 has 1: pooled means weight by that count
            rows.append(HumanScores(meeting, system, "hunk", "adequacy", h, 3 if i == 0 else 1))
    return rows


def test_human_means_pool_hunks() -> None:
    human = _human()
    assert human_system_means(human, "document", "adequacy") == {"a": 4.5, "b": 3.0}
    assert human_system_means(human, "hunk", "adequacy") == {"a": 3.5, "b": 5.0}


def test_meta_evaluate_system_and_document_level() -> None:
    values = {"x": {("a", "m0"): 0.9, ("a", "m1"): 0.7, ("b", "m0"): 0.1, ("b", "m1"): 0.2}}
    rows = {r.column: r for r in meta_evaluate(values, _human(), ["a", "b"])}
    assert rows["D Adeq"].pairwise.accuracy == 1.0  # a > b for metric and humans
    assert rows["H Adeq"].pairwise.accuracy == 0.0  # hunk-level humans prefer b
    assert rows["D Adeq"].document["n"] == 4.0
    assert rows["D Fluency"].pairwise.pairs == 0  # no fluency scores in the toy data
    # A system-level value (e.g. a CREAM Elo rating) gives system statistics only.
    elo = {"elo": {("a", ""): 1000.0, ("b", ""): 1100.0}}
    elo_rows = {r.column: r for r in meta_evaluate(elo, _human(), ["a", "b"])}
    assert elo_rows["H Adeq"].pairwise.accuracy == 1.0
    assert elo_rows["H Adeq"].document["n"] == 0.0


def test_derived_average_needs_every_component() -> None:
    parts = {"art_adequacy": 6.0, "art_relevance": 8.0, "art_topicality": 7.0}
    values = {m: {("s", "m1"): v, ("s", "m2"): v} for m, v in parts.items()}
    del values["art_topicality"][("s", "m2")]
    derived = add_derived(values)
    assert derived["art_avg"] == {("s", "m1"): 7.0}
    assert "afgr_avg" not in derived


def test_metric_files(tmp_path: Path) -> None:
    csv_file = tmp_path / "ratings.csv"
    csv_file.write_text(
        "system,meeting_id,metric,value\ngpt4,,cream_elo_x,1012.5\nntr,m1,cream_x,0.5\n"
    )
    assert read_metric_file(csv_file) == {
        "cream_elo_x": {("gpt4", ""): 1012.5},
        "cream_x": {("ntr", "m1"): 0.5},
    }
    jsonl = tmp_path / "mesa.jsonl"
    jsonl.write_text(
        json.dumps(
            {"system": "gpt4", "meeting_id": "m1", "quality": 3.5, "note": "x",
             "types": {"OM": {"rating": 2}}}
        )
        + "\n"
    )  # fmt: skip
    assert read_metric_file(jsonl) == {
        "quality": {("gpt4", "m1"): 3.5},
        "types.OM.rating": {("gpt4", "m1"): 2.0},
    }
    bad = tmp_path / "bad.csv"
    bad.write_text("sys,metric\n")
    with pytest.raises(DataError, match="header must be system,meeting_id,metric,value"):
        read_metric_file(bad)
    with pytest.raises(DataError, match="no such file"):
        read_metric_file(tmp_path / "missing.jsonl")


def test_conflicting_inputs_and_cli_parsing() -> None:
    target = {"m": {("a", "x"): 1.0}}
    merge_values(target, {"m": {("a", "x"): 1.0, ("b", "x"): 2.0}}, "same")
    with pytest.raises(DataError, match="label runs"):
        merge_values(target, {"m": {("a", "x"): 1.5}}, "other")
    assert parse_run("out/run1:gpt4o") == ("out/run1", "gpt4o")
    assert parse_run("out/run1") == ("out/run1", "")
    assert parse_systems("table9", ["annot", "gpt4"]) == list(TABLE9_SYSTEMS)
    with pytest.raises(DataError, match="unknown nope"):
        parse_systems("gpt4,nope", ["annot", "gpt4"])


@pytest.fixture(scope="module")
def released_check(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    from elitr_bench.judges.minutes.commands import run_check

    out = tmp_path_factory.mktemp("minutes_check")
    args = argparse.Namespace(
        # ROUGE-L's pure-Python LCS costs ~0.3 s per minutes: metric values of the first 3
        # meetings only (Table 6 is not affected); the full run is reported by hand.
        metrics="rouge1,rouge2,rougeL",
        run=None,
        metric_file=None,
        systems="table9",
        meetings="3",
        out=str(out),
    )
    return out, run_check(args)


def test_released_minutes_reproduce_table6_and_print_table9(
    released_check: tuple[Path, dict[str, object]],
) -> None:
    out, summary = released_check
    assert summary["systems"] == list(TABLE9_SYSTEMS)
    table6 = (out / "table6.csv").read_text().splitlines()
    assert len(table6) == 1 + len(TABLE6_EN)
    deltas = [cell for line in table6[1:] for cell in line.split(",")[2::2]]
    # The release's means equal the printed Table 6 (GPT-4's H Relev is unreadable: "–").
    assert set(deltas) <= {"+0.00", "-0.00", "–"} and deltas.count("–") == 1
    table9 = (out / "table9.csv").read_text().splitlines()
    paper_rouge1 = [line for line in table9 if line.startswith("ROUGE-1,paper,")]
    assert paper_rouge1 == [
        "ROUGE-1,paper," + ",".join(f"{v:.1f}" for v in TABLE9["rouge1"]) + ",,"
    ]
    ours = [line.split(",") for line in table9 if ",ours," in line]
    assert {row[0] for row in ours} == {"ROUGE-1", "ROUGE-2", "ROUGE-L"}
    assert all(row[-1] == "21" for row in ours)  # 7 systems = 21 pairs
    markdown = (out / "minutes_check.md").read_text()
    assert "one system pair of 21 is 4.8 points" in markdown
    assert (out / "table9_heatmap.png").stat().st_size > 10_000


def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from elitr_bench.cli import main

    assert main(["minutes-check", "--metrics", "none", "--run", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no such lm-eval output folder" in err
    assert main(["minutes-check", "--metrics", "bleu"]) == 2
    assert "not computable on released minutes" in capsys.readouterr().err
