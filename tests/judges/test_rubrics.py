from typing import Any

import pytest

from elitr_bench.judges.reading import Reading, read_reply
from elitr_bench.judges.rubrics import GPT4, PROMETHEUS, RUBRICS, Rubric
from tests.support.reply_corpus import entry_id, reply_corpus


def read(rubric: Rubric, text: str) -> Reading:
    """What the judges read from one reply under ``rubric`` (its grammar, the policy)."""
    return read_reply(rubric.grammar, text)


def parse_boxed(text: str) -> Reading:
    return read(GPT4, text)


def parse_result_tag(text: str) -> Reading:
    return read(PROMETHEUS, text)


@pytest.mark.parametrize("entry", reply_corpus("qa_judge_replies"), ids=entry_id)
def test_reply_corpus(entry: dict[str, Any]) -> None:
    """Each QA judge reply shape gives the score a careful reader takes, or none; never another.

    A reply not in the asked format (or vetoed by another statement of a score) gives none
    and asks for a restatement; only a reply in exactly the asked format is read at once.
    """
    parsed = read(RUBRICS[entry["rubric"]], entry["reply"])
    value = parsed.value("score")
    if entry["expected"] is None:
        assert value is None and parsed.reason
    elif value is None:
        assert parsed.restate and parsed.reason
    else:
        assert value == entry["expected"] and parsed.reason == ""


def test_reply_corpus_covers_both_rubrics() -> None:
    entries = reply_corpus("qa_judge_replies")
    assert len({e["id"] for e in entries}) == len(entries) >= 20
    assert {e["rubric"] for e in entries} == set(RUBRICS)
    assert sum(e["expected"] is None for e in entries) >= 5


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Good answer. \\boxed{8}", 8),
        ("\\boxed{ 10 }", 10),
        ("\\boxed{1}.", 1),
        ("in \\boxed{}: \\boxed{6}", 6),
        ("The response covers 2 of the 3 elements. \\boxed{6}", 6),
        ("It fits Score 7-8 of the rubric. \\boxed{8}", 8),
        ("<think>score 5, maybe</think>Mostly right. \\boxed{7}", 7),
    ],
)
def test_boxed_valid(text: str, expected: int) -> None:
    assert parse_boxed(text).value("score") == expected


@pytest.mark.parametrize(
    "text",
    [
        "no score here",
        "\\boxed{11}",
        "\\boxed{0}",
        "\\boxed{}",
        "\\boxed{7.5}",
        "\\boxed{4/5}",
        "\\boxed{7} \\boxed{9}",
        "Score: 8",
        "[RESULT] 4",
        "first \\boxed{7} and again \\boxed{7}",
        "\\boxed{8/10}",
        "\\boxed{\\text{6}}",
        "I would rate it a 7. \\boxed{8}",
        "| Score | 7 |\n\\boxed{5}",
        "At first glance, i.e. a 4. On reflection \\boxed{3}",
        "<think>scratch</think>",
    ],
)
def test_boxed_invalid_is_none_with_reason(text: str) -> None:
    parsed = parse_boxed(text)
    assert parsed.value("score") is None
    assert parsed.reason
    assert not parsed.restate or parsed.reason in parsed.restate


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Feedback: ok [RESULT] 4", 4),
        ("[RESULT]5</s>", 5),
        ("[RESULT] 1.", 1),
        ("Feedback: covers 3 of the facts. [RESULT] 4", 4),
    ],
)
def test_result_tag_valid(text: str, expected: int) -> None:
    assert parse_result_tag(text).value("score") == expected


@pytest.mark.parametrize(
    "text",
    [
        "[RESULT] 6",
        "[RESULT] 0",
        "[RESULT] four",
        "\\boxed{4}",
        "[RESULT] 2 [RESULT] 3",
        "[RESULT] 8/10",
        "[RESULT] (an integer number between 1 and 5)",
        "[RESULT]: (3)",
        "[RESULT] 4 out of 5",
        "Feedback: a 4 at first glance; [RESULT] 3",
    ],
)
def test_result_tag_invalid(text: str) -> None:
    assert parse_result_tag(text).value("score") is None


