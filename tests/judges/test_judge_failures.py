"""A failing judge keeps every answer; ``score`` finishes exactly the missing items; preflight."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli.score import main
from elitr_bench.judges import JudgeNotReadyError, check_judge_ready, parse_judge_spec
from elitr_bench.judges.metrics import judge_metrics
from elitr_bench.judges.qa.engine import BREAKER_FAILURES, JudgeItem, judge_items
from elitr_bench.judges.qa.lm_eval_filter import judge_responses
from tests.judges.conftest import TEST_KEY, response_in
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply


def _items(n: int) -> list[JudgeItem]:
    return [JudgeItem(question=f"Q{i}?", response=f"answer {i}", reference="r") for i in range(n)]


def _spec(server: LoopbackOpenAI, extra: str = "") -> str:
    return f"openai:gpt-4-0613,base_url={server.base_url},retries=0,progress=false{extra}"


class FailAfter:
    """Server script: score the first ``n`` judge prompts, then refuse every request."""

    def __init__(self, n: int, status: int = 503) -> None:
        self.n, self.status = n, status
        self.lock = threading.Lock()
        self.served: list[str] = []
        self.refused: list[str] = []
        self.healthy = False

    def __call__(self, request: RecordedRequest) -> Reply | str:
        text = response_in(request)
        with self.lock:
            if self.healthy or len(self.served) < self.n:
                self.served.append(text)
                return f"Feedback: ok. \\boxed{{{len(text) % 9 + 1}}}"
            self.refused.append(text)
        return Reply(status=self.status)


def test_failures_become_error_items_and_the_breaker_stops_sending(
    loopback: LoopbackOpenAI,
) -> None:
    script = FailAfter(4, status=500)
    loopback.handler = script
    config = parse_judge_spec(_spec(loopback, ",concurrency=1,cache=memory"))
    run = judge_items(_items(20), config, on_error="record")
    statuses = [j.status for j in run.judgements]
    assert statuses[:4] == ["scored"] * 4 and set(statuses[4:]) == {"error"}
    assert "HTTP 500" in run.judgements[4].reason and "\n" not in run.judgements[4].reason
    assert run.judgements[-1].reason.startswith("not sent: the judge failed 3 times in a row")
    assert run.judgements[-1].score is None  # never a number
    # Only BREAKER_FAILURES items were tried after the judge broke, not all 16.
    assert len(script.refused) == BREAKER_FAILURES
    assert run.summary["judge_errors"] == 16 and run.summary["judge_scored"] == 4
    # The default stays strict for library callers.
    with pytest.raises(Exception, match="HTTP 500"):
        judge_items(_items(6), config)


def test_filter_output_of_a_failed_judge(loopback: LoopbackOpenAI) -> None:
    loopback.handler = FailAfter(2, status=401)
    config = parse_judge_spec(_spec(loopback, ",concurrency=1,cache=memory"))
    docs = [
        {"question": f"Q{i}?", "answer": "r", "meeting_id": "m", "question_id": str(i)}
        for i in range(4)
    ]
    out = judge_responses([[f"answer {i}"] for i in range(4)], docs, config)
    judged = [json.loads(row[0]) for row in out]
    assert [j["response"] for j in judged] == [f"answer {i}" for i in range(4)]
    assert [j["judge"]["status"] for j in judged] == ["scored", "scored", "error", "error"]
    assert "HTTP 401" in judged[2]["judge"]["reason"]
    assert judge_metrics(out[2]) == {
        "judge_unscored": 0.0,
        "judge_errors": 1.0,
        "judge_format_in_answer": 0.0,
    }
    assert TEST_KEY not in json.dumps(judged)


def _write_run(out: Path, filtered: list[list[str]], docs: list[dict[str, Any]]) -> Path:
    """A run directory shaped like lm-eval's: results and samples of two tasks and a group."""
    stamp = "2026-01-02T03-04-05.678901"
    run = out / "model"
    run.mkdir(parents=True)
    results: dict[str, Any] = {
        "results": {},
        "groups": {"elitr_qa": {"alias": "elitr_qa"}},
        "group_subtasks": {"elitr_qa": ["elitr_qa_dev", "elitr_qa_test"]},
        "configs": {},
        "config": {"model": "elitr-replay", "model_args": "system=gpt-4"},
        "n-samples": {},
    }
    for task, rows in (("elitr_qa_dev", filtered[:3]), ("elitr_qa_test", filtered[3:])):
        lines = []
        scores = []
        for i, row in enumerate(rows):
            metrics = {"f1": 0.5, **judge_metrics(row)}
            scores += [metrics["judge_score"]] if "judge_score" in metrics else []
            lines.append(
                {
                    "doc_id": i,
                    "doc": docs[i],
                    "filtered_resps": row,
                    "filter": "none",
                    "metrics": list(metrics),
                    **metrics,
                }
            )
        (run / f"samples_{task}_{stamp}.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in lines)
        )
        results["results"][task] = {
            "alias": task,
            "sample_len": len(rows),
            "f1,none": 0.5,
            "judge_score,none": sum(scores) / len(scores) if scores else "N/A",
        }
        results["configs"][task] = {"task": task, "metadata": {"version": 1.0}}
    results["results"]["elitr_qa"] = {"alias": "elitr_qa", "f1,none": 0.5}
    (run / f"results_{stamp}.json").write_text(json.dumps(results))
    return run


