"""The AutoMin GPT judges through batches: ``batch=on`` and ``score --batch-write/--batch-read``.

The loopback server's Batch API (tests/support/batch_api.py) answers each line by the
same script as a one-by-one request, so a batched run must send exactly the one-by-one
requests (the filler classifications, then the judge prompts built on their answers,
then the restatements) and give exactly the one-by-one assessments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.judges.summary.lm_eval_filter import judge_minutes, last_run
from tests.judges.test_minutes_gpt import AFGR_ANSWER, TRANSCRIPT, is_classification
from tests.judges.test_restatement_e2e import restating
from tests.support.batch_api import answer_file
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

MEETING = "meeting_en_test2023_999"
MINUTES = ["- Release on Friday.", "- Tokenizer needed.", "- Nothing decided."]
ART_ANSWER = "Adequacy: 8\nRelevance: 7\nTopicality: 9"
PROSE = "Adequate, fluent and grammatical minutes; their relevance is fair."


@pytest.fixture(autouse=True)
def _fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Poll at once."""
    monkeypatch.setenv("ELITR_BATCH_POLL_S", "0")


def script(request: RecordedRequest) -> str:
    """Turns with "Yeah" are filler; the tokenizer minutes are judged in prose (restated)."""
    if is_classification(request):
        return "Filler" if "Yeah" in request.prompt else "Content"
    art = "topicality" in json.dumps(request.body).lower()
    if restating(request):
        values = {"adequacy": 6, "relevance": 5}
        values |= {"topicality": 4} if art else {"fluency": 7, "grammaticality": 8}
        return json.dumps(values)
    if "Tokenizer needed" in request.prompt:
        return PROSE
    return ART_ANSWER if art else AFGR_ANSWER


def spec(server: LoopbackOpenAI, cache: Path, extra: str = "", rubric: str = "gpt-afgr") -> str:
    return (
        f"openai:gpt-4-0613,rubric={rubric},base_url={server.base_url},progress=false,"
        f"cache={cache}{extra}"
    )


def bodies(requests: list[Any]) -> list[str]:
    """Request bodies, canonical JSON, sorted (the preflight's left out)."""
    return sorted(json.dumps(r.body, sort_keys=True) for r in requests if r.body.get("messages"))


def docs() -> list[dict[str, Any]]:
    reference = ["- The model is released on Friday."]
    return [
        {"meeting_id": MEETING, "transcript": TRANSCRIPT, "references": reference} for _ in MINUTES
    ]


def judged(rows: list[list[str]]) -> list[dict[str, Any]]:
    return [json.loads(row[0])["judge"] for row in rows]


@pytest.mark.parametrize("rubric", ["gpt-art", "gpt-afgr"])
def test_the_minutes_filter_with_batch_on_sends_the_same_requests_and_scores_alike(
    tmp_path: Path, rubric: str
) -> None:
    """Classifications, then judge prompts, then the restatement: three batches."""
    resps = [[m] for m in MINUTES]
    prefix = rubric.removeprefix("gpt-")
    with LoopbackOpenAI(script, model="gpt-4-0613") as server:
        config = parse_judge_spec(spec(server, tmp_path / "a.sqlite", rubric=rubric))
        one = judge_minutes(resps, docs(), config, system="gpt4")
        one_by_one = bodies(server.taken())
        server.reset()
        config = parse_judge_spec(spec(server, tmp_path / "b.sqlite", ",batch=on", rubric))
        batched = judge_minutes(resps, docs(), config, system="gpt4")
        assert bodies(server.requests) == []  # nothing one by one
        sizes = [b["request_counts"]["total"] for b in server.batch_api.batches.values()]
        assert sizes == [4, len(MINUTES), 1]
        assert bodies(server.batch_api.lines) == one_by_one
    assert judged(batched) == judged(one)
    scores = [j["scores"] for j in judged(batched)]
    assert scores[0][f"{prefix}_adequacy"] == 8.0 and scores[1][f"{prefix}_adequacy"] == 6.0
    assert all(j["status"] == "ok" for j in judged(batched))
    run = last_run()
    assert run is not None and run.usage["batched"] == run.usage["requests"] == 4 + 3 + 1
    assert "batch_price_per_1m_tokens" in run.usage


def minutes_run(folder: Path) -> Path:
    """An automin23_en run of three minutes of one meeting, as lm-eval logs it."""
    folder.mkdir(parents=True)
    stamp = "2026-01-01T00-00-00.000001"
    rows = [
        {"doc_id": i, "doc": doc, "resps": [[m]], "filter": "none"}
        for i, (doc, m) in enumerate(zip(docs(), MINUTES, strict=True))
    ]
    samples = folder / f"samples_automin23_en_{stamp}.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / f"results_{stamp}.json").write_text(
        json.dumps({"results": {"automin23_en": {}}, "configs": {"automin23_en": {}}})
    )
    return folder


