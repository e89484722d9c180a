"""CREAM replies: tolerant syntax, strict meaning; App. A.1 completeness and conciseness."""

from __future__ import annotations

import json

import pytest

from elitr_bench.judges.cream.parse import parse_alignment, parse_key_facts
from elitr_bench.judges.cream.scoring import SideScore, completeness, conciseness, score_side

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
        # Markdown: bold heading, "-" bullets, bold fact text.
        "**Key facts:**\n\n- **Anna chairs the meeting.**\n- The budget is approved.\n"
        "- Bob leaves in May.",
        # "Key facts:" header line then a numbered list with ")" and bold enumerators.
        "Key facts:\n1) Anna chairs the meeting.\n**2.** The budget is approved.\n"
        "3) Bob leaves in May.",
        # Grouped by summary: the group headings are list items ending in ":", not facts.
        "- Summary 1:\n  - Anna chairs the meeting.\n  - The budget is approved.\n"
        "- Summary 2:\n  - Bob leaves in May.",
        # A fenced block of bullets.
        "```\n- Anna chairs the meeting.\n- The budget is approved.\n- Bob leaves in May.\n```",
        # A markdown heading, bracketed numbers, an explanation that mentions numbers.
        "### Key facts (3 of at most 16)\n[1] Anna chairs the meeting.\n"
        "[2] The budget is approved.\n[3] Bob leaves in May.\n\nI merged 2 duplicates.",
        # JSON: the same list in another syntax (a list, or an object holding one).
        '["Anna chairs the meeting.", "The budget is approved.", "Bob leaves in May."]',
        '```json\n{"key facts": ["Anna chairs the meeting.", "The budget is approved.", '
        '"Bob leaves in May."]}\n```',
    ],
)
def test_key_facts_in_any_list_form(reply: str) -> None:
    assert parse_key_facts(reply).value("key_facts") == FACTS


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("  \n ", "empty"),
        (None, "empty"),  # a 200 whose message or content was missing
        ("```\n```", "no bullet list"),
        # Prose only: no list, so no key facts (it would become one "key fact").
        ("The meeting was chaired by Anna, who got the budget approved.", "no bullet list"),
        ("I'm sorry, but I can't help with that request.", "no bullet list"),
        # Plain lines without bullets are not the list the prompt asks for.
        ("Anna chairs the meeting.\nThe budget is approved.", "no bullet list"),
        # JSON without a list of key facts.
        ('{"facts": []}', "JSON without a list of key facts"),
        ("[]", "JSON without a list of key facts"),
        ('{"facts": ["a"], "entities": ["b"]}', "JSON without a list of key facts"),
        ('[{"key fact": "a", "response": "Yes"}]', "JSON without a list of key facts"),
        ('```json\n{"key facts": null}\n```', "JSON without a list of key facts"),
        # A table without a column of facts is not a list either.
        ("| # | who |\n|---|---|\n| 1 | Anna chairs |", "no bullet list"),
        # Only headings.
        ("- Summary 1:\n- Summary 2:", "no bullet list"),
    ],
)
def test_reply_without_a_key_fact_list_is_refused(reply: str | None, reason: str) -> None:
    reading = parse_key_facts(reply)
    assert reading.value("key_facts") is None
    assert reason in reading.reason


def test_key_fact_column_of_a_table() -> None:
    reply = "| # | Key fact |\n|---|---|\n| 1 | Anna chairs the meeting. |\n| 2 | Bob leaves. |"
    assert parse_key_facts(reply).value("key_facts") == ("Anna chairs the meeting.", "Bob leaves.")


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
        # The paper's printed, brace-less example form.
        '["key fact": "a", "response": "Yes", "line number": [1], "key fact": "b", '
        '"response": "No", "line number": [], "key fact": "c", "response": "yes", '
        '"line number": [1, 2]]',
        # Near-JSON: prose, fence, trailing commas, a range string, key variants.
        'Sure:\n```json\n[{"key fact": "a", "response": "Yes.", "line number": "1"},\n'
        '{"Key Fact": "b", "Response": "NO", "line_number": [],},\n'
        '{"key fact": "c", "response": "Yes", "line numbers": "1-2"},]\n```',
        # A dict wrapping the list.
        '{"results": [{"key fact": "a", "response": "Yes", "line number": 1}, '
        '{"key fact": "b", "response": "No", "line number": null}, '
        '{"key fact": "c", "response": "Yes", "line number": [2, 1, 2]}]}',
    ],
)
def test_alignment_syntax_is_repaired(reply: str) -> None:
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
        (json.dumps([{"key fact": "a", "line number": [1]}]), 'has no "response" key'),
        (_reply(("a", "Yes", ["one"])), "is not an integer"),
        (_reply(("a", "Yes", [1]), ("b", "No", [])), "2 entries for 1 key facts"),
        ("I am unable to compare these.", "holds no JSON list"),
        ('[{"key fact": "a", "response": "Yes", "line number": [1', None),  # repaired: ok
    ],
)
def test_alignment_meaning_is_strict(reply: str, reason: str | None) -> None:
    side = score_side("sys", 2, ("a",), reply)
    if reason is None:
        assert side.scores["completeness"] == 1.0
        return
    assert side.scores == {"completeness": None, "conciseness": None}
    assert reason in side.reason
    assert side.raw == reply  # the judge's text is kept


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
