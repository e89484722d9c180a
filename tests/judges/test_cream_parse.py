"""CREAM replies: tolerant syntax, strict meaning; App. A.1 completeness and conciseness."""

from __future__ import annotations

import json

import pytest

from elitr_bench.judges.cream.parse import CreamParseError, parse_alignment, parse_key_facts
from elitr_bench.judges.cream.scoring import completeness, conciseness, score_side

FACTS = ("Anna chairs the meeting.", "The budget is approved.", "Bob leaves in May.")


def _reply(*entries: tuple[str, object, object]) -> str:
    return json.dumps([{"key fact": f, "response": r, "line number": n} for f, r, n in entries])


@pytest.mark.parametrize(
    "reply",
    [
        "Here are the key facts:\n1. Anna chairs the meeting.\n2. The budget is approved.\n"
        "3. Bob leaves in May.\n\nLet me know if you need more.",
        "* Anna chairs the meeting.\n* The budget is approved.\n* Bob leaves in May.\n"
        "* Anna chairs the meeting.",
        "Anna chairs the meeting.\nThe budget is approved.\nBob leaves in May.",
        '```json\n{"key facts": ["Anna chairs the meeting.", "The budget is approved.", '
        '"Bob leaves in May."]}\n```',
    ],
)
def test_key_facts_in_any_list_form(reply: str) -> None:
    assert parse_key_facts(reply) == FACTS


@pytest.mark.parametrize("reply", ["", "  \n ", "```\n```"])
def test_empty_key_fact_list_is_unscored(reply: str) -> None:
    with pytest.raises(CreamParseError, match="no key facts"):
        parse_key_facts(reply)


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
    alignments, note = parse_alignment(reply, ("a", "b", "c"), 2)
    assert [(a.supported, set(a.lines)) for a in alignments] == [
        (True, {1}),
        (False, set()),
        (True, {1, 2}),
    ]
    assert note == ""


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


def test_yes_without_lines_leaves_only_conciseness_unscored() -> None:
    side = score_side("sys", 3, ("a", "b"), _reply(("a", "Yes", []), ("b", "No", [2])))
    assert side.scores == {"completeness": 0.5, "conciseness": None}
    assert '"Yes" without line numbers' in side.reason
    # Lines cited for a "No" support nothing.
    side = score_side("sys", 3, ("a", "b"), _reply(("a", "Yes", [1]), ("b", "No", [2])))
    assert side.scores == {"completeness": 0.5, "conciseness": 1 / 3}
