"""Reading CREAM's two replies: tolerant about syntax, strict about meaning.

Syntax problems (prose around the JSON, Markdown fences, trailing commas, single quotes,
the brace-less list the paper prints) are repaired, because they do not change what the
judge said. Meaning problems make the comparison unscored with a reason, never a number:
an extraction reply without a list of key facts (prose, a refusal, ``{"facts": []}``, an
empty or missing text), an echo of the prompt's example facts, an alignment answer that
is neither "Yes" nor "No", a line number outside the summary, an alignment that does not
answer every key fact exactly once, two different alignment answers in one reply, a
missing key. The core's policy applies to both (:mod:`elitr_bench.judges.reading`): a
reply the token limit cut off is never read.

Key facts are the *top-level* items of the judge's list. Not facts: headings that group
items ("- **Decisions:**", "Summary 1:"; their sub-items are the facts), sub-items of a
fact (its entities, its source line), items of a "Notes:"/"Remarks:" section after the
list, and the nine example facts of the prompt.

Alignment entries are matched to key facts by the fact text the judge repeats (answers
in another order are common), and by position only when the entries carry no fact text.

"Line number" is the prompt's word; what it numbers is the summary's sentences by default
(``segment.py``), or its lines with ``unit=line``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elitr_bench.judges.cream.prompts import EXAMPLE_KEY_FACTS
from elitr_bench.judges.reading import Reading, Reply, json_values, read_reply, unquote_blocks

# A list item: indentation, a bullet (-, *, +, bullet signs, dashes) or an enumerator
# (1. 1) (1) 1: [1]), the enumerator possibly in bold (**1.**), then the item's text.
_ITEM = re.compile(
    r"^(?P<indent>[ \t]*)(?:\*\*)?"
    r"(?:[-*+\u2022\u2013\u2014\u25e6\u25aa]|\(?\d{1,3}(?:\.\d{1,3})*[.):]|\[\d{1,3}\]"
    r"|\\item|(?:key[ \t]+)?fact[ \t]*#?\d{1,3}[ \t]*[:.)])"
    r"(?:\*\*)?[ \t]+(?P<text>\S.*)$",
    re.I,
)
# A line (or item) that opens a section of remarks, not facts.
_NOTES = re.compile(
    r"^[\W_]*(?:notes?|remarks?|comments?|explanations?|observations?|caveats?|"
    r"assumptions?|disclaimers?|rationale|reasoning|additional (?:notes|context|information)|"
    r"methodology|clarifications?|limitations?|excluded|omitted|removed|discarded|dropped|"
    r"rejected|duplicates?|merged|not included|ignored|out of scope)\b[^\n]*$",
    re.I,
)
_EXAMPLES = {re.sub(r"\W+", " ", f).strip().lower() for f in EXAMPLE_KEY_FACTS}


class CreamParseError(ValueError):
    """A reply that cannot be used; the message is the recorded reason (internal)."""


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
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        # [{"key fact": "..."}, ...]: one fact string per object, under a fact key.
        value = [_fact_of(v) for v in value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    return None


def _fact_of(entry: dict[str, Any]) -> str | None:
    texts = [v for k, v in entry.items() if "fact" in str(k).lower() and isinstance(v, str)]
    return texts[0] if len(texts) == 1 and len(entry) == 1 else None


def _clean(item: str) -> str:
    """The fact's text without Markdown emphasis (bold, backticks) or wrapping quotes."""
    text = re.sub(r"\*\*|__|`", "", item.strip()).strip("*").strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()  # a YAML or JSON string: "[PERSON6] will ..."
    return text


def _is_heading(item: str, children: bool = False) -> bool:
    """An item that only introduces others ("- **Summary 1:**", "- **Decisions**").

    Short (at most four words) and ending in a colon, wholly bold without a sentence's
    full stop, or a short label without a full stop that has sub-items. A longer one
    ("- The team discussed the following points:") may be the judge's reading of a
    summary line, and the judge aligns it like any other key fact.
    """
    text = item.strip()
    bare = text.strip("*_").strip()
    if bare.endswith(":") and len(bare.split()) <= 4:
        return True
    if children and not bare.rstrip().endswith((".", "!", "?")) and len(bare.split()) <= 5:
        return True  # "1. Decisions" over "1.1. The team chose ...": a group heading
    bold = re.fullmatch(r"(?:\*\*|__)(?P<body>[^*_]+)(?:\*\*|__):?", text)
    return (
        bold is not None
        and not bold.group("body").rstrip().endswith(".")
        and len(bold.group("body").split()) <= 6
    )


