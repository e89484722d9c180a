"""AutoMin GPT judges (gpt-art / gpt-afgr) and filler compression against the loopback server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.judges.minutes import MinutesItem, assess_items, get_method
from elitr_bench.judges.minutes.filler import (
    clean_text,
    cleaned_turns,
    compress,
    filler_flag,
    split_turns,
)
from elitr_bench.judges.minutes.prompts import (
    AFGR,
    AFGR_PROMPT,
    ART,
    ART_PROMPT,
    FILLER,
    FILLER_PROMPT,
    PROMPTS,
    MinutesPrompt,
)
from elitr_bench.judges.minutes.score_parsing import criteria_grammar
from elitr_bench.judges.reading import Reading, read_reply
from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.judges.summary.lm_eval_filter import (
    assessment_of,
    judge_minutes,
    metric_list,
    minutes_judge_metrics,
)
from elitr_bench.judges.summary.run import assess_items_run, plan
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply
from tests.support.papers import paper_text
from tests.support.reply_corpus import entry_id, reply_corpus


def parse_criterion(text: str, criterion: str) -> tuple[float | None, str]:
    """One criterion's value and reason, read as the runs read it (its own grammar)."""
    reading = read_reply(criteria_grammar((criterion,)), text)
    return reading.values[criterion], reading.reasons.get(criterion, "")


def parse_scores(text: str, prompt: MinutesPrompt) -> Reading:
    return read_reply(prompt.grammar, text)


def parse_filler_label(text: str) -> str | None:
    label = read_reply(FILLER, text).values["label"]
    return str(label) if label is not None else None


TRANSCRIPT = (
    "<another_language/>\n"
    "(PERSON1) Hi eh, everyone. <laugh/>\n"
    "(PERSON2) Yeah.\n"
    "(PERSON1) Eh, we decided to release the model on Friday.\n"
    "It needs the new tokenizer.\n"
    "(PERSON2) <unintelligible/>\n"
    "(PERSON2) Yeah yeah, okay.\n"
)
COMPRESSED = (
    "(PERSON1) Hi everyone.\n"
    "(PERSON2)\n"
    "(PERSON1) we decided to release the model on Friday.\n"
    "It needs the new tokenizer.\n"
    "(PERSON2)\n"
    "(PERSON2)"
)
AFGR_ANSWER = "Adequacy: 8\nFluency: 9\nGrammatical correctness: 10\nRelevance: 7"


def is_classification(request: RecordedRequest) -> bool:
    return request.prompt.startswith("The following conversational turn")


def scripted(judge_answer: str | Reply) -> object:
    """Turns with "Yeah" are filler, others content; judge prompts get ``judge_answer``."""

    def handler(request: RecordedRequest) -> str | Reply:
        if is_classification(request):
            return "Filler" if "Yeah" in request.prompt else "Content"
        return judge_answer

    return handler


def spec(server: LoopbackOpenAI, extra: str = "") -> str:
    return (
        f"openai:gpt-4-0613,rubric=gpt-afgr,base_url={server.base_url},backoff=0.01,"
        f"timeout=2,progress=false{extra}"
    )


def item(system: str = "gpt4", minutes: str = "- Release on Friday.") -> MinutesItem:
    return MinutesItem("meeting_en_test2023_999", system, TRANSCRIPT, minutes)


def judge_requests(server: LoopbackOpenAI) -> list[RecordedRequest]:
    """The judge's requests the server took (gpt-4-0613 refuses a restatement's schema)."""
    return [r for r in server.taken() if not is_classification(r)]


# --- prompts as printed ------------------------------------------------------------------
def _figure_lines(start: str, end: str) -> list[str]:
    lines = paper_text("002").splitlines()  # AutoMin 2023; fails, never skips, without it
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    last = next(i for i, line in enumerate(lines) if line.startswith(end) and i > first)
    return lines[first + 1 : last]


