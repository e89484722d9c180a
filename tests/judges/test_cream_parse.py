"""CREAM replies in the asked formats, restated otherwise; App. A.1 completeness and conciseness."""

from __future__ import annotations

import json

import pytest

from elitr_bench.judges.cream.parse import KEY_FACTS, parse_alignment
from elitr_bench.judges.cream.scoring import SideScore, completeness, conciseness, score_side
from elitr_bench.judges.reading import read_reply

FACTS = ("Anna chairs the meeting.", "The budget is approved.", "Bob leaves in May.")


def _reply(*entries: tuple[str, object, object]) -> str:
    return json.dumps([{"key fact": f, "response": r, "line number": n} for f, r, n in entries])


@pytest.mark.parametrize(
    "reply",
    [
        # Numbered list under a heading, with a closing remark.
        "Here are the key facts:\n1. Anna chairs the meeting.\n2. The budget is approved.\n"
        "3. Bob leaves in May.\n\nLet me know if you need more.",
        # The prompt's own "*" bullets, a repeated fact dropped.
        "* Anna chairs the meeting.\n* The budget is approved.\n* Bob leaves in May.\n"
        "* Anna chairs the meeting.",
        # "-" bullets, bold fact text, a reasoning block before them.
        "<think>- Anna chairs.\n- Budget.</think>\n- **Anna chairs the meeting.**\n"
        "- The budget is approved.\n- Bob leaves in May.",
        # A fenced block of bullets.
        "```\n- Anna chairs the meeting.\n- The budget is approved.\n- Bob leaves in May.\n```",
    ],
)
def test_key_facts_in_the_asked_list(reply: str) -> None:
    reading = read_reply(KEY_FACTS, reply)
    assert reading.value("key_facts") == FACTS and not reading.restate


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("```\n```", "no list"),
        ("The meeting was chaired by Anna, who got the budget approved.", "no list"),
        ("Anna chairs the meeting.\nThe budget is approved.", "no list"),
        ('["Anna chairs the meeting.", "The budget is approved."]', "no list"),
        ('{"facts": []}', "no list"),
        ("| # | Key fact |\n|---|---|\n| 1 | Anna chairs |", "no list"),
        ("- Summary 1:\n  - Anna chairs the meeting.\n- Summary 2:\n  - Bob leaves.", "groups"),
        ("- Anna chairs the meeting.\n  - Anna, the meeting", "nests"),
        ("1. Decisions\n   1.1. Anna chairs the meeting.", "nests"),
        ("**Key facts:**\n- **Decisions:**\n- Anna chairs the meeting.", "groups"),
        ("- Anna chairs the meeting.\n\nRevised:\n- Anna chairs.\n- Bob leaves.", "more than one"),
        ("* Kevin Carr set off on his journey from Haytor.\n* Anna chairs.", "example key facts"),
    ],
)
def test_reply_not_in_the_asked_list_is_restated(reply: str, reason: str) -> None:
    reading = read_reply(KEY_FACTS, reply)
    assert reading.value("key_facts") is None
    assert reason in reading.reason and reading.restate


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("  \n ", "empty"),
        (None, "empty"),  # a 200 whose message or content was missing
        ("I'm sorry, but I can't help with that request.", "refused"),
    ],
)
def test_empty_or_refused_extraction_is_asked_again(reply: str | None, reason: str) -> None:
    reading = read_reply(KEY_FACTS, reply)
    assert reading.value("key_facts") is None and reason in reading.reason
    assert reading.reask and not reading.restate


def test_key_facts_restatement_is_strict_json() -> None:
    from elitr_bench.judges.cream.parse import KEY_FACTS
    from elitr_bench.judges.reading import Reading, read_restatement

    first = read_reply(KEY_FACTS, "Anna chairs the meeting, and the budget is approved.")
    good = read_restatement(KEY_FACTS, first, json.dumps({"key_facts": list(FACTS)}))
    assert good.value("key_facts") == FACTS and good.restated
    for bad in ('{"facts": ["a"]}', '["a"]', '{"key_facts": "a"}', '{"key_facts": []}', "- a"):
        assert read_restatement(KEY_FACTS, Reading({}), bad).value("key_facts") is None, bad
    assert KEY_FACTS.restatement.schema["required"] == ["key_facts"]


def test_alignment_scores_by_hand() -> None:
    # 3 key facts, a 4-line summary: facts 1 and 3 supported by lines {1, 2} and {2}.
    reply = _reply((FACTS[0], "Yes", [1, 2]), (FACTS[1], "No", []), (FACTS[2], "Yes", [2]))
    side = score_side("sys", 4, FACTS, reply)
    assert side.scores == {"completeness": 2 / 3, "conciseness": 2 / 4}
    assert [a.supported for a in side.alignments] == [True, False, True]
    assert completeness(side.alignments) == pytest.approx(0.6667, abs=1e-4)
    assert conciseness(side.alignments, 4) == 0.5


