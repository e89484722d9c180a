"""JSON inside a judge reply: every object or list in it, and the restatement's one object.

Fenced JSON gets its syntax repaired (trailing commas, single quotes); bare JSON must be
valid; the restatement's object is never repaired, because its meaning is what is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M)
"""A fenced block: group 2 is its body."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object; one that gives a key twice gets a key no format has (never read as one)."""
    keys = [k for k, _ in pairs]
    return {**dict(pairs), **({" duplicate keys": True} if len(set(keys)) < len(keys) else {})}


def parse_json(body: str, repair: bool = True) -> Any:
    """``body`` as JSON (its syntax repaired when ``repair``), or None."""
    from json_repair import repair_json

    try:
        return json.loads(body, object_pairs_hook=_pairs)
    except ValueError:
        try:  # syntax only (trailing commas, single quotes): the meaning is checked strictly
            return repair_json(body, return_objects=True) or None if repair else None
        except Exception:  # the library failing is "no JSON", not a crash
            return None


def json_values(text: str) -> list[Any]:
    """Every JSON object or list in a reply, in order (fenced: syntax repaired; bare: valid)."""
    found: list[tuple[int, Any]] = []
    covered: list[tuple[int, int]] = []
    for match in FENCE.finditer(text):
        value = parse_json(match.group(2))
        covered.append((match.start(), match.end()))
        if isinstance(value, (dict, list)) and value != []:
            found.append((match.start(), value))
    decoder = json.JSONDecoder(object_pairs_hook=_pairs)
    pos = 0
    while (
        start := min((i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0), default=-1)
    ) >= 0:
        inside = next((e for s, e in covered if s <= start < e), None)
        try:
            value, end = (None, inside) if inside is not None else decoder.raw_decode(text, start)
        except ValueError:
            value, end = None, start + 1
        looks = "{" in text[start:end] or '"' in text[start:end]  # not "[1]", "[PERSON4]"
        if isinstance(value, (dict, list)) and value not in ([], {}) and looks:
            found.append((start, value))
        pos = end
    return [value for _, value in sorted(found, key=lambda pair: pair[0])]


def one_object(answer: str) -> tuple[dict[str, Any] | None, str]:
    """The restatement's one strict JSON object (fenced or not, no digit outside), or why not."""
    body = answer.strip()
    fence = re.fullmatch(r"(```|~~~)[^\n]*\n(.*?)\n?[ \t]*\1", body, re.S)
    body = fence.group(2).strip() if fence else body
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return None, "restatement holds no JSON object"
    if re.search(r"\d", body[:start] + body[end + 1 :]):
        return None, "restatement states numbers outside its JSON object"
    value = parse_json(body[start : end + 1], repair=False)
    if not isinstance(value, dict):
        return None, "restatement is not one valid JSON object"
    return value, ""


def object_schema(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON schema of one object with exactly ``properties`` (OpenAI's strict mode)."""
    shape = {"type": "object", "properties": dict(properties), "required": list(properties)}
    return {**shape, "additionalProperties": False}
