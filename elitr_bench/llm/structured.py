"""The structured-output adapter: a ``response_format`` as an optional extra of a request.

A restatement turn asks for the final values as one JSON object and, where the server
takes it, sends the object's schema as ``response_format`` (``json_schema``). Many servers
do not, each in its own words: OpenAI's models before Structured Outputs (``gpt-4-0613``,
the ELITR-Bench judge) answer HTTP 400 naming ``response_format``; vLLM answers 400 "The
provided JSON schema contains features not supported by xgrammar"; a validating server
answers 422 naming a schema keyword; a local ``hf:`` judge's xgrammar may not read its
tokenizer. Whatever the words, a request carrying a format that is refused (a 4xx that is
not auth, rate limit, window or a user's setting: :class:`~elitr_bench.llm.base.RequestRefused`)
is sent once more without it (the restatement's message asks for the same JSON in words,
read the same way), and the endpoint, model and schema are remembered for the process
(:mod:`elitr_bench.llm.memory`): a refusal of one schema says nothing of another.

:data:`NO_STRUCTURED` lists OpenAI's own models known to refuse a type, so that a run of
the paper's default judge does not even send the first refused request. This module
knows no judge.
"""

from __future__ import annotations

import re
from dataclasses import replace

from elitr_bench.llm import memory
from elitr_bench.llm.base import CompletionRequest, RequestRefused
from elitr_bench.llm.memory import Scope

__all__ = ["NO_STRUCTURED", "FormatAdapter", "known_refusal"]
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


def known_refusal(scope: Scope, kind: str) -> bool:
    """Whether OpenAI's API is known to refuse ``kind`` for this model (our table)."""
    if scope.kind != "openai" or scope.endpoint:  # another server may name models alike
        return False
    name = scope.openai_name or ""
    return any(kind in types and pattern.fullmatch(name) for pattern, types in NO_STRUCTURED)


def _verdict(scope: Scope, request: CompletionRequest) -> memory.Verdict | None:
    """What this process knows of the request's format: learnt, else the table, else None."""
    fmt = request.response_format
    assert fmt is not None
    learnt = memory.verdict(scope, fmt.verdict_key)
    if learnt is not None:
        return learnt
    return "refused" if known_refusal(scope, fmt.kind) else None


class FormatAdapter:
    """The ``response_format`` of a request, left out where the endpoint refuses it."""

    name = "response_format"

    def apply(self, request: CompletionRequest, scope: Scope) -> CompletionRequest:
        """The request without its format where that is known to be refused."""
        fmt = request.response_format
        if fmt is None or _verdict(scope, request) != "refused":
            return request
        if memory.verdict(scope, fmt.verdict_key) is None:  # the table, not a refusal
            memory.say_once(
                scope,
                fmt.kind,
                f"note: judge {scope.label} takes no response_format {fmt.kind} (OpenAI's "
                "models before Structured Outputs); its restatement turns are sent without it",
            )
        return replace(request, response_format=None)

    def unknown(self, request: CompletionRequest, scope: Scope) -> str | None:
        """The verdict a request carrying a format probes (None: known, or costs nothing).

        A local judge's refusal is decided before anything is generated, so it needs no
        probe: its restatements are batched like first turns.
        """
        fmt = request.response_format
        if fmt is None or scope.kind == "hf" or _verdict(scope, request) is not None:
            return None
        return f"{self.name} {fmt.verdict_key}"

    def learn(self, request: CompletionRequest, refusal: RequestRefused, scope: Scope) -> bool:
        """Any refusal of a request carrying a format teaches that the format is refused."""
        fmt = request.response_format
        if fmt is None:
            return False
        why = f" (HTTP {refusal.status})" if refusal.status else ""
        memory.learn(scope, fmt.verdict_key, "refused")
        memory.say_once(  # once per type: a server refusing many schemas is said once
            scope,
            f"refused {fmt.kind}",
            f"note: judge {scope.label} refuses response_format {fmt.kind}{why} "
            f"({_first_words(refusal)}); its restatement turns with a refused schema are "
            "sent without it from now on (the message still asks for the JSON object, "
            "read the same way)",
        )
        return True

    def answered(self, request: CompletionRequest, scope: Scope) -> None:
        """A reply to a request carrying the format: the endpoint takes it."""
        if request.response_format is not None:
            memory.learn(scope, request.response_format.verdict_key, "accepted")


def _first_words(refusal: RequestRefused, limit: int = 160) -> str:
    """The server's words, on one line and short (they may be long JSON)."""
    words = " ".join(str(refusal).split())
    return words if len(words) <= limit else words[: limit - 3] + "..."