def rescored(run: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(metrics, per-sample scores) of the run's rescoring."""
    results = json.loads(next(run.glob("results_rescored_*.json")).read_text())
    metrics = {k.split(",")[0]: v for k, v in results["results"]["automin23_en"].items()}
    newest = sorted(run.glob("samples_automin23_en_*.jsonl"))[-1]
    rows = [json.loads(line) for line in newest.read_text().splitlines()]
    return metrics, [json.loads(r["filtered_resps"][0][0])["judge"]["scores"] for r in rows]


def test_score_a_minutes_run_with_batch_on_and_with_batch_files_scores_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``score`` on a minutes run: one by one, ``batch=on``, then offline batch files."""
    with LoopbackOpenAI(script, model="gpt-4-0613") as server:
        one = minutes_run(tmp_path / "one")
        assert main(["score", str(one), "--judge", spec(server, tmp_path / "a.sqlite")]) == 0
        server.reset()
        api = minutes_run(tmp_path / "api")
        judge = spec(server, tmp_path / "b.sqlite", ",batch=on")
        assert main(["score", str(api), "--judge", judge]) == 0
        assert bodies(server.requests) == [] and len(server.batch_api.batches) == 3
        server.reset()
        offline = minutes_run(tmp_path / "offline")
        judge = spec(server, tmp_path / "c.sqlite")
        written = tmp_path / "in1.jsonl"
        assert main(["score", str(offline), "--judge", judge, "--batch-write", str(written)]) == 0
        sizes = []
        for round_ in range(2, 6):
            sizes.append(len(written.read_text().splitlines()))
            answered = tmp_path / f"out{round_ - 1}.jsonl"
            answered.write_text(answer_file(server.batch_api, written.read_text()))
            written = tmp_path / f"in{round_}.jsonl"
            argv = ["--batch-read", str(answered), "--batch-write", str(written)]
            assert main(["score", str(offline), "--judge", judge, *argv]) == 0
            if not written.exists():
                break
        assert server.requests == [] and sizes == [4, len(MINUTES), 1]
    err = capsys.readouterr().err
    assert "then: elitr-bench score" in err and "at the batch price" in err
    expected = rescored(one)
    assert expected[1][1]["afgr_adequacy"] == 6.0  # the restated one
    assert rescored(api) == expected and rescored(offline) == expected


def test_score_a_minutes_run_with_no_wait_submits_and_the_printed_command_collects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gpt-4o takes a restatement's json_schema: classifications, prompts, restatement."""
    with LoopbackOpenAI(script, model="gpt-4o") as server:
        run = minutes_run(tmp_path / "run")
        judge = spec(server, tmp_path / "c.sqlite", ",batch=on").replace("gpt-4-0613", "gpt-4o")
        assert main(["score", str(run), "--judge", judge, "--no-wait"]) == 0
        err = capsys.readouterr().err
        assert "Collect the replies with: elitr-bench score" in err
        assert not list(run.glob("results_rescored_*")) and len(server.batch_api.batches) == 1
        assert main(["score", str(run), "--judge", judge]) == 0
        assert len(server.batch_api.batches) == 3 and bodies(server.requests) == []
    _metrics, scores = rescored(run)
    assert scores[0]["afgr_adequacy"] == 8.0 and scores[1]["afgr_adequacy"] == 6.0


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (",rubric=gpt-afgr,filler_model=gpt-3.5-turbo,batch=on", "filler_model=gpt-3.5-turbo"),
        (",method=mesa,debate=mixed,pool=openai:gpt-4o-mini,batch=on", "debate=mixed"),
    ],
)
def test_batch_on_is_refused_in_one_line_where_it_cannot_batch(extra: str, says: str) -> None:
    with pytest.raises(JudgeConfigError, match=r"batch=on") as refused:
        parse_judge_spec(f"openai:gpt-4o{extra}")
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(("debate", "passes"), [("none", 3), ("same", 9)])
def test_mesa_with_batch_on_sends_the_same_requests_and_scores_alike(
    tmp_path: Path, debate: str, passes: int
) -> None:
    """MESA's three steps per error type, each debated or not: one batch per link."""
    from tests.judges.test_mesa_script import make_script

    resps = [["- Ship Friday."], ["- Ship Monday."]]
    rows = [{"meeting_id": MEETING, "transcript": "ALICE: we ship on Friday.\nBOB: agreed."}] * 2
    with LoopbackOpenAI(make_script(), model="gpt-4o") as server:
        text = (
            f"openai:gpt-4o,method=mesa,debate={debate},base_url={server.base_url},"
            "progress=false,cache="
        )
        one = judge_minutes(resps, rows, parse_judge_spec(f"{text}{tmp_path / 'a.sqlite'}"))
        one_by_one = bodies(server.taken())
        server.reset()
        config = parse_judge_spec(f"{text}{tmp_path / 'b.sqlite'},batch=on")
        batched = judge_minutes(resps, rows, config)
        assert bodies(server.requests) == []
        assert len(server.batch_api.batches) == passes
        assert bodies(server.batch_api.lines) == one_by_one
    assert judged(batched) == judged(one)
    assert all(j["status"] == "ok" for j in judged(batched))
