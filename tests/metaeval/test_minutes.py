"""minutes-check: statistics on toy data, input files, and the command on the released minutes."""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
from pathlib import Path

import pytest

from elitr_bench.cli.minutes_check import parse_run, parse_systems
from elitr_bench.data.errors import DataError
from elitr_bench.data.records import HumanScores
from elitr_bench.metaeval.minutes import (
    add_derived,
    bound_violations,
    column_bounds,
    correlations,
    human_system_means,
    meta_evaluate,
)
from elitr_bench.metaeval.minutes_inputs import (
    merge_values,
    read_metric_file,
    usable_metric_values,
)
from elitr_bench.metaeval.minutes_paper import (
    HUMAN_COLUMNS,
    TABLE6_EN,
    TABLE8_EN,
    TABLE8_MEETINGS,
    TABLE8_METRICS,
    TABLE9,
    TABLE9_SYSTEMS,
)
from elitr_bench.metaeval.minutes_tables import table8
from elitr_bench.metaeval.stats import pairwise_accuracy


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
    from elitr_bench.cli.minutes_check import run_check

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


# --- Table 8 -------------------------------------------------------------------------------
def test_table8_cells_are_twelve_integer_scores_with_sample_std() -> None:
    """Checks the transcription, and decides the std: sample std (ddof=1), not population."""
    reachable = {(0, 0)}  # (sum, sum of squares) of TABLE8_MEETINGS integer scores 0-10
    for _ in range(TABLE8_MEETINGS):
        reachable = {(s + v, q + v * v) for s, q in reachable for v in range(11)}
    n = TABLE8_MEETINGS

    def fits(mean: float, std: float, ddof: int) -> bool:
        return any(
            round(total / n + 1e-9, 2) == mean
            and round(math.sqrt(max(0.0, (squares - total * total / n) / (n - ddof))) + 1e-9, 2)
            == std
            for total, squares in reachable
        )

    cells = [cell for row in TABLE8_EN.values() for cell in row]
    assert len(cells) == 7 * len(TABLE8_METRICS) and set(TABLE8_EN) == set(TABLE9_SYSTEMS)
    assert all(fits(mean, std, 1) for mean, std in cells)
    assert sum(fits(mean, std, 0) for mean, std in cells) <= 3


def _gpt_values(scale: float = 1.0) -> dict[str, dict[tuple[str, str], float]]:
    """Per-meeting GPT-AFGR adequacy for two Table 8 systems and one run of ours."""
    meetings = [f"meeting_en_test2023_{i:03d}" for i in range(1, 13)]
    gpt4 = [9.0] * 9 + [8.0] * 3  # the printed 8.75 ± 0.45
    ntr = [8.0] * 6 + [7.0] * 6
    values: dict[tuple[str, str], float] = {}
    for system, scores in (("gpt4", gpt4), ("ntr", ntr), ("my-run", [5.0, 6.0])):
        for meeting, score in zip(meetings, scores, strict=False):
            values[(system, meeting)] = score * scale
    return {"afgr_adequacy": values}


def test_table8_puts_our_means_next_to_the_printed_ones() -> None:
    table = table8(_gpt_values())
    assert table is not None
    assert table.header == ["System", "source", "GPT-AFGR A", "meetings"]
    rows = {(row[0], row[1]): row[2:] for row in table.rows}
    assert rows[("GPT-4", "ours")] == ["8.75 ± 0.45", "12"]  # sample std, as the paper's
    assert rows[("GPT-4", "paper")] == ["8.75 ± 0.45", "12"]
    assert rows[("GPT-4", "Δ")] == ["+0.00", ""]
    assert rows[("NTR", "ours")] == ["7.50 ± 0.52", "12"]
    assert rows[("NTR", "Δ")] == ["+0.42", ""]  # printed 7.08
    assert rows[("my-run", "ours")] == ["5.50 ± 0.71", "2"] and ("my-run", "paper") not in rows
    assert [r[0] for r in table.rows][:6] == ["GPT-4"] * 3 + ["NTR"] * 3  # Table 8's order
    notes = "\n".join(table.notes)
    assert "GPT-AFGR A: 1 of 1 pairs of Table 8's systems ordered as printed" in notes
    assert "no printed row for my-run" in notes and "without our scores: davinci-003" in notes
    assert table8({"rouge1": {("gpt4", "m"): 0.4}}) is None