@dataclass
class _Item:
    indent: int
    text: str
    children: list[_Item]
    group: int = 0


def _width(indent: str) -> int:
    return len(indent.replace("\t", "    "))


def _list_items(text: str) -> list[str]:
    """The top-level key facts of a Markdown-ish list (see the module docstring)."""
    roots: list[_Item] = []
    stack: list[_Item] = []
    in_notes = False
    group = 0
    last: _Item | None = None
    for line in text.splitlines():
        if not line.strip() or line.strip().startswith(("```", "~~~")):
            last = None
            continue
        match = _ITEM.match(line)
        if match is None and last is not None and line[:1] in " \t":
            last.text += " " + line.strip()  # a fact wrapped onto an indented next line
            continue
        last = None
        if match is None:
            # A non-item line: a heading, prose, or the opening of a notes section.
            in_notes = bool(_NOTES.match(line.strip()))
            stack = []
            group += 1
            continue
        body = match.group("text").strip()
        if _NOTES.match(body) and re.match(r"[\W_]*\w+[\w ]{0,30}:", body):
            in_notes = True  # "- Note: ..." / "- **Notes:**" opens remarks too
            stack = []
            continue
        if in_notes:
            continue
        item = _Item(_width(match.group("indent")), body, [], group)
        while stack and stack[-1].indent >= item.indent:
            stack.pop()
        (stack[-1].children if stack else roots).append(item)
        stack.append(item)
        last = item
    facts: list[tuple[str, int]] = []
    for item in roots:
        if _is_heading(item.text, bool(item.children)):
            facts.extend(
                (_clean(c.text), item.group) for c in item.children if not _is_heading(c.text)
            )
        else:
            facts.append((_clean(item.text), item.group))  # its sub-items describe it
    groups: dict[str, set[int]] = {}
    for fact, at in facts:
        groups.setdefault(_key(fact), set()).add(at)
    if any(len(at) > 1 for at in groups.values()):
        # The same fact in two lists separated by prose: a draft and its revision.
        raise CreamParseError(
            "extraction reply holds two versions of the key-fact list (a draft and a "
            "revision): which one is the answer is not said unambiguously"
        )
    return [fact for fact, _ in facts if fact] or _table_facts(text)


def _table_facts(text: str) -> list[str]:
    """The key-fact column of a Markdown table (a header cell naming the facts)."""
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.strip().startswith("|") and not re.fullmatch(r"[\s|:-]+", line)
    ]
    if len(rows) < 2:
        return []
    column = next((i for i, c in enumerate(rows[0]) if re.search(r"fact", c, re.I)), None)
    if column is None:
        return []
    return [_clean(row[column]) for row in rows[1:] if column < len(row) and row[column].strip()]


def _key(text: str) -> str:
    return re.sub(r"\W+", " ", text).strip().lower()


@dataclass(frozen=True)
class KeyFactsGrammar:
    """The extraction reply (App. A.2, step 1): field ``key_facts``, a tuple of strings."""

    fields: tuple[str, ...] = ("key_facts",)

    def read(self, reply: Reply) -> Reading:
        """The key facts, in order, without duplicates; or why there are none."""
        try:
            # A fenced bullet list is the judge's own answer here: only block quotes go.
            facts = _key_facts(unquote_blocks(reply.raw, code=False))
        except CreamParseError as exc:
            return Reading({"key_facts": None}, {"key_facts": str(exc)})
        return Reading({"key_facts": facts})


def _key_facts(text: str) -> tuple[str, ...]:
    facts = _list_items(text)
    if not facts:
        values = json_values(text)
        if not values and text.strip().startswith(("[", "{")):
            raise CreamParseError("extraction reply is JSON without a list of key facts")
        if values:
            lists = [found for v in values if (found := _strings_of(v))]
            if not lists:
                raise CreamParseError("extraction reply is JSON without a list of key facts")
            if len({json.dumps(f) for f in lists}) > 1:
                raise CreamParseError("extraction reply holds conflicting lists of key facts")
            facts = lists[0]
    unique: list[str] = []
    for fact in facts:
        if fact and fact not in unique:
            unique.append(fact)
    if not unique:
        raise CreamParseError("extraction reply holds no bullet list of key facts")
    echoed = [f for f in unique if _key(f) in _EXAMPLES or "kevin carr" in f.lower()]
    if echoed:
        raise CreamParseError(
            f"extraction reply repeats {len(echoed)} of the prompt's example key facts "
            "(Kevin Carr): an echo of the instructions, not facts of these summaries"
        )
    return tuple(unique)


