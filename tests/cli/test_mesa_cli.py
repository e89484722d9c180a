"""``elitr-bench mesa`` / ``mesa-train`` end to end on the loopback judge; MESA in lm-eval.

The last test runs MESA through the minutes tasks' lm-eval judge filter in-process.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from elitr_bench.cli import main
from tests.judges.test_mesa_script import PAPER_RATINGS, make_script
from tests.support.minutes_judge import loopback_judge
from tests.support.openai_server import LoopbackOpenAI

CODES = ("OM", "REP", "INC", "COR", "HAL", "LAN", "STR", "IRR")


def _judge(server: LoopbackOpenAI, extra: str = "", debate: str = ",debate=none") -> str:
    """The loopback judge; Single-n (``debate=none``) unless told, as the script answers."""
    return loopback_judge(server, debate + extra)


def _scripted_mesa(server: LoopbackOpenAI, systems: str) -> list[str]:
    """``mesa`` on one meeting of ``systems``, judged by the scripted Single-n judge."""
    server.handler = make_script()
    return ["mesa", "--systems", systems, "--meetings", "1", "--judge", _judge(server)]


def test_mesa_command_end_to_end(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mesa"
    args = _scripted_mesa(loopback, "gpt4,ntr")
    assert main([*args, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert (
        "MESA plan (Single-n, no debate, 8 types x 3 steps x 1 call = 24 per summary): "
        "2 summaries -> 48 calls (up to 112 with re-asks and 16 restatements)"
    ) in captured.err
    assert len(loopback.requests) == 48
    rows = [json.loads(line) for line in (out / "mesa.jsonl").read_text().splitlines()]
    assert [(r["system"], r["meeting_id"]) for r in rows] == [
        ("gpt4", "meeting_en_test2023_001"),
        ("ntr", "meeting_en_test2023_001"),
    ]
    for row in rows:
        assert row["quality"] == pytest.approx(1 + (5 - 14.24 / 6.19) * 9 / 5)
        assert row["impact"] == pytest.approx(14.24 / 6.19)
        assert list(row["types"]) == list(CODES)
        assert row["types"]["OM"] == {"rating": 4.0, "confidence": 8.0, "instances": 1}
        assert {c: row["types"][c]["rating"] for c in CODES} == {
            c: r for c, (r, _) in PAPER_RATINGS.items()
        }
    details = [json.loads(x) for x in (out / "mesa_details.jsonl").read_text().splitlines()]
    assert details[0]["details"]["types"]["OM"]["steps"]["scoring"][0]["raw"].startswith("{")
    run = json.loads((out / "run.json").read_text())
    assert run["usage"]["requests"] == 48 and run["mesa"]["layout"] == "paper"
    assert "sk-" not in (out / "run.json").read_text()

    # minutes-check reads mesa.jsonl as a metric file; the script rates both systems alike,
    # so every metric is a tie, and a file of ties is refused with one line.
    from elitr_bench.metaeval.minutes_inputs import read_metric_file

    assert {"quality", "impact", "types.OM.rating"} <= set(read_metric_file(out / "mesa.jsonl"))
    check = ["minutes-check", "--metric-file", str(out / "mesa.jsonl"), "--metrics", "none"]
    capsys.readouterr()
    assert main([*check, "--systems", "gpt4,ntr", "--out", str(tmp_path / "check")]) == 2
    assert "no metric can order the systems (quality is" in capsys.readouterr().err

    # A second run is served from the cache, and its plan says so (so --max-cost passes).
    loopback.reset()
    rerun = [*args[:-1], _judge(loopback, ",price=5:15"), "--max-cost", "0.01"]
    assert main([*rerun, "--out", str(out)]) == 0
    assert len(loopback.requests) == 0
    err = capsys.readouterr().err
    assert "2 summaries -> 0 calls (16 type assessments already cached" in err

    # --max-cost stops before any call; unknown meeting / bad error-type file: one line.
    priced = ["mesa", "--systems", "gpt4", "--meetings", "2", "--out", str(out)]
    assert main([*priced, "--judge", _judge(loopback, ",price=5:15"), "--max-cost", "0.01"]) == 2
    err = capsys.readouterr().err
    assert "exceeds --max-cost 0.01" in err and len(loopback.requests) == 0
    bad = tmp_path / "types.yaml"
    bad.write_text("types:\n  OM: {name: O, definition: d, weight: 0}\n")
    assert main([*priced, "--judge", _judge(loopback), "--error-types", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "weight 0 must be a number > 0" in err and str(bad) in err


def test_mesa_default_judge_is_the_papers_gpt4o_whose_window_holds_automin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ELITR_JUDGE", raising=False)
    args = ["--systems", "gpt4", "--out", str(tmp_path / "o"), "--dry-run"]
    assert main(["mesa", *args]) == 0  # the QA default (gpt-4-0613, 8k) would hold none
    plan = capsys.readouterr().err
    assert "12 summaries -> 1,440 calls" in plan and "gpt-4o:" in plan
    assert not (tmp_path / "o").exists()
    monkeypatch.setenv("ELITR_JUDGE", "openai:gpt-4-0613")  # the environment still wins
    assert main(["mesa", *args]) == 2
    assert "8,192-token window" in capsys.readouterr().err


def test_mesa_command_overlength_is_one_line(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judge = _judge(loopback, ",context=8000")
    args = ["mesa", "--systems", "gpt4", "--meetings", "1,3", "--judge", judge]
    assert main([*args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and re.search(r"meeting_en_test2023_001 \([\d,]+ tokens\)", err)
    assert re.search(r"meeting_en_test2023_003 \([\d,]+ tokens\)", err)
    assert "overlength=truncate_middle" in err and "8,000-token window" in err
    assert len(loopback.requests) == 0


def test_mesa_train_then_evaluate_other_meetings(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = make_script()
    loopback.handler = script
    train_dir = tmp_path / "train"
    args = ["mesa-train", "--systems", "gpt4", "--feedback-meetings", "meeting_en_test2023_002"]
    assert main([*args, "--judge", _judge(loopback), "--out", str(train_dir)]) == 0
    kinds = [kind for kind, *_ in script.calls]
    assert kinds.count("feedback") == 1 and kinds.count("consolidation") == 8
    assert len(loopback.requests) == 24 + 1 + 8
    guidance = train_dir / "guidance.yaml"
    text = guidance.read_text()
    assert "- meeting_en_test2023_002" in text and "rate OM less harshly" in text
    feedback = json.loads((train_dir / "feedback.jsonl").read_text().splitlines()[0])
    assert feedback["human"]["document adequacy"] >= 1 and feedback["valid"] is True

    # Evaluating the feedback meeting with this guidance is refused, before any call.
    loopback.reset()
    judge = ["--judge", _judge(loopback), "--guidance", str(guidance)]
    refused = ["mesa", "--systems", "gpt4", "--meetings", "2,4", *judge]
    assert main([*refused, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "trained on meeting(s) meeting_en_test2023_002" in err and len(loopback.requests) == 0

    # Other meetings: the guidance is appended to every step prompt of its type.
    ok = ["mesa", "--systems", "gpt4", "--meetings", "meeting_en_test2023_004", *judge]
    assert main([*ok, "--out", str(tmp_path / "e")]) == 0
    om_prompts = [r.prompt for r in loopback.requests if "*** criteria: Omission:" in r.prompt]
    assert len(om_prompts) == 3
    assert all(p.endswith("in this step:\n- rate OM less harshly") for p in om_prompts)


def test_mesa_in_the_lm_eval_minutes_filter(loopback: LoopbackOpenAI) -> None:
    from elitr_bench.judges.spec import parse_judge_spec
    from elitr_bench.judges.summary.lm_eval_filter import (
        judge_minutes,
        metric_list,
        minutes_judge_metrics,
    )

    loopback.handler = make_script()
    config = parse_judge_spec(_judge(loopback, ",method=mesa"))
    names = [m["metric"] for m in metric_list(config)]
    assert names[:9] == ["mesa_quality", *(f"mesa_{c}" for c in CODES)]
    docs = [{"meeting_id": "meeting_x", "transcript": "A: hi.\nB: bye.", "system": "run1"}]
    (logged,) = judge_minutes(["- They said hi."], docs, config)
    entry = json.loads(logged[0])
    assert entry["response"] == "- They said hi."
    assert entry["judge"]["method"] == "mesa" and entry["judge"]["status"] == "ok"
    assert entry["judge"]["details"]["types"]["HAL"]["rating"] == 3.0
    metrics = minutes_judge_metrics(logged)
    assert metrics["mesa_quality"] == pytest.approx(1 + (5 - 14.24 / 6.19) * 9 / 5)
    assert metrics["mesa_IRR"] == 5.0 and metrics["judge_unscored"] == 0.0


def test_mesa_judges_a_minutes_task_through_lm_eval(loopback: LoopbackOpenAI) -> None:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    loopback.handler = make_script()
    loopback.model = "loop-m"  # the task's judge preflight finds it listed (GET, not counted)
    judge = _judge(loopback, ",method=mesa,layout=prefix")
    result = simple_evaluate(
        model="elitr-replay",
        model_args="system=gpt4",
        tasks=["automin23_en"],
        task_manager=TaskManager(include_defaults=False, metadata={"judge": judge}),
        limit=1,
        log_samples=True,
    )
    assert result is not None
    res = result["results"]["automin23_en"]
    quality = 1 + (5 - 14.24 / 6.19) * 9 / 5
    by = "openai:loop-m:mesa"  # the filter name says who judged
    assert res[f"mesa_quality,{by}"] == pytest.approx(quality)
    assert res[f"mesa_OM,{by}"] == 4.0 and res[f"mesa_COR,{by}"] == 0.0
    assert len(loopback.requests) == 24
    (sample,) = result["samples"]["automin23_en"]
    logged = json.loads(sample["filtered_resps"][0][0])
    assert logged["judge"]["details"]["types"]["LAN"]["rating"] == 1.0
    assert logged["response"].strip()  # the generated minutes stay in the log


def test_a_mesa_folder_has_one_writer(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25, point 1: a second run into a folder in use refuses in one line, sends nothing."""
    from elitr_bench.data.folder import FolderLock

    out = tmp_path / "mesa"
    args = _scripted_mesa(loopback, "gpt4")
    with FolderLock(out, "elitr-bench mesa --out first"):
        assert main([*args, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith(f"elitr-bench: error: {out} is in use by another run (PID ")
        assert "`elitr-bench mesa --out first`" in err
        assert not loopback.requests and not (out / "mesa.jsonl").exists()
    assert main([*args, "--out", str(out)]) == 0
    assert (out / "mesa.jsonl").exists()


def test_mesa_command_with_batch_on_writes_what_one_by_one_writes(
    loopback: LoopbackOpenAI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``elitr-bench mesa --judge ...,batch=on``: three batches (the steps), same results."""
    monkeypatch.setenv("ELITR_BATCH_POLL_S", "0")
    loopback.handler = make_script()
    args = ["mesa", "--systems", "gpt4,ntr", "--meetings", "1"]
    one = _judge(loopback, f",cache={tmp_path / 'a.sqlite'}")
    assert main([*args, "--judge", one, "--out", str(tmp_path / "one")]) == 0
    loopback.reset()
    batched = _judge(loopback, f",cache={tmp_path / 'b.sqlite'},batch=on,price=5:15")
    assert main([*args, "--judge", batched, "--out", str(tmp_path / "batch")]) == 0
    assert "loop-m at the batch price" in capsys.readouterr().err
    assert not [r for r in loopback.requests if r.body.get("messages")]
    assert len(loopback.batch_api.batches) == 3
    for name in ("mesa.jsonl", "mesa_details.jsonl"):
        assert (tmp_path / "batch" / name).read_text() == (tmp_path / "one" / name).read_text()
    run = json.loads((tmp_path / "batch" / "run.json").read_text())
    assert run["usage"]["batched"] == run["usage"]["requests"] == 48