# --- Table 9: why the printed table cannot be reproduced ----------------------------------
def _two_columns(first: dict[str, float], second: dict[str, float]) -> list[HumanScores]:
    rows = []
    for system in first:
        rows.append(HumanScores("m1", system, "document", "adequacy", first[system]))
        rows.append(HumanScores("m1", system, "document", "fluency", second[system]))
    return rows


def test_column_bound_holds_for_every_metric_order() -> None:
    adequacy = {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}
    fluency = {"a": 3.0, "b": 4.0, "c": 2.0, "d": 2.0}  # a/b swapped, c/d tied: 2 of 6 differ
    human = _two_columns(adequacy, fluency)
    [bound] = [b for b in column_bounds(human, "abcd") if b.pairs]
    assert (bound.first, bound.second, bound.disagree, bound.pairs) == ("D Adeq", "D Fluency", 2, 6)
    # No metric order (ties included) gets its two accuracies further apart than 2 of 6.
    widest = 0
    for scores in itertools.product(range(3), repeat=4):
        metric = dict(zip("abcd", map(float, scores), strict=True))
        one = pairwise_accuracy(metric, adequacy, list("abcd")).agree
        two = pairwise_accuracy(metric, fluency, list("abcd")).agree
        widest = max(widest, abs(one - two))
    assert widest == bound.disagree  # the bound is reached, and never passed
    accuracies = {"D Adeq": 100.0, "D Fluency": 100 / 6}  # 6 vs 1 agreeing pairs
    [violation] = bound_violations(accuracies, [bound])
    assert violation.gap == pytest.approx(100 * 5 / 6)
    assert bound_violations({"D Adeq": 100.0, "D Fluency": 66.7}, [bound]) == []


def test_printed_table9_breaks_the_bounds_of_the_human_scores() -> None:
    from elitr_bench.data.minutes import load_automin_human_scores

    bounds = column_bounds(load_automin_human_scores(), TABLE9_SYSTEMS)
    assert len(bounds) == 28 and {b.pairs for b in bounds} == {21}
    by_columns = {(b.first, b.second): b for b in bounds}
    assert by_columns[("D Adeq", "D Fluency")].disagree == 2  # computed from the release
    # 2 of the 21 pairs: 100 * 2 / 21 = 9.52 points of pairwise accuracy.
    assert by_columns[("D Adeq", "D Fluency")].points == pytest.approx(100 * 2 / 21)
    columns = [col for *_, col in HUMAN_COLUMNS]
    broken = {
        metric: bound_violations(dict(zip(columns, row, strict=True)), bounds)
        for metric, row in TABLE9.items()
    }
    rouge1 = {(v.bound.first, v.bound.second): v for v in broken["rouge1"]}
    assert rouge1[("D Adeq", "D Fluency")].gap == pytest.approx(19.0)
    assert min(len(v) for v in broken.values()) >= 2  # every printed row, at least twice


