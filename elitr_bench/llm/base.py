"""The completion-backend protocol shared by every LLM judge backend.

Backends only turn a prompt into text; caching, rate limiting, retries, prompts and
score parsing live elsewhere so that each can be swapped or reused on its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from elitr_bench.llm.cache import Completion

#: Tokens added to a reasoning model's limit for its hidden reasoning: ``max_completion_tokens``
#: counts reasoning and reply together, and a judge's ``max_tokens`` is sized for the reply
#: (a few hundred tokens), which medium-effort reasoning alone can spend. Unused headroom
#: costs nothing; a reply it still cuts off is unscored with that reason, never read.
REASONING_HEADROOM = 8192


@dataclass(frozen=True)
class ResponseFormat:
    """A structured-output ``response_format``, parsed once where it is made.

    Attributes:
        kind: ``json_schema`` or ``json_object``.
        name: The schema's name (``json_schema``).
        schema: The JSON schema as canonical JSON text (``""`` for ``json_object``).
        strict: OpenAI's strict mode (``json_schema``).
    """

    kind: str
    name: str = ""
    schema: str = ""
    strict: bool = False

    @classmethod
    def json_schema(
        cls, name: str, schema: Mapping[str, Any], strict: bool = True
    ) -> ResponseFormat:
        """A ``json_schema`` format of a schema given as a mapping."""
        return cls("json_schema", name, json.dumps(schema, sort_keys=True), strict)

    def payload(self) -> dict[str, Any]:
        """The request's ``response_format`` field as OpenAI's API takes it."""
        if self.kind != "json_schema":
            return {"type": self.kind}
        spec = {"name": self.name, "strict": self.strict, "schema": json.loads(self.schema)}
        return {"type": "json_schema", "json_schema": spec}

    @property
    def text(self) -> str:
        """Canonical JSON of :meth:`payload`: what cache keys have always recorded."""
        return json.dumps(self.payload(), sort_keys=True)

    @property
    def verdict_key(self) -> str:
        """What an endpoint's verdict on this format is kept under: its type and schema.

        A refusal of one schema (a keyword the server cannot compile) says nothing of
        another, so each schema is learnt on its own.
        """
        if not self.schema:
            return self.kind
        return f"{self.kind}:{hashlib.sha256(self.schema.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class CompletionRequest:
    """One prompt to complete with explicit sampling parameters.

    Attributes:
        prompt: Full judge prompt (sent as a single user message to chat models).
        temperature: Sampling temperature (0 = greedy).
        top_p: Nucleus mass.
        max_tokens: Output token limit.
        seed: Seed to send, or None.
        messages: Chat turns ``(role, content)`` sent *before* ``prompt`` (a system
            message, or an earlier exchange a follow-up question refers to); ``prompt`` is
            always the final user message. Part of the cache key when non-empty.
        response_format: The structured-output format (None: none). Sent by backends
            that take it; part of the cache key when set.
        completion_limit: Send the limit as ``max_completion_tokens`` (the endpoint refuses
            ``max_tokens``: OpenAI's reasoning models), ``max_tokens`` plus
            :data:`REASONING_HEADROOM`, since that limit counts hidden reasoning too.
        sampling: Send ``temperature`` and ``top_p`` (False: the endpoint takes only its
            default, 1, and neither is sent).
    """

    prompt: str
    temperature: float
    top_p: float
    max_tokens: int
    seed: int | None
    messages: tuple[tuple[str, str], ...] = ()
    response_format: ResponseFormat | None = None
    completion_limit: bool = False
    sampling: bool = True

    def sent_params(self) -> dict[str, Any]:
        """The sampling and limit parameters as sent, and as the cache key records them.

        A plain request gives ``temperature``, ``top_p`` and ``max_tokens`` (the keys every
        cache holds); an adapted one names what actually went out instead, so the reply of
        a temperature-1 request is never filed under the temperature asked for.
        """
        params: dict[str, Any] = {}
        if self.sampling:
            params.update(temperature=self.temperature, top_p=self.top_p)
        name = "max_completion_tokens" if self.completion_limit else "max_tokens"
        params[name] = self.sent_limit
        return params

    @property
    def sent_limit(self) -> int:
        """The output token limit sent (reasoning headroom included where it counts)."""
        return self.max_tokens + (REASONING_HEADROOM if self.completion_limit else 0)

    def chat(self) -> list[dict[str, str]]:
        """The full conversation in the OpenAI chat format, ending with ``prompt``."""
        turns = [{"role": role, "content": content} for role, content in self.messages]
        return [*turns, {"role": "user", "content": self.prompt}]


class RetryableError(Exception):
    """Outcome "retry": a transient failure (429, 5xx, timeout, connection, a malformed 200).

    Attributes:
        retry_after: Seconds the server asked us to wait, if it said.
        status: The HTTP status of a refusal; None when the server gave no status
            (timeout, connection error) or answered 200 with an unusable body.
    """

    def __init__(
        self, message: str, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class FatalBackendError(Exception):
    """Outcome "fatal": a failure neither retrying nor leaving out an extra can fix.

    The subclasses are the other typed outcomes a backend's one classification gives
    (:class:`AuthenticationRejected`, :class:`RequestRefused`, :class:`PromptTooLong`,
    :class:`SettingOutOfRange`); nothing downstream reads the server's words again.

    Attributes:
        status: The HTTP status of the refusal, or None when no server refused it.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RequestRefused(FatalBackendError):
    """Outcome "refused": a 4xx that is not auth, rate limit, window or a user's setting.

    Whatever its words, a request carrying an optional extra (a ``response_format``, the
    reasoning-model parameters) is sent once more without it
    (:mod:`elitr_bench.llm.adapt`); a request without one fails with the server's words.

    Attributes:
        param: The parameter the server named (``response_format``, ``max_tokens``, ...),
            or None when it named none.
        unsupported: The server said the parameter is unsupported (OpenAI's
            ``unsupported_parameter``/``unsupported_value``): only that teaches the
            reasoning adapter.
        taught_by: The adapter that learnt from this refusal ("" until one did); every
            caller waiting for the same request then asks again without learning twice.
    """

    def __init__(
        self, message: str, status: int | None, param: str | None = None, unsupported: bool = False
    ) -> None:
        super().__init__(message, status)
        self.param = param
        self.unsupported = unsupported
        self.taught_by = ""


class PromptTooLong(FatalBackendError):
    """Outcome "too long": the server says the prompt does not fit the model's window."""


class SettingOutOfRange(FatalBackendError):
    """Outcome "the user's setting": a value the user set is beyond the server's limit.

    Never an adaptation: the user chose the value, so the run says which setting, its
    value and the limit (``max_tokens=10000``, the model allows 4096) and stops there.

    Attributes:
        setting: The request parameter the server named (``max_tokens``, ...).
        limit: The server's limit when it said one, else None.
    """

    def __init__(self, message: str, status: int | None, setting: str, limit: str | None) -> None:
        super().__init__(message, status)
        self.setting = setting
        self.limit = limit


class AuthenticationRejected(FatalBackendError):
    """Outcome "auth": the server refused the credentials (HTTP 401/403).

    Every further request with the same credentials would be refused too (and may count
    against an account), so nothing more is sent with them (:mod:`elitr_bench.llm.send`).
    """


class CompletionBackend(Protocol):
    """Turns prompts into completions; safe to call concurrently from one event loop."""

    kind: str
    model: str
    #: Where completions come from when that is not implied by ``kind`` and ``model``
    #: (an OpenAI-compatible server other than the default OpenAI API, Azure); ``""``
    #: otherwise. Part of the cache key when non-empty; never holds a secret.
    endpoint: str

    async def complete(self, request: CompletionRequest) -> Completion:
        """Return the completion or raise RetryableError / FatalBackendError."""
        ...

    async def aclose(self) -> None:
        """Release connections or models."""
        ...