def test_score_judges_exactly_the_missing_items(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = FailAfter(3, status=503)
    loopback.handler = script
    spec = _spec(loopback, ",concurrency=1,preflight=false")
    docs = [
        {"question": f"Q{i}?", "answer": "r", "meeting_id": "m", "question_id": str(i)}
        for i in range(3)
    ]
    filtered = judge_responses(
        [[f"answer {i}"] for i in range(6)], [*docs, *docs], parse_judge_spec(spec)
    )
    assert [json.loads(r[0])["judge"]["status"] for r in filtered].count("error") == 3
    run = _write_run(tmp_path / "out", filtered, docs)

    # The judge is still down: the files are written anyway and the command says so.
    assert main(["score", str(tmp_path / "out"), "--judge", spec]) == 3
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "the judge failed on 3 item(s)" in err and "run the same command again" in err
    assert len(script.served) == 3  # the three judged items were not sent again

    script.healthy = True
    before = len(loopback.requests)
    assert main(["score", str(tmp_path / "out"), "--judge", spec]) == 0
    sent = [response_in(r) for r in loopback.requests[before:]]
    assert sorted(sent) == ["answer 3", "answer 4", "answer 5"]  # the failed items only
    newest = max(run.glob("results_rescored_*.json"), key=lambda p: p.stat().st_mtime)
    data = json.loads(newest.read_text())
    test = data["results"]["elitr_qa_test"]
    key = "openai:gpt-4-0613"  # the filter names the judge
    assert test[f"judge_errors,{key}"] == 0 and test[f"judge_score,{key}"] != "N/A"
    assert test[f"f1,{key}"] == 0.5  # the run's other metrics are kept
    dev = data["results"]["elitr_qa_dev"][f"judge_score,{key}"]
    group = data["results"]["elitr_qa"][f"judge_score,{key}"]
    assert group == pytest.approx((dev + test[f"judge_score,{key}"]) / 2)  # unweighted, Table 2
    assert data["config"]["model"] == "elitr-replay" and data["judge_errors"] == 0
    assert data["judge_usage"]["elitr_qa_test"]["kept"] == 0
    assert data["judge_usage"]["elitr_qa_dev"]["kept"] == 3


def _refuse_wrong_key(request: RecordedRequest) -> Reply | str:
    if request.headers.get("authorization") != f"Bearer {TEST_KEY}":
        return Reply(status=401, body={"error": {"message": "Incorrect API key provided"}})
    return "OK"


def test_preflight_stops_a_wrong_key_after_one_request(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.handler = _refuse_wrong_key
    wrong = "sk-wrong-SECRET-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", wrong)
    with pytest.raises(JudgeNotReadyError) as err:
        check_judge_ready(parse_judge_spec(_spec(loopback)), network=True)
    message = str(err.value)
    assert "OPENAI_API_KEY was rejected" in message and "HTTP 401" in message
    assert "preflight=false" in message and """--metadata '{"judge": "lexical"}'""" in message
    assert "\n" not in message and wrong not in message and wrong[:12] not in message
    assert [r.body["max_tokens"] for r in loopback.requests] == [1]  # one 1-token request
    # Off when asked, and never without `network` (the filter's call after generation).
    check_judge_ready(parse_judge_spec(_spec(loopback, ",preflight=false")), network=True)
    check_judge_ready(parse_judge_spec(_spec(loopback)))
    assert len(loopback.requests) == 1


def test_preflight_passes_on_the_model_list_and_remembers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with LoopbackOpenAI(_refuse_wrong_key, model="gpt-4-0613") as server:
        check_judge_ready(parse_judge_spec(_spec(server)), network=True)
        check_judge_ready(parse_judge_spec(_spec(server)), network=True)
        assert server.requests == []  # the free model listing named the model
        base = server.base_url
    # Nothing listens there any more: unreachable fails fast, with the endpoint named
    # (another path, so the remembered success of this endpoint does not apply).
    spec = f"openai:gpt-4-0613,base_url={base.replace('/v1', '/v2')},timeout=2,progress=false"
    with pytest.raises(JudgeNotReadyError, match="cannot reach"):
        check_judge_ready(parse_judge_spec(spec), network=True)


def test_missing_key_hint_names_flags_that_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    config = parse_judge_spec("openai:gpt-4-0613")
    with pytest.raises(JudgeNotReadyError) as err:
        check_judge_ready(config)
    assert """--metadata '{"judge": "lexical"}'""" in str(err.value)
    assert "--judge" not in str(err.value).replace('"judge"', "").replace("--judge SPEC", "")
    with pytest.raises(JudgeNotReadyError, match="--judge lexical") as bench:
        check_judge_ready(config, command="elitr-bench")
    assert "--metadata" not in str(bench.value)


def test_excepthook_prints_our_errors_as_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from elitr_bench import cli_errors
    from elitr_bench.tasks.options import OptionError

    seen: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "excepthook", lambda t, v, tb: seen.append(t))
    cli_errors.install_excepthook()
    cli_errors.install_excepthook()  # idempotent
    sys.excepthook(OptionError, OptionError("bad option; use --metadata '{}'"), None)
    assert capsys.readouterr().err == "elitr-bench: error: bad option; use --metadata '{}'\n"
    sys.excepthook(KeyError, KeyError("x"), None)  # not ours: the previous hook
    assert seen == [KeyError]
    monkeypatch.setenv("ELITR_BENCH_DEBUG", "1")
    sys.excepthook(OptionError, OptionError("x"), None)  # debug: the full traceback
    assert seen == [KeyError, OptionError] and capsys.readouterr().err == ""


