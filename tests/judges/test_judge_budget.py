"""A judge spec's ``max_cost=`` inside ``lm_eval``: over it nothing is sent, answers are kept.

The judge filters plan before their first request; a plan whose first calls' estimate
exceeds the spec's cap (or a judge with no price) sends nothing, records status ``error``
on every item, and ends the run with the one finish line that judge failures already
print, naming ``elitr-bench score`` with the spec uncapped. The in-process tests check
the rule (unpriced, the run's earlier tasks counted); the slow ones drive the real
``lm_eval`` CLI against a loopback judge, then run the printed ``score`` command.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli.score import main as score_main
from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.metrics import parse_filtered
from elitr_bench.judges.qa.engine import JudgeItem
from elitr_bench.judges.qa.plan import plan_items
from tests.conftest import run_lm_eval
from tests.judges.conftest import boxed_by_response, response_in
from tests.judges.test_judge_failure_cli import _samples
from tests.judges.test_lm_eval_integration import _docs
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

REPLAY_QA = ["--model", "elitr-replay", "--model_args", "system=gpt-4"]
JUDGED = "### Response to evaluate:"  # in every QA judge prompt


@pytest.fixture
def finish_lines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The deferred exit lines, captured; no cost planned by earlier tests of this process."""
    from elitr_bench.judges import filtering

    lines: list[str] = []
    monkeypatch.setattr(filtering, "_FAILURES", {})
    monkeypatch.setattr(filtering, "_PLANNED", {"usd": 0.0})
    monkeypatch.setattr(
        filtering, "exit_with_error_after_run", lambda m, source="": lines.append(m)
    )
    monkeypatch.setattr("sys.argv", ["lm_eval", "--log_samples", "--output_path", "out"])
    return lines


def _judge(loopback: LoopbackOpenAI, extra: str) -> str:
    return f"openai:judge-model,base_url={loopback.base_url},progress=false,preflight=false{extra}"


def _statuses(out: list[list[str]]) -> list[tuple[str, str]]:
    judged = [parse_filtered(entry) or {} for entry in out]
    return [(j["response"], j["judge"]["status"]) for j in judged]


def test_an_unpriced_judge_under_a_cap_sends_nothing(
    loopback: LoopbackOpenAI, finish_lines: list[str]
) -> None:
    from elitr_bench.judges.qa.lm_eval_filter import judge_responses

    config = parse_judge_spec(_judge(loopback, ",max_cost=5"))
    out = judge_responses(["a0", "a1"], _docs(2), config)
    assert _statuses(out) == [("a0", "error"), ("a1", "error")]
    reason = (parse_filtered(out[0]) or {})["judge"]["reason"]
    assert reason == "not sent: max_cost=5 given but the judge model has no known price"
    assert loopback.requests == []
    [line] = finish_lines
    assert line.endswith(
        f"finish with: elitr-bench score out --judge {shlex.quote(_judge(loopback, ''))} "
        "(no cap: add price=IN:OUT to the spec and --max-cost USD to keep one)"
    )


def test_the_cap_is_the_runs_each_tasks_plan_adds_up(
    loopback: LoopbackOpenAI, finish_lines: list[str]
) -> None:
    from elitr_bench.judges.qa.lm_eval_filter import judge_responses

    loopback.handler = boxed_by_response(lambda r: 7)
    probe = parse_judge_spec(_judge(loopback, ",price=10:30"))
    one = plan_items([JudgeItem.from_doc(d, "a") for d in _docs(2)], probe).cost_usd
    assert one is not None
    # Room for one task's two answers, not for a second task's.
    config = parse_judge_spec(_judge(loopback, f",price=10:30,max_cost={one * 1.5:.6f}"))
    first = judge_responses(["a0", "a1"], _docs(2), config)
    assert [s for _, s in _statuses(first)] == ["scored", "scored"]
    assert len(loopback.requests) == 2 and finish_lines == []
    second = judge_responses(["b0", "b1"], _docs(2), config)
    assert [s for _, s in _statuses(second)] == ["error", "error"]
    assert len(loopback.requests) == 2  # nothing more was sent
    reason = (parse_filtered(second[0]) or {})["judge"]["reason"]
    assert (
        reason.startswith("not sent: estimated cost $") and "of it planned by this run's" in reason
    )
    assert f"exceeds max_cost={config.max_cost:g} (" in reason


# --- through the real lm_eval CLI ---------------------------------------------------------
def _qa_run(out: Path, judge: str, cache: Path) -> Any:
    args = [
        *REPLAY_QA, "--tasks", "elitr_qa_dev", "--limit", "2",
        "--log_samples", "--output_path", str(out), "--metadata", json.dumps({"judge": judge}),
    ]  # fmt: skip
    return run_lm_eval(args, env={"ELITR_JUDGE_CACHE": str(cache)})


def _judge_prompts(requests: list[RecordedRequest]) -> list[str]:
    return sorted(json.dumps(r.body, sort_keys=True) for r in requests if JUDGED in r.prompt)


