"""Fixes found by trying the minutes, CREAM and MESA commands as a new user would.

Each error must name a way out that exists for the command at hand: the keyless QA
judges (replay, lexical) cannot score minutes, and ``elitr-bench arena``/``mesa`` have no
``--metadata`` flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.errors import JudgeNotReadyError
from elitr_bench.judges.readiness import check_judge_ready, keyless_alternatives
from elitr_bench.judges.spec import parse_judge_spec
from tests.support.minutes_judge import ARENA_AND_MESA
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The error line (``mesa`` prints its plan on stderr before it)."""
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("elitr-bench: error: "), err
    return err


def test_missing_key_hint_is_the_callers_alternative() -> None:
    config = parse_judge_spec("openai:gpt-4o")
    with pytest.raises(JudgeNotReadyError) as qa:
        check_judge_ready(config, env={})
    # A generating model's answers: replay has no scores for them, so it is not offered.
    assert "replay" not in str(qa.value)
    assert """--metadata '{"judge": "lexical"}'""" in str(qa.value)
    assert """--metadata '{"judge": "none"}', then elitr-bench score RUN_DIR""" in str(qa.value)
    replayed = keyless_alternatives(True, "lm_eval", replay=True)
    with pytest.raises(JudgeNotReadyError) as replay_run:
        check_judge_ready(config, env={}, alternative=replayed)
    assert """--metadata '{"judge": "replay"}'""" in str(replay_run.value)
    with pytest.raises(JudgeNotReadyError) as other:
        check_judge_ready(config, env={}, alternative="use X")
    assert str(other.value).endswith("export OPENAI_API_KEY (or use X)")
    assert "replay" not in str(other.value)