def test_elitr_bench_errors_are_one_line_unless_debugging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from elitr_bench import cli
    from elitr_bench.judges import JudgeConfigError

    argv = ["score", str(tmp_path / "missing"), "--judge", "lexical"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("elitr-bench: error: score:") and err.count("\n") == 1
    monkeypatch.setenv("ELITR_BENCH_DEBUG", "1")
    with pytest.raises(JudgeConfigError):
        cli.main(argv)


@pytest.mark.parametrize("ending", ["sys.exit()", "pass"])
def test_deferred_error_exits_3_with_one_last_line(ending: str) -> None:
    """The console script ends with ``sys.exit(None)``; ``python -m lm_eval`` just ends."""
    import subprocess

    code = (
        "import sys; sys.argv = ['lm_eval']\n"
        "from elitr_bench.cli_errors import exit_with_error_after_run as later\n"
        "later('the judge failed on 1 of 3 answers', source='j')\n"
        "later('the judge failed on 2 of 6 answers', source='j')\n"
        f"print('table'); {ending}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 3 and proc.stdout == "table\n"
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == "elitr-bench: error: the judge failed on 2 of 6 answers"
    assert "1 of 3" not in lines[-1] and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply(status=404, body={"error": {"message": "The model does not exist"}}), "not found"),
        (
            Reply(status=429, body={"error": {"message": "You exceeded your current quota"}}),
            "quota exhausted",
        ),
        (Reply(status=429, headers={"Retry-After": "1"}), None),  # busy, but key and model work
        (Reply(status=400, body={"error": {"message": "max_tokens is not supported"}}), "HTTP 400"),
    ],
)
def test_preflight_reads_what_the_real_calls_would_meet(
    loopback: LoopbackOpenAI, reply: Reply, problem: str | None
) -> None:
    loopback.handler = lambda request: reply
    config = parse_judge_spec(_spec(loopback))
    if problem is None:
        check_judge_ready(config, network=True)
    else:
        with pytest.raises(JudgeNotReadyError, match=problem):
            check_judge_ready(config, network=True)
    assert len(loopback.requests) == 1


