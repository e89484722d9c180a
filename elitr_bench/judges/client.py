"""The judge client layer: cache, rate limits, retries and usage around a backend.

Reusable by every LLM judge in the project (ELITR-Bench, and later AutoMin, CREAM, MESA):
callers hand in a prompt and sampling parameters and get text back, with each paid
completion committed to the cache before it is returned.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict, dataclass
from typing import Any

from elitr_bench.judges.backends.base import (
    CompletionBackend,
    CompletionRequest,
    FatalBackendError,
    RetryableError,
)
from elitr_bench.judges.cache import Completion, JudgeCache, cache_key
from elitr_bench.judges.context_window import JudgeWindow
from elitr_bench.judges.errors import JudgeRequestError
from elitr_bench.judges.pricing import estimate_cost
from elitr_bench.judges.ratelimit import RateLimiter, backoff_delay

log = logging.getLogger(__name__)


@dataclass
class Usage:
    """Counters for one judging run (what was paid now vs. served from the cache)."""

    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0

    def as_dict(self, prices: tuple[float, float] | None = None) -> dict[str, Any]:
        """Counters plus the estimated cost of the tokens paid in this run."""
        out: dict[str, Any] = asdict(self)
        out["estimated_cost_usd"] = round(
            estimate_cost(self.prompt_tokens, self.completion_tokens, prices), 6
        )
        out["cache_saved_usd"] = round(
            estimate_cost(self.cached_prompt_tokens, self.cached_completion_tokens, prices), 6
        )
        out["priced"] = prices is not None
        if prices is not None:
            out["price_per_1m_tokens"] = {"prompt": prices[0], "completion": prices[1]}
        return out


class JudgeClient:
    """Cached, rate-limited, retrying access to one completion backend.

    Args:
        backend: Where completions come from.
        cache: Where completions are kept (written before use; errors never stored).
        limiter: Shared RPM/TPM limiter.
        concurrency: Maximum requests in flight.
        retries: Retries per request for transient failures.
        backoff: Base seconds of the exponential back-off.
        window: The judge model's context window: a request that does not fit is refused
            before it is sent (``ContextWindowError``); None or unchecked sends anything.
    """

    def __init__(
        self,
        backend: CompletionBackend,
        cache: JudgeCache,
        limiter: RateLimiter | None = None,
        concurrency: int = 16,
        retries: int = 6,
        backoff: float = 1.0,
        owns_cache: bool = False,
        window: JudgeWindow | None = None,
    ) -> None:
        self.backend = backend
        self.owns_cache = owns_cache
        self.cache = cache
        self.limiter = limiter or RateLimiter()
        self.retries = retries
        self.backoff = backoff
        self.usage = Usage()
        self.window = window
        self._concurrency = concurrency
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def key_for(self, request: CompletionRequest, draw: int) -> str:
        """Cache key: backend kind, model, endpoint, full prompt, sampling params, seed, draw."""
        params: dict[str, Any] = {
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "draw": draw,
        }
        if request.messages:  # only then, so single-prompt keys stay what they always were
            params["messages"] = [list(turn) for turn in request.messages]
        if self.backend.endpoint:  # only then: keys of the default OpenAI API are unchanged
            params["endpoint"] = self.backend.endpoint
        return cache_key(self.backend.kind, self.backend.model, request.prompt, params)

    async def complete(self, request: CompletionRequest, draw: int = 0) -> Completion:
        """Return a cached completion or fetch, store and return a new one.

        Raises:
            JudgeRequestError: The backend failed permanently or after all retries.
            ContextWindowError: The prompt does not fit the judge's window (not sent).
        """
        key = self.key_for(request, draw)
        hit = self.cache.get(key)
        if hit is not None:
            self.usage.cache_hits += 1
            self.usage.cached_prompt_tokens += hit.prompt_tokens
            self.usage.cached_completion_tokens += hit.completion_tokens
            return hit
        if self.window is not None:  # the last check: an over-long prompt is never sent
            self.window.require(request)
        loop = asyncio.get_running_loop()
        if self._sem is None or self._loop is not loop:
            # asyncio primitives bind to one loop; a client reused by a later run gets new ones.
            self._sem, self._loop = asyncio.Semaphore(self._concurrency), loop
        sent = len(request.prompt) + sum(len(content) for _, content in request.messages)
        estimate = sent // 4 + request.max_tokens
        async with self._sem:
            for attempt in range(self.retries + 1):
                await self.limiter.acquire(estimate)
                self.usage.requests += 1
                try:
                    completion = await self.backend.complete(request)
                except RetryableError as exc:
                    if attempt >= self.retries:
                        raise JudgeRequestError(
                            f"judge {self.backend.kind}:{self.backend.model}: gave up after "
                            f"{self.retries} retries ({exc}); completed judgements are cached, "
                            "re-run to resume"
                        ) from None
                    delay = backoff_delay(attempt, self.backoff, exc.retry_after)
                    if exc.retry_after is not None:
                        self.limiter.pause_for(delay)
                    self.usage.retries += 1
                    log.debug("judge request retry %d in %.2fs: %s", attempt + 1, delay, exc)
                    await asyncio.sleep(delay)
                    continue
                except FatalBackendError as exc:
                    raise JudgeRequestError(
                        f"judge {self.backend.kind}:{self.backend.model}: {exc}"
                    ) from None
                self.limiter.settle(
                    estimate, completion.prompt_tokens + completion.completion_tokens
                )
                # Written before use: a run killed after this line never pays for it again.
                self.cache.put(
                    key,
                    completion,
                    {
                        "backend": self.backend.kind,
                        "model": self.backend.model,
                        **({"endpoint": self.backend.endpoint} if self.backend.endpoint else {}),
                        "params": {
                            "temperature": request.temperature,
                            "top_p": request.top_p,
                            "max_tokens": request.max_tokens,
                            "seed": request.seed,
                            "draw": draw,
                        },
                    },
                )
                self.usage.prompt_tokens += completion.prompt_tokens
                self.usage.completion_tokens += completion.completion_tokens
                return completion
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        """Close the backend, and the cache if this client opened it."""
        await self.backend.aclose()
        if self.owns_cache:
            self.cache.close()