# --- metric files whose values cannot order systems ---------------------------------------
def _ratings(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    lines = ["system,meeting_id,metric,value"] + [f"{s},,{m},{v}" for s, m, v in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_metric_of_ties_or_missing_values_is_left_out(tmp_path: Path) -> None:
    read = read_metric_file(
        _ratings(
            tmp_path / "r.csv",
            [("gpt4", "elo", "1000"), ("ntr", "elo", "1000"), ("gpt4", "bt", "1010"),
             ("ntr", "bt", "990"), ("gpt4", "x", ""), ("ntr", "x", "nan"), ("kmjec", "one", "3")],
        )
    )  # fmt: skip
    assert read["x"] == {}  # empty cells are missing values, not errors
    usable, notes = usable_metric_values(read, "--metric-file r.csv")
    assert set(usable) == {"bt", "one"}  # one value alone is not a tie
    assert notes == [
        "--metric-file r.csv: elo is 1000 in all 2 rows, so it cannot order systems; left out",
        "--metric-file r.csv: x has no value, so it cannot order systems; left out",
    ]
    jsonl = tmp_path / "mesa.jsonl"
    jsonl.write_text(
        "\n".join(
            json.dumps({"system": s, "meeting_id": "", "quality": None, "impact": 2.0})
            for s in ("gpt4", "ntr")
        )
    )
    with pytest.raises(DataError) as error:
        usable_metric_values(read_metric_file(jsonl), f"--metric-file {jsonl}")
    message = str(error.value)
    assert "\n" not in message and str(jsonl) in message
    assert "quality has no value" in message and "impact is 2 in all 2 rows" in message


def test_minutes_check_refuses_an_arena_of_ties(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An arena whose comparisons all failed rates every system 1000: refused, one line."""
    from elitr_bench.cli import main

    systems = ["gpt4", "ntr", "kmjec", "synapse"]
    names = [f"cream_{k}_{m}" for k in ("elo", "bt") for m in ("completeness", "conciseness")]
    ties = _ratings(tmp_path / "ratings.csv", [(s, m, "1000") for m in names for s in systems])
    assert main(["minutes-check", "--metrics", "none", "--metric-file", str(ties)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(ties) in err
    assert "cream_elo_completeness is 1000 in all 4 rows" in err and "Traceback" not in err
    # One constant metric next to a usable one: the usable one is compared, the other named.
    mixed = _ratings(
        tmp_path / "mixed.csv",
        [(s, "cream_elo_completeness", "1000") for s in systems]
        + [(s, "cream_elo_conciseness", str(1000 + 10 * i)) for i, s in enumerate(systems)],
    )
    out = tmp_path / "out"
    args = ["minutes-check", "--metrics", "none", "--metric-file", str(mixed), "--out", str(out)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "cream_elo_completeness is 1000 in all 4 rows, so it cannot order systems" in err
    table9 = (out / "table9.csv").read_text()
    assert "cream_elo_conciseness,ours" in table9 and "cream_elo_completeness" not in table9


def test_minutes_check_prints_table8_and_the_table9_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from elitr_bench.cli import main

    metric_file = tmp_path / "gpt.csv"
    with metric_file.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["system", "meeting_id", "metric", "value"])
        for (system, meeting), value in _gpt_values()["afgr_adequacy"].items():
            if system != "my-run":
                writer.writerow([system, meeting, "afgr_adequacy", value])
    out = tmp_path / "out"
    args = ["minutes-check", "--metrics", "none", "--metric-file", str(metric_file)]
    assert main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "### Table 8 (ELMI EN): GPT judges' means per system (0-10), ours vs printed" in printed
    assert "| GPT-4 | paper | 8.75 ± 0.45 | 12 |" in printed
    assert "| NTR | Δ | +0.42 |  |" in printed
    assert "Table 9 as printed cannot be reproduced" in printed
    assert (
        "e.g. D Adeq and D Fluency order 2 of 21 system pairs differently, so any metric's "
        "two accuracies differ by at most 9.5 points; the printed ROUGE-1 row differs by 19.0 "
        "(85.7 vs 66.7)" in printed
    )
    bound = list(csv.reader((out / "table9_bound.csv").open()))
    assert bound[0][:2] == ["Metric (printed row)", "violations"]
    assert len(bound) == 1 + len(TABLE9) and all(int(row[1]) >= 2 for row in bound[1:])
    assert (out / "table8.csv").read_text().splitlines()[1].startswith("GPT-4,ours,8.75 ± 0.45")