KEY_FACTS = KeyFactsGrammar()


def parse_key_facts(text: str | None, finish_reason: str | None = None) -> Reading:
    """Read an extraction reply (field ``key_facts``) under the reading policy.

    The App. A.2 prompt shows its example facts as a ``*`` bullet list, and judges answer
    with a bulleted or numbered list, often under a heading and with closing remarks, or
    in a fenced block. A JSON list of strings (or an object holding exactly one) is the
    same list in another syntax and is accepted too. Anything else (prose, a refusal,
    ``{"facts": []}``, an empty reply) holds no list: turning it into "key facts" would
    score the comparison on text that is not one, so it is unscored with the reason.
    """
    return read_reply(KEY_FACTS, text or "", finish_reason)


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
        for part in re.split(r"[,;\s]+(?:and\s+)?", value.strip().strip("[]").strip()):
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
        # "No, not mentioned in the summary.": the answer word, then the judge's why.
        lead = re.match(r"(yes|no)\s*[,;:.\u2013\u2014-]\s*(?P<rest>.*)", word)
        if lead and not re.search(r"\b(?:yes|no|partially|partly)\b", lead.group("rest")):
            return lead.group(1) == "yes"
    raise CreamParseError(f'{where}: response {value!r} is neither "Yes" nor "No"')


def _entries(text: str) -> list[Any]:
    """The one JSON list of alignment entries in a reply (conflicting answers refused)."""
    answers: list[list[Any]] = []
    for value in json_values(text):
        if isinstance(value, dict):
            lists = [v for v in value.values() if isinstance(v, list)]
            value = lists[0] if len(lists) == 1 else [value]
        if isinstance(value, list):
            if len(value) == 1 and isinstance(value[0], dict):
                fixed = _braceless(text)
                repaired = json_values(fixed) if fixed is not None else []
                if repaired and isinstance(repaired[0], list) and len(repaired[0]) > 1:
                    value = repaired[0]
            answers.append(value)
    if not answers:
        raise CreamParseError("alignment reply holds no JSON list")
    distinct = {json.dumps(a, sort_keys=True, default=str) for a in answers}
    if len(distinct) > 1:
        raise CreamParseError(
            f"alignment reply holds {len(distinct)} different answers (conflicting)"
        )
    return [e for e in answers[0] if e not in (None, "", [], {})]


def _match(texts: Sequence[str], key_facts: Sequence[str]) -> list[int]:
    """For each entry's fact text, the index of the key fact it answers."""
    keys = [_key(f) for f in key_facts]
    out: list[int] = []
    for i, text in enumerate(texts, start=1):
        wanted = _key(text)
        exact = [j for j, k in enumerate(keys) if k == wanted]
        if len(exact) == 1:
            out.append(exact[0])
            continue
        ratios = [difflib.SequenceMatcher(None, wanted, k).ratio() for k in keys]
        best = max(range(len(keys)), key=ratios.__getitem__)
        close = [j for j, r in enumerate(ratios) if r >= ratios[best] - 0.05]
        if ratios[best] < 0.8 or len(close) > 1:
            raise CreamParseError(f"alignment entry {i} names no key fact that was asked: {text!r}")
        out.append(best)
    return out


@dataclass(frozen=True)
class AlignmentGrammar:
    """The alignment reply (App. A.2, step 2): field ``alignments``, one per key fact.

    Attributes:
        key_facts: The key facts the judge was asked about, in order.
        n_units: The summary's numbered units (line numbers must lie in 1..n_units).
    """

    key_facts: tuple[str, ...]
    n_units: int
    fields: tuple[str, ...] = ("alignments",)

    def read(self, reply: Reply) -> Reading:
        """Every key fact's alignment, or why the reply cannot be used."""
        try:
            found = _alignments(reply.text, self.key_facts, self.n_units)
            _agrees(found, reply)
        except CreamParseError as exc:
            return Reading({"alignments": None}, {"alignments": str(exc)})
        return Reading({"alignments": found})