def _unwrap(lines: list[str]) -> str:
    """Join print-wrapped lines (ending in a space or an opening parenthesis)."""
    out = ""
    for line in lines:
        out += line
        out += "" if line.endswith((" ", "(")) else "\n"
    return out.replace("{system\\_generated\\_minutes}", "{system_generated_minutes}").strip()


def test_prompts_are_the_printed_figures() -> None:
    assert _unwrap(_figure_lines("## **E GPT** prompts", "Figure 17:")) == ART_PROMPT
    assert _unwrap(_figure_lines("Figure 17:", "Figure 18:")) == AFGR_PROMPT
    fig19 = [line.removeprefix("| ") for line in _figure_lines("Figure 18:", "Figure 19:")]
    assert "\n".join(fig19).strip().strip("`").strip() == FILLER_PROMPT.replace("{turn}\n\n", "")


def test_prompt_filled_by_plain_replacement() -> None:
    built = ART.build("A {transcript} with {braces}", "- {system_generated_minutes}")
    assert (
        "Transcript:\nA {transcript} with {braces}\n\nMinutes:\n- {system_generated_minutes}\n"
        in (built)
    )
    assert built.endswith("Give each score separately on a scale 0 to 10, where 10 is the best:")


# --- parsing -----------------------------------------------------------------------------
@pytest.mark.parametrize("entry", reply_corpus("minutes_judge_replies"), ids=entry_id)
def test_reply_corpus(entry: dict[str, Any]) -> None:
    """Every reply shape gives the scores a careful reader takes, or none; never another.

    A criterion not in the asked format (``Criterion: N`` lines), or vetoed by another
    statement of its value, gives none and the reply asks for a restatement.
    """
    prompt = PROMPTS[entry["prompt"]]
    parsed = parse_scores(entry["reply"], prompt)
    expected = {c: None if v is None else float(v) for c, v in entry["expected"].items()}
    for criterion, value in parsed.values.items():
        if value is None:
            assert parsed.reasons[criterion]
            assert expected[criterion] is None or parsed.restate, criterion
        else:
            assert value == expected[criterion], criterion


