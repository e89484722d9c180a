"""The send layer: limits, retries, credentials, interrupts and usage around one backend.

The client hands a request here once the cache has no answer for it and the adapters
have decided what it carries. :class:`Sender` is the seam: :class:`DirectSender` sends
each request now, and another sender (one that collects requests into a batch job and
answers them when the job is done) can stand in for it without the cache or the
adapters knowing.

The backend's one classification (:mod:`elitr_bench.llm.base`) decides what a failure
is; this layer only acts on it:

* retry: waited for (the server's ``Retry-After``, else exponential back-off) and sent
  again, up to ``retries`` times;
* auth: nothing more is sent with these credentials by any client of this process
  (:mod:`elitr_bench.llm.memory`); later requests fail at once (``not_sent``);
* refused: handed up unchanged, for the adapt layer to learn from;
* the user's setting, too long, fatal: the item fails in one line naming the judge.

After SIGINT/SIGTERM (:mod:`elitr_bench.llm.interrupt`) nothing new is sent.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from elitr_bench.llm import base, interrupt, memory
from elitr_bench.llm.base import CompletionBackend, CompletionRequest, RequestRefused
from elitr_bench.llm.cache import Completion
from elitr_bench.llm.context_window import ContextWindowError
from elitr_bench.llm.errors import JudgeRequestError
from elitr_bench.llm.memory import Scope
from elitr_bench.llm.ratelimit import RateLimiter, backoff_delay
from elitr_bench.llm.usage import Usage
from elitr_bench.tokens import estimate_tokens

log = logging.getLogger(__name__)

#: The topic under which refused credentials are kept (with the backend's in-memory hash).
REJECTED = "rejected credentials"


class Sender(Protocol):
    """Where a request goes once neither the cache nor a request in flight answers it."""

    async def send(self, request: CompletionRequest, key: str = "") -> Completion:
        """The completion, or a typed failure.

        ``key`` is the request's cache key: a sender that answers later (a batch) files
        its line under it; one that sends now needs none.

        Raises:
            RequestRefused: The server refused the request (the adapt layer learns).
            JudgeRequestError: Any other failure, in one line naming the judge.
            ContextWindowError: The server says the prompt does not fit.
        """
        ...

    def refusal(self) -> str | None:
        """Why nothing may be sent now (refused credentials), else None."""
        ...

    async def aclose(self) -> None:
        """Release connections or models."""
        ...


class DirectSender:
    """Sends each request now, under the run's limits, with retries.

    Args:
        backend: Where completions come from; a backend with credentials carries an
            ``auth_scope`` (an opaque in-memory id of credentials and endpoint).
        usage: Where requests, answers, refusals and tokens are counted.
        limiter: The shared RPM/TPM limiter.
        retries: Retries per request for transient failures.
        backoff: Base seconds of the exponential back-off.
    """

    def __init__(
        self,
        backend: CompletionBackend,
        usage: Usage,
        limiter: RateLimiter | None = None,
        retries: int = 6,
        backoff: float = 1.0,
    ) -> None:
        self.backend = backend
        self.usage = usage
        self.limiter = limiter or RateLimiter()
        self.retries = retries
        self.backoff = backoff
        self.scope = Scope(backend.kind, backend.endpoint, backend.model)
        self.name = f"judge {backend.kind}:{backend.model}"
        auth = str(getattr(backend, "auth_scope", "") or "")
        self._auth = f"{REJECTED} {auth}" if auth else ""

    def refusal(self) -> str | None:
        """The line of the credentials' refusal, once a server refused them."""
        return memory.recall(self.scope, self._auth) if self._auth else None

    def _not_sent(self, reason: str) -> JudgeRequestError:
        self.usage.not_sent += 1
        return JudgeRequestError(reason)

    def _may_send(self) -> None:
        rejected = self.refusal()
        if rejected is not None:
            raise self._not_sent(rejected)
        if interrupt.stopping():  # a signal: what is in flight lands, nothing new
            self.usage.not_sent += 1
            raise interrupt.not_sending()

    async def send(self, request: CompletionRequest, key: str = "") -> Completion:
        """Send with retries; the caller stores the completion before using it."""
        sent = len(request.prompt) + sum(len(content) for _, content in request.messages)
        estimate = estimate_tokens(sent) + request.sent_limit
        for attempt in range(self.retries + 1):
            self._may_send()
            await self.limiter.acquire(estimate)
            self._may_send()
            self.usage.requests += 1
            try:
                completion = await self.backend.complete(request)
            except asyncio.CancelledError:
                self.usage.failed += 1  # sent, but nobody waits for the reply any more
                raise
            except base.RetryableError as exc:
                self._count(exc.status)
                if attempt >= self.retries:
                    raise JudgeRequestError(
                        f"{self.name}: gave up after {self.retries} retries ({exc}); completed "
                        "judgements are cached, re-run to resume"
                    ) from None
                delay = backoff_delay(attempt, self.backoff, exc.retry_after)
                if exc.retry_after is not None:
                    self.limiter.pause_for(delay)
                self.usage.retries += 1
                log.debug("judge request retry %d in %.2fs: %s", attempt + 1, delay, exc)
                await asyncio.sleep(delay)
                continue
            except base.FatalBackendError as exc:  # a refused format of a local judge has no status
                self._count(0 if isinstance(exc, RequestRefused) else exc.status)
                raise self._failure(exc) from None
            self.usage.answered += 1
            self.limiter.settle(estimate, completion.prompt_tokens + completion.completion_tokens)
            self.usage.prompt_tokens += completion.prompt_tokens
            self.usage.completion_tokens += completion.completion_tokens
            return completion
        raise AssertionError("unreachable")  # pragma: no cover

    def _count(self, status: int | None) -> None:
        if status is None:
            self.usage.failed += 1
        else:
            self.usage.refused += 1

    def _failure(self, exc: base.FatalBackendError) -> Exception:
        """What a permanent failure becomes for the layers above (one line each)."""
        if isinstance(exc, RequestRefused):
            return exc  # typed: the adapt layer learns from it, or names it
        if isinstance(exc, base.PromptTooLong):
            return ContextWindowError(
                f"{self.name}: {exc}; nothing more is sent for this prompt; use a judge with "
                "a larger context window (context=N names one we do not know)"
            )
        if isinstance(exc, base.SettingOutOfRange):
            return JudgeRequestError(f"{self.name}: {exc}")
        if isinstance(exc, base.AuthenticationRejected):
            reason = (
                f"{self.name}: {exc}; nothing more is sent with these credentials in this "
                "run (fix the key or base_url, then re-run: completed judgements are cached)"
            )
            return JudgeRequestError(
                memory.remember(self.scope, self._auth, reason) if self._auth else reason
            )
        return JudgeRequestError(f"{self.name}: {exc}")

    async def aclose(self) -> None:
        """Close the backend."""
        await self.backend.aclose()
