"""Issues 39 and 46: only score statements veto, and a restatement confirms, never chooses.

A number vetoes a field only where a cue ties it to a score (a score word or the field's
label beside it, the field's scale after it, an article before it); content numbers cost no
restatement call. A reply that states two values for a field leaves it unscored with both
named and sends no restatement for it; a restated value must equal the one value the first
reply stated for the field (in the asked format or elsewhere), in every family.
"""

from __future__ import annotations

import json

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.cream.parse import AlignmentGrammar
from elitr_bench.judges.mesa.parsing import SCORING
from elitr_bench.judges.minutes.score_parsing import criteria_grammar
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.judges.reading import Grammar, read_reply, read_restatement
from elitr_bench.judges.rubrics import rubric_grammar
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

GPT4 = rubric_grammar("boxed", 1, 10)
PROMETHEUS = rubric_grammar("result", 1, 5)
ART = criteria_grammar(("adequacy", "relevance", "topicality"))


def _mesa(reasoning: str, rating: int = 3, confidence: int = 8) -> str:
    return json.dumps({"reasoning": reasoning, "rating": rating, "confidence": confidence})


# Clean replies whose only numbers are content: each is read with no restatement call.
CLEAN = [
    (GPT4, "Feedback: the response covers two of the three points. \\boxed{6}", {"score": 6}),
    (GPT4, "Feedback: it names a 2-hour battery life, as the reference does. \\boxed{8}", None),
    (GPT4, "Feedback: it rated the drop at about 40 %, like the reference. \\boxed{9}", None),
    (
        GPT4,
        "Feedback: it covers the points: a meeting on Friday at 2:30 pm.\n\\boxed{10}",
        None,
    ),
    (GPT4, "Feedback: it gives three months, so it deserves credit. \\boxed{4}", None),
    (GPT4, "Feedback: 5 people attend and 3 present, which earns a mention. \\boxed{7}", None),
    (GPT4, "Feedback: the rating of 4 speakers is not asked; 3 May is right. \\boxed{9}", None),
    (PROMETHEUS, "Feedback: it scores 4 of the 5 action items, at 10 am.\n[RESULT] 4", None),
    (PROMETHEUS, "Feedback: the answer earns a mention for a 3-step plan. [RESULT] 4", None),
    (
        ART,
        "Adequacy: 6 - 3 of the 7 conclusions are missing.\n"
        "Relevance: 7 - the move to 14 October is clear.\n"
        "Topicality: 9 - all 11 sentences are about discussed topics.",
        {"adequacy": 6, "relevance": 7, "topicality": 9},
    ),
    (
        ART,
        "Adequacy: 8\nRelevance: 8\nTopicality: 7\n\nThe minutes cover 2 hours of discussion "
        "in 9 bullets; adequacy suffers only from 1 missing decision.",
        None,
    ),
    (
        SCORING,
        _mesa("The two instances were rated with severity 7 and 6; both are real omissions."),
        {"rating": 3, "confidence": 8},
    ),
    (
        SCORING,
        _mesa("Of the 4 instances, 2 are real; the confidence of 90 that step 2 gave is too high."),
        None,
    ),
]


@pytest.mark.parametrize("grammar, reply, expected", CLEAN, ids=range(len(CLEAN)))
def test_content_numbers_never_veto(
    grammar: Grammar, reply: str, expected: dict[str, int] | None
) -> None:
    reading = read_reply(grammar, reply)
    assert reading.complete and not reading.restate, reading.reasons
    if expected is not None:
        assert dict(reading.values) == expected