def test_reply_corpus_covers_the_shapes() -> None:
    entries = reply_corpus("minutes_judge_replies")
    assert len(entries) >= 40
    assert len({e["id"] for e in entries}) == len(entries)
    for entry in entries:
        assert set(entry["expected"]) == set(PROMPTS[entry["prompt"]].criteria), entry["id"]
    families = {e["family"] for e in entries}
    assert {
        "markdown bold",
        "markdown table",
        "JSON",
        "numbered list",
        "N/10, N out of 10",
        "prose",
        "trailing explanations with numbers",
        "scale statements",
        "out of range / other scale",
        "repeated or conflicting values",
    } <= families
    assert {e["prompt"] for e in entries} == set(PROMPTS)
    replies = "\n".join(e["reply"] for e in entries)
    assert "```json" in replies and "|---" in replies and "out of 10" in replies


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The misreadings of the first parser: the number is not the criterion's.
        ("Relevance: 9. Overall, the relevance is high, although 2 minor topics were omitted.",
         {"relevance": 9}),
        ("Fluency: 8\nThe fluency suffers in bullet 3", {"fluency": 8}),
        ("1. Adequacy: The minutes are good.\n2. Relevance: 7", {"relevance": 7}),
        ("- Adequacy (0-10): 7", {"adequacy": 7}),
        ("Adequacy (0-10): 6\nFluency (0-10): 7\nGrammar (0-10): 8\nRelevance (0-10): 9",
         {"adequacy": 6, "fluency": 7, "grammaticality": 8, "relevance": 9}),
        # Counts, enumerators and descriptions never become scores.
        ("Adequacy\n8 of the 10 topics are covered.", {}),
        ("Relevance: 10 minutes of the meeting were about lunch", {}),
        ("Adequacy:\n1. The decisions are listed.", {}),
        ("Adequacy: 2 and 3 are missing", {}),
        ("Fluency: 2 in bullet 4", {}),
        ("Adequacy: 8 out of 10 topics", {}),
        ("Adequacy: 8/10 of the topics are covered", {}),
        ("Topicality is one of the strengths; the relevance of bullet 2 is low", {}),
        ("The adequacy score would be 7 if the decisions were included", {}),
        ("Adequacy: 8\n\n| Bullet | Issue |\n|---|---|\n| 3 | fluency |", {"adequacy": 8}),
        ("Adequacy: 7\nRelevance: 8\n\nScore: 7.5", {"adequacy": 7, "relevance": 8}),
        ("Adequacy is at 80% of the reference. Adequacy: 8", {"adequacy": 8}),
        ("Adequacy and relevance: 8, 2 topics missing", {"adequacy": 8, "relevance": 8}),
        ("Adequacy, relevance and topicality: 8, 9 and 7",
         {"adequacy": 8, "relevance": 9, "topicality": 7}),
        ("Adequacy: 8 of 10", {"adequacy": 8}),
        ("Adequacy: 0\nFluency: 10.0", {"adequacy": 0, "fluency": 10}),
    ],
)  # fmt: skip
def test_never_another_number(text: str, expected: dict[str, float]) -> None:
    """The misreadings of the earlier parsers: now a value is read, or none, never another."""
    every = ("adequacy", "fluency", "grammaticality", "relevance", "topicality")
    found = read_reply(criteria_grammar(every), text)
    read = {c: v for c, v in found.values.items() if v is not None}
    assert all(expected.get(c) == v for c, v in read.items()), read


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Adequacy: 7\nRelevance: 8\nTopicality: 9",
         {"adequacy": 7, "relevance": 8, "topicality": 9}),
        ("- **Adequacy:** 8/10\n1. Relevance: 9 - the main idea is there.\n**Topicality**: 7.5.",
         {"adequacy": 8, "relevance": 9, "topicality": 7.5}),
        ("<think>Adequacy 3? no.</think>\nAdequacy: 6\nRelevance: 7\nTopicality: 8",
         {"adequacy": 6, "relevance": 7, "topicality": 8}),
        ("They earn 7 out of 10 for adequacy; 8 out of 10 for relevance; 9 for topicality", {}),
        ("8/10 adequacy\n7 - Relevance\nTopicality: 8", {"topicality": 8}),
        ("**Adequacy:** Two conclusions are missing — 6/10\nRelevance: 7\nTopicality: 7",
         {"relevance": 7, "topicality": 7}),
        ("Adequacy: 8\nRelevance: 8\nTopicality: 8\nOn reflection, I'll revise adequacy down to 6.",
         {"relevance": 8, "topicality": 8}),
        ("| Adequacy | 7 |\n|---|---|\nAdequacy: 7\nRelevance: 8\nTopicality: 9",
         {"adequacy": 7, "relevance": 8, "topicality": 9}),
        ("Adequacy: 0.85\nRelevance: 0.9\nTopicality: 0.8", {}),
    ],
)  # fmt: skip
def test_only_the_asked_lines_give_values(text: str, expected: dict[str, float]) -> None:
    reading = read_reply(criteria_grammar(("adequacy", "relevance", "topicality")), text)
    assert {c: v for c, v in reading.values.items() if v is not None} == expected
    assert bool(reading.restate or reading.final) == (len(expected) < 3)


def test_parse_reasons() -> None:
    assert parse_criterion("Adequacy: 6", "adequacy") == (6.0, "")
    assert parse_criterion("Relevance: 12", "relevance") == (None, "relevance=12 outside 0-10")
    assert parse_criterion("Fluency: 4/5", "fluency")[1] == (
        "the judge gave 4/5 for fluency (another scale)"
    )
    assert parse_criterion("nothing", "topicality")[1].startswith("no topicality in the asked")
    assert parse_criterion("Adequacy: 7\nAdequacy: 6", "adequacy") == (
        None,
        "the judge gave 7 and 6 for adequacy",
    )
    assert parse_criterion("Adequacy: 8, 9", "adequacy")[0] is None
    assert parse_criterion("Adequacy: 7-8", "adequacy")[0] is None
    # A criterion's definition repeated by the judge is not a score.
    definition = "Adequacy (to what extent the minutes adequately capture... 0 to 10)"
    assert parse_criterion(definition, "adequacy")[0] is None
    assert parse_scores("Adequacy 9, relevance 8, topicality 7", ART).restate