def test_finish_hint_names_the_run_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    from elitr_bench.judges.filtering import finish_hint

    monkeypatch.setattr(sys, "argv", ["lm_eval", "--log_samples", "--output_path=out dir"])
    assert finish_hint("openai:gpt-4o,rpm=60") == (
        "finish with: elitr-bench score 'out dir' --judge openai:gpt-4o,rpm=60"
    )
    # Replay has no score for what it failed on, now or later: never suggest it again.
    replay = finish_hint("replay,system=gpt-4")
    assert "--judge replay" not in replay
    assert replay.endswith("elitr-bench score 'out dir' --judge openai:MODEL (or --judge lexical)")
    monkeypatch.setattr(sys, "argv", ["lm_eval", "-o", "out"])  # answers not logged
    assert "re-run with them" in finish_hint("replay")
    monkeypatch.setattr(sys, "argv", ["lm_eval", "--config", "run.yaml"])
    assert finish_hint("openai:gpt-4o") == (
        "finish with: elitr-bench score OUTPUT_PATH --judge openai:gpt-4o"
    )


def test_a_judge_that_cannot_start_keeps_every_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from elitr_bench.judges.qa import engine

    def broken(config: Any, **kwargs: Any) -> Any:
        raise RuntimeError("cannot load the judge model")

    monkeypatch.setattr(engine, "make_judge", broken)
    config = parse_judge_spec("openai:gpt-4-0613,base_url=http://127.0.0.1:9/v1,progress=false")
    out = judge_responses([["a"], ["b"]], [{"question": "q"}] * 2, config)
    judged = [json.loads(row[0]) for row in out]
    assert [j["response"] for j in judged] == ["a", "b"]
    assert {j["judge"]["reason"] for j in judged} == {"RuntimeError: cannot load the judge model"}


def test_score_writes_one_results_file_per_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [
        {"question": f"Q{i}?", "answer": "r", "meeting_id": "m", "question_id": str(i)}
        for i in range(3)
    ]
    filtered = judge_responses([[f"answer {i}"] for i in range(6)], [*docs, *docs], None)
    runs = [_write_run(tmp_path / "out" / name, filtered, docs) for name in ("a", "b")]
    assert main(["score", str(tmp_path / "out"), "--judge", "lexical,progress=false"]) == 0
    for run in runs:
        (written,) = run.glob("results_rescored_*.json")
        data = json.loads(written.read_text())
        assert set(data["rescored_from"]) == {"elitr_qa_dev", "elitr_qa_test"}
        assert all(str(run) in p for p in data["rescored_from"].values())
        assert data["results"]["elitr_qa_test"]["lexical_score,lexical"] != "N/A"
    assert capsys.readouterr().out.count("wrote ") == 2
    one = str(tmp_path / "one.json")
    assert main(["score", str(tmp_path / "out"), "--judge", "lexical", "--output", one]) == 2
    assert "the samples come from 2 runs" in capsys.readouterr().err
