"""Which judge endpoints take structured output (``response_format``), learnt as a run goes.

A restatement turn asks for the final values as one JSON object and, where the server
takes it, sends the object's schema as ``response_format`` (``json_schema``). Many servers
do not: OpenAI's ``gpt-4-0613`` (the ELITR-Bench judge), ``gpt-4o-2024-05-13``,
``chatgpt-4o-latest`` and the other models before Structured Outputs answer HTTP 400
``Invalid parameter: 'response_format' of type 'json_schema' is not supported with this
model``, and the oldest ones refuse ``json_object`` too. The request is then sent once more
without it (the restatement's message asks for the same JSON in words, and the reader reads
that reply the same way), and the endpoint and model are remembered for the rest of the
process: each later restatement is sent once, without the parameter.

:data:`NO_STRUCTURED` lists OpenAI's own models known to refuse a type, so that a run of
the paper's default judge does not even send the first refused request; for any other
server (or model) the first refusal teaches it. This module knows no judge: it keeps
verdicts per :class:`Scope` for :class:`~elitr_bench.llm.client.JudgeClient`, in the
store of :mod:`elitr_bench.llm.refusals` that the reasoning models' parameters share.
"""

from __future__ import annotations

import json
import re

from elitr_bench.llm import refusals
from elitr_bench.llm.refusals import Scope, Verdict

__all__ = [
    "NO_STRUCTURED",
    "Scope",
    "Verdict",
    "forget",
    "format_type",
    "known_refusal",
    "learn",
    "note_known",
    "verdict",
]

#: OpenAI models (name patterns, dated snapshots included) and the ``response_format`` types
#: they refuse. Structured Outputs (``json_schema``) came with gpt-4o-2024-08-06 and
#: gpt-4o-mini; JSON mode (``json_object``) with gpt-4-1106-preview and gpt-3.5-turbo-1106
#: (platform.openai.com/docs/guides/structured-outputs, ".../text-generation#json-mode").
NO_STRUCTURED: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = tuple(
    (re.compile(pattern), frozenset(types))
    for pattern, types in (
        # gpt-4 (8k), gpt-4-32k and their snapshots: neither JSON mode nor schemas.
        (r"gpt-4(-0314|-0613)?", ("json_schema", "json_object")),
        (r"gpt-4-32k(-0314|-0613)?", ("json_schema", "json_object")),
        (r"gpt-3\.5-turbo-(0301|0613|16k|16k-0613)", ("json_schema", "json_object")),
        # JSON mode, no schemas.
        (r"gpt-4-turbo.*|gpt-4-(1106|0125)-preview|gpt-4-.*vision.*", ("json_schema",)),
        (r"gpt-3\.5-turbo(-0125|-1106)?", ("json_schema",)),
        (r"gpt-4o-2024-05-13|chatgpt-4o-latest", ("json_schema",)),
    )
)


def format_type(response_format: str) -> str:
    """The ``type`` of a ``response_format`` given as JSON text (``""`` when it has none)."""
    try:
        spec = json.loads(response_format)
    except ValueError:
        return ""
    return str(spec.get("type", "")) if isinstance(spec, dict) else ""


def known_refusal(scope: Scope, kind: str) -> bool:
    """Whether OpenAI's API is known to refuse ``kind`` for this model (our table)."""
    if scope.kind != "openai" or scope.endpoint:  # another server may name models alike
        return False
    name = scope.model.strip().lower()
    if name.startswith("ft:"):  # ft:gpt-3.5-turbo-0613:org::id
        name = name.split(":")[1]
    return any(kind in types and pattern.fullmatch(name) for pattern, types in NO_STRUCTURED)


def verdict(scope: Scope, kind: str) -> Verdict | None:
    """What this process knows of ``kind`` at ``scope``: learnt, else the table, else None."""
    learnt = refusals.learnt(scope, kind)
    if learnt is not None:
        return learnt
    return "refused" if known_refusal(scope, kind) else None


def learn(scope: Scope, kind: str, outcome: Verdict, why: str = "") -> None:
    """Remember an answer; a refusal is said once per process on stderr (one line)."""
    refusals.learn(
        scope,
        kind,
        outcome,
        f"note: judge {scope.label} refuses response_format {kind}{why}; its restatement "
        "turns are sent without it from now on (the message still asks for the JSON "
        "object, read the same way)",
    )


def note_known(scope: Scope, kind: str) -> None:
    """Say once that a request goes without ``kind`` because the table says it is refused."""
    refusals.say_once(
        scope,
        kind,
        f"note: judge {scope.label} takes no response_format {kind} (OpenAI's models "
        "before Structured Outputs); its restatement turns are sent without it",
    )


def forget() -> None:
    """Forget every verdict and note of this process (tests, notebooks): the shared store."""
    refusals.forget()
