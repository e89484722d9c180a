r"""Issue 46: every cue table, with replies it must and must not turn into a statement.

Each reply below carries ``\\boxed{7}`` on the GPT-4 rubric (1-10) and one sentence that
names another number. Where the cue makes that number a score statement, the reply states
two values: the score is unscored with both named and no restatement is asked (it could
only choose). Where it does not, the box is read with no extra call. The examples are the
issue's, written from the prompts; none was fitted to the reader.
"""

from __future__ import annotations

import json

import pytest

from elitr_bench.judges.cream.parse import AlignmentGrammar
from elitr_bench.judges.mesa.parsing import SCORING
from elitr_bench.judges.minutes.prompts import ART as ART_PROMPT
from elitr_bench.judges.reading import Grammar, cues, read_reply, read_restatement
from elitr_bench.judges.rubrics import GPT4 as GPT4_RUBRIC

GPT4 = GPT4_RUBRIC.grammar  # with the prompt and rubric it is sent (their phrases never veto)
ART = ART_PROMPT.grammar

# (cue table, sentence beside \boxed{7}, whether it states a second value)
CASES = [
    ("SCORE", "I'd rate it a 4.", True),
    ("SCORE", "Score: 5.", True),
    ("SCORE", "My assessment: 5.", True),
    ("SCORE", "I'd put it at 4.", True),
    ("SCORE", "It covers 5 of the 6 points the reference lists.", False),
    ("SCORE", "The team will rate 3 vendors next week.", False),
    ("REVISION", "Adjusting downward to 5.", True),
    ("REVISION", "Actually, on second thought, a 6 might be more appropriate.", True),
    ("REVISION", "Correction: the score should be 5.", True),
    ("REVISION", "The plan was revised in 2 steps.", False),
    ("HEDGE", "I lean toward 5.", True),
    ("HEDGE", "Perhaps a 6.", True),
    ("HEDGE", "Perhaps 3 people attended.", False),
    ("VERDICT_AFTER", "4 is fair.", True),
    ("VERDICT_AFTER", "A 6 seems more appropriate.", True),
    ("VERDICT_AFTER", "4 speakers is fair coverage for a short meeting.", False),
    ("LABEL_NOUN", "This falls under Score 3-4 of the rubric.", True),
    ("LABEL_NOUN", "Rating: 5 overall.", True),
    ("LABEL_NOUN", "The score of 4 speakers was not asked.", False),
    ("SCALE", "Using a 5-point scale, I give it a 4.", True),
    ("SCALE", "The survey used a 5-point scale.", False),
    ("HYPOTHETICAL", "With the date it would be a 10.", False),
    ("HYPOTHETICAL", "If it had named the owner, it would be an 8.", False),
    ("HYPOTHETICAL", "It would be a 9 but for the missing owner.", False),
    ("HYPOTHETICAL", "If anything, it is a 6.", True),
    ("REJECTED_BEFORE", "It is more than the vaguely related level of Score 3-4.", False),
    ("REJECTED_BEFORE", "It cannot reach Score 9 because of the extra details.", False),
    ("REJECTED_BEFORE", "It deserves no more than a 5.", True),
    ("REJECTED_AFTER", "A 4 would be too harsh.", False),
    ("REJECTED_AFTER", "A 4 would be fair.", True),
    ("ATTRIBUTED", "The response gave 5 examples where the reference gave 6.", False),
    ("ATTRIBUTED", "Agent B proposed a rating of 3.", False),
    ("ATTRIBUTED", "I gave it a 3 at first.", True),
    ("AGGREGATE", "The average of the three answers is 5.", False),
    ("AGGREGATE", "The total comes to 5, so I rate it a 5.", True),
    ("FILLER", "I'd rate it a solid 4.", True),
    ("FILLER", "I'd rate it a solid 4 weeks of work.", False),
    ("LINK", "A 5 for accuracy.", True),
    ("LINK", "A 5 hour meeting.", False),
    ("FOREIGN", "The certainty of 6 is too high.", False),
    ("FOREIGN", "A 6, with certainty.", True),
    ("SCALE_DECLARED", "I rate on a 1-5 scale.", True),
    ("SCALE_DECLARED", "The minutes mention a 1-5 scale for the survey.", False),
    ("ECHO", "The reference answer gets the maximum score of 10.", False),
    ("ECHO", "Score 10: essentially equivalent to the reference answer, which it is not.", False),
    ("ECHO", "I give it the full 10 points.", True),
]


@pytest.mark.parametrize(("table", "sentence", "states"), CASES, ids=[c[1] for c in CASES])
def test_each_cue_states_a_value_only_where_it_must(
    table: str, sentence: str, states: bool
) -> None:
    reading = read_reply(GPT4, f"Feedback: the date is right. {sentence}\n\\boxed{{7}}")
    if states:
        assert reading.value("score") is None and "score" in reading.final, reading.reasons
        assert reading.reasons["score"].startswith("the judge gave ")
        assert not reading.restate  # it could only choose
    else:
        assert reading.value("score") == 7 and not reading.restate, reading.reasons


