"""``score`` and ``judge-check`` say their calls and cost first; ``--dry-run``, the caps.

Through the real ``elitr-bench`` entry point and a loopback judge: the plan line comes
before any request, ``--dry-run`` sends nothing (not even the preflight's model listing)
and writes nothing, and ``--max-cost`` below the estimate (or with an unpriced judge)
stops with status 2 and one line, also before the preflight. A judge spec's ``max_cost=``
caps the same way (``mesa`` and ``arena`` too); given both, the smaller applies.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.judges import parse_judge_spec
from tests.judges.conftest import boxed_by_response
from tests.judges.test_cream_arena import write_run
from tests.judges.test_lm_eval_integration import _docs
from tests.support.openai_server import LoopbackOpenAI

TASK = "elitr_qa_dev"


def write_samples(folder: Path, n: int = 4, judged: dict[int, dict] | None = None) -> Path:
    """An lm-eval samples file of ``n`` QA answers; ``judged`` gives some a judge dict."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, doc in enumerate(_docs(n)):
        text = f"answer {i}"
        judge = (judged or {}).get(i, {"status": "skipped", "score": None, "raw": ""})
        rows.append(
            {
                "doc_id": i,
                "doc": doc,
                "target": doc["answer"],
                "arguments": {},
                "resps": [[text]],
                "filtered_resps": [json.dumps({"response": text, "judge": judge})],
                "filter": "judge",
                "metrics": ["judge_unscored"],
            }
        )
    path = folder / f"samples_{TASK}_2024-05-01T10-00-00.123456.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def judge_of(loopback: LoopbackOpenAI, extra: str = ",price=10:30") -> str:
    """The loopback judge (not listed by the server: the preflight would also complete)."""
    return f"openai:judge-model,base_url={loopback.base_url},progress=false{extra}"


def files_in(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def error_lines(err: str) -> list[str]:
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith("elitr-bench: error")]


def _run_to_score(tmp_path: Path, loopback: LoopbackOpenAI) -> Path:
    """A run of four answers in ``tmp_path / "run"`` (its samples file); the judge gives 7s."""
    loopback.handler = boxed_by_response(lambda r: 7)
    return write_samples(tmp_path / "run")