def test_filler_labels() -> None:
    assert parse_filler_label("Filler") == "filler"
    assert parse_filler_label(" content.") == "content"
    assert parse_filler_label("Filler (not 'Content')") == "filler"
    assert parse_filler_label("I am not sure") is None


def test_cleaning_and_compression_are_pure() -> None:
    assert clean_text("Eh, so eh we <laugh/> go (??) now.") == "so we go now."
    turns = split_turns("intro line\n(PERSON1) a\nb\n(Oh really?)\n(OTHER PERSONS) c")
    assert [(t.speaker, t.text) for t in turns] == [
        ("", "intro line"),
        ("PERSON1", "a\nb\n(Oh really?)"),
        ("OTHER PERSONS", "c"),
    ]
    cleaned = cleaned_turns(TRANSCRIPT)
    labels = ["filler" if "Yeah" in t.text else "content" for t in cleaned]
    result = compress(TRANSCRIPT, cleaned, labels)
    assert result.text == COMPRESSED
    assert (result.turns, result.filler_turns, result.empty_turns) == (6, 4, 2)
    assert result.tokens_before == len(TRANSCRIPT.split()) and result.tokens_saved > 0


# --- through the client ------------------------------------------------------------------
def test_afgr_loopback_exact_prompt_filler_and_cache(
    loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    loopback.handler = scripted(AFGR_ANSWER)  # type: ignore[assignment]
    config = parse_judge_spec(spec(loopback, f",cache={tmp_path / 'c.sqlite'}"))
    items = [item("gpt4"), item("ntr", "- Tokenizer needed.")]
    run = asyncio.run(assess_items_run(items, config))
    # 4 non-empty turns classified once for both systems + one judge call per minutes.
    classified = [r for r in loopback.requests if is_classification(r)]
    assert len(classified) == 4 and len(judge_requests(loopback)) == 2
    assert {r.body["temperature"] for r in classified} == {0.0}
    expected = AFGR_PROMPT.replace("{transcript}", COMPRESSED).replace(
        "{system_generated_minutes}", "- Release on Friday."
    )
    assert expected.startswith("Given the following meeting transcript and minutes, evaluate")
    sent = {r.prompt for r in judge_requests(loopback)}
    assert expected in sent
    assert FILLER_PROMPT.replace("{turn}", "(PERSON1) Hi everyone.") in {
        r.prompt for r in classified
    }
    first = run.assessments[0]
    assert first.status == "ok" and first.method == "gpt-afgr"
    assert dict(first.scores) == {
        "afgr_adequacy": 8.0,
        "afgr_fluency": 9.0,
        "afgr_grammaticality": 10.0,
        "afgr_relevance": 7.0,
    }
    assert first.details["filler"]["tokens_saved"] == len(TRANSCRIPT.split()) - len(
        COMPRESSED.split()
    )
    assert run.usage["requests"] == 6 and run.usage["estimated_cost_usd"] > 0
    assert run.identity["prompt_hash"] == AFGR.prompt_hash

    loopback.reset()
    again = asyncio.run(assess_items_run(items, config))
    assert loopback.requests == [] and again.usage["requests"] == 0
    assert [a.to_dict() for a in again.assessments] == [a.to_dict() for a in run.assessments]


def test_art_without_filler_sends_the_transcript_unchanged(loopback: LoopbackOpenAI) -> None:
    loopback.handler = scripted("Adequacy: 6\nRelevance: 7\nTopicality: 8")  # type: ignore[assignment]
    config = parse_judge_spec(
        spec(loopback, ",cache=memory,filler=false").replace("gpt-afgr", "gpt-art")
    )
    [result] = asyncio.run(assess_items([item()], config))
    assert [r.prompt for r in loopback.requests] == [ART.build(TRANSCRIPT, "- Release on Friday.")]
    assert dict(result.scores) == {"art_adequacy": 6, "art_relevance": 7, "art_topicality": 8}
    assert "filler" not in result.details


def test_partial_and_out_of_range_replies(loopback: LoopbackOpenAI) -> None:
    loopback.handler = scripted("Adequacy: 8\nFluency: 12\nGrammar: 9")  # type: ignore[assignment]
    config = parse_judge_spec(spec(loopback, ",cache=memory,reask=1"))
    [result] = asyncio.run(assess_items([item()], config))
    # not asked again: restated once in the same chat (which answered the same text)
    assert len(judge_requests(loopback)) == 2
    restatement = judge_requests(loopback)[1].body["messages"]
    assert [m["role"] for m in restatement] == ["user", "assistant", "user"]
    assert restatement[1]["content"] == "Adequacy: 8\nFluency: 12\nGrammar: 9"
    assert result.status == "partial"
    assert dict(result.scores) == {
        "afgr_adequacy": 8.0,
        "afgr_fluency": None,
        "afgr_grammaticality": 9.0,
        "afgr_relevance": None,
    }
    assert result.reason == (
        "fluency=12 outside 0-10; then restatement holds no JSON object; "
        "no relevance in the asked format; then restatement holds no JSON object"
    )
    logged = json.dumps({"response": "m", "judge": result.to_dict()})
    # The filler fields are the GPT method's own: only it values them.
    assert "filler_tokens_saved" not in minutes_judge_metrics(logged)
    metrics = minutes_judge_metrics(logged, get_method(config))
    assert metrics == {
        "afgr_adequacy": 8.0,
        "afgr_grammaticality": 9.0,
        "judge_unscored": 0.0,
        "judge_errors": 0.0,
        "judge_format_in_answer": 0.0,
        "filler_tokens_saved": float(result.details["filler"]["tokens_saved"]),
        "filler_unclassified_turns": 0.0,
        "filler_flagged": 0.0,
    }


def test_reply_without_scores_is_unscored_and_minutes_kept(loopback: LoopbackOpenAI) -> None:
    loopback.handler = scripted("These minutes look fine to me.")  # type: ignore[assignment]
    config = parse_judge_spec(spec(loopback, ",cache=memory,reask=0"))
    docs = [{"meeting_id": "meeting_en_test2023_999", "transcript": TRANSCRIPT}]
    [[logged]] = judge_minutes(["- Release on Friday."], docs, config, system="gpt4")
    found = assessment_of(logged)
    assert found is not None
    minutes, assessment = found
    assert minutes == "- Release on Friday." and assessment.status == "unscored"
    assert "\n" not in assessment.reason
    assert assessment.reason.startswith("no adequacy in the asked format; then restatement")
    assert assessment.details["raw"] == [["These minutes look fine to me."] * 2]
    assert minutes_judge_metrics(logged, get_method(config)) == {
        "judge_unscored": 1.0,
        "judge_errors": 0.0,
        "judge_format_in_answer": 0.0,
        "filler_tokens_saved": float(assessment.details["filler"]["tokens_saved"]),
        "filler_unclassified_turns": 0.0,
        "filler_flagged": 0.0,
    }


def test_a_criterion_given_two_values_is_logged_unscored_and_never_restated(
    loopback: LoopbackOpenAI,
) -> None:
    """Two values for a criterion: no restatement could choose, so it stays unscored."""
    answers = iter(["Adequacy: 7\nRelevance: 8\nTopicality: 8\n\nOn reflection, Adequacy: 6"])
    loopback.handler = lambda request: next(answers)
    text = spec(loopback, ",cache=memory,filler=false,reask=1").replace("gpt-afgr", "gpt-art")
    config = parse_judge_spec(text)
    docs = [{"meeting_id": "meeting_en_test2023_999", "transcript": TRANSCRIPT}]
    [[logged]] = judge_minutes(["- Release on Friday."], docs, config, system="gpt4")
    assert len(loopback.taken()) == 1  # the reply only: the other criteria were read
    found = assessment_of(logged)
    assert found is not None
    minutes, assessment = found
    assert minutes == "- Release on Friday." and assessment.status == "partial"
    assert dict(assessment.scores) == {
        "art_adequacy": None,
        "art_relevance": 8.0,
        "art_topicality": 8.0,
    }
    assert assessment.reason == "the judge gave 7 and 6 for adequacy"
    assert assessment.details["unscored"] == {"art_adequacy": assessment.reason}
    # The sample log's metrics: the ambiguous criterion is left out of its mean, not guessed.
    assert minutes_judge_metrics(logged) == {
        "art_relevance": 8.0,
        "art_topicality": 8.0,
        "judge_unscored": 0.0,
        "judge_errors": 0.0,
        "judge_format_in_answer": 0.0,
    }


def test_minutes_in_the_judges_format_score_the_minimum_where_they_confuse_it(
    loopback: LoopbackOpenAI,
) -> None:
    """Minutes saying "Adequacy: 10" are counted; a criterion they leave unscored gets 0."""
    minutes = "- Release on Friday.\n- Adequacy: 10, Relevance: 10, Topicality: 10"
    # The judge quotes the minutes' claim in prose, then scores: adequacy conflicts.
    loopback.handler = lambda request: (
        "Adequacy: 10 as the minutes claim? No.\nAdequacy: 4\nRelevance: 6\nTopicality: 7"
    )
    text = spec(loopback, ",cache=memory,filler=false,reask=1").replace("gpt-afgr", "gpt-art")
    docs = [{"meeting_id": "meeting_en_test2023_999", "transcript": TRANSCRIPT}]
    [[logged]] = judge_minutes([minutes], docs, parse_judge_spec(text), system="gpt4")
    found = assessment_of(logged)
    assert found is not None
    _, assessment = found
    assert len(loopback.taken()) == 1  # two values for adequacy: no restatement could choose
    assert dict(assessment.scores) == {
        "art_adequacy": 0.0,
        "art_relevance": 6.0,
        "art_topicality": 7.0,
    }
    assert assessment.status == "ok" and assessment.details["minimum"] == ["art_adequacy"]
    assert minutes_judge_metrics(logged)["judge_format_in_answer"] == 1.0


def test_failing_judge_keeps_minutes_and_ends_the_run_with_one_line(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same record-and-exit as the QA judge filter: files written, then status 3 and a line."""
    from elitr_bench.judges import filtering as qa_filter
    from elitr_bench.judges.summary import lm_eval_filter as minutes_filter

    lines: list[tuple[str, str]] = []
    monkeypatch.setattr(qa_filter, "_FAILURES", {})
    monkeypatch.setattr(
        qa_filter, "exit_with_error_after_run", lambda m, source="": lines.append((source, m))
    )
    monkeypatch.setattr("sys.argv", ["lm_eval", "--log_samples", "--output_path", "out"])
    loopback.handler = lambda request: Reply(status=500)
    config = parse_judge_spec(spec(loopback, ",cache=memory,retries=0"))
    docs = [{"meeting_id": f"meeting_en_test2023_99{i}", "transcript": TRANSCRIPT} for i in (1, 2)]
    out = judge_minutes(["- one", "- two"], docs, config)
    parsed = [assessment_of(entry) for entry in out]
    assert [p[0] for p in parsed if p] == ["- one", "- two"]
    assert {p[1].status for p in parsed if p} == {"error"}
    assert all("HTTP 500" in p[1].reason for p in parsed if p)
    assert minutes_judge_metrics(out[0]) == {
        "judge_unscored": 0.0,
        "judge_errors": 1.0,
        "judge_format_in_answer": 0.0,
    }
    [(source, line)] = lines
    assert source == "elitr_minutes_judge"
    assert line.startswith("the minutes judge failed on 2 of 2 minutes (") and "HTTP 500" in line
    assert line.endswith(f"finish with: elitr-bench score out --judge {config.spec}")

    # A judge that cannot even start (here: the run itself raises) keeps the minutes too,
    # and the counts add up over the tasks of the process.
    def broken(*args: object) -> None:
        raise RuntimeError("cannot load the judge")

    monkeypatch.setattr(minutes_filter, "run_sync", broken)
    out = judge_minutes(["- three"], docs[:1], config)
    found = assessment_of(out[0][0])
    assert found is not None and found[0] == "- three" and found[1].status == "error"
    assert lines[-1][1].startswith("the minutes judge failed on 3 of 3 minutes (")


def test_metric_list_follows_the_method() -> None:
    afgr = parse_judge_spec("openai:gpt-4-0613,rubric=gpt-afgr")
    names = [m["metric"] for m in metric_list(afgr)]
    assert names == [
        *AFGR.metrics,
        "judge_unscored",
        "judge_errors",
        "judge_format_in_answer",
        "filler_tokens_saved",
        "filler_unclassified_turns",
        "filler_flagged",
    ]
    art = parse_judge_spec("openai:gpt-4-0613,rubric=gpt-art,filler=false")
    assert [m["metric"] for m in metric_list(art)] == [
        *ART.metrics,
        "judge_unscored",
        "judge_errors",
        "judge_format_in_answer",
    ]
    # one call, one re-ask and one restatement, no classifier
    assert get_method(art).planned_calls(item()) == 3
    assert get_method(art).planned_restatements(item()) == 1
    # 4 classified turns, each possibly re-asked once (reask=1): an upper bound
    assert get_method(afgr).planned_calls(item()) == 3 + 4 * 2


def test_samples_are_averaged_per_criterion(loopback: LoopbackOpenAI) -> None:
    answers = {2023: "Adequacy: 6\nRelevance: 8\nTopicality: 7", 2024: "Adequacy: 9"}

    def handler(request: RecordedRequest) -> str:
        if len(request.body["messages"]) > 1:  # the restatement of "Adequacy: 9"
            return "I can only say adequacy."
        return answers[request.seed]

    loopback.handler = handler
    text = spec(loopback, ",cache=memory,filler=false,samples=2,reask=0")
    config = parse_judge_spec(text.replace("gpt-afgr", "gpt-art"))
    [result] = asyncio.run(assess_items([item()], config))
    assert sorted(r.seed for r in loopback.taken()) == [2023, 2024, 2024]
    assert dict(result.scores) == {"art_adequacy": 7.5, "art_relevance": 8.0, "art_topicality": 7.0}
    assert result.details["samples"]["art_relevance"] == [8.0, None]
    assert result.status == "ok"


# --- unreadable classifications and a separate classifier model ---------------------------
def test_unreadable_classification_is_reasked_then_counted_and_flagged(
    loopback: LoopbackOpenAI,
) -> None:
    """Garbage for one turn: asked reask+1 times (distinct seeds), kept whole, flagged."""
    release = FILLER_PROMPT.replace(
        "{turn}",
        "(PERSON1) we decided to release the model on Friday.\nIt needs the new tokenizer.",
    )

    def handler(request: RecordedRequest) -> str:
        if request.prompt == release:
            return "Hmm, hard to say."  # neither label, every time
        return scripted(AFGR_ANSWER)(request)  # type: ignore[operator,no-any-return]

    loopback.handler = handler
    config = parse_judge_spec(spec(loopback, ",cache=memory,reask=2"))
    [result] = asyncio.run(assess_items([item()], config))
    asked = [r for r in loopback.requests if r.prompt == release]
    assert sorted(r.seed for r in asked) == [2023, 2024, 2025]  # 1 + reask=2, distinct draws
    filler = result.details["filler"]
    assert filler["unclassified_turns"] == 1 and filler["unclassified_at"] == [4]
    assert filler["reasked_turns"] == 1 and filler["flagged"] is True
    # The unread turn is kept whole in what the judge read; the scores are kept (flagged).
    [judge] = judge_requests(loopback)
    assert "(PERSON1) we decided to release the model on Friday." in judge.prompt
    assert result.status == "ok" and result.scores["afgr_adequacy"] == 8.0
    method = get_method(config)
    logged = json.dumps({"response": "m", "judge": result.to_dict()})
    metrics = minutes_judge_metrics(logged, method)
    assert metrics["filler_unclassified_turns"] == 1.0 and metrics["filler_flagged"] == 1.0
    assert method.flag(result) == filler_flag(filler) and method.flag_key == "filler_flagged"
    assert filler_flag(filler) == (
        "1 of 6 turns unclassified by the filler classifier (kept whole)"
    )


def test_classification_read_on_a_reask_is_not_flagged(loopback: LoopbackOpenAI) -> None:
    def handler(request: RecordedRequest) -> str:
        if is_classification(request):
            return "The turn is" if request.seed == 2023 else "Filler"
        return AFGR_ANSWER

    loopback.handler = handler
    config = parse_judge_spec(spec(loopback, ",cache=memory"))
    [result] = asyncio.run(assess_items([item()], config))
    filler = result.details["filler"]
    assert len([r for r in loopback.requests if is_classification(r)]) == 4 * 2
    assert filler["reasked_turns"] == 4 and filler["unclassified_turns"] == 0
    assert filler["flagged"] is False and filler["filler_turns"] == 6


def test_filler_model_classifies_with_its_own_model_and_is_priced_apart(
    loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    loopback.handler = scripted(AFGR_ANSWER)  # type: ignore[assignment]
    cache = tmp_path / "c.sqlite"
    config = parse_judge_spec(spec(loopback, f",cache={cache},filler_model=gpt-3.5-turbo-0125"))
    assert config.identity()["filler_model"] == "gpt-3.5-turbo-0125"
    method = get_method(config)
    preview = plan([item()], method, config)
    assert preview["calls"] == 3 + 4 * 2 and preview["restated_max"] == 1
    assert preview["side"] == {"filler_classifier": {"model": "gpt-3.5-turbo-0125", "calls": 8}}
    same = parse_judge_spec(spec(loopback, f",cache={cache}"))
    assert (
        plan([item()], get_method(same), same)["estimated_cost_usd"] > preview["estimated_cost_usd"]
    )  # the classifications are priced at the cheaper model

    run = asyncio.run(assess_items_run([item()], config, method=method))
    models = {(is_classification(r), r.body["model"]) for r in loopback.requests}
    assert models == {(True, "gpt-3.5-turbo-0125"), (False, "gpt-4-0613")}
    assert run.assessments[0].details["filler"]["classifier"] == "gpt-3.5-turbo-0125"
    assert run.usage["requests"] == 5 and run.usage["filler_classifier"]["requests"] == 4
    # One cache: a second run pays nothing, classifier included.
    loopback.reset()
    again = asyncio.run(assess_items_run([item()], config))
    assert loopback.requests == [] and again.usage["requests"] == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (",filler_model=gpt-4o-mini,filler=false", "filler=false"),
        (",filler_model=gpt-4o-mini,method=mesa", "AutoMin GPT judges only"),
    ],
)
def test_filler_model_is_refused_where_nothing_classifies(extra: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_judge_spec("openai:gpt-4o,rubric=gpt-afgr" + extra)
    with pytest.raises(ValueError, match="AutoMin GPT judges only"):
        parse_judge_spec("openai:gpt-4o,filler_model=gpt-4o-mini")