@pytest.mark.parametrize("command", ARENA_AND_MESA)
def test_arena_and_mesa_without_key_name_their_own_flag(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code = main([*command, "--judge", "openai:gpt-4o", "--out", str(tmp_path / "out")])
    assert code == 2
    err = _error_line(capsys)
    assert "no API key" in err
    assert "--judge openai:MODEL,base_url=http://127.0.0.1:PORT/v1" in err
    assert "--metadata" not in err and "replay" not in err


def test_minutes_task_preflights_its_judge_before_generation(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rejected key stops an lm-eval minutes run before the model generates anything."""
    from tests.support.evaluate import evaluate

    def reject(request: RecordedRequest) -> Reply:
        return Reply(status=401, content="bad key")

    loopback.handler = reject
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    generated: list[Any] = []
    from elitr_bench.models import replay

    original = replay.ReplayLM.generate_until
    monkeypatch.setattr(
        replay.ReplayLM,
        "generate_until",
        lambda self, *a, **k: generated.append(1) or original(self, *a, **k),
    )
    spec = f"openai:judge-model,rubric=gpt-afgr,base_url={loopback.base_url},retries=0"
    with pytest.raises(JudgeNotReadyError) as err:
        evaluate("elitr-replay", "system=gpt4", ["automin23_en"], metadata={"judge": spec}, limit=1)
    message = str(err.value)
    assert "nothing was generated or judged yet" in message
    assert """--metadata '{"judge": "none"}'""" in message and "replay" not in message
    assert generated == []
    assert len(loopback.snapshot()) >= 1  # the preflight request itself


def test_a_meeting_count_above_the_meetings_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from elitr_bench.data.errors import DataError
    from elitr_bench.data.minutes import AUTOMIN_MEETINGS, select_meetings

    assert select_meetings("12", AUTOMIN_MEETINGS) == list(AUTOMIN_MEETINGS)
    with pytest.raises(DataError, match="there are only 12 meetings"):
        select_meetings("13", AUTOMIN_MEETINGS)
    assert main(["mesa", "--meetings", "99", "--out", str(tmp_path / "m")]) == 2
    assert "meetings='99': there are only 12 meetings" in _error_line(capsys)
    assert not (tmp_path / "m").exists()


def _csv(path: Path, *rows: str) -> str:
    path.write_text("\n".join(["system,meeting_id,metric,value", *rows]) + "\n")
    return str(path)


def test_metric_file_rows_must_name_automin_systems_and_meetings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Display names or a misspelt meeting used to give empty tables and exit 0."""
    check = ["minutes-check", "--metrics", "none", "--metric-file"]
    display = _csv(tmp_path / "a.csv", "GPT-4,meeting_en_test2023_001,m,1")
    assert main([*check, display]) == 2
    err = _error_line(capsys)
    assert "no row names an AutoMin system (got GPT-4)" in err and "gpt4" in err
    typo = _csv(tmp_path / "b.csv", "gpt4,meeting_en_test2023_099,m,1")
    assert main([*check, typo]) == 2
    assert "meeting_id 'meeting_en_test2023_099' (system gpt4)" in _error_line(capsys)


def test_table7_shows_system_level_values() -> None:
    """CREAM ratings (one value per system) used to leave Table 7 without rows."""
    from elitr_bench.metaeval.minutes_tables import table7

    values = {
        "cream_elo": {("gpt4", ""): 1010.0, ("ntr", ""): 990.0},
        "rouge1": {("gpt4", "m1"): 0.4, ("gpt4", "m2"): 0.5},
    }
    table = table7(values, ["gpt4", "ntr"], extra_metrics=["cream_elo"])
    rows = {row[0]: row for row in table.rows}
    assert rows["GPT-4"][1:] == ["0.450 ± 0.050", "1010.000", "2"]
    assert rows["NTR"][1:] == ["–", "990.000", "system"]
    assert any("system-level" in note for note in table.notes)


def test_judge_spec_typos_and_none_name_the_fix() -> None:
    from elitr_bench.judges.errors import JudgeConfigError

    with pytest.raises(JudgeConfigError) as typo:
        parse_judge_spec("openai:gpt-4o,rubrc=gpt-afgr")
    assert "unknown option 'rubrc'; did you mean 'rubric'?" in str(typo.value)
    with pytest.raises(JudgeConfigError) as far:
        parse_judge_spec("openai:gpt-4o,xyz=1")
    assert "did you mean" not in str(far.value)
    # 'none' reaching the parser means the command needs a judge: the old message called
    # 'none' an unknown backend and then suggested 'none'.
    with pytest.raises(JudgeConfigError) as off:
        parse_judge_spec("none")
    assert "needs a judge" in str(off.value) and "skip judging" not in str(off.value)


def test_report_lists_every_minutes_metric_even_beyond_the_plotted_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ROUGE x 3 + GPT-AFGR x 4 used to lose afgr_relevance from figures AND table."""
    from elitr_bench.metaeval.minutes_inputs import RunValues
    from elitr_bench.report import minutes as report_minutes

    monkeypatch.setattr(report_minutes, "MAX_SCATTER_METRICS", 2)
    meetings = ["meeting_en_test2023_001", "meeting_en_test2023_002", "meeting_en_test2023_003"]
    metrics = ["rouge1", "rouge2", "afgr_adequacy", "afgr_relevance"]
    values = {
        m: {("gpt4", meeting): float(i + j) for j, meeting in enumerate(meetings)}
        for i, m in enumerate(metrics)
    }
    run = RunValues(name="gpt4", path="run", values=values, tasks=["automin23_en"])
    paths, table = report_minutes.scatter_figures([run], tmp_path)
    assert [p.name for p in paths] == ["minutes_scatter_rouge1.png", "minutes_scatter_rouge2.png"]
    assert table is not None
    assert {r["metric"] for r in table.records} == set(metrics)
    assert len(table.rows) == 4 * len(metrics)
    assert any("for the first 2 metrics only" in note for note in table.notes)


def test_judge_scatter_axes_show_the_whole_judge_scale() -> None:
    from elitr_bench.report.minutes import _judge_scale

    assert _judge_scale("afgr_relevance") == (0.0, 10.0)
    assert _judge_scale("art_adequacy@mine") == (0.0, 10.0)
    assert _judge_scale("mesa_quality") == (1.0, 10.0)
    assert _judge_scale("mesa_OM") == (0.0, 5.0)
    assert _judge_scale("rouge1") is None


def test_the_arena_default_judge_is_priced_at_its_own_snapshot_price() -> None:
    from elitr_bench.judges.pricing import price_for

    assert price_for("gpt-4o-2024-05-13") == (5.0, 15.0)
    assert price_for("gpt-4o-2024-08-06") == (2.5, 10.0)


def test_score_refuses_a_qa_judge_on_minutes_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to mark every minutes item 'error' and say 'run the same command again'."""
    run = tmp_path / "run" / "model"
    run.mkdir(parents=True)
    samples = run / "samples_automin23_en_2026-01-01T00-00-00.000001.jsonl"
    samples.write_text('{"doc": {"meeting_id": "meeting_en_test2023_001"}}\n')
    assert main(["score", str(tmp_path / "run"), "--judge", "replay"]) == 2
    err = _error_line(capsys)
    assert "a QA judge cannot score minutes (automin23_en)" in err
    assert "--judge openai:gpt-4o,rubric=gpt-afgr" in err
    assert list(run.iterdir()) == [samples]  # nothing written


def test_report_help_shows_a_plain_percent_sign(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    out = capsys.readouterr().out
    assert "95% CIs" in out and "%%" not in out


def test_arena_help_explains_every_rating_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["arena", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for text in ("initial Elo rating (default: 1000)", "Elo K factor (default: 32)",
                 "Elo logistic scale (default: 400)", "--automin; default: all 9"):  # fmt: skip
        assert text in out


def test_table9_leaves_out_metrics_without_a_pair() -> None:
    """One run's lines/words (a single system) gave rows of dashes with '0' pairs."""
    from elitr_bench.data.minutes import load_automin_human_scores
    from elitr_bench.metaeval.minutes import meta_evaluate
    from elitr_bench.metaeval.minutes_paper import TABLE9_SYSTEMS
    from elitr_bench.metaeval.minutes_tables import table9

    meeting = "meeting_en_test2023_002"
    values = {
        "rouge1": {(s, meeting): 0.1 * i for i, s in enumerate(TABLE9_SYSTEMS)},
        "lines": {("gpt4", meeting): 30.0},
    }
    rows = meta_evaluate(values, load_automin_human_scores(), list(TABLE9_SYSTEMS))
    table = table9(rows, list(TABLE9_SYSTEMS))
    assert {row[0] for row in table.rows} == {"ROUGE-1"}
    assert "not shown, known for fewer than two of these systems: lines" in table.notes


def test_table9_states_the_resolution_of_few_systems() -> None:
    """Issue 12: CREAM's ranking of 3 systems is 3 pairs; say what one pair is worth."""
    from elitr_bench.data.minutes import load_automin_human_scores
    from elitr_bench.metaeval.minutes import meta_evaluate
    from elitr_bench.metaeval.minutes_tables import table9

    systems = ["gpt4", "ntr", "synapse"]
    values = {"cream_elo": {("gpt4", ""): 1050.0, ("ntr", ""): 990.0, ("synapse", ""): 960.0}}
    table = table9(meta_evaluate(values, load_automin_human_scores(), systems), systems)
    assert "3 systems = 3 pairs: one pair moves an accuracy by 33.3 points" in table.notes


def test_minutes_check_refuses_bad_systems_before_computing_metrics(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from elitr_bench.metaeval import minutes_inputs as inputs

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("released metrics computed before the inputs were checked")

    monkeypatch.setattr(inputs, "released_metric_values", never)
    assert main(["minutes-check", "--systems", "gpt5"]) == 2
    assert "--systems: unknown gpt5" in _error_line(capsys)


def test_missing_guidance_file_names_the_real_command(tmp_path: Path) -> None:
    from elitr_bench.judges.errors import JudgeConfigError

    with pytest.raises(JudgeConfigError) as err:
        parse_judge_spec(f"openai:gpt-4o,method=mesa,guidance={tmp_path / 'none.yaml'}")
    assert "elitr-bench mesa-train" in str(err.value)


def test_error_ratings_are_oriented_before_meta_evaluation() -> None:
    """MESA ratings are errors (lower = better): unoriented, a perfect one scored 0%."""
    from elitr_bench.data.minutes import load_automin_human_scores
    from elitr_bench.metaeval.minutes import (
        human_system_means,
        lower_is_better,
        meta_evaluate,
    )
    from elitr_bench.metaeval.minutes_paper import TABLE9_SYSTEMS
    from elitr_bench.metaeval.minutes_tables import correlation_table, table9

    assert lower_is_better("mesa_OM") and lower_is_better("types.HAL.rating@x")
    assert lower_is_better("impact") and not lower_is_better("mesa_quality")
    human = load_automin_human_scores()
    adequacy = human_system_means(human, "document", "adequacy")
    systems = list(TABLE9_SYSTEMS)
    errors = {(s, ""): 5 - adequacy[s] for s in systems}  # fewer errors where humans rate higher
    rows = meta_evaluate({"mesa_OM": errors, "mesa_quality": errors}, human, systems)
    d_adeq = {r.metric: r for r in rows if r.level == "document" and r.criterion == "adequacy"}
    assert d_adeq["mesa_OM"].pairwise.accuracy == 1.0
    assert d_adeq["mesa_OM"].system["pearson"] == pytest.approx(1.0)
    assert d_adeq["mesa_quality"].pairwise.accuracy == 0.0  # higher-is-better: not negated
    for table in (table9(rows, systems), correlation_table(rows)):
        assert any(n.startswith("negated, as lower is better") for n in table.notes)


def test_heatmap_rows_say_when_they_are_negated_or_over_fewer_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.axes

    from elitr_bench.data.minutes import load_automin_human_scores
    from elitr_bench.metaeval.minutes import meta_evaluate
    from elitr_bench.metaeval.minutes_tables import heatmap

    labels: list[list[str]] = []
    original = matplotlib.axes.Axes.set_yticks

    def record(self: Any, ticks: Any, names: Any = None, **kwargs: Any) -> Any:
        labels.append([str(n) for n in names or []])
        return original(self, ticks, names, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "set_yticks", record)
    systems = ["gpt4", "ntr", "synapse"]
    values = {
        "rouge1": {("gpt4", ""): 0.4, ("ntr", ""): 0.3, ("synapse", ""): 0.35},
        "mesa_OM": {("gpt4", ""): 1.0, ("ntr", ""): 3.0},
    }
    rows = meta_evaluate(values, load_automin_human_scores(), systems)
    heatmap(rows, tmp_path / "h.png", "3 systems", show_paper=False)
    assert labels == [["ROUGE-1", "mesa_OM (negated, 1 pair)"]]


def test_replaying_the_reference_minutes_warns_that_rouge_is_trivial(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """system=annot replays the references themselves: ROUGE 1.0 with no warning before."""
    from types import SimpleNamespace

    from elitr_bench.models.replay import ReplayLM

    doc = {"task_kind": "minutes", "split": "test2023", "meeting_id": "meeting_en_test2023_004"}
    request = SimpleNamespace(doc=doc, task_name="automin23_en")
    with caplog.at_level("WARNING", logger="elitr_bench.models.replay"):
        ReplayLM(system="gpt4").generate_until([request])
        assert not caplog.records
        ReplayLM(system="annot").generate_until([request, request])
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "elitr-replay system=annot replays the human reference minutes, which are also the "
        "task's references"
    ]


def test_lm_eval_marks_mesa_error_ratings_lower_is_better() -> None:
    """lm-eval's table printed mesa_OM with an up arrow: more omissions looked better."""
    from elitr_bench.judges.summary.lm_eval_filter import metric_list

    better = {
        e["metric"]: e["higher_is_better"]
        for e in metric_list(parse_judge_spec("openai:gpt-4o,method=mesa"))
    }
    assert better["mesa_quality"] is True
    assert better["mesa_OM"] is False and better["mesa_HAL"] is False
    afgr = metric_list(parse_judge_spec("openai:gpt-4o,rubric=gpt-afgr"))
    assert all(e["higher_is_better"] for e in afgr if e["metric"].startswith("afgr_"))


def test_report_draws_no_empty_scatter_plot(tmp_path: Path) -> None:
    """A --limit run on a meeting without human scores drew four empty panels per metric."""
    from elitr_bench.metaeval.minutes_inputs import RunValues
    from elitr_bench.report import minutes as report_minutes

    unscored = ("gpt4", "meeting_en_test2023_001")  # GPT-4 has no human score there
    run = RunValues(
        name="gpt4",
        path="run",
        values={"rouge1": {unscored: 0.3}, "mesa_quality": {unscored: 6.0}},
        tasks=["automin23_en"],
    )
    paths, table = report_minutes.scatter_figures([run], tmp_path)
    assert paths == [] and not (tmp_path / "figures").exists()
    assert table is not None
    assert any(
        n.startswith("no scatter plot without a document") and "mesa_quality" in n
        for n in table.notes
    )


def test_metric_file_row_with_a_missing_or_extra_field_is_named(tmp_path: Path) -> None:
    from elitr_bench.data.errors import DataError
    from elitr_bench.metaeval.minutes_inputs import read_metric_file

    for name, row in (("short", "gpt4,meeting_en_test2023_001,m"), ("long", "gpt4,,m,1,5")):
        with pytest.raises(DataError, match=r":2: expected 4 comma-separated fields"):
            read_metric_file(_csv(tmp_path / f"{name}.csv", row))
    extra = tmp_path / "extra.csv"
    extra.write_text("system,meeting_id,metric,value,note\ngpt4,,m,1,fine\n")
    assert read_metric_file(extra) == {"m": {("gpt4", ""): 1.0}}