@pytest.mark.slow
def test_lm_eval_over_the_cap_sends_nothing_keeps_answers_and_score_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    with LoopbackOpenAI(boxed_by_response(lambda r: 6), model="gpt-4-0613") as server:
        uncapped = f"openai:gpt-4-0613,base_url={server.base_url},preflight=false"
        proc = _qa_run(out, f"{uncapped},max_cost=0.01", tmp_path / "c1")
        assert proc.returncode == 3, proc.stderr[-3000:]
        assert server.requests == [] and server.listings == []
        assert "Traceback" not in proc.stderr
        plan_line = "elitr judge openai:gpt-4-0613 (gpt4-rubric): 2 calls (2 answers x 1 sample)"
        assert plan_line in proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert proc.stderr.count("elitr-bench: error:") == 1, proc.stderr[-3000:]
        assert last.startswith("elitr-bench: error: the judge failed on 2 of 2 answers (not sent: ")
        assert "exceeds max_cost=0.01)" in last
        assert last.endswith("(no cap: add --max-cost USD, above the estimate, to keep one)")

        [rows] = _samples(out).values()
        judged = [parse_filtered(r["filtered_resps"]) or {} for r in rows]
        assert len(judged) == 2 and all(j["response"] for j in judged)  # the answers are kept
        assert {j["judge"]["status"] for j in judged} == {"error"}
        reason = judged[0]["judge"]["reason"]
        assert reason.startswith("not sent: estimated cost $") and "exceeds max_cost=0.01" in reason
        results = json.loads(next(out.rglob("results_*.json")).read_text())
        usage = results["configs"]["elitr_qa_dev"]["metadata"]["judge_usage"]
        assert (usage["requests"], usage["over_cap"], usage["plan"]["calls"]) == (0, 2, 2)
        assert usage["plan"]["cost_usd"] > 0.01

        # The line's own command, with the spec uncapped, judges both answers.
        command = shlex.split(last.split("finish with: ", 1)[1].split(" (no cap", 1)[0])
        assert command == ["elitr-bench", "score", str(out), "--judge", uncapped]
        monkeypatch.setenv("ELITR_JUDGE_CACHE", str(tmp_path / "c2"))
        assert score_main(command[1:]) == 0
        sent = sorted(response_in(r) for r in server.requests)
    assert sent == sorted(j["response"] for j in judged)
    [final] = _samples(out, rescored=True).values()
    assert [row["judge_score"] for row in final] == [6.0, 6.0]


def test_a_cap_the_run_stays_under_changes_nothing(
    loopback: LoopbackOpenAI, finish_lines: list[str]
) -> None:
    """The same requests, byte for byte, and the same judgements, identity included.

    In process, through the filter lm_eval calls: the CLI path of a cap is the over-cap
    test's; what a cap must not change is decided here.
    """
    from elitr_bench.judges.qa.lm_eval_filter import judge_responses, last_run

    loopback.handler = boxed_by_response(lambda r: len(r) % 10)
    runs = []
    for cap in ("", ",max_cost=5"):
        config = parse_judge_spec(_judge(loopback, f",price=10:30,cache=memory{cap}"))
        before = len(loopback.requests)
        out = judge_responses(["a0", "an answer 1"], _docs(2), config)
        run = last_run()
        assert run is not None
        runs.append((_judge_prompts(loopback.requests[before:]), out, run.usage["requests"]))
    (plain, plain_out, plain_sent), (capped, capped_out, capped_sent) = runs
    assert len(plain) == 2 and capped == plain and plain_sent == capped_sent == 2
    assert capped_out == plain_out
    assert [s for _, s in _statuses(capped_out)] == ["scored", "scored"]
    assert finish_lines == []


@pytest.mark.slow
def test_lm_eval_minutes_judge_over_the_cap_sends_nothing_and_keeps_minutes(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    with LoopbackOpenAI(model="gpt-4o") as server:
        uncapped = f"openai:gpt-4o,rubric=gpt-art,base_url={server.base_url},preflight=false"
        args = [
            "--model", "elitr-replay", "--model_args", "system=gpt4",
            "--tasks", "automin23_en", "--limit", "1",
            "--log_samples", "--output_path", str(out),
            "--metadata", json.dumps({"judge": f"{uncapped},max_cost=0.001"}),
        ]  # fmt: skip
        proc = run_lm_eval(args, env={"ELITR_JUDGE_CACHE": str(tmp_path / "c")})
        assert proc.returncode == 3, proc.stderr[-3000:]
        assert server.requests == [] and server.listings == []
    assert "minutes judge gpt-art" in proc.stderr and "estimated cost $" in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.stderr.count("elitr-bench: error:") == 1, proc.stderr[-3000:]
    assert last.startswith("elitr-bench: error: the minutes judge failed on 1 of 1 minutes")
    assert f"finish with: elitr-bench score {out} --judge {shlex.quote(uncapped)}" in last
    [rows] = _samples(out).values()
    [entry] = [parse_filtered(r["filtered_resps"]) or {} for r in rows]
    assert len(entry["response"]) > 200  # the generated minutes are kept
    assert entry["judge"]["status"] == "error"
    assert entry["judge"]["reason"].startswith("not sent: estimated cost $")
    assert entry["judge"]["reason"].endswith("exceeds max_cost=0.001")