def test_every_cue_table_has_replies_it_must_and_must_not_veto() -> None:
    tables = {n for n, v in vars(cues).items() if n.isupper() and isinstance(v, str)}
    tested = {table for table, _, _ in CASES}
    assert tables <= tested, tables - tested
    for table in tested - {"ECHO"}:
        assert table in tables, table
    for table in tested:
        outcomes = {states for t, _, states in CASES if t == table}
        assert outcomes == {True, False}, table


def test_precedence_is_one_explicit_order() -> None:
    """A score noun before a number wins over the quantity rule ("Score 3-4 of the rubric")."""
    order = [rule.split(":")[0] for rule in cues.PRECEDENCE]
    assert order.index("label noun") < order.index("content")
    assert order.index("hypothetical") < order.index("cue")
    assert len(order) == len(set(order))


# (grammar, first reply, restatement answer, the value read, whether a restatement is asked)
PAIRS = [
    # agreeing: one value in prose, confirmed
    (GPT4, "Feedback: most of it. I would give it a 7.", '{"score": 7}', 7, True),
    # disagreeing
    (GPT4, "Feedback: most of it. I would give it a 7.", '{"score": 3}', None, True),
    # filling in: the reply stated nothing
    (GPT4, "Feedback: the response is partially correct.", '{"score": 5}', 5, True),
    # picking one of two
    (GPT4, "Feedback: hard to say; I'd say 6 or 7.", '{"score": 7}', None, False),
    (GPT4, "Feedback: a 6. I would rate it a 7.", '{"score": 6}', None, False),
    # after an explicit correction
    (
        GPT4,
        "Feedback: \\boxed{7}\nCorrection: the correct score is \\boxed{5}.",
        '{"score": 7}',
        None,
        False,
    ),
    # a hypothetical is no statement: it neither agrees nor counts as a second value
    (GPT4, "Feedback: it is a 6. With the date it would be a 10.", '{"score": 10}', None, True),
    (GPT4, "Feedback: it is a 6. With the date it would be a 10.", '{"score": 6}', 6, True),
    # another scale, with no conversion: ambiguous, whatever is restated
    (GPT4, "Feedback: I'd rate it 4/5.", '{"score": 4}', None, False),
    (GPT4, "Feedback: I'd rate it 4/5.", '{"score": 8}', None, False),
    # another scale with the conversion stated: the converted value
    (GPT4, "Feedback: I'd rate it 4/5, i.e. 8/10.", '{"score": 8}', 8, True),
    (GPT4, "Feedback: I'd rate it 4/5, i.e. 8/10.", '{"score": 4}', None, True),
    # a range holding the asked-format value is not a second value
    (GPT4, "Feedback: it fits Score 7-8.\n\\boxed{8}", "", 8, False),
    # a prompt echo never vetoes a clean box, nor lets a restated 10 in
    (GPT4, "The reference answer gets the maximum score of 10.\n\\boxed{3}", "", 3, False),
    # multi-field: one criterion given twice, the others read
    (
        ART,
        "Adequacy: 7 (maybe 6)\nRelevance: 8\nTopicality: 8",
        '{"adequacy": 6, "relevance": 8, "topicality": 8}',
        None,
        False,
    ),
    (
        ART,
        "Adequacy: 7\nRelevance: 8\nTopicality: 8\n\n| Adequacy | 6 |",
        '{"adequacy": 7, "relevance": 8, "topicality": 8}',
        None,
        False,
    ),
    # MESA: the reasoning rates otherwise
    (
        SCORING,
        json.dumps({"reasoning": "Overall I rate this a 2.", "rating": 3, "confidence": 7}),
        '{"rating": 3, "confidence": 7}',
        None,
        False,
    ),
]


@pytest.mark.parametrize(("grammar", "first", "answer", "value", "asked"), PAIRS)
def test_a_restatement_confirms_or_fills_and_never_chooses(
    grammar: Grammar, first: str, answer: str, value: float | None, asked: bool
) -> None:
    field = grammar.fields[0]
    reading = read_reply(grammar, first)
    assert bool(reading.restate) == asked, reading.reasons
    got = read_restatement(grammar, reading, answer) if answer else reading
    assert got.value(field) == value, got.reasons


def test_two_cream_lists_are_two_values() -> None:
    grammar = AlignmentGrammar(("Anna chairs.", "Bob leaves."), 3)
    one = [{"key fact": "Anna chairs.", "response": "Yes", "line number": [1]}]
    first = json.dumps([*one, {"key fact": "Bob leaves.", "response": "No", "line number": []}])
    second = json.dumps([*one, {"key fact": "Bob leaves.", "response": "Yes", "line number": [2]}])
    reading = read_reply(grammar, f"{first}\n\nWait, corrected:\n{second}")
    assert reading.value("alignments") is None and not reading.restate
    assert reading.reasons["alignments"].startswith("the judge gave [Yes 1; No] and")
    restated = json.dumps({"alignment": json.loads(second)})
    assert read_restatement(grammar, reading, restated).value("alignments") is None
