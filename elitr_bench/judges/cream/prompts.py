"""CREAM's two prompts (Gong et al., App. A.2), and how summaries are put into them.

CREAM judges two summaries of the same meeting without a reference in one conversation of
two steps: (1) key facts are extracted from a "paragraph" that is the two summaries
concatenated; (2) the key facts are aligned to one summary, whose sentences are numbered
(its lines with ``unit=line``, see ``segment.py``), with "Yes"/"No" and the supporting
"line numbers" as JSON. The alignment prompt says "You now have
a summary and a set of key facts": the key facts are the extraction reply earlier in the
same chat, so step (2) is sent as a follow-up turn after the extraction turn and its reply.

The wording below is App. A.2 reproduced exactly, including the authors' typo "ket facts"
and "then response". Only two things are not verbatim, and both restore what the paper's
text rendering lost:

* line breaks before each ``*`` example fact and before "Instruction:" (the printed text
  runs the bullet list into one line);
* the curly braces of the JSON example: the prompt asks for "a list of dictionaries" but
  the printed example has none (``["key fact": ..., "key fact": ...]``), which is what a
  LaTeX rendering that drops unescaped ``{``/``}`` produces. A list of dictionaries is
  ``[{...}, {...}]``, so the braces are put back; the parser still accepts the brace-less
  form if a judge copies it.

The maximum number of key facts is a parameter: the paper uses 16 ("following precedent
literature") and 30 (its App. A.2 text, "the maximum effective number for GPT-4o"); 16 is
the default here because Table 5, the paper's Elo ranking, uses 16.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

DEFAULT_MAX_KEY_FACTS = 16
"""Key-fact limit of the paper's Elo results (Table 5: "16 key fact")."""

PAPER_MAX_KEY_FACTS = (16, 30)
"""The two limits the paper reports (Tables 1, 3 and 4)."""

# The nine out-of-domain example facts of App. A.2 (Sec. 4.1.2: out-of-domain examples
# "generally perform better" than in-domain ones).
EXAMPLE_KEY_FACTS: tuple[str, ...] = (
    "Kevin Carr set off on his journey from Haytor.",
    "Kevin Carr set off on his journey from Dartmoor.",
    "Kevin Carr set off on his journey in July 2013.",
    "Kevin Carr is less than 24 hours away from completing his trip.",
    "Kevin Carr ran around the world unsupported.",
    "Kevin Carr ran with his tent.",
    "Kevin Carr is set to break the previous record.",
    "Kevin Carr is set to break the record by 24 hours.",
    "The previous record was held by an Australian.",
)

# App. A.2, first block (key-fact extraction); "{max_key_facts}" is 30 in the printed text.
_EXTRACTION_TEMPLATE = (
    "You will be provided with a paragraph and a summary. Your task is to decompose the "
    'paragraph into a set of "key facts". A "key fact" is a single fact written as briefly '
    "and clearly as possible, encompassing at most 2-3 entities. There should not be any "
    'repeated "key fact". Here are nine examples of key facts to illustrate the desired '
    "level of granularity (please be careful that these are examples, and do NOT use them as "
    "actual key facts):\n"
    + "".join(f"* {fact}\n" for fact in EXAMPLE_KEY_FACTS)
    + "Instruction: First, read the paragraph carefully. Second, decompose the paragraph "
    "into (at most {max_key_facts}) ket facts.\n"
    "\n"
    "Paragraph: {paragraph}"
)

# App. A.2, second block (key-fact alignment), JSON example with its braces restored.
_ALIGNMENT_TEMPLATE = (
    "You now have a summary and a set of key facts for the same transcript. Your task is to "
    "assess if each key fact is inferred from the summary.\n"
    "\n"
    "Instruction: First, compare each key fact with the summary. Second, check if the key "
    'fact is inferred from the summary and then response "Yes" or "No" for each key fact. '
    'If "Yes", specify the line number(s) of the summary sentence(s) relevant to each key '
    "fact.\n"
    "\n"
    "Provide your answer in JSON format. The answer should be a list of dictionaries whose "
    'keys are "key fact", "response", and "line number": [{{"key fact": "first key fact", '
    '"response": "Yes", "line number": [1]}}, {{"key fact": "second key fact", "response": '
    '"No", "line number": []}}, {{"key fact": "third key fact", "response": "Yes", '
    '"line number": [1, 2, 3]}}]\n'
    "\n"
    "Summary: {summary}"
)

PARAGRAPH_SEPARATOR = "\n\n"
"""Between the two summaries of the extraction paragraph (a blank line, no labels: the
judge must not know which summary a fact came from)."""


def summary_lines(text: str) -> tuple[str, ...]:
    """The lines of a summary as CREAM counts them: non-empty, stripped, in order.

    The same definition as ``Minutes.lines`` of the data layer, so a summary's line count
    (the conciseness denominator) is the same wherever it is computed.
    """
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def number_lines(units: Sequence[str]) -> str:
    """Number a summary's sentences (or lines) ``[1] ...``, ``[2] ...``, one per line.

    Each numbered unit is put on its own line, so the prompt's "line number(s) of the
    summary sentence(s)" is literally true. Brackets keep the numbers distinct from minutes
    that already number their items ("1. Budget"), so "line number" in the judge's answer
    can only mean ours.
    """
    return "\n".join(f"[{i}] {unit}" for i, unit in enumerate(units, start=1))


def paragraph_of(first: Sequence[str], second: Sequence[str]) -> str:
    """The extraction paragraph: the first summary's lines, a blank line, the second's."""
    return "\n".join(first) + PARAGRAPH_SEPARATOR + "\n".join(second)


def extraction_prompt(paragraph: str, max_key_facts: int = DEFAULT_MAX_KEY_FACTS) -> str:
    """App. A.2 key-fact extraction prompt for a paragraph (two summaries concatenated)."""
    if max_key_facts < 1:
        raise ValueError(f"max_key_facts={max_key_facts} must be >= 1")
    return _EXTRACTION_TEMPLATE.format(max_key_facts=max_key_facts, paragraph=paragraph)


def alignment_prompt(units: Sequence[str]) -> str:
    """App. A.2 key-fact alignment prompt for one summary, its sentences (or lines) numbered."""
    return _ALIGNMENT_TEMPLATE.format(summary=number_lines(units))


def prompt_hash(max_key_facts: int = DEFAULT_MAX_KEY_FACTS) -> str:
    """Short hash of both templates and the limit (part of an arena's judge identity)."""
    blob = f"{_EXTRACTION_TEMPLATE}\x00{_ALIGNMENT_TEMPLATE}\x00{max_key_facts}"
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]
