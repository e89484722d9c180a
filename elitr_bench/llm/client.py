"""The judge client: three layers between a judge and a model (cache, adapt, send).

Reusable by every LLM judge in the project (ELITR-Bench, and later AutoMin, CREAM, MESA):
callers hand in a prompt and sampling parameters and get text back, with each paid
completion committed to the cache before it is returned.

* **cache** (this module): a completion is looked up by its cache key and stored before it
  is used. An identical request already in flight is not sent again: the later caller
  waits for the first one's completion (counted as a cache hit and as ``deduplicated``).
  Processes sharing one SQLite cache send an identical request once: the first marks it
  as being sent, the others wait for its row (a mark of a dead process or older than
  five minutes is taken over).
* **adapt** (:mod:`elitr_bench.llm.adapt`): what the request carries, decided in one loop
  over its optional extras (a ``response_format``, a reasoning model's parameters). A
  request the server refuses while it carries one is sent once more without it, whatever
  the server's words, and the endpoint is remembered; a refusal costs at most one extra
  request per process and never an item.
* **send** (:mod:`elitr_bench.llm.send`): limits, retries, credentials, interrupts, usage.
  :class:`~elitr_bench.llm.send.Sender` is the seam another way of sending (a batch job)
  plugs into.

Each backend classifies its own failures once (:mod:`elitr_bench.llm.base`); no layer
reads a server's words again.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

from elitr_bench.llm import interrupt
from elitr_bench.llm.adapt import Adaptation
from elitr_bench.llm.base import CompletionBackend, CompletionRequest
from elitr_bench.llm.cache import Completion, JudgeCache, cache_key
from elitr_bench.llm.context_window import JudgeWindow
from elitr_bench.llm.errors import JudgeRequestError
from elitr_bench.llm.ratelimit import RateLimiter
from elitr_bench.llm.send import DirectSender, Sender
from elitr_bench.llm.usage import Usage

__all__ = ["JudgeClient", "Usage", "gather_settled"]

T = TypeVar("T")
R = TypeVar("R")

#: Seconds between looks at the cache while another process sends the same request.
PENDING_POLL_S = 0.1


async def gather_settled(*awaitables: Awaitable[T]) -> list[T]:
    """:func:`asyncio.gather` that lets every awaitable finish before raising the first error.

    With a plain ``gather`` the first failing request fails the item while its siblings
    keep sending behind it; the run then reports usage without them and, when it ends,
    cancels them after they were paid and before they were cached. Waiting for all keeps
    the counts exact and every paid completion cached.
    """
    outcomes = await asyncio.gather(*awaitables, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return cast("list[T]", outcomes)


@dataclass
class _Flight:
    """One request in flight and how many callers wait for it."""

    task: asyncio.Future[Completion]
    waiters: int = 0


class JudgeClient:
    """Cached, adapted, rate-limited, retrying access to one completion backend.

    Args:
        backend: Where completions come from. A backend with credentials may carry an
            ``auth_scope`` (an opaque in-memory id of credentials and endpoint): once a
            server refuses it, no client of this process sends with it again.
        cache: Where completions are kept (written before use; errors never stored).
        limiter: Shared RPM/TPM limiter.
        concurrency: Maximum requests in flight.
        retries: Retries per request for transient failures.
        backoff: Base seconds of the exponential back-off.
        window: The judge model's context window: a request that does not fit is refused
            before it is sent (``ContextWindowError``); None or unchecked sends anything.
        sender: The send layer (default: :class:`~elitr_bench.llm.send.DirectSender` over
            ``backend`` with ``limiter``, ``retries`` and ``backoff``).
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
        sender: Sender | None = None,
    ) -> None:
        self.backend = backend
        self.owns_cache = owns_cache
        self.cache = cache
        self.usage = Usage()
        self.window = window
        direct = DirectSender(backend, self.usage, limiter, retries, backoff)
        self.limiter = direct.limiter
        self.sender: Sender = sender or direct
        self._scope = direct.scope
        self._name = direct.name
        self._concurrency = concurrency
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flights: dict[str, _Flight] = {}
        self._adapt = Adaptation(self._scope, self.usage, self._name)
        self._pool: ThreadPoolExecutor | None = None
        interrupt.watch_cache(cache)

    def key_for(self, request: CompletionRequest, draw: int) -> str:
        """Cache key: backend kind, model, endpoint, full prompt, sampling params, seed, draw."""
        # What was sent: a reasoning model's reply is keyed by max_completion_tokens and no
        # temperature, never by the temperature the judge asked for.
        params: dict[str, Any] = {**request.sent_params(), "seed": request.seed, "draw": draw}
        if request.messages:  # only then, so single-prompt keys stay what they always were
            params["messages"] = [list(turn) for turn in request.messages]
        if request.response_format is not None:
            params["response_format"] = request.response_format.text
        if self.backend.endpoint:  # only then: keys of the default OpenAI API are unchanged
            params["endpoint"] = self.backend.endpoint
        return cache_key(self.backend.kind, self.backend.model, request.prompt, params)

    async def _off_loop(self, call: Callable[..., R], *args: Any) -> R:
        """Run a cache call in the cache threads: SQLite may wait for another process.

        The pool has a thread per request in flight, so waiting puts (committed together,
        see ``SQLiteCache.put``) never hold up lookups.
        """
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._concurrency + 1, "judge-cache")
        return await asyncio.get_running_loop().run_in_executor(self._pool, call, *args)

    async def _hit(self, key: str) -> Completion | None:
        hit = await self._off_loop(self.cache.get, key)
        if hit is not None:
            self.usage.cache_hits += 1
            self.usage.cached_prompt_tokens += hit.prompt_tokens
            self.usage.cached_completion_tokens += hit.completion_tokens
        return hit

    async def complete(self, request: CompletionRequest, draw: int = 0) -> Completion:
        """A cached completion, an identical in-flight request's, or a new one (stored first).

        Raises:
            JudgeRequestError: The backend failed permanently or after all retries, the
                server refused a request no adapter could change, or the server had
                refused these credentials before (then nothing is sent).
            ContextWindowError: The prompt does not fit the judge's window (not sent).
        """
        loop = asyncio.get_running_loop()
        if self._sem is None or self._loop is not loop:
            # asyncio primitives bind to one loop; a client reused by a later run gets new ones.
            self._sem, self._loop = asyncio.Semaphore(self._concurrency), loop
            self._flights = {}
            self._adapt = Adaptation(self._scope, self.usage, self._name)
        return await self._adapt.complete(request, functools.partial(self._cached, draw=draw))

    async def _cached(self, request: CompletionRequest, draw: int) -> Completion:
        key = self.key_for(request, draw)
        hit = await self._hit(key)
        if hit is not None:
            return hit
        if self.window is not None:  # the last check: an over-long prompt is never sent
            self.window.require(request)
        flight = self._flights.get(key)
        owner = flight is None
        if flight is None:
            rejected = self.sender.refusal()
            if rejected is not None:
                self.usage.not_sent += 1
                raise JudgeRequestError(rejected)
            flight = _Flight(asyncio.ensure_future(self._fetch(key, request, draw)))
            self._flights[key] = flight
            flight.task.add_done_callback(functools.partial(self._landed, key, flight))
        flight.waiters += 1
        try:
            completion = await asyncio.shield(flight.task)
        except asyncio.CancelledError:
            flight.waiters -= 1
            if flight.waiters == 0:  # nobody wants it any more: do not leave it running
                flight.task.cancel()
            raise
        flight.waiters -= 1
        if owner:
            return completion
        # The same completion, paid once: for this caller it is as good as a cache hit.
        self.usage.cache_hits += 1
        self.usage.deduplicated += 1
        self.usage.cached_prompt_tokens += completion.prompt_tokens
        self.usage.cached_completion_tokens += completion.completion_tokens
        return replace(completion, cached=True)

    def _landed(self, key: str, flight: _Flight, _done: object = None) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
        if not flight.task.cancelled():
            flight.task.exception()  # retrieved here; every waiter gets it through shield

    async def _fetch(self, key: str, request: CompletionRequest, draw: int) -> Completion:
        """Send one request under the concurrency bound; cache the result before use.

        The bound is on requests at the server: the reply is stored after its slot is
        freed, so a store that waits for another process's write lock delays this reply
        only, never the next request. It is stored before it is returned (and before
        this process's "being sent" mark goes), as always.
        """
        assert self._sem is not None
        async with self._sem:
            # Another process sharing the cache may have answered it while this one queued.
            hit = await self._hit(key)
            if hit is not None:
                return hit
            hit = await self._sent_elsewhere(key)
            if hit is not None:
                return hit
            try:
                completion = await self.sender.send(request, key)
            except BaseException:
                await self._off_loop(self.cache.release, key)
                raise
        try:
            await self._store(key, completion, request, draw)
        finally:
            await self._off_loop(self.cache.release, key)
        return completion

    async def _sent_elsewhere(self, key: str) -> Completion | None:
        """Wait while another process sharing the cache sends this request; its reply.

        The cache marks a request as being sent (``claim``); a mark whose process died or
        timed out is taken over, so this returns None (send it here) at the latest then.
        """
        while not await self._off_loop(self.cache.claim, key):
            if interrupt.stopping():
                self.usage.not_sent += 1
                raise interrupt.not_sending()
            await asyncio.sleep(PENDING_POLL_S)
            hit = await self._hit(key)
            if hit is not None:
                self.usage.deduplicated += 1
                return hit
        # The other process may have stored its reply and dropped its mark between our
        # look-up and our claim; it stores first, so a look-up after the claim sees it.
        hit = await self._hit(key)
        if hit is not None:
            await self._off_loop(self.cache.release, key)
            self.usage.deduplicated += 1
            return hit
        return None

    async def _store(
        self, key: str, completion: Completion, request: CompletionRequest, draw: int
    ) -> None:
        """Write a paid completion to the cache (in the cache threads) before it is used."""
        # Written before use: a run killed after this never pays for it again.
        await self._off_loop(
            self.cache.put,
            key,
            completion,
            {
                "backend": self.backend.kind,
                "model": self.backend.model,
                **({"endpoint": self.backend.endpoint} if self.backend.endpoint else {}),
                "params": {**request.sent_params(), "seed": request.seed, "draw": draw},
            },
        )
        interrupt.note_kept()

    async def aclose(self) -> None:
        """Close the send layer (and its backend), and the cache if this client opened it."""
        await self.sender.aclose()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self.owns_cache:
            self.cache.close()