def test_score_prints_the_plan_then_judges_and_records_it(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_to_score(tmp_path, loopback)
    assert main(["score", str(tmp_path / "run"), "--judge", judge_of(loopback)]) == 0
    err = capsys.readouterr().err
    expected = f"{TASK}: elitr judge openai:judge-model (gpt4-rubric): 4 calls (4 answers x 1"
    assert expected in err and "estimated cost $" in err and "(cache hits are free)" in err
    assert len(loopback.requests) == 5  # the preflight's 1-token completion, then 4 answers
    results = json.loads(next((tmp_path / "run").glob("results_rescored_*.json")).read_text())
    plan = results["judge_usage"][TASK]["plan"]
    assert (plan["calls"], plan["calls_max"], plan["restated_max"]) == (4, 12, 4)
    assert plan["cost_usd"] > 0 and plan["priced"] is True


def test_score_counts_only_the_answers_it_will_send(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = judge_of(loopback)
    identity = parse_judge_spec(spec).identity()
    done = {"status": "scored", "score": 8.0, "raw": "\\boxed{8}", "identity": identity}
    write_samples(tmp_path / "run", judged={0: done, 2: done})
    assert main(["score", str(tmp_path / "run"), "--judge", spec, "--dry-run"]) == 0
    assert "2 calls (2 answers x 1 sample)" in capsys.readouterr().err


def test_score_dry_run_sends_and_writes_nothing(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_samples(tmp_path / "run")
    before = files_in(tmp_path)
    argv = ["score", str(tmp_path / "run"), "--judge", judge_of(loopback), "--dry-run"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"{TASK}: elitr judge openai:judge-model (gpt4-rubric): 4 calls" in err
    assert "dry run: nothing was sent or written" in err
    assert loopback.requests == [] and loopback.listings == []
    assert files_in(tmp_path) == before


@pytest.mark.parametrize(
    ("extra", "says"),
    [(",price=10:30", "exceeds --max-cost 1e-06"), ("", "has no known price")],
)
def test_score_over_budget_or_unpriced_stops_before_any_request(
    tmp_path: Path,
    loopback: LoopbackOpenAI,
    capsys: pytest.CaptureFixture[str],
    extra: str,
    says: str,
) -> None:
    write_samples(tmp_path / "run")
    before = files_in(tmp_path)
    argv = ["score", str(tmp_path / "run"), "--judge", judge_of(loopback, extra)]
    assert main([*argv, "--max-cost", "0.000001"]) == 2
    [line] = error_lines(capsys.readouterr().err)
    assert says in line and "--max-cost" in line
    assert loopback.requests == [] and loopback.listings == []  # the preflight included
    assert files_in(tmp_path) == before


def test_score_within_budget_runs(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_to_score(tmp_path, loopback)
    assert (
        main(["score", str(tmp_path / "run"), "--judge", judge_of(loopback), "--max-cost", "5"])
        == 0
    )
    assert len(loopback.requests) == 5


def test_score_with_replay_or_lexical_prints_no_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_samples(tmp_path / "run")
    assert main(["score", str(tmp_path / "run"), "--judge", "lexical", "--max-cost", "0"]) == 0
    assert "elitr judge" not in capsys.readouterr().err


def test_score_with_a_minutes_judge_plans_dry_runs_and_budgets(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path, "m-full", "full")
    spec = f"openai:gpt-4o,rubric=gpt-art,base_url={loopback.base_url},progress=false"
    before = files_in(tmp_path)
    assert main(["score", str(run), "--judge", spec, "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "automin23_en: 2 minutes, up to " in err and "estimated cost $" in err
    assert "dry run: nothing was sent or written" in err
    assert main(["score", str(run), "--judge", spec, "--max-cost", "0.000001"]) == 2
    [line] = error_lines(capsys.readouterr().err)
    assert "exceeds --max-cost 1e-06" in line
    assert loopback.requests == [] and loopback.listings == []
    assert files_in(tmp_path) == before


def test_judge_check_dry_run_and_budget_send_nothing(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "check.json"
    argv = ["judge-check", "--judge", judge_of(loopback), "--output", str(out)]
    assert main([*argv, "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert (
        "judge-check: elitr judge openai:judge-model (gpt4-rubric): 390 calls (390 answers" in err
    )
    assert "dry run: nothing was sent or written" in err
    assert main([*argv, "--max-cost", "0.000001"]) == 2
    [line] = error_lines(capsys.readouterr().err)
    assert "exceeds --max-cost 1e-06" in line
    assert loopback.requests == [] and loopback.listings == []
    assert not out.exists()


def test_judge_check_prints_the_plan_and_records_it(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback.handler = boxed_by_response(lambda r: 6)
    out = tmp_path / "check.json"
    judge = judge_of(loopback, ",price=10:30,temperature=0")
    assert main(["judge-check", "--judge", judge, "--output", str(out), "--max-cost", "100"]) == 0
    err = capsys.readouterr().err
    assert (
        "390 calls (390 answers x 1 sample), up to 780 with 390 restatements and 0 re-asks" in err
    )
    from elitr_bench.metaeval.qa import load_check_items

    # The preflight's listing and 1-token completion, then one request per distinct prompt
    # (two released answers are the same text: the second is a cache hit, free).
    distinct = {(i.question, i.response, i.reference) for i in load_check_items()[0]}
    assert loopback.listings == ["/v1/models"]
    assert len(loopback.requests) == 1 + len(distinct)
    plan = json.loads(out.read_text())["usage"]["plan"]
    assert (plan["calls"], plan["calls_max"], plan["reasks_max"]) == (390, 780, 0)


def test_judge_check_with_replay_prints_no_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge-check", "--judge", "replay,progress=false", "--max-cost", "0"]) == 0
    captured = capsys.readouterr()
    assert "elitr judge" not in captured.err and "judge-check: replay" in captured.out


# --- the judge spec's max_cost=: alone, or the smaller of it and --max-cost ---------------
@pytest.mark.parametrize(
    ("spec_cap", "flag", "says"),
    [
        (",max_cost=0.000001", [], "exceeds max_cost=1e-06; "),
        (",max_cost=5", ["--max-cost", "0.000001"], "exceeds --max-cost 1e-06; "),
        (",max_cost=0.000001", ["--max-cost", "5"], "exceeds max_cost=1e-06; "),
    ],
)
def test_score_honours_the_smaller_of_the_spec_cap_and_max_cost(
    tmp_path: Path,
    loopback: LoopbackOpenAI,
    capsys: pytest.CaptureFixture[str],
    spec_cap: str,
    flag: list[str],
    says: str,
) -> None:
    write_samples(tmp_path / "run")
    before = files_in(tmp_path)
    spec = judge_of(loopback, f",price=10:30{spec_cap}")
    assert main(["score", str(tmp_path / "run"), "--judge", spec, *flag]) == 2
    [line] = error_lines(capsys.readouterr().err)
    assert says in line
    raise_it = (
        "max_cost= in the judge spec" if says.startswith("exceeds max_cost") else "--max-cost"
    )
    assert line.endswith(
        f"pick a cheaper judge, or raise {raise_it} (--dry-run only prints the plan)"
    )
    assert loopback.requests == [] and loopback.listings == []
    assert files_in(tmp_path) == before


def test_score_under_both_caps_runs_as_without_them(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_to_score(tmp_path, loopback)
    spec = judge_of(loopback, ",price=10:30,max_cost=5")
    assert main(["score", str(tmp_path / "run"), "--judge", spec, "--max-cost", "10"]) == 0
    assert len(loopback.requests) == 5  # the preflight's completion, then 4 answers


def test_an_unpriced_judge_with_a_spec_cap_is_refused(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_samples(tmp_path / "run")
    spec = judge_of(loopback, ",max_cost=5")
    assert main(["score", str(tmp_path / "run"), "--judge", spec]) == 2
    [line] = error_lines(capsys.readouterr().err)
    assert line.endswith(
        "max_cost=5 given but the judge model has no known price; add price=IN:OUT "
        "(USD per 1M tokens) to the judge spec"
    )
    assert loopback.requests == [] and loopback.listings == []


def test_judge_check_honours_the_spec_cap(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "check.json"
    spec = judge_of(loopback, ",price=10:30,max_cost=0.000001")
    assert main(["judge-check", "--judge", spec, "--output", str(out), "--max-cost", "100"]) == 2
    [line] = error_lines(capsys.readouterr().err)
    assert "exceeds max_cost=1e-06; pick a cheaper judge, or raise max_cost=" in line
    assert loopback.requests == [] and loopback.listings == [] and not out.exists()


def test_mesa_and_arena_honour_the_spec_cap(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback.model = "loop-m"
    spec = f"openai:loop-m,base_url={loopback.base_url},progress=false,price=5:15"
    mesa = ["mesa", "--systems", "gpt4", "--meetings", "1", "--out", str(tmp_path / "mesa")]
    assert main([*mesa, "--judge", f"{spec},debate=none,max_cost=0.0001"]) == 2
    [line] = error_lines(capsys.readouterr().err)
    assert "exceeds max_cost=0.0001; " in line
    arena = ["arena", "--automin", "--systems", "gpt4,ntr", "--meetings", "1"]
    arena += ["--out", str(tmp_path / "arena"), "--judge", f"{spec},max_cost=0.0001"]
    assert main([*arena, "--max-cost", "100"]) == 2
    [line] = error_lines(capsys.readouterr().err)
    assert "exceeds max_cost=0.0001; " in line
    assert loopback.requests == [] and loopback.listings == []
