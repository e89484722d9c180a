"""CREAM arenas end to end against a scripted loopback judge (no API key, no network)."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.cream.prompts import (
    alignment_prompt,
    extraction_prompt,
    paragraph_of,
    summary_lines,
)
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply

FAST = ["--bootstrap", "30", "--orders", "20", "--quiet"]

MEETINGS = ("meeting_en_dev_001", "meeting_en_dev_002")
LONG = 30  # the scripted judge calls lines longer than this "key facts"


def _minutes(style: str, meeting: str) -> str:
    """Three systems that differ in completeness and padding."""
    facts = [f"Decision {i} of {meeting} was agreed by the whole team." for i in range(1, 5)]
    if style == "full":
        return "\n".join(f"- {f}" for f in facts)
    if style == "half":
        return "\n".join(f"- {f}" for f in facts[:2]) + "\n- ok\n- thanks"
    return "\n".join(f"* {f}" for f in facts[:3]) + "\n* misc"


def write_run(
    root: Path,
    name: str,
    style: str,
    task: str = "automin23_en",
    text: Callable[[str], str] | None = None,
) -> Path:
    """A minimal lm-eval output folder of a minutes task (samples + results file)."""
    folder = root / name
    folder.mkdir(parents=True)
    stamp = "2026-01-01T00-00-00.000001"
    with (folder / f"samples_{task}_{stamp}.jsonl").open("w") as handle:
        for meeting in MEETINGS:
            minutes = text(meeting) if text is not None else _minutes(style, meeting)
            sample = {"doc": {"meeting_id": meeting}, "resps": [[minutes]]}
            handle.write(json.dumps(sample) + "\n")
    results = {
        "config": {"model": "hf", "model_args": f"pretrained=org/{name}"},
        "configs": {task: {"metadata": {}}},
    }
    (folder / f"results_{stamp}.json").write_text(json.dumps(results))
    return folder


def two_runs(root: Path) -> list[Path]:
    """Runs ``m-full`` and ``m-half`` under ``root``: the two systems most arena tests compare."""
    return [write_run(root, n, n.split("-")[1]) for n in ("m-full", "m-half")]


def _facts_of(extraction_reply: str) -> list[str]:
    return [re.sub(r"^\d+\.\s*", "", ln) for ln in extraction_reply.splitlines()[1:] if ln]


def cream_script(
    bad: Callable[[RecordedRequest], str | None] | None = None,
) -> Callable[[RecordedRequest], str]:
    """Scripted CREAM judge: key facts = long lines of the paragraph; aligned by equality."""

    def handler(request: RecordedRequest) -> str:
        override = bad(request) if bad is not None else None
        if override is not None:
            return override
        messages = request.body["messages"]
        last = messages[-1]["content"]
        if last.startswith("Restate your final"):  # a judge that repeats itself
            return str(messages[-2]["content"])
        if last.startswith("You will be provided with a paragraph"):
            paragraph = last.split("Paragraph: ", 1)[1]
            lines = [ln.strip().lstrip("-* ") for ln in paragraph.splitlines()]
            facts = list(dict.fromkeys(ln for ln in lines if len(ln) > LONG))
            return "Key facts:\n" + "\n".join(f"{i}. {f}" for i, f in enumerate(facts, 1))
        assert last.startswith("You now have a summary"), last[:80]
        facts = _facts_of(messages[1]["content"])
        numbered = last.split("Summary: ", 1)[1].splitlines()
        where = {}
        for ln in numbered:
            number, text = re.match(r"\[(\d+)\] (.*)", ln).groups()  # type: ignore[union-attr]
            where[text.lstrip("-* ")] = int(number)
        answer = [
            {
                "key fact": f,
                "response": "Yes" if f in where else "No",
                "line number": [where[f]] if f in where else [],
            }
            for f in facts
        ]
        return json.dumps(answer)

    return handler


def arena(server: LoopbackOpenAI, out: Path, *args: str, judge_opts: str = "") -> int:
    server.model = "judge-model"  # listed by GET /v1/models: the preflight sends no completion
    spec = f"openai:judge-model,base_url={server.base_url}{judge_opts}"
    return main(["arena", *args, "--judge", spec, "--out", str(out), *FAST])


def test_prompts_on_the_wire_call_count_cache_and_adding_a_run(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback.handler = cream_script()
    full = write_run(tmp_path, "model-full", "full")
    half = write_run(tmp_path, "model-half", "half")
    out = tmp_path / "arena"
    assert arena(loopback, out, str(full), str(half)) == 0
    requests = loopback.snapshot()
    # 1 pair x 2 meetings x 2 orders x 3 calls (extraction + 2 alignments).
    assert len(requests) == 1 * 2 * 2 * 3
    printed = capsys.readouterr().out
    assert "judge calls: 12 " in printed

    # Exact prompts: extraction alone; each alignment follows it in the same chat.
    a = summary_lines(_minutes("full", MEETINGS[0]))
    b = summary_lines(_minutes("half", MEETINGS[0]))
    first = extraction_prompt(paragraph_of(a, b), 16)
    extractions = [r for r in requests if len(r.body["messages"]) == 1]
    assert len(extractions) == 4
    assert first in [r.prompt for r in extractions]
    follow_ups = [r for r in requests if r.body["messages"][0]["content"] == first]
    assert len(follow_ups) == 3
    alignments = [r for r in follow_ups if len(r.body["messages"]) == 3]
    assert sorted(r.prompt for r in alignments) == sorted(
        [alignment_prompt(a), alignment_prompt(b)]
    )
    for r in alignments:
        roles = [m["role"] for m in r.body["messages"]]
        assert roles == ["user", "assistant", "user"]
        assert r.body["messages"][1]["content"].startswith("Key facts:\n1. Decision 1")
        assert r.seed == 2023 and r.body["temperature"] == 0.0  # CREAM: greedy by default

    # Scores as the scripted judge implies: full has all 4 facts on 4 lines; half 2 of 4
    # facts on 4 lines (two padding lines).
    comps = [json.loads(x) for x in (out / "comparisons.jsonl").read_text().splitlines()]
    assert len(comps) == 4 and {c["status"] for c in comps} == {"ok"}
    for c in comps:
        scores = {s["system"]: s["scores"] for s in c["sides"]}
        assert scores["hf,model-full"] == {"completeness": 1.0, "conciseness": 1.0}
        assert scores["hf,model-half"] == {"completeness": 0.5, "conciseness": 0.5}
    board = list(csv.DictReader((out / "leaderboard.csv").open()))
    assert [r["system"] for r in board if r["metric"] == "completeness"] == [
        "hf,model-full",
        "hf,model-half",
    ]
    ratings = list(csv.DictReader((out / "ratings.csv").open()))
    assert {r["metric"] for r in ratings} == {
        "cream_elo_completeness",
        "cream_elo_conciseness",
        "cream_bt_completeness",
        "cream_bt_conciseness",
    }
    assert {r["meeting_id"] for r in ratings} == {""}
    for name in ("leaderboard.md", "leaderboard.png", "pairwise.md", "keyfacts.md"):
        assert (out / name).stat().st_size > 0
    assert "| 1 | Decision 1 of meeting_en_dev_001" in (out / "keyfacts.md").read_text()
    assert "| hf,model-full | - | 100.0% |" in (out / "pairwise.md").read_text()

    # Same command again: the arena holds every comparison, nothing is asked.
    assert arena(loopback, out, str(full), str(half)) == 0
    assert len(loopback.snapshot()) == 12
    # A fresh arena folder on the same judge cache: every call is a cache hit.
    assert arena(loopback, tmp_path / "arena2", str(full), str(half)) == 0
    assert len(loopback.snapshot()) == 12
    assert "judge requests sent: 0, cache hits: 12" in capsys.readouterr().out

    # Adding a third run judges only its 2 new pairs: 2 pairs x 2 meetings x 2 orders x 3.
    third = write_run(tmp_path, "model-third", "third")
    assert arena(loopback, out, str(third)) == 0
    assert len(loopback.snapshot()) == 12 + 24
    printed = capsys.readouterr().out
    assert "3 systems x 2 meetings, 3 pairs; 4 comparisons already judged, 8 to judge" in printed
    board = list(csv.DictReader((out / "leaderboard.csv").open()))
    assert len(board) == 3 * 2


def test_unscored_replies_keep_reasons_and_are_paid_once(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    def bad(request: RecordedRequest) -> str | None:
        last = request.prompt
        if last.startswith("You now have") and "[4] - thanks" in last:
            return "I think most facts are in there."  # no JSON at all
        if last.startswith("You now have") and "* misc" in last:
            return json.dumps([{"key fact": "x", "response": "Yes", "line number": [9]}])
        return None

    loopback.handler = cream_script(bad)
    runs = [write_run(tmp_path, n, n.split("-")[1]) for n in ("m-full", "m-half", "m-third")]
    out = tmp_path / "arena"
    # Every pair involves a bad side: no match is scored, so no ratings and exit 1.
    assert arena(loopback, out, *map(str, runs)) == 1
    # 3 pairs x 2 meetings x 2 orders = 12 comparisons; each bad alignment is asked once to
    # restate (the judge repeats itself): half and third each appear in 8 comparisons.
    assert len(loopback.snapshot()) == 12 * 3 + 8 + 8
    comps = [json.loads(x) for x in (out / "comparisons.jsonl").read_text().splitlines()]
    reasons = {
        s["system"]: s["reason"] for c in comps for s in c["sides"] if s["system"] != "hf,m-full"
    }
    assert reasons["hf,m-half"] == (
        "alignment reply holds 0 JSON lists, not one; then restatement holds no JSON object"
    )
    assert "outside the summary" in reasons["hf,m-third"] or "entries for" in reasons["hf,m-third"]
    assert all(
        s["scores"]["completeness"] is None
        for c in comps
        for s in c["sides"]
        if s["system"] != "hf,m-full"
    )
    matches = list(csv.DictReader((out / "matches.csv").open()))
    assert all(m["result"] == "" for m in matches)  # every pair involves a bad side
    printed = capsys.readouterr()
    assert "(partly) unscored" in printed.out
    assert "no ratings written" in printed.err and not (out / "ratings.csv").exists()
    # Re-running asks nothing: the arena and the cache hold every reply, bad ones too.
    assert arena(loopback, tmp_path / "again", *map(str, runs)) == 1
    assert len(loopback.snapshot()) == 12 * 3 + 16


def test_automin_arena_cli_end_to_end(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback.handler = cream_script()
    loopback.model = "gpt-4o-mini"  # the preflight's free model list names the judge
    out = tmp_path / "automin"
    code = main(
        [
            "arena",
            "--automin",
            "--systems",
            "gpt4,ntr,synapse",
            "--meetings",
            "2",
            "--judge",
            f"openai:gpt-4o-mini,base_url={loopback.base_url}",
            "--out",
            str(out),
            *FAST,
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    calls = int(re.search(r"judge calls: (\d+) ", printed).group(1))  # type: ignore[union-attr]
    assert calls == len(loopback.snapshot()) == 3 * 2 * 2 * 3
    assert re.search(r"estimated cost \$\d+\.\d\d at most", printed)
    meta = json.loads((out / "arena.json").read_text())
    assert meta["meetings"] == ["meeting_en_test2023_001", "meeting_en_test2023_002"]
    assert sorted(meta["systems"]) == ["gpt4", "ntr", "synapse"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["comparisons"] == 12 and summary["usage"]["requests"] == 36
    assert set(summary["position_bias"]) == {"completeness", "conciseness"}
    # minutes-check reads the ratings as system-level metrics (the contract's CSV format).
    ratings = str(out / "ratings.csv")
    check = ["minutes-check", "--metrics", "none", "--metric-file", ratings]
    assert main([*check, "--systems", "gpt4,ntr,synapse"]) == 0
    assert "cream_elo_completeness" in capsys.readouterr().out


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("elitr-bench: error: "), err
    return err


def test_bad_input_one_line_nothing_paid(
    tmp_path: Path,
    loopback: LoopbackOpenAI,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loopback.handler = cream_script()
    full = write_run(tmp_path, "model-full", "full")
    # One system.
    assert arena(loopback, tmp_path / "a1", "--automin", "--systems", "gpt4") == 2
    assert "at least 2 systems, got 1 (gpt4)" in _one_line_error(capsys)
    # Runs of different task sets.
    dev = write_run(tmp_path, "model-dev", "half", task="elitr_minutes_dev")
    assert arena(loopback, tmp_path / "a2", str(full), str(dev)) == 2
    assert "runs of different task sets" in _one_line_error(capsys)
    # Two runs with one name.
    assert arena(loopback, tmp_path / "a3", str(full), str(full)) == 2
    assert "NAME=PATH" in _one_line_error(capsys)
    # Above --max-cost (gpt-4o-mini is priced): nothing is asked.
    spec = f"openai:gpt-4o-mini,base_url={loopback.base_url}"
    code = main(
        ["arena", "--automin", "--systems", "gpt4,ntr", "--meetings", "1", "--judge", spec,
         "--out", str(tmp_path / "a4"), "--max-cost", "0.00001", *FAST]
    )  # fmt: skip
    assert code == 2
    assert "exceeds --max-cost" in _one_line_error(capsys)
    # A missing API key for a non-local endpoint fails before any call.
    monkeypatch.delenv("OPENAI_API_KEY")
    code = main(
        ["arena", "--automin", "--systems", "gpt4,ntr", "--meetings", "1", "--judge",
         "openai:gpt-4o", "--out", str(tmp_path / "a5"), *FAST]
    )  # fmt: skip
    assert code == 2
    assert "no API key; export OPENAI_API_KEY" in _one_line_error(capsys)
    assert loopback.snapshot() == []


def test_failed_judge_calls_resume_without_paying_twice(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.openai_server import server_error

    script = cream_script()
    broken = {"on": True}

    def flaky(request: RecordedRequest) -> object:
        if (
            broken["on"]
            and request.prompt.startswith("You now have")
            and "thanks" in request.prompt
        ):
            return server_error()
        return script(request)

    loopback.handler = flaky  # type: ignore[assignment]
    runs = [str(run) for run in two_runs(tmp_path)]
    out = tmp_path / "arena"
    assert arena(loopback, out, *runs, judge_opts=",retries=0") == 1
    err = capsys.readouterr().err.strip().splitlines()
    # Every comparison failed: no ratings, one line saying so and how to resume.
    assert len(err) == 1 and err[0].startswith("elitr-bench: no ratings written: none of")
    assert "(4 error); 4 comparisons failed (judge errors); re-run the same command" in err[0]
    assert not (out / "ratings.csv").exists()
    first = len(loopback.snapshot())
    assert first == 12  # every call was made once; the half-model alignments failed
    assert (out / "comparisons.jsonl").read_text() == ""  # failed comparisons are not kept
    broken["on"] = False
    assert arena(loopback, out, *runs, judge_opts=",retries=0") == 0
    # Only the 4 failed alignments are asked again; extractions and the rest are cached.
    assert len(loopback.snapshot()) == first + 4


def test_run_killed_mid_record_resumes_from_arena_and_cache(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback.handler = cream_script()
    runs = [str(write_run(tmp_path, n, n.split("-")[1])) for n in ("m-full", "m-third")]
    out = tmp_path / "arena"
    assert arena(loopback, out, *runs) == 0
    assert len(loopback.snapshot()) == 12
    # Simulate a kill while the last record was being written: cut it in half.
    path = out / "comparisons.jsonl"
    text = path.read_text()
    cut = text.rstrip("\n").rfind("\n") + 1
    path.write_text(text[: cut + (len(text) - cut) // 2])
    capsys.readouterr()
    assert arena(loopback, out, *runs) == 0
    assert "3 comparisons already judged, 1 to judge" in capsys.readouterr().out
    assert len(loopback.snapshot()) == 12  # its calls were cached before the kill
    lines = path.read_text().splitlines()
    assert len(lines) == 5 and sum(1 for ln in lines if ln.endswith("}")) == 4
    assert json.loads(lines[-1])["status"] == "ok"


GARBAGE_KEY_FACTS: dict[str, Callable[[], Reply | str]] = {
    "prose": lambda: "Both summaries describe a productive meeting with several decisions.",
    "json-without-facts": lambda: '{"facts": []}',
    "empty": lambda: "",
}
# A 200 whose content is null is not a reply at all: the transport retries it and then
# fails the call (tests/llm/test_transport.py), so it is no shape of garbage key facts.


def _is_extraction(request: RecordedRequest) -> bool:
    return request.prompt.startswith("You will be provided with a paragraph")


@pytest.mark.parametrize("shape", sorted(GARBAGE_KEY_FACTS))
def test_garbage_key_fact_reply_is_restated_then_unscored(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str], shape: str
) -> None:
    script = cream_script()

    def handler(request: RecordedRequest) -> Reply | str:
        if _is_extraction(request) and MEETINGS[0] in request.prompt:
            return GARBAGE_KEY_FACTS[shape]()
        return script(request)

    loopback.handler = handler
    runs = [str(run) for run in two_runs(tmp_path)]
    out = tmp_path / "arena"
    # The other meeting is scored: ratings over its matches, exit 0.
    assert arena(loopback, out, *runs) == 0
    requests = loopback.snapshot()
    bad = [r for r in requests if MEETINGS[0] in r.body["messages"][0]["content"]]
    restated = [r for r in bad if len(r.body["messages"]) == 3]
    # Both orders of the bad meeting: a reply in another shape is restated once (the judge
    # repeats itself), an empty one is not (a greedy judge would answer the same again);
    # no alignment is asked on key facts that do not exist.
    assert len(restated) == (0 if shape == "empty" else 2)
    assert len(bad) == 2 + len(restated) and len(requests) == len(bad) + 2 * 3
    assert all(_is_extraction(r) for r in bad if r not in restated)
    comps = [json.loads(x) for x in (out / "comparisons.jsonl").read_text().splitlines()]
    unscored = [c for c in comps if c["meeting_id"] == MEETINGS[0]]
    assert len(unscored) == 2
    for comp in unscored:
        assert comp["status"] == "unscored" and comp["key_facts"] == []
        asked = "(asked 1 time)" if shape == "empty" else "(asked 2 times)"
        assert comp["reason"].endswith(asked)
        assert ("empty" if shape == "empty" else "no list of key facts") in comp["reason"]
        assert all(
            s["scores"] == {"completeness": None, "conciseness": None} for s in comp["sides"]
        )
    assert {c["status"] for c in comps if c["meeting_id"] == MEETINGS[1]} == {"ok"}
    matches = list(csv.DictReader((out / "matches.csv").open()))
    assert {m["result"] for m in matches if m["meeting_id"] == MEETINGS[0]} == {""}
    assert all(m["result"] != "" for m in matches if m["meeting_id"] == MEETINGS[1])
    ratings = list(csv.DictReader((out / "ratings.csv").open()))
    assert len(ratings) == 2 * 2 * 2  # elo/bt x 2 metrics x 2 systems
    assert "2 comparisons (partly) unscored" in capsys.readouterr().out


def test_all_failed_arena_exits_nonzero_and_writes_no_ratings(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    script = cream_script()
    loopback.handler = lambda r: "I cannot do that." if _is_extraction(r) else script(r)
    runs = [str(run) for run in two_runs(tmp_path)]
    out = tmp_path / "arena"
    out.mkdir()
    (out / "ratings.csv").write_text("system,meeting_id,metric,value\nx,,cream_elo_x,1000\n")
    assert arena(loopback, out, *runs) == 1
    # 4 comparisons, each extraction refused once: a greedy judge is not asked again.
    assert len(loopback.snapshot()) == 4
    printed = capsys.readouterr()
    err = printed.err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("elitr-bench: no ratings written: none of the 4 comparisons")
    assert "was scored (4 unscored); every comparison and its reason is in" in err[0]
    assert "most common reason (4 of 4): refused: the judge declined to answer" in err[0]
    # No rating file at all (the stale one is gone), so minutes-check cannot read one.
    for name in ("ratings.csv", "leaderboard.csv", "leaderboard.png", "pairwise.md"):
        assert not (out / name).exists(), name
    assert "ratings.csv" not in printed.out
    assert "**No ratings**" in (out / "leaderboard.md").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rated_metrics"] == [] and "none of the 4" in summary["no_ratings_reason"]
    check = ["minutes-check", "--metrics", "none", "--metric-file", str(out / "ratings.csv")]
    assert main(check) == 2
    assert "no such file" in capsys.readouterr().err
    # The same command again: still nothing to rate, nothing asked (all cached in the arena).
    assert arena(loopback, out, *runs) == 1
    assert len(loopback.snapshot()) == 4


# Two summaries whose lines hold different numbers of sentences: "para" writes its first
# key fact in a four-sentence line, "bullets" one sentence per line.
UNIT_MINUTES = {
    "para": "- Anna chairs the meeting. She opens it at nine. Everyone says hello.\n"
    "- The budget is approved.",
    "bullets": "- Anna chairs the meeting.\n\n- The budget is approved.\n- Lunch follows",
}
UNIT_FACTS = ("Anna chairs the meeting", "The budget is approved")


def unit_script(request: RecordedRequest) -> str:
    """Key facts are UNIT_FACTS; a fact is aligned to every numbered unit containing it."""
    if _is_extraction(request):
        return "Key facts:\n" + "\n".join(f"- {f}." for f in UNIT_FACTS)
    numbered = request.prompt.split("Summary: ", 1)[1].splitlines()
    units = dict(re.match(r"\[(\d+)\] (.*)", ln).groups() for ln in numbered)  # type: ignore[union-attr]
    answer = []
    for fact in UNIT_FACTS:
        cited = [int(n) for n, text in units.items() if fact in text]
        answer.append(
            {"key fact": fact, "response": "Yes" if cited else "No", "line number": cited}
        )
    return "```json\n" + json.dumps(answer) + "\n```"


def test_alignment_numbers_sentences_and_the_unit_is_part_of_the_arena(
    tmp_path: Path, loopback: LoopbackOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    from elitr_bench.judges.cream.segment import summary_sentences

    loopback.handler = unit_script
    runs = [
        str(write_run(tmp_path, name, "", text=lambda m, n=name: UNIT_MINUTES[n]))
        for name in UNIT_MINUTES
    ]
    out = tmp_path / "by-sentence"
    assert arena(loopback, out, *runs) == 0
    requests = loopback.snapshot()
    # Both meetings get the same minutes, so the 2 x 2 x 3 calls hold 6 distinct requests,
    # and each is sent once (its twin from the other meeting waits for it in flight).
    assert len(requests) == 2 * 3 == len({json.dumps(r.body, sort_keys=True) for r in requests})
    # On the wire: the paragraph is the summaries' lines; each alignment numbers sentences.
    para, bullets = (summary_lines(UNIT_MINUTES[n]) for n in ("para", "bullets"))
    assert extraction_prompt(paragraph_of(para, bullets), 16) in [r.prompt for r in requests]
    alignments = {r.prompt for r in requests if not _is_extraction(r)}
    assert alignments == {alignment_prompt(summary_sentences(t)) for t in UNIT_MINUTES.values()}
    numbered = (
        "Summary: [1] - Anna chairs the meeting.\n[2] She opens it at nine.\n"
        "[3] Everyone says hello.\n[4] - The budget is approved."
    )
    assert any(prompt.endswith(numbered) for prompt in alignments)
    comps = [json.loads(x) for x in (out / "comparisons.jsonl").read_text().splitlines()]
    sides = {s["system"]: s for c in comps for s in c["sides"]}
    assert sides["hf,para"]["unit"] == "sentence"
    assert (sides["hf,para"]["n_lines"], sides["hf,para"]["n_sentences"]) == (2, 4)
    assert (sides["hf,bullets"]["n_lines"], sides["hf,bullets"]["n_sentences"]) == (3, 3)
    # Cited sentences / sentences: para 2 of 4, bullets 2 of 3.
    assert sides["hf,para"]["scores"] == {"completeness": 1.0, "conciseness": 0.5}
    assert sides["hf,bullets"]["scores"]["conciseness"] == pytest.approx(2 / 3)
    board = list(csv.DictReader((out / "leaderboard.csv").open()))
    assert next(r["system"] for r in board if r["metric"] == "conciseness") == "hf,bullets"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unit"] == "sentence"
    assert summary["summary_size"]["hf,para"]["lines"] == 4  # 2 meetings x 2 lines
    assert summary["summary_size"]["hf,para"]["sentences"] == 8
    assert summary["summary_size"]["hf,para"]["sentences_per_line"] == 2.0
    assert "numbered by sentence; hf," in (out / "keyfacts.md").read_text()
    assert "| hf,para | 4 | 8 | 2.00 |" in (out / "leaderboard.md").read_text()
    assert json.loads((out / "arena.json").read_text())["judge"]["unit"] == "sentence"

    # --unit line: another folder. The extraction turns come from the cache, and so do
    # the alignments of "bullets" (one sentence per line: the same prompt either way).
    lines_out = tmp_path / "by-line"
    assert arena(loopback, lines_out, *runs, "--unit", "line") == 0
    new = loopback.snapshot()[len(requests) :]
    # Two new requests (para's alignment in both orders); each meeting's twin is deduplicated.
    assert len(new) == 2 and {r.prompt for r in new} == {alignment_prompt(para)}
    comps = [json.loads(x) for x in (lines_out / "comparisons.jsonl").read_text().splitlines()]
    sides = {s["system"]: s for c in comps for s in c["sides"]}
    assert sides["hf,para"]["unit"] == "line"
    assert sides["hf,para"]["scores"]["conciseness"] == 1.0  # one cited sentence per line
    board = list(csv.DictReader((lines_out / "leaderboard.csv").open()))
    assert next(r["system"] for r in board if r["metric"] == "conciseness") == "hf,para"
    capsys.readouterr()

    # A folder never mixes units.
    assert arena(loopback, out, *runs, "--unit", "line") == 2
    err = _one_line_error(capsys)
    assert "this arena counts sentences" in err and "pass --unit sentence" in err
    # An arena written before the unit was recorded was judged by lines.
    meta = json.loads((lines_out / "arena.json").read_text())
    del meta["judge"]["unit"]
    (lines_out / "arena.json").write_text(json.dumps(meta))
    assert arena(loopback, lines_out, *runs) == 2
    assert "this arena counts lines" in _one_line_error(capsys)
    before = len(loopback.snapshot())
    assert arena(loopback, lines_out, *runs, "--unit", "line") == 0
    assert len(loopback.snapshot()) == before


@pytest.mark.parametrize("broken", ["extraction", "alignment"])
def test_reply_without_text_is_unscored_not_an_exception(broken: str) -> None:
    """A client handing back no text at all (None) leaves the comparison unscored."""
    import asyncio

    from elitr_bench.judges.cream.compare import CreamJudge, Entrant
    from elitr_bench.judges.spec import parse_judge_spec
    from elitr_bench.llm.cache import Completion

    class NoText:
        def __init__(self) -> None:
            self.calls = 0

        async def complete(self, request: object, draw: int = 0) -> Completion:
            self.calls += 1
            prompt = getattr(request, "prompt", "")
            if prompt.startswith("You will be provided") and broken == "alignment":
                return Completion("- Anna chairs the meeting.")
            return Completion(None)  # type: ignore[arg-type]

    client = NoText()
    judge = CreamJudge(parse_judge_spec("openai:gpt-4o"), client)  # type: ignore[arg-type]
    a = Entrant.of("a", "- Anna chairs the meeting. She opens it.")
    b = Entrant.of("b", "- Anna chairs.")
    comp = asyncio.run(judge.compare("m", a, b))
    assert comp.status == "unscored"
    if broken == "extraction":
        assert comp.reason == "empty reply: the judge wrote no text (asked 2 times)"
        assert client.calls == 2
    else:
        assert {s.reason for s in comp.sides} == {"empty reply: the judge wrote no text"}
        assert client.calls == 1 + 2 * 2
        assert comp.side("a").n_sentences == 2 and comp.side("a").unit == "sentence"


def test_an_arena_with_batch_on_sends_the_same_requests_and_scores_alike(
    tmp_path: Path, loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extractions in one batch, the alignments that quote them in a second."""
    monkeypatch.setenv("ELITR_BATCH_POLL_S", "0")
    loopback.handler = cream_script()
    runs = [str(write_run(tmp_path, name, name[6:])) for name in ("model-full", "model-half")]
    one, batched = tmp_path / "one", tmp_path / "batched"
    assert arena(loopback, one, *runs, judge_opts=f",cache={tmp_path / 'a.sqlite'}") == 0
    one_by_one = sorted(json.dumps(r.body, sort_keys=True) for r in loopback.taken())
    loopback.reset()
    opts = f",cache={tmp_path / 'b.sqlite'},batch=on"
    assert arena(loopback, batched, *runs, judge_opts=opts) == 0
    assert [r for r in loopback.requests if r.body.get("messages")] == []
    sizes = [b["request_counts"]["total"] for b in loopback.batch_api.batches.values()]
    assert sizes == [4, 8]
    lines = sorted(json.dumps(r.body, sort_keys=True) for r in loopback.batch_api.lines)
    assert lines == [b for b in one_by_one if '"messages"' in b]

    def comparisons(out: Path) -> list[str]:
        return sorted((out / "comparisons.jsonl").read_text().splitlines())

    assert comparisons(batched) == comparisons(one)
    board = "leaderboard.csv"
    assert (batched / board).read_text() == (one / board).read_text()