# Genuine statements of another score: two values, unscored, no restatement (it would choose).
CONFLICTING = [
    (GPT4, "Feedback: good. I'd give it a 4 out of 10.\n\\boxed{7}", "score"),
    (GPT4, "Feedback: good. I would rate it a 4. \\boxed{7}", "score"),
    (GPT4, "Score: 4\n\nFeedback: good. \\boxed{7}", "score"),
    (GPT4, "Feedback: good, though [RESULT] 5 at first glance. \\boxed{7}", "score"),
    (GPT4, "Feedback: good. That's a 6/10 from me. \\boxed{7}", "score"),
    (PROMETHEUS, "Feedback: \\boxed{2} seemed right, then not.\n[RESULT] 4", "score"),
    (PROMETHEUS, "Feedback: I rate it 8/10 overall.\n[RESULT] 4", "score"),  # another scale
    (
        ART,
        "Adequacy: 8\nRelevance: 7\nTopicality: 7\n\nOn reflection, adequacy is a 6.",
        "adequacy",
    ),
    (ART, "Adequacy: 8\nRelevance: 7\nTopicality: 7\n\n| Adequacy | 5 |", "adequacy"),
    (ART, "Adequacy: 8\nRelevance: 7\nTopicality: 7\n\n6 - Relevance", "relevance"),
    (
        ART,
        "Adequacy: 8\nRelevance: 7\nTopicality: 7\n\nRelevance is really more like 5.",
        "relevance",
    ),
    (
        ART,
        "Adequacy: 8\nRelevance: 7\nTopicality: 7\n\nIn the end, 6 seems fair for adequacy.",
        "adequacy",
    ),
    (
        ART,
        "Adequacy: 8\nRelevance: 7\nTopicality: 7\n\nA gap in adequacy, so I'd go with 6.",
        "adequacy",
    ),
    (SCORING, _mesa("The omissions are minor; I would rate this a 2."), "rating"),
    (SCORING, _mesa("My confidence is 5 out of 10 at most."), "confidence"),
]


@pytest.mark.parametrize("grammar, reply, field", CONFLICTING, ids=range(len(CONFLICTING)))
def test_a_second_value_leaves_the_field_unscored_and_unrestated(
    grammar: Grammar, reply: str, field: str
) -> None:
    reading = read_reply(grammar, reply)
    assert reading.value(field) is None and field in reading.final
    assert reading.reasons[field].startswith("the judge gave "), reading.reasons[field]
    assert not reading.restate  # every other field was read: nothing to restate
    second = read_restatement(grammar, reading, json.dumps(dict.fromkeys(grammar.fields, 4)))
    assert second.value(field) is None  # whatever is restated, it would only choose


def test_a_number_off_the_fields_scale_never_vetoes_it() -> None:
    """A 7 is no MESA rating (0-5), but it may be a confidence (0-10)."""
    reading = read_reply(SCORING, _mesa("If anything, the summary is a 7."))
    assert reading.value("rating") == 3 and not reading.reasons.get("rating")
    assert reading.value("confidence") is None  # "a 7" may speak of the 0-10 one


# A restated value must equal one the reply stated (asked format or veto), in every family.
AGREEMENT = [
    (GPT4, "The answer is good; a solid 7 out of 10.", '{"score": 3}', "score", "7", "3"),
    (PROMETHEUS, "Feedback: indirect.\nResult: 4", '{"score": 2}', "score", "4", "2"),
    (
        ART,
        "For adequacy I would give them a 6; relevance deserves a 7.",
        '{"adequacy": 5, "relevance": 7, "topicality": 8}',
        "adequacy",
        "6",
        "5",
    ),
    (
        SCORING,
        'Rating: 2 (minor omissions), confidence 8.\n{"rating": 2, "confidence": 8',
        '{"rating": 4, "confidence": 8}',
        "rating",
        "2",
        "4",
    ),
]


@pytest.mark.parametrize(
    "grammar, first, restated, field, said, got", AGREEMENT, ids=range(len(AGREEMENT))
)
def test_a_restatement_that_disagrees_with_the_reply_leaves_the_field_unscored(
    grammar: Grammar, first: str, restated: str, field: str, said: str, got: str
) -> None:
    reading = read_reply(grammar, first)
    assert reading.restate
    second = read_restatement(grammar, reading, restated)
    assert second.value(field) is None
    assert second.reasons[field] == (
        f"restatement disagrees with the reply ({said} in the reply, {got} restated)"
    )
    agreeing = json.loads(restated) | {field: int(said.split()[-1])}
    assert read_restatement(grammar, reading, json.dumps(agreeing)).value(field) is not None


