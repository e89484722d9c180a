"""Reading CREAM's two replies: tolerant about syntax, strict about meaning.

Syntax problems (prose around the JSON, Markdown fences, trailing commas, single quotes,
the brace-less list the paper prints) are repaired, because they do not change what the
judge said. Meaning problems make the comparison unscored with a reason, never a number:
an extraction reply without a list of key facts (prose, a refusal, ``{"facts": []}``, an
empty or missing text), an alignment answer that is neither "Yes" nor "No", a line number
outside the summary, an alignment that does not answer every key fact once, a missing key.

"Line number" is the prompt's word; what it numbers is the summary's sentences by default
(``segment.py``), or its lines with ``unit=line``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elitr_bench.judges.jsonparse import parse_json_reply

# A list item: a bullet (-, *, +, bullet signs, dashes) or an enumerator (1. 1) (1) 1: [1]),
# the enumerator possibly in bold (**1.**), then the item's text.
_ITEM = re.compile(
    r"^\s*(?:\*\*)?(?:[-*+\u2022\u2013\u2014]|\(?\d{1,3}[.):]|\[\d{1,3}\])(?:\*\*)?"
    r"\s+(?P<text>\S.*)$"
)


class CreamParseError(ValueError):
    """A reply that cannot be scored; the message is the recorded reason."""


@dataclass(frozen=True)
class Alignment:
    """One key fact aligned to one summary.

    Attributes:
        key_fact: The key fact (from the extraction step).
        supported: The judge's "Yes" (True) or "No" (False).
        lines: 1-based numbers of the summary sentences (or lines, ``unit=line``) the judge
            cited for a "Yes" (empty for a "No").
        judge_key_fact: The key-fact text the judge repeated in its answer ("" if none).
    """

    key_fact: str
    supported: bool
    lines: tuple[int, ...]
    judge_key_fact: str = ""


def _strings_of(value: Any) -> list[str] | None:
    """Key facts from a JSON answer: a list of strings or {"key facts": [...]}-like dict."""
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) != 1:
            return None
        value = lists[0]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    return None


def _is_heading(item: str) -> bool:
    """A list item that only introduces others ("- **Summary 1:**"), not a fact.

    Only short items (at most four words) ending in a colon: a longer one ("- The team
    discussed the following points:") may be the judge's reading of a summary line, and
    the judge aligns it like any other key fact.
    """
    text = item.strip().strip("*_").strip()
    return text.endswith(":") and len(text.split()) <= 4


def parse_key_facts(text: str | None) -> tuple[str, ...]:
    """The key facts of an extraction reply, in order, without duplicates.

    The App. A.2 prompt shows its example facts as a ``*`` bullet list, and judges answer
    with a bulleted or numbered list, often under a heading and with closing remarks, or
    in a fenced block. Only the list items are key facts (short items ending in a colon,
    "- Summary 1:", head a group and are not). A JSON list of strings (or an
    object holding exactly one) is the same list in another syntax and is accepted too.
    Anything else (prose, a refusal, ``{"facts": []}``, an empty reply) holds no list:
    turning it into "key facts" would score the comparison on text that is not one, so it
    is an error, and the caller asks again or leaves the comparison unscored.

    Raises:
        CreamParseError: The reply holds no list of key facts (the message says whether it
            was empty, JSON without one, or text without one; the reply itself is kept
            with the comparison).
    """
    stripped = (text or "").strip()
    if not stripped:
        raise CreamParseError("extraction reply is empty (no key facts)")
    lines = [ln for ln in stripped.splitlines() if ln.strip() and not ln.strip().startswith("```")]
    facts = [m.group("text").strip() for ln in lines if (m := _ITEM.match(ln))]
    facts = [f for f in facts if not _is_heading(f)]
    if not facts:
        value = parse_json_reply(stripped)
        if value is not None and not isinstance(value, str):
            facts = _strings_of(value) or []
            if not facts:
                raise CreamParseError("extraction reply is JSON without a list of key facts")
    unique: list[str] = []
    for fact in facts:
        fact = fact.strip().strip("*").strip()
        if fact and fact not in unique:
            unique.append(fact)
    if not unique:
        raise CreamParseError("extraction reply holds no bullet list of key facts")
    return tuple(unique)


_KEY_FIELDS = {
    "keyfact": "key fact",
    "keyfacts": "key fact",
    "fact": "key fact",
    "response": "response",
    "answer": "response",
    "linenumber": "line number",
    "linenumbers": "line number",
    "lines": "line number",
}


def _canonical(entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in entry.items():
        name = _KEY_FIELDS.get(re.sub(r"[\s_\-()]", "", str(key)).lower())
        if name is not None and name not in out:
            out[name] = value
    return out


def _braceless(text: str) -> str | None:
    """Rewrite the paper's brace-less example form ``["key fact": ..., "key fact": ...]``."""
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end <= start or "{" in text[start:end]:
        return None
    body = text[start + 1 : end]
    chunks = [c for c in re.split(r",?\s*(?=\"key fact\"\s*:)", body) if c.strip()]
    if len(chunks) < 1 or not chunks[0].lstrip().startswith('"key fact"'):
        return None
    return "[" + ",".join("{" + c.strip().rstrip(",") + "}" for c in chunks) + "]"


def _line_numbers(value: Any, n_units: int, where: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, bool):
        raise CreamParseError(f"{where}: line number {value!r} is not a number")
    if isinstance(value, (int, float)):
        items: list[Any] = [value]
    elif isinstance(value, str):
        items = []
        for part in re.split(r"[,;\s]+(?:and\s+)?", value.strip()):
            if not part:
                continue
            span = re.fullmatch(r"(\d+)\s*[-\u2013]\s*(\d+)", part)
            if span:
                lo, hi = int(span.group(1)), int(span.group(2))
                if hi < lo:
                    raise CreamParseError(f"{where}: line range {part!r} runs backwards")
                items.extend(range(lo, hi + 1))
            else:
                items.append(part)
    elif isinstance(value, list):
        items = list(value)
    else:
        raise CreamParseError(f"{where}: line number {value!r} is not a list of numbers")
    out: list[int] = []
    for item in items:
        if isinstance(item, str) and re.fullmatch(r"\s*\d+\s*", item):
            item = int(item)
        if isinstance(item, float) and item.is_integer():
            item = int(item)
        if isinstance(item, bool) or not isinstance(item, int):
            raise CreamParseError(f"{where}: line number {item!r} is not an integer")
        if not 1 <= item <= n_units:
            raise CreamParseError(
                f"{where}: line {item} is outside the summary (lines 1-{n_units})"
            )
        if item not in out:
            out.append(item)
    return tuple(out)


def _answer(value: Any, where: str) -> bool:
    if isinstance(value, str):
        word = value.strip().strip(".!").strip().lower()
        if word == "yes":
            return True
        if word == "no":
            return False
    raise CreamParseError(f'{where}: response {value!r} is neither "Yes" nor "No"')


def parse_alignment(
    text: str | None, key_facts: Sequence[str], n_units: int
) -> tuple[tuple[Alignment, ...], str]:
    """Check an alignment reply against the key facts and the summary's line count.

    Entries are matched to key facts by position: the judge is asked to answer "for each
    key fact", so the answer must have exactly one entry per key fact, in order. A "Yes"
    without line numbers still counts as supported for completeness but leaves conciseness
    unscored (which lines it covers is unknown); that is returned as a note.

    Args:
        text: The judge's reply (None or empty: no JSON list).
        key_facts: Key facts from the extraction step.
        n_units: Numbered units (sentences, or lines with ``unit=line``) of the summary.

    Returns:
        The alignments, and a note ("" or why conciseness cannot be computed).

    Raises:
        CreamParseError: No JSON list, a missing key, an unknown answer, a line outside the
            summary, or a number of entries different from the number of key facts.
    """
    text = text or ""
    value = parse_json_reply(text)
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        fixed = _braceless(text)
        if fixed is not None:
            repaired = parse_json_reply(fixed)
            if isinstance(repaired, list) and len(repaired) > 1:
                value = repaired
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        value = lists[0] if len(lists) == 1 else [value]
    if not isinstance(value, list):
        raise CreamParseError("alignment reply holds no JSON list")
    entries = [e for e in value if e not in (None, "", [], {})]
    if len(entries) != len(key_facts):
        raise CreamParseError(
            f"alignment answers {len(entries)} entries for {len(key_facts)} key facts"
        )
    out: list[Alignment] = []
    notes: list[str] = []
    for i, (entry, fact) in enumerate(zip(entries, key_facts, strict=True), start=1):
        where = f"alignment entry {i}"
        if not isinstance(entry, dict):
            raise CreamParseError(f"{where} is not a dictionary")
        fields = _canonical(entry)
        if "response" not in fields:
            raise CreamParseError(f'{where} has no "response" key')
        supported = _answer(fields["response"], where)
        lines = _line_numbers(fields.get("line number"), n_units, where)
        if not supported:
            lines = ()  # lines cited for a "No" support nothing
        elif not lines:
            notes.append(f'{where}: "Yes" without line numbers')
        out.append(Alignment(fact, supported, lines, str(fields.get("key fact", "") or "")))
    return tuple(out), "; ".join(notes)
