import json
from pathlib import Path

import pytest

from elitr_bench.cli.score import main
from elitr_bench.judges import ReplayMatchError, parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, ReplayJudge, judge_items
from elitr_bench.metaeval.qa import run_judge_check


def test_replay_reproduces_table4_and_fig2b() -> None:
    report = run_judge_check(parse_judge_spec("replay,progress=false"))
    assert (report["n"], report["n_unscored"]) == (390, 0)
    t4 = report["table4"]
    # Table 4, GPT-4 evaluator column: GPT-4 8.33 and LongAlpaca-7B 5.57 as printed
    # (1083 / 130 = 8.3308, 724 / 130 = 5.5692, from the released all-eval file).
    assert [round(t4[s]["judge"], 2) for s in ("GPT-4", "LongAlpaca-7B")] == [8.33, 5.57]
    # Golden: Vicuna-13B-v1.5's released GPT-4 scores sum to 869 over its 130 answers,
    # 869 / 130 = 6.6846, which prints as 6.68 under any rounding (no tie). Table 4 prints
    # 6.69 (Vicuna-13B-v1.5 row, GPT-4 column), which is 870 / 130 = 6.6923: one judge point
    # more than the released file holds.
    assert t4["Vicuna-13B-v1.5"]["judge"] == pytest.approx(869 / 130)
    # Table 4, Gold Human column, as printed.
    assert [round(t4[s]["gold_human"], 2) for s in t4] == [7.93, 6.19, 4.55]
    corr = report["correlations"]
    # Sec. 5.2 "Correlation analysis" (Fig. 2b): GPT-4 vs Gold Human 0.82, Gold vs Silver
    # Human 0.89, as printed in the text.
    assert round(corr["judge~gold_human"]["pearson"], 2) == 0.82
    assert round(corr["silver_human~gold_human"]["pearson"], 2) == 0.89
    # Fig. 2b's Prometheus cell; the text says only "between 0.2 and 0.3": 0.24 is golden
    # (our own output on the released file), inside the printed range.
    assert round(corr["prometheus~gold_human"]["pearson"], 2) == 0.24
    assert corr["judge~gold_human"]["spearman"] is not None
    assert sum(b["n"] for b in report["gold_bins"].values()) == 390


def test_replay_prometheus_means() -> None:
    report = run_judge_check(parse_judge_spec("replay,rubric=prometheus-rubric,progress=false"))
    # Table 4, Prometheus column, as printed.
    assert [round(row["judge"], 2) for row in report["table4"].values()] == [5.68, 4.80, 4.46]
    # Golden, like the 0.24 above: the text says "between 0.2 and 0.3".
    assert round(report["correlations"]["judge~gold_human"]["pearson"], 2) == 0.24


def test_judge_check_cli_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "check.json"
    assert main(["judge-check", "--judge", "replay,progress=false", "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["judge"]["backend"] == "replay" and len(data["items"]) == 390
    assert "Vicuna-13B-v1.5" in capsys.readouterr().out


def test_lexical_judge_check_runs_offline() -> None:
    report = run_judge_check(parse_judge_spec("lexical,progress=false"))
    assert report["n_scored"] == 390
    assert 0 < report["correlations"]["judge~gold_human"]["pearson"] < 0.82


def _released_item(**changes: str) -> JudgeItem:
    from dataclasses import replace

    from elitr_bench.data import load_released_responses

    r = load_released_responses("qa", "dev", "st")[0]
    return replace(JudgeItem.from_released(r), **({"system": ""} | changes))


def test_replay_unmatched_is_an_error_not_a_guess() -> None:
    cfg = parse_judge_spec("replay,progress=false")
    assert judge_items([_released_item()], cfg).judgements[0].status == "scored"
    with pytest.raises(ReplayMatchError, match="no released response with this exact text"):
        judge_items([_released_item(response=_released_item().response + " ")], cfg)
    with pytest.raises(ReplayMatchError, match="released Prometheus scores exist only"):
        judge_items(
            [_released_item()], parse_judge_spec("replay,rubric=prometheus-rubric,progress=false")
        )
    with pytest.raises(ReplayMatchError, match="lacks identifiers"):
        judge_items([_released_item(mode="")], cfg)


def test_replay_ambiguous_text_needs_a_system() -> None:
    from elitr_bench.data import load_released_responses

    rows = [
        r
        for r in load_released_responses("qa", "test2", "st")
        if r.meeting_id == "meeting_en_test2_004" and r.question_id == "11"
    ]
    by_text: dict[str, list] = {}
    for r in rows:
        by_text.setdefault(r.response, []).append(r)
    clash = next(group for group in by_text.values() if len({g.scores["gpt4"] for g in group}) > 1)
    item = JudgeItem(
        question=clash[0].question,
        response=clash[0].response,
        reference=clash[0].reference,
        meeting_id=clash[0].meeting_id,
        question_id=clash[0].question_id,
        split="test2",
        setting="qa",
        mode="st",
    )
    judge = ReplayJudge(parse_judge_spec("replay"))
    with pytest.raises(ReplayMatchError, match="system=NAME"):
        judge.lookup(item)
    score, system = ReplayJudge(parse_judge_spec(f"replay,system={clash[0].system}")).lookup(item)
    assert (score, system) == (clash[0].scores["gpt4"], clash[0].system)