def test_a_field_the_reply_never_stated_takes_the_restated_value() -> None:
    reading = read_reply(ART, "For adequacy I would give them a 6.")
    second = read_restatement(ART, reading, '{"adequacy": 6, "relevance": 3, "topicality": 9}')
    assert dict(second.values) == {"adequacy": 6, "relevance": 3, "topicality": 9}


FACTS = ("Anna chairs the meeting.", "The budget is approved.", "Bob leaves in May.")


def _alignment(*answers: tuple[str, list[int]]) -> list[dict[str, object]]:
    return [
        {"key fact": f, "response": r, "line number": n}
        for f, (r, n) in zip(FACTS, answers, strict=True)
    ]


def _restated(*answers: tuple[str, list[int]]) -> str:
    return json.dumps({"alignment": _alignment(*answers)})


def test_cream_alignment_list_and_count_that_disagree_are_two_values() -> None:
    """A list with 2 Yes beside "1 of the 3 key facts": unscored, no restatement can choose."""
    grammar = AlignmentGrammar(FACTS, 4)
    listed = (("Yes", [1]), ("Yes", [2, 3]), ("No", []))
    first = json.dumps(_alignment(*listed)) + "\n\nSo 1 of the 3 key facts is supported."
    reading = read_reply(grammar, first)
    assert reading.value("alignments") is None and not reading.restate
    assert reading.reasons["alignments"] == (
        "the judge gave [Yes 1; Yes 2,3; No] and '1 of the 3 key facts' for alignments"
    )
    for answers in (listed, (("Yes", [1]), ("No", []), ("No", []))):
        assert read_restatement(grammar, reading, _restated(*answers)).value("alignments") is None


def test_cream_alignment_restatement_fills_what_a_count_left_out() -> None:
    """Prose with only a count: the restated list must give as many Yes, no other list."""
    grammar = AlignmentGrammar(FACTS, 4)
    reading = read_reply(grammar, "Two of the 3 key facts are in the summary: 1 and 2.")
    assert reading.value("alignments") is None and reading.restate
    counted = read_restatement(grammar, reading, _restated(("Yes", [1]), ("Yes", [2]), ("No", [])))
    assert counted.value("alignments") is not None
    other = read_restatement(grammar, reading, _restated(("No", []), ("Yes", [4]), ("No", [])))
    assert other.value("alignments") is None
    assert other.reasons["alignments"] == (
        "restatement disagrees with the reply ('Two of the 3 key facts' in the reply, 1 Yes "
        "restated)"
    )


def test_the_issues_example_through_the_qa_judge(loopback: LoopbackOpenAI) -> None:
    """Prose restated to another value stays unscored; a clean reply costs no extra call."""

    def handler(request: RecordedRequest) -> str:
        if len(request.body["messages"]) == 3:  # the restatement turn
            return '{"score": 3}'
        if "Which tool" in request.prompt:
            return "Feedback: the right tool and reason, buried in detail. A solid 7 out of 10."
        return "Feedback: right day, on Friday at 2:30 pm, for three months. \\boxed{9}"

    loopback.handler = handler
    spec = f"openai:gpt-4-0613,base_url={loopback.base_url},cache=memory,progress=false"
    items = [
        JudgeItem(question=q, response="They meet then.", reference="Friday at 2:30 pm.")
        for q in ("When do they meet on Friday?", "Which tool was chosen?")
    ]
    clean, prose = judge_items(items, parse_judge_spec(spec)).judgements
    assert clean.score == 9.0 and clean.samples[0].attempts == 1
    assert prose.status == "unscored" and prose.score is None
    assert prose.samples[0].reason == (
        "restatement disagrees with the reply (7 in the reply, 3 restated)"
    )
    assert prose.reason == prose.samples[0].reason  # the unscored item says why
    # the clean reply, the prose and its restatement (gpt-4-0613 refused its schema once)
    assert len(loopback.taken()) == 3 and len(loopback.refused) == 1
