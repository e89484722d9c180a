"""The judge client layer: cache, rate limits, retries and usage around a backend.

Reusable by every LLM judge in the project (ELITR-Bench, and later AutoMin, CREAM, MESA):
callers hand in a prompt and sampling parameters and get text back, with each paid
completion committed to the cache before it is returned.

Three rules keep a run from paying for nothing:

* An identical request (same cache key) that is already in flight is not sent again: the
  later caller waits for the first one's completion (counted as a cache hit and as
  ``deduplicated``). Filler classification of a transcript, for one, repeats short turns.
* After the server refuses the credentials (HTTP 401/403), nothing more is sent with them
  by any client of this process: queued and later requests fail at once with the same
  reason (``not_sent``), without retries.
* Processes sharing one SQLite cache send an identical request once: the first marks it
  as being sent in the cache, the others wait for its row (a mark of a dead process or
  older than five minutes is taken over).
* After SIGINT/SIGTERM (:mod:`elitr_bench.llm.interrupt`) nothing new is sent; replies
  in flight still land in the cache.
* A 200 without usable text (no ``choices``, no ``message``, ``content: null``) is retried
  like any transient fault and, when retries run out, fails the item with that reason.
* A request whose ``response_format`` the server refuses (HTTP 400 naming it) is sent once
  more without it, and no later request to that endpoint and model carries it
  (:mod:`elitr_bench.llm.structured`); the refusal never fails the item. While nobody
  knows whether an endpoint takes a format, the first request carrying it is sent alone
  and the others wait for its answer, so a refusing server refuses once per process.
* The same holds for ``max_tokens`` and a ``temperature``/``top_p`` other than 1, which
  OpenAI's reasoning models refuse (:mod:`elitr_bench.llm.reasoning`): known models get
  ``max_completion_tokens`` and no sampling parameters at once, any other endpoint is
  asked once more as its refusal says and remembered (no probe: a refusal costs nothing,
  and the preflight usually learns it before the run's first request).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from typing import Any, NoReturn, TypeVar, cast

from elitr_bench.llm import interrupt, reasoning, structured
from elitr_bench.llm.base import (
    AuthenticationRejected,
    CompletionBackend,
    CompletionRequest,
    FatalBackendError,
    ParameterRefused,
    RetryableError,
)
from elitr_bench.llm.batch import BatchQueue
from elitr_bench.llm.cache import Completion, JudgeCache, cache_key
from elitr_bench.llm.context_window import JudgeWindow
from elitr_bench.llm.errors import JudgeRequestError
from elitr_bench.llm.pricing import estimate_cost
from elitr_bench.llm.ratelimit import RateLimiter, backoff_delay
from elitr_bench.tokens import estimate_tokens

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")

_REJECTED: dict[str, str] = {}

#: Seconds between looks at the cache while another process sends the same request.
PENDING_POLL_S = 0.1
_REJECTED_LOCK = threading.Lock()


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


def forget_rejected_credentials() -> None:
    """Let this process send again with credentials a server refused (tests, notebooks)."""
    with _REJECTED_LOCK:
        _REJECTED.clear()


@dataclass
class Usage:
    """Counters for one judging run (what was paid now vs. served from the cache).

    Attributes:
        requests: HTTP requests sent, every attempt (retries included); always
            ``answered + refused + failed``.
        answered: Requests the server answered with a usable completion.
        refused: Requests the server refused with an error status (401/403, 429, 5xx, ...).
        failed: Requests without a usable reply (timeout, connection error, a 200 without
            text, or abandoned because the run was stopped or its item had already failed).
        not_sent: Requests never sent because the server had refused the credentials.
        cache_hits: Completions served without a request: from the cache, or from an
            identical request already in flight.
        deduplicated: The cache hits that waited for an identical request in flight.
        retries: Attempts repeated after a transient failure.
        prompt_tokens: Prompt tokens paid in this run.
        completion_tokens: Completion tokens paid in this run.
        cached_prompt_tokens: Prompt tokens the cache hits saved.
        cached_completion_tokens: Completion tokens the cache hits saved.
        restated: Follow-up turns that asked a reply's final values again (counted by the
            caller that sends them; each is also a request or a cache hit above).
        structured_refused: Requests the server refused for their ``response_format``
            (HTTP 400 naming it; also under ``refused``): each was sent again without it.
        unstructured: Completions asked without the ``response_format`` they were built
            with, because the endpoint refuses it (learnt from a refusal in this process,
            or OpenAI's models known to, see :mod:`elitr_bench.llm.structured`).
        batched: Completions a batch answered in this run (also under ``requests`` and
            ``answered``; their tokens are paid at the batch price).
    """

    requests: int = 0
    answered: int = 0
    refused: int = 0
    failed: int = 0
    not_sent: int = 0
    cache_hits: int = 0
    deduplicated: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    restated: int = 0
    structured_refused: int = 0
    unstructured: int = 0
    batched: int = 0

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


def usage_line(usage: dict[str, Any]) -> str:
    """One human line of a usage dict (:meth:`Usage.as_dict`), saying answered vs refused."""
    hits = f"cache hits: {usage.get('cache_hits', 0)}"
    if usage.get("deduplicated"):
        hits += f" ({usage['deduplicated']} of them identical requests in flight)"
    line = (
        f"judge requests sent: {usage.get('requests', 0)}, {hits}; of those sent: answered "
        f"{usage.get('answered', 0)}, refused {usage.get('refused', 0)}, failed "
        f"{usage.get('failed', 0)}"
    )
    if usage.get("batched"):
        line += f"; answered in batches: {usage['batched']}"
    if usage.get("not_sent"):
        line += f"; not sent after the credentials were refused: {usage['not_sent']}"
    if usage.get("structured_refused") or usage.get("unstructured"):
        line += (
            f"; sent without the refused response_format: {usage.get('unstructured', 0)} "
            f"({usage.get('structured_refused', 0)} refused with it first)"
        )
    return line


class _Refused(Exception):
    """The server refused a parameter of the request (learnt; sent again as it takes it)."""


@dataclass
class _Flight:
    """One request in flight and how many callers wait for it."""

    task: asyncio.Future[Completion]
    waiters: int = 0


class JudgeClient:
    """Cached, rate-limited, retrying access to one completion backend.

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
        self._flights: dict[str, _Flight] = {}
        self._pool: ThreadPoolExecutor | None = None
        #: Per ``response_format`` type: the one request carrying it while the endpoint's
        #: answer to it is unknown (the others wait for its outcome).
        self._probes: dict[str, asyncio.Future[None]] = {}
        self._scope = str(getattr(backend, "auth_scope", "") or "")
        #: Batch mode: requests missing the cache wait on this queue instead of being sent
        #: (:mod:`elitr_bench.llm.batch`); None sends them one by one.
        self.batch: BatchQueue | None = None
        interrupt.watch_cache(cache)

    def key_for(self, request: CompletionRequest, draw: int) -> str:
        """Cache key: backend kind, model, endpoint, full prompt, sampling params, seed, draw."""
        # What was sent: a reasoning model's reply is keyed by max_completion_tokens and no
        # temperature, never by the temperature the judge asked for.
        params: dict[str, Any] = {**request.sent_params(), "seed": request.seed, "draw": draw}
        if request.messages:  # only then, so single-prompt keys stay what they always were
            params["messages"] = [list(turn) for turn in request.messages]
        if request.response_format:
            params["response_format"] = request.response_format
        if self.backend.endpoint:  # only then: keys of the default OpenAI API are unchanged
            params["endpoint"] = self.backend.endpoint
        return cache_key(self.backend.kind, self.backend.model, request.prompt, params)

    async def _off_loop(self, call: Callable[..., R], *args: Any) -> R:
        """Run a cache call in the client's cache threads, never on the event loop.

        SQLite may wait (its busy time-out) for another process's write; meanwhile the
        loop keeps every other request moving. The pool has a thread per request in
        flight, so waiting puts (committed together, see ``SQLiteCache.put``) never
        hold up lookups.
        """
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._concurrency + 1, "judge-cache")
        return await asyncio.get_running_loop().run_in_executor(self._pool, call, *args)

    async def _hit(self, key: str) -> Completion | None:
        hit = await self._off_loop(self.cache.get, key)
        if hit is not None and self.batch is not None and self.batch.read(key):
            # A batch of this run answered it: paid now (at the batch price), not a hit.
            self.usage.requests += 1
            self.usage.answered += 1
            self.usage.batched += 1
            self.usage.prompt_tokens += hit.prompt_tokens
            self.usage.completion_tokens += hit.completion_tokens
            return replace(hit, cached=False)
        if hit is not None:
            self.usage.cache_hits += 1
            self.usage.cached_prompt_tokens += hit.prompt_tokens
            self.usage.cached_completion_tokens += hit.completion_tokens
        return hit

    def _rejected(self) -> str | None:
        if not self._scope:
            return None
        with _REJECTED_LOCK:
            return _REJECTED.get(self._scope)

    def _not_sent(self, reason: str) -> JudgeRequestError:
        self.usage.not_sent += 1
        return JudgeRequestError(reason)

    async def complete(self, request: CompletionRequest, draw: int = 0) -> Completion:
        """A cached completion, an identical in-flight request's, or a new one (stored first).

        Raises:
            JudgeRequestError: The backend failed permanently or after all retries, or the
                server had refused these credentials before (then nothing is sent).
            ContextWindowError: The prompt does not fit the judge's window (not sent).
        """
        loop = asyncio.get_running_loop()
        if self._sem is None or self._loop is not loop:
            # asyncio primitives bind to one loop; a client reused by a later run gets new ones.
            self._sem, self._loop = asyncio.Semaphore(self._concurrency), loop
            self._flights, self._probes = {}, {}
        probe: asyncio.Future[None] | None = None
        asked = request
        request = reasoning.adapt(request, self._format_scope())
        if request.response_format:
            request, probe = await self._formatted(request)
        try:
            return await self._complete(request, draw)
        except _Refused:  # learnt by now: asked again below as the endpoint takes it (once)
            pass
        finally:
            if probe is not None:  # answered, refused or failed: the waiters decide again
                self._probes.pop(structured.format_type(request.response_format), None)
                probe.set_result(None)
        return await self.complete(asked, draw)

    def _format_scope(self) -> structured.Scope:
        return structured.Scope(self.backend.kind, self.backend.endpoint, self.backend.model)

    async def _formatted(
        self, request: CompletionRequest
    ) -> tuple[CompletionRequest, asyncio.Future[None] | None]:
        """The request as this endpoint takes it, and its probe when it is the first to try.

        A format the endpoint refuses is dropped (counted as ``unstructured``). While its
        answer to the format is unknown, one request carries it (the probe) and the others
        wait for that one's outcome.
        """
        kind = structured.format_type(request.response_format)
        scope = self._format_scope()
        while True:
            known = structured.verdict(scope, kind)
            if known == "refused":
                if structured.known_refusal(scope, kind):
                    structured.note_known(scope, kind)
                self.usage.unstructured += 1
                return replace(request, response_format=""), None
            if known == "accepted":
                return request, None
            probe = self._probes.get(kind)
            if probe is None:
                probe = self._probes[kind] = asyncio.get_running_loop().create_future()
                return request, probe
            await asyncio.shield(probe)

    async def _complete(self, request: CompletionRequest, draw: int) -> Completion:
        key = self.key_for(request, draw)
        hit = await self._hit(key)
        if hit is not None:
            return hit
        if self.window is not None:  # the last check: an over-long prompt is never sent
            self.window.require(request)
        flight = self._flights.get(key)
        owner = flight is None
        if flight is None:
            rejected = self._rejected()
            if rejected is not None:
                raise self._not_sent(rejected)
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
        """Send one request (with retries) under the concurrency bound; cache the result.

        The bound is on requests at the server: the reply is stored after its slot is
        freed, so a store that waits for another process's write lock delays this reply
        only, never the next request. It is stored before it is returned (and before
        this process's "being sent" mark goes), as always.
        """
        assert self._sem is not None
        sent = len(request.prompt) + sum(len(content) for _, content in request.messages)
        estimate = estimate_tokens(sent) + request.sent_limit
        name = f"judge {self.backend.kind}:{self.backend.model}"
        async with self._sem:
            # Another process sharing the cache may have answered it while this one queued.
            hit = await self._hit(key)
            if hit is not None:
                return hit
            refused = self.batch.refusal(key, request) if self.batch is not None else None
            if refused is not None:  # a batch line refused a parameter: learnt as if alone
                self._learn_refusal(refused, request, name)
            if self.batch is not None and self.batch.defers(key):
                # The batch layer sends it: the item waits for the next pass.
                self.batch.defer(key, request, self._meta(request, draw))
                raise self.batch.pending(key)
            hit = await self._sent_elsewhere(key)
            if hit is not None:
                return hit
            try:
                completion = await self._send(request, estimate, name)
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

        The cache marks a request as being sent (``claim``); a second process then waits for
        the first one's row instead of paying again. A mark whose process died or timed out
        is taken over, so this returns None (send it here) at the latest then.
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
        # The look-up before the claim and the claim are two steps: the other process may
        # have stored its reply and dropped its mark in between. It stores before it drops
        # the mark, so a look-up after our claim sees that reply.
        hit = await self._hit(key)
        if hit is not None:
            await self._off_loop(self.cache.release, key)
            self.usage.deduplicated += 1
            return hit
        return None

    async def _send(self, request: CompletionRequest, estimate: int, name: str) -> Completion:
        """Send with retries; the caller stores the completion before using it."""
        for attempt in range(self.retries + 1):
            rejected = self._rejected()
            if rejected is not None:
                raise self._not_sent(rejected)
            await self.limiter.acquire(estimate)
            rejected = self._rejected()
            if rejected is not None:
                raise self._not_sent(rejected)
            if interrupt.stopping():  # a signal: what is in flight lands, nothing new
                self.usage.not_sent += 1
                raise interrupt.not_sending()
            self.usage.requests += 1
            try:
                completion = await self.backend.complete(request)
            except asyncio.CancelledError:
                self.usage.failed += 1  # sent, but nobody waits for the reply any more
                raise
            except RetryableError as exc:
                if exc.status is None:
                    self.usage.failed += 1
                else:
                    self.usage.refused += 1
                if attempt >= self.retries:
                    raise JudgeRequestError(
                        f"{name}: gave up after {self.retries} retries ({exc}); completed "
                        "judgements are cached, re-run to resume"
                    ) from None
                delay = backoff_delay(attempt, self.backoff, exc.retry_after)
                if exc.retry_after is not None:
                    self.limiter.pause_for(delay)
                self.usage.retries += 1
                log.debug("judge request retry %d in %.2fs: %s", attempt + 1, delay, exc)
                await asyncio.sleep(delay)
                continue
            except ParameterRefused as exc:
                self._learn_refusal(exc, request, name)
            except AuthenticationRejected as exc:
                self.usage.refused += 1
                reason = (
                    f"{name}: {exc}; nothing more is sent with these credentials in this "
                    "run (fix the key or base_url, then re-run: completed judgements are "
                    "cached)"
                )
                if self._scope:
                    with _REJECTED_LOCK:
                        reason = _REJECTED.setdefault(self._scope, reason)
                raise JudgeRequestError(reason) from None
            except FatalBackendError as exc:
                if exc.status is None:
                    self.usage.failed += 1
                else:
                    self.usage.refused += 1
                raise JudgeRequestError(f"{name}: {exc}") from None
            self.usage.answered += 1
            if request.response_format:
                kind = structured.format_type(request.response_format)
                structured.learn(self._format_scope(), kind, "accepted")
            self.limiter.settle(estimate, completion.prompt_tokens + completion.completion_tokens)
            self.usage.prompt_tokens += completion.prompt_tokens
            self.usage.completion_tokens += completion.completion_tokens
            return completion
        raise AssertionError("unreachable")  # pragma: no cover

    def _learn_refusal(
        self, exc: ParameterRefused, request: CompletionRequest, name: str
    ) -> NoReturn:
        """Learn a refused parameter: the request is asked again as the endpoint takes it.

        Raises:
            _Refused: Learnt; the caller asks again without the parameter.
            JudgeRequestError: The refusal is the request's own fault.
        """
        self.usage.refused += 1
        why = f" (HTTP {exc.status})" if exc.status else ""
        taught = reasoning.taught(request, exc.param)
        if taught is not None:
            reasoning.learn_refusal(self._format_scope(), taught, request, why)
            raise _Refused(str(exc)) from None
        if exc.param != "response_format" or not request.response_format:
            raise JudgeRequestError(f"{name}: {exc}") from None  # the request's fault
        self.usage.structured_refused += 1
        kind = structured.format_type(request.response_format)
        structured.learn(self._format_scope(), kind, "refused", why)
        raise _Refused(str(exc)) from None

    async def _store(
        self, key: str, completion: Completion, request: CompletionRequest, draw: int
    ) -> None:
        """Write a paid completion to the cache (in the cache threads) before it is used."""
        # Written before use: a run killed after this never pays for it again.
        await self._off_loop(self.cache.put, key, completion, self._meta(request, draw))
        interrupt.note_kept()

    def _meta(self, request: CompletionRequest, draw: int) -> dict[str, Any]:
        """What the cache keeps beside a reply (no secret: kind, model, endpoint, params)."""
        return {
            "backend": self.backend.kind,
            "model": self.backend.model,
            **({"endpoint": self.backend.endpoint} if self.backend.endpoint else {}),
            "params": {**request.sent_params(), "seed": request.seed, "draw": draw},
        }

    async def aclose(self) -> None:
        """Close the backend, and the cache if this client opened it."""
        await self.backend.aclose()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self.owns_cache:
            self.cache.close()
