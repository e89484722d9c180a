"""The shared near-JSON reader (used by CREAM and MESA)."""

from __future__ import annotations

import pytest

from elitr_bench.judges.jsonparse import parse_json_reply


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"a": 1}]', [{"a": 1}]),
        ('Sure, here it is:\n```json\n{"quality": 4}\n```\nAnything else?', {"quality": 4}),
        ('Result: [{"a": 1, "b": [1, 2,]},]', [{"a": 1, "b": [1, 2]}]),
        ("[{'a': 'x'}]", [{"a": "x"}]),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ("42", 42),
    ],
)
def test_repairs_near_json(text: str, expected: object) -> None:
    assert parse_json_reply(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "I cannot help with that.", "No JSON here, sorry"])
def test_no_json_is_none(text: str) -> None:
    assert parse_json_reply(text) is None


def test_valid_json_is_not_repaired() -> None:
    # A string value containing brackets must come back unchanged.
    text = '{"note": "[1, 2,] stays", "n": 1}'
    assert parse_json_reply(text) == {"note": "[1, 2,] stays", "n": 1}
