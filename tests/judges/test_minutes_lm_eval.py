"""GPT-AFGR through the real lm_eval CLI on replayed AutoMin minutes; score and minutes-check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.metrics import parse_filtered
from tests.conftest import run_lm_eval
from tests.support.lm_eval_runs import read_results, read_samples, replay_args
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

FIRST, SECOND = "meeting_en_test2023_001", "meeting_en_test2023_002"


def handler(request: RecordedRequest) -> str:
    """Short turns are filler; the minutes of meeting 002 get an answer without scores."""
    prompt = request.prompt
    if prompt.startswith("The following conversational turn"):
        return "Filler" if len(prompt) < 330 else "Content"
    minutes = prompt.split("\nMinutes:\n", 1)[-1]
    if "Person2 is currently focused on writing a paper for EMNLP" in minutes:  # 002, GPT-4
        return "I am unable to rate these."
    return "Adequacy: 8\nFluency: 9\nGrammatical correctness: 10\nRelevance: 7"


@pytest.mark.slow
def test_lm_eval_afgr_run_logs_assessments_and_keeps_minutes(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback.handler = handler
    # The AutoMin organisers judged with GPT-4-32k: meetings 001/002 do not fit 8k tokens.
    spec = f"openai:gpt-4-32k,rubric=gpt-afgr,base_url={loopback.base_url},reask=0"
    out = tmp_path / "run"
    proc = run_lm_eval(replay_args("gpt4", "automin23_en", limit=2, out=out, judge=spec))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "calls, estimated cost $" in proc.stderr  # announced before spending
    paid = len(loopback.requests)
    results = read_results(out, "automin23_en")
    samples = read_samples(out)
    by_meeting = {s["doc"]["meeting_id"]: s for s in samples}
    assert set(by_meeting) == {FIRST, SECOND}
    judged = {m: parse_filtered(s["filtered_resps"]) for m, s in by_meeting.items()}
    assert all(j is not None for j in judged.values())
    unscored = judged[SECOND]["judge"]  # type: ignore[index]
    assert unscored["status"] == "unscored" and unscored["scores"]["afgr_adequacy"] is None
    assert "\n" not in unscored["reason"]
    ok = judged[FIRST]["judge"]  # type: ignore[index]
    assert ok["status"] == "ok" and ok["scores"]["afgr_grammaticality"] == 10.0
    assert ok["details"]["filler"]["tokens_saved"] > 0
    # Nothing lost: both minutes are logged, the unscored ones included.
    assert all(j["response"].strip() for j in judged.values() if j is not None)
    by = "openai:gpt-4-32k:gpt-afgr"  # the filter name says who judged
    assert results[f"afgr_adequacy,{by}"] == 8.0  # mean over the scored sample only
    assert results[f"judge_unscored,{by}"] == 1.0
    assert results[f"filler_tokens_saved,{by}"] > 0
    assert results[f"rouge1,{by}"] > 0

    # elitr-bench score with the same judge: everything comes from the cache.
    loopback.reset()
    assert main(["score", str(out), "--judge", spec]) == 0
    judge_prompts = [
        r
        for r in loopback.requests
        if "\nTranscript:\n" in r.prompt or r.prompt.startswith("The following conversational")
    ]
    assert judge_prompts == []  # (a readiness probe of the endpoint may be sent)
    assert "afgr_adequacy" in capsys.readouterr().out
    assert paid > 2
    # The rescoring's results file is the run's own, every metric included.
    [rescored_file] = out.rglob("results_rescored_*.json")
    rescored = json.loads(rescored_file.read_text())["results"]["automin23_en"]
    assert {k: v for k, v in rescored.items() if "stderr" not in k} == {
        k: v for k, v in results.items() if "stderr" not in k
    }

    # minutes-check reads the run: its values count for the replayed system gpt4.
    check_out = tmp_path / "check"
    assert (
        main(["minutes-check", "--metrics", "none", "--run", str(out), "--out", str(check_out)])
        == 0
    )
    summary = json.loads((check_out / "summary.json").read_text())
    assert summary["runs"][0]["system"] == "gpt4"
    assert "afgr_adequacy" in summary["metrics"]
    printed = capsys.readouterr().out
    assert "judge filler compression (gpt4)" in printed