_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_WORD_NUMBERS = {word: i for i, word in enumerate(_WORDS)}
_COUNT = re.compile(
    r"(?<![\w.])(?P<n>\d+|" + "|".join(_WORD_NUMBERS) + r")\s+(?:out\s+)?of\s+(?:the\s+)?"
    r"(?P<total>\d+|" + "|".join(_WORD_NUMBERS) + r")\s+(?:key\s+)?facts?\s+"
    r"(?:are|is|were|was|can\s+be|could\s+be)\s+(?:\w+\s+)?"
    r"(?:inferred|supported|found|present|covered|mentioned|included|captured)",
    re.I,
)
_DRAFT_ANSWER = re.compile(
    r"(?<![\w-])(?:key\s+)?fact\s*#?(?P<i>\d{1,3})\b[^\n.;]*?\b(?P<a>yes|no)\b", re.I
)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _WORD_NUMBERS[word.lower()]


def _agrees(found: Sequence[Alignment], reply: Reply) -> None:
    """Refuse an answer that the reply's own prose or reasoning contradicts.

    "3 of the 4 key facts are inferred" beside a list with two "Yes", or a reasoning
    block that answers "Fact 2: ... No" before a "Yes", states two answers: conflicting.
    """
    supported = sum(a.supported for a in found)
    for match in _COUNT.finditer(reply.prose):
        if _number(match.group("total")) == len(found) and _number(match.group("n")) != supported:
            raise CreamParseError(
                f"alignment reply says {match.group(0)!r} but answers Yes for {supported} "
                "key facts (conflicting)"
            )
    for match in _DRAFT_ANSWER.finditer(reply.thinking):
        i = int(match.group("i"))
        if 1 <= i <= len(found) and found[i - 1].supported != (match.group("a").lower() == "yes"):
            raise CreamParseError(
                f"alignment reply's reasoning answers key fact {i} otherwise than its JSON "
                "(conflicting)"
            )


def _alignments(text: str, key_facts: Sequence[str], n_units: int) -> tuple[Alignment, ...]:
    entries = _entries(text)
    if len(entries) != len(key_facts):
        raise CreamParseError(
            f"alignment answers {len(entries)} entries for {len(key_facts)} key facts"
        )
    parsed: list[tuple[dict[str, Any], str]] = []
    for i, entry in enumerate(entries, start=1):
        where = f"alignment entry {i}"
        if not isinstance(entry, dict):
            raise CreamParseError(f"{where} is not a dictionary")
        fields = _canonical(entry)
        if "response" not in fields:
            raise CreamParseError(f'{where} has no "response" key')
        parsed.append((fields, where))
    named = [str(f.get("key fact", "") or "").strip() for f, _ in parsed]
    if all(named):
        order = _match(named, key_facts)
        twice = sorted({j for j in order if order.count(j) > 1})
        if twice:
            raise CreamParseError(
                f"alignment answers key fact {twice[0] + 1} more than once (and another not at all)"
            )
    else:
        order = list(range(len(entries)))
    out: list[Alignment | None] = [None] * len(key_facts)
    for (fields, where), j, said in zip(parsed, order, named, strict=True):
        supported = _answer(fields["response"], where)
        lines = _line_numbers(fields.get("line number"), n_units, where)
        if not supported:
            lines = ()  # lines cited for a "No" support nothing
        out[j] = Alignment(key_facts[j], supported, lines, said)
    return tuple(a for a in out if a is not None)


def parse_alignment(
    text: str | None,
    key_facts: Sequence[str],
    n_units: int,
    finish_reason: str | None = None,
) -> Reading:
    """Read an alignment reply against the key facts and the summary's unit count.

    Args:
        text: The judge's reply (None or empty: no JSON list).
        key_facts: Key facts from the extraction step.
        n_units: Numbered units (sentences, or lines with ``unit=line``) of the summary.
        finish_reason: The backend's finish reason (``"length"``: never read).

    Returns:
        A reading whose field ``alignments`` holds one :class:`Alignment` per key fact in
        the key facts' order, or None with the reason (no JSON list, a missing key, an
        unknown answer, a line outside the summary, a fact answered twice or never,
        conflicting answers).
    """
    return read_reply(AlignmentGrammar(tuple(key_facts), n_units), text or "", finish_reason)
