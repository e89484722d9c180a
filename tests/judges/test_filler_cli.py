"""Filler compression through the real CLIs: unread turns re-asked, counted, flagged; filler_model.

One ``lm_eval`` run on a replayed AutoMin meeting with a scripted judge server: one turn's
classification is garbage every time, so it must be asked ``reask + 1`` times, kept whole,
counted in the results and flagged where the scores are read (sample log, results file,
``elitr-bench score``, ``minutes-check``); the classifications go to ``filler_model``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.data.minutes import load_automin_meetings
from elitr_bench.judges.metrics import parse_filtered
from elitr_bench.judges.minutes.filler import cleaned_turns
from elitr_bench.judges.minutes.prompts import build_filler_prompt
from tests.conftest import run_lm_eval
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

MEETING = "meeting_en_test2023_001"
AFGR_ANSWER = "Adequacy: 8\nFluency: 9\nGrammatical correctness: 10\nRelevance: 7"


def _unreadable_turn() -> tuple[str, str]:
    """The meeting's longest turn (the one the script garbles) and its classifier prompt."""
    [meeting] = load_automin_meetings([MEETING])
    turns = [t for t in cleaned_turns(meeting.transcript) if t.text]
    turn = max(turns, key=lambda t: len(t.text)).render()
    return turn, build_filler_prompt(turn)


def is_classification(request: RecordedRequest) -> bool:
    return request.prompt.startswith("The following conversational turn")


@pytest.mark.slow
def test_lm_eval_unread_turn_is_reasked_counted_flagged_and_filler_model_used(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turn, garbled = _unreadable_turn()

    def handler(request: RecordedRequest) -> str:
        if request.prompt == garbled:
            return "It is hard to tell without more context."
        if is_classification(request):
            return "Filler" if len(request.prompt) < 330 else "Content"
        return AFGR_ANSWER

    loopback.handler = handler
    spec = (
        f"openai:gpt-4-32k,rubric=gpt-afgr,base_url={loopback.base_url},"
        "filler_model=gpt-3.5-turbo-0125,reask=1"
    )
    out = tmp_path / "run"
    proc = run_lm_eval(
        [
            "--model", "elitr-replay", "--model_args", "system=gpt4",
            "--tasks", "automin23_en", "--limit", "1",
            "--metadata", json.dumps({"judge": spec}),
            "--log_samples", "--output_path", str(out),
        ]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]

    # Counted at the server: the garbled turn twice (reask=1, seeds 2023 and 2024), every
    # classification with the filler model, the judge call with the judge's model.
    asked = [r for r in loopback.requests if r.prompt == garbled]
    assert sorted(r.seed for r in asked) == [2023, 2024]
    classified = [r for r in loopback.requests if is_classification(r)]
    judged = [r for r in loopback.requests if "\nMinutes:\n" in r.prompt]
    assert classified and {r.body["model"] for r in classified} == {"gpt-3.5-turbo-0125"}
    assert len(judged) == 1 and judged[0].body["model"] == "gpt-4-32k"
    assert turn in judged[0].prompt  # an unread turn is kept whole, never dropped

    [results_file] = out.rglob("results_*.json")
    payload = json.loads(results_file.read_text())
    results = payload["results"]["automin23_en"]
    by = "openai:gpt-4-32k:gpt-afgr"  # the filter is named after the judge
    assert results[f"filler_unclassified_turns,{by}"] == 1.0
    assert results[f"filler_flagged,{by}"] == 1.0
    assert results[f"afgr_adequacy,{by}"] == 8.0  # kept, flagged
    usage = payload["configs"]["automin23_en"]["metadata"]["judge_usage"]
    assert list(usage["filler_flagged"]) == [MEETING]
    assert usage["filler_classifier"]["requests"] == len(classified)
    identity = payload["configs"]["automin23_en"]["metadata"]["judge_identity"]
    assert identity["filler_model"] == "gpt-3.5-turbo-0125"
    assert identity["sampling"]["temperature"] == 0.0  # the minutes family is greedy
    [sample] = [
        json.loads(line)
        for line in next(out.rglob("samples_*.jsonl")).read_text().splitlines()
        if line.strip()
    ]
    entry = parse_filtered(sample["filtered_resps"])
    assert entry is not None
    filler = entry["judge"]["details"]["filler"]
    assert filler["flagged"] is True and filler["unclassified_turns"] == 1
    assert filler["classifier"] == "gpt-3.5-turbo-0125"
    assert sample["filler_flagged"] == 1.0

    # elitr-bench score (all from the cache) prints the flag next to the scores.
    loopback.reset()
    assert main(["score", str(out), "--judge", spec]) == 0
    printed = capsys.readouterr().out
    assert f"automin23_en: {MEETING} flagged: 1 of " in printed
    assert "'filler_unclassified_turns': 1.0" in printed
    assert [r for r in loopback.requests if is_classification(r)] == []

    # minutes-check shows it where the run's scores are read.
    assert main(["minutes-check", "--metrics", "none", "--run", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"flagged (gpt4, {MEETING}): 1 of " in printed
