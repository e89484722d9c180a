"""The completion-backend protocol shared by every LLM judge backend.

Backends only turn a prompt into text; caching, rate limiting, retries, prompts and
score parsing live elsewhere so that each can be swapped or reused on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from elitr_bench.llm.cache import Completion

#: Tokens added to a reasoning model's limit for its hidden reasoning: ``max_completion_tokens``
#: counts reasoning and reply together, and a judge's ``max_tokens`` is sized for the reply
#: (a few hundred tokens), which medium-effort reasoning alone can spend. Unused headroom
#: costs nothing; a reply it still cuts off is unscored with that reason, never read.
REASONING_HEADROOM = 8192


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
        response_format: OpenAI's structured-output ``response_format`` as JSON text
            (``""``: none). Sent by backends that take it; part of the cache key when set.
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
    response_format: str = ""
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
    """A transient failure (429, 5xx, timeout, connection, a malformed 200).

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
    """A failure retrying cannot fix (bad key, unknown model, malformed request).

    Attributes:
        status: The HTTP status of the refusal, or None when no server refused it.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ParameterRefused(FatalBackendError):
    """The server refused a parameter of the request (HTTP 400 naming it).

    Raised for the parameters a request may carry that a server may not take:
    ``response_format`` (:mod:`elitr_bench.llm.structured`), ``max_tokens``, and a
    ``temperature`` or ``top_p`` other than 1 (:mod:`elitr_bench.llm.reasoning`).
    :class:`elitr_bench.llm.client.JudgeClient` sends the request once more without it
    and remembers the endpoint (:mod:`elitr_bench.llm.refusals`).

    Attributes:
        param: The refused parameter (``response_format``, ``max_tokens``,
            ``temperature`` or ``top_p``).
    """

    def __init__(self, message: str, status: int | None, param: str) -> None:
        super().__init__(message, status)
        self.param = param


class AuthenticationRejected(FatalBackendError):
    """The server refused the credentials (HTTP 401/403).

    Every further request with the same credentials would be refused too (and may count
    against an account), so the client sends none after it: see
    :class:`elitr_bench.llm.client.JudgeClient`.
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