@pytest.mark.parametrize(
    "reply",
    [
        # The answer as the prompt spells it, in a fence after a lead-in, entries reordered.
        'Sure:\n```json\n[{"key fact": "c", "response": "Yes", "line number": [1, 2]},\n'
        '{"key fact": "a", "response": "Yes", "line number": [1]},\n'
        '{"key fact": "b", "response": "no", "line number": []}]\n```',
        # Fenced, a trailing comma repaired (syntax only).
        '```\n[{"key fact": "a", "response": "Yes", "line number": [1]}, '
        '{"key fact": "b", "response": "No", "line number": [2]}, '
        '{"key fact": "c", "response": "Yes.", "line number": [2, 1, 2]},]\n```',
    ],
)
def test_alignment_in_the_asked_json(reply: str) -> None:
    alignments = parse_alignment(reply, ("a", "b", "c"), 2).value("alignments")
    assert [(a.supported, set(a.lines)) for a in alignments] == [
        (True, {1}),
        (False, set()),
        (True, {1, 2}),
    ]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (_reply(("a", "Yes", [3])), "line 3 is outside the summary (lines 1-2)"),
        (_reply(("a", "Yes", [0])), "line 0 is outside the summary"),
        (_reply(("a", "Maybe", [1])), "response 'Maybe' is neither"),
        (_reply(("a", True, [1])), "is neither"),
        (json.dumps([{"key fact": "a", "line number": [1]}]), "is not {"),
        (_reply(("a", "Yes", ["one"])), "is not a list of integers"),
        (_reply(("a", "Yes", "1")), "is not a list of integers"),
        (_reply(("a", "Yes", [1]), ("b", "No", [])), "2 entries for 1 key facts"),
        ("The summary is fine, I cannot tell more.", "holds 0 JSON lists"),
        ('{"results": [{"key fact": "a", "response": "Yes", "line number": [1]}]}', "0 JSON"),
        (_reply(("a", "Yes", [1])) + "\nSo 0 of the 1 key facts are inferred.", "gave [Yes 1]"),
    ],
)
def test_alignment_not_in_the_asked_json_is_restated(reply: str, reason: str) -> None:
    side = score_side("sys", 2, ("a",), reply)
    assert side.scores == {"completeness": None, "conciseness": None}
    assert reason in side.reason
    assert side.raw == reply  # the judge's text is kept
    # Two answers (a list and a count that disagree) are never restated (issue 46).
    assert bool(parse_alignment(reply, ("a",), 2).restate) == ("gave" not in reason)


def test_alignment_restatement_is_strict_json() -> None:
    from elitr_bench.judges.cream.parse import AlignmentGrammar
    from elitr_bench.judges.reading import Reading, read_restatement

    grammar = AlignmentGrammar(("a", "b"), 3)
    entries = [
        {"key fact": "a", "response": "Yes", "line number": [1]},
        {"key fact": "b", "response": "No", "line number": []},
    ]
    got = read_restatement(grammar, Reading({}), json.dumps({"alignment": entries}))
    assert [a.supported for a in got.value("alignments")] == [True, False]
    for bad in (json.dumps(entries), json.dumps({"alignment": entries[:1]}), "{}"):
        assert read_restatement(grammar, Reading({}), bad).value("alignments") is None
    schema = grammar.restatement.schema
    assert schema["properties"]["alignment"]["items"]["properties"]["response"]["enum"] == [
        "Yes",
        "No",
    ]


@pytest.mark.parametrize("reply", [None, "", "   "])
def test_missing_alignment_text_is_unscored_not_an_exception(reply: str | None) -> None:
    side = score_side("sys", 2, ("a",), reply, n_sentences=3, unit="sentence")
    assert side.scores == {"completeness": None, "conciseness": None}
    assert side.reason.startswith("empty reply") and side.raw == (reply or "")


def test_sentence_unit_checks_and_divides_by_sentences() -> None:
    # 2 lines holding 5 sentences: sentence 5 exists, conciseness is 2 of 5 sentences.
    reply = _reply(("a", "Yes", [1, 5]), ("b", "No", []))
    side = score_side("sys", 2, ("a", "b"), reply, n_sentences=5, unit="sentence")
    assert side.scores == {"completeness": 0.5, "conciseness": 2 / 5}
    assert (side.unit, side.n_lines, side.n_sentences, side.n_units) == ("sentence", 2, 5, 5)
    # The same reply read by lines: line 5 does not exist.
    side = score_side("sys", 2, ("a", "b"), reply, n_sentences=5, unit="line")
    assert side.scores["conciseness"] is None and "outside the summary (lines 1-2)" in side.reason
    # Records keep both counts and the unit; records without them were judged by lines.
    again = SideScore.from_dict(side.to_dict())
    assert again == side
    legacy = {k: v for k, v in side.to_dict().items() if k not in ("unit", "n_sentences")}
    assert (SideScore.from_dict(legacy).unit, SideScore.from_dict(legacy).n_sentences) == (
        "line",
        None,
    )


def test_yes_without_lines_leaves_only_conciseness_unscored() -> None:
    side = score_side("sys", 3, ("a", "b"), _reply(("a", "Yes", []), ("b", "No", [2])))
    assert side.scores == {"completeness": 0.5, "conciseness": None}
    assert '"Yes" without line numbers' in side.reason
    # Lines cited for a "No" support nothing.
    side = score_side("sys", 3, ("a", "b"), _reply(("a", "Yes", [1]), ("b", "No", [2])))
    assert side.scores == {"completeness": 0.5, "conciseness": 1 / 3}
