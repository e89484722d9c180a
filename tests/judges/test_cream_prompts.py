"""CREAM App. A.2 prompts: exact wording, the key-fact limit, line numbering."""

from __future__ import annotations

import re

import pytest

from elitr_bench.judges.cream.prompts import (
    DEFAULT_MAX_KEY_FACTS,
    EXAMPLE_KEY_FACTS,
    alignment_prompt,
    extraction_prompt,
    number_lines,
    paragraph_of,
    summary_lines,
)

# App. A.2 of the CREAM paper as printed (paper 003, whitespace as in the text rendering).
PAPER_EXTRACTION = (
    "You will be provided with a paragraph and a summary. Your task is to decompose the "
    'paragraph into a set of "key facts". A "key fact" is a single fact written as briefly '
    "and clearly as possible, encompassing at most 2-3 entities. There should not be any "
    'repeated "key fact". Here are nine examples of key facts to illustrate the desired '
    "level of granularity (please be careful that these are examples, and do NOT use them "
    "as actual key facts): * Kevin Carr set off on his journey from Haytor. * Kevin Carr set "
    "off on his journey from Dartmoor. * Kevin Carr set off on his journey in July 2013. * "
    "Kevin Carr is less than 24 hours away from completing his trip. * Kevin Carr ran around "
    "the world unsupported. * Kevin Carr ran with his tent. * Kevin Carr is set to break the "
    "previous record. * Kevin Carr is set to break the record by 24 hours. * The previous "
    "record was held by an Australian. Instruction: First, read the paragraph carefully. "
    "Second, decompose the paragraph into (at most 30) ket facts.\n\n"
    "Paragraph: [INPUT REFERENCE SUMMARIES]"
)
PAPER_ALIGNMENT = (
    "You now have a summary and a set of key facts for the same transcript. Your task is to "
    "assess if each key fact is inferred from the summary.\n\n"
    "Instruction: First, compare each key fact with the summary. Second, check if the key "
    'fact is inferred from the summary and then response "Yes" or "No" for each key fact. If '
    '"Yes", specify the line number(s) of the summary sentence(s) relevant to each key fact.'
    "\n\n"
    "Provide your answer in JSON format. The answer should be a list of dictionaries whose "
    'keys are "key fact", "response", and "line number": ["key fact": "first key fact", '
    '"response": "Yes", "line number": [1], "key fact": "second key fact", "response": "No", '
    '"line number": [], "key fact": "third key fact", "response": "Yes", "line number": '
    "[1, 2, 3]]\n\n"
    "Summary: [INPUT CANDIDATE SUMMARY]"
)


def _words(text: str) -> str:
    """Whitespace-insensitive form; drops the JSON example's braces the rendering lost."""
    return re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()


def test_extraction_prompt_is_app_a2_word_for_word() -> None:
    ours = extraction_prompt("[INPUT REFERENCE SUMMARIES]", 30)
    assert _words(ours) == _words(PAPER_EXTRACTION)
    # Line breaks are only restored before the example bullets and the instruction.
    assert ours.count("\n* ") == 9
    assert "\nInstruction: First, read the paragraph carefully." in ours
    assert ours.endswith("ket facts.\n\nParagraph: [INPUT REFERENCE SUMMARIES]")


def test_alignment_prompt_is_app_a2_with_the_json_braces_restored() -> None:
    ours = alignment_prompt(["[INPUT CANDIDATE SUMMARY]"]).replace(
        "[1] [INPUT CANDIDATE SUMMARY]", "[INPUT CANDIDATE SUMMARY]"
    )
    assert _words(ours) == _words(PAPER_ALIGNMENT)
    assert (
        '[{"key fact": "first key fact", "response": "Yes", "line number": [1]}, '
        '{"key fact": "second key fact", "response": "No", "line number": []}, '
        '{"key fact": "third key fact", "response": "Yes", "line number": [1, 2, 3]}]'
    ) in ours


@pytest.mark.parametrize("limit", [16, 30])
def test_key_fact_limit(limit: int) -> None:
    assert f"(at most {limit}) ket facts" in extraction_prompt("p", limit)


def test_default_limit_is_16_and_nine_out_of_domain_examples() -> None:
    assert DEFAULT_MAX_KEY_FACTS == 16
    assert "(at most 16)" in extraction_prompt("p")
    assert len(EXAMPLE_KEY_FACTS) == 9
    assert all(f"* {fact}\n" in extraction_prompt("p") for fact in EXAMPLE_KEY_FACTS)
    with pytest.raises(ValueError):
        extraction_prompt("p", 0)


def test_paragraph_and_line_numbers() -> None:
    a = summary_lines("- Budget approved.\n\n  - Next meeting Monday.  \n")
    b = summary_lines("1. Budget approved by Anna.")
    assert a == ("- Budget approved.", "- Next meeting Monday.")
    assert paragraph_of(a, b) == (
        "- Budget approved.\n- Next meeting Monday.\n\n1. Budget approved by Anna."
    )
    assert number_lines(b) == "[1] 1. Budget approved by Anna."
    assert alignment_prompt(a).endswith(
        "Summary: [1] - Budget approved.\n[2] - Next meeting Monday."
    )
    # Braces in a summary are text, not template fields.
    assert "{x}" in extraction_prompt("a {x} b")