def test_restatement_is_read_strictly_and_must_agree() -> None:
    """The restatement is one JSON object with exactly the key ``score``, on the scale."""
    from elitr_bench.judges.reading import read_reply, read_restatement

    grammar = GPT4.grammar
    assert '"score" (an integer from 1 to 10)' in grammar.restatement.message
    schema = grammar.restatement.schema
    assert schema["required"] == ["score"] and schema["additionalProperties"] is False
    none = read_reply(grammar, "Good, a solid 7 out of 10.")
    assert read_restatement(grammar, none, '{"score": 7}').value("score") == 7
    assert read_restatement(grammar, none, '```json\n{"score": 7}\n```').value("score") == 7
    for bad in (
        '{"score": 7.5}',
        '{"score": 11}',
        '{"score": "7"}',
        '{"rating": 7}',
        '{"score": 7, "why": "x"}',
        'My score is 7: {"score": 7}',
        "7",
        "",
    ):
        assert read_restatement(grammar, none, bad).value("score") is None, bad
    # Two values (issue 46): no restatement is asked, and none could choose between them.
    two = read_reply(grammar, "I would rate it a 7. \\boxed{8}")
    assert two.strict == {"score": 8} and not two.restate
    assert two.reason == "the judge gave 8 and 7 for score"
    for restated in ('{"score": 8}', '{"score": 7}'):
        assert read_restatement(grammar, two, restated).value("score") is None
    # One value outside the asked format: the restatement must confirm it.
    prose = read_reply(grammar, "I would rate it a 7.")
    assert prose.restate
    assert read_restatement(grammar, prose, '{"score": 7}').value("score") == 7
    disagree = read_restatement(grammar, prose, '{"score": 5}')
    assert disagree.value("score") is None
    assert disagree.reason == "restatement disagrees with the reply (7 in the reply, 5 restated)"


def test_prometheus_scores_are_doubled_to_ten_point_scale() -> None:
    assert PROMETHEUS.to_ten_point(parse_result_tag("[RESULT] 3").value("score") or 0) == 6.0
    assert GPT4.to_ten_point(parse_boxed("\\boxed{3}").value("score") or 0) == 3.0


def test_prompt_fill_keeps_braces_and_placeholders_in_user_text_literal() -> None:
    prompt = GPT4.build_prompt("Q {response}?", "uses {reference} and \\boxed{9}", "R {x}")
    assert (
        "### Question:\nQ {response}?\n\n"
        "### Response to evaluate:\nuses {reference} and \\boxed{9}\n" in prompt
    )
    assert (
        "### Reference answer (score 10):\nR {x}\n\n### Score rubric:\n[Does the response" in prompt
    )
    assert prompt.endswith(
        "Score 10: The response to evaluate is essentially equivalent to the reference answer."
        "\n\n### Feedback:"
    )


def test_figure_text_is_joined_into_logical_lines() -> None:
    lines = GPT4.build_prompt("q", "r", "a").splitlines()
    assert (
        "You are provided below with a question, a response to evaluate, a reference answer "
        "that gets the maximum score of 10, and a score rubric representing evaluation criteria."
        in lines
    )
    assert (
        "3. The output format should first include the feedback and then indicate the integer "
        "score in \\boxed{}." in lines
    )
    assert sum(line.startswith("Score ") for line in lines) == 7
    p_lines = PROMETHEUS.build_prompt("q", "r", "a").splitlines()
    assert sum(line.startswith("Score ") for line in p_lines) == 5
    assert "### Reference answer (score 5):" in p_lines
    assert any('[RESULT] (an integer number between 1 and 5)".' in line for line in p_lines)


def test_prompt_hashes_identify_prompts() -> None:
    assert GPT4.prompt_hash != PROMETHEUS.prompt_hash
    assert len(GPT4.prompt_hash) == 16
