"""JSON anywhere in a judge reply (the core's reader used by every family)."""

from __future__ import annotations

import pytest

from elitr_bench.judges.reading import json_values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"a": 1}]', [[{"a": 1}]]),
        ('Sure, here it is:\n```json\n{"quality": 4}\n```\nAnything else?', [{"quality": 4}]),
        ('```\n[{"a": 1, "b": [1, 2,]},]\n```', [[{"a": 1, "b": [1, 2]}]]),  # fenced: repaired
        ("```json\n[{'a': 'x'}]\n```", [[{"a": "x"}]]),
        ('Result: [{"a": 1, "b": [1, 2,]},]', []),  # bare: only valid JSON counts
        ("[{'a': 'x'}]", []),
        ('{"a": [1, 2', []),  # cut before its closing brackets: not an answer
        # Two blocks are two answers (the families decide whether they agree).
        ('```json\n{"r": 1}\n```\nOn reflection:\n```json\n{"r": 2}\n```', [{"r": 1}, {"r": 2}]),
        ('Draft {"r": 1} then final {"r": 2}', [{"r": 1}, {"r": 2}]),
    ],
)
def test_every_json_value_of_a_reply(text: str, expected: object) -> None:
    assert json_values(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "   ", "I cannot help with that.", "No JSON here, sorry", "[PERSON4] will do it [1]."],
)
def test_no_json_is_nothing(text: str) -> None:
    """Prose, placeholders such as [PERSON4] and references such as [1] are not JSON."""
    assert json_values(text) == []


def test_valid_json_is_not_repaired() -> None:
    text = '{"note": "[1, 2,] stays", "n": 1}'
    assert json_values(text) == [{"note": "[1, 2,] stays", "n": 1}]
