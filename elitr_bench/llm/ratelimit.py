"""Client-side rate limiting and retry back-off for judge requests.

Providers enforce requests-per-minute and tokens-per-minute quotas; staying under them
on the client side avoids paying for 429 round trips, and a server's ``Retry-After`` is
honoured by pausing *all* requests, not just the one that was refused.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable, Mapping


class TokenBucket:
    """Async token bucket: ``rate_per_min`` units per minute, burst up to ``capacity``.

    A request asking for more than the capacity is let through when the bucket is full,
    so a single oversized prompt cannot dead-lock the run.
    """

    def __init__(
        self,
        rate_per_min: float,
        capacity: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate_per_min / 60.0
        self.capacity = float(capacity if capacity is not None else rate_per_min)
        self._level = self.capacity
        self._clock = clock
        self._stamp = clock()
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self, amount: float = 1.0) -> None:
        """Wait until ``amount`` units are available, then take them."""
        need = min(amount, self.capacity)
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        async with self._lock:
            while True:
                self._refill()
                if self._level >= need:
                    self._level -= amount
                    return
                await asyncio.sleep((need - self._level) / self.rate)

    def refund(self, amount: float) -> None:
        """Give back units that were reserved but not used (e.g. an estimate was high)."""
        self._refill()
        self._level = min(self.capacity, self._level + amount)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits plus a shared pause.

    Args:
        rpm: Requests per minute (0 = unlimited).
        tpm: Tokens per minute (0 = unlimited); requests reserve an estimate up front and
            the difference to the billed usage is refunded.
    """

    def __init__(self, rpm: float = 0.0, tpm: float = 0.0) -> None:
        self._requests = TokenBucket(rpm) if rpm > 0 else None
        self._tokens = TokenBucket(tpm) if tpm > 0 else None
        self._paused_until = 0.0

    def pause_for(self, seconds: float) -> None:
        """Hold every request for ``seconds`` (a server asked us to slow down)."""
        self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    async def acquire(self, estimated_tokens: int) -> None:
        """Wait for the shared pause and for both buckets."""
        while (wait := self._paused_until - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        if self._requests is not None:
            await self._requests.acquire(1.0)
        if self._tokens is not None:
            await self._tokens.acquire(float(estimated_tokens))

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        """Refund an over-estimate once the real token usage is known."""
        if self._tokens is not None and actual_tokens and actual_tokens < estimated_tokens:
            self._tokens.refund(float(estimated_tokens - actual_tokens))


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lower:
        try:
            return max(0.0, float(lower["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(
    attempt: int,
    base: float,
    retry_after: float | None = None,
    cap: float = 60.0,
    rng: random.Random | None = None,
) -> float:
    """Delay before retry ``attempt`` (0-based).

    The server's Retry-After when given, else exponential back-off ``base * 2**attempt``
    with +-25 % jitter, capped at ``cap``.
    """
    if retry_after is not None:
        return retry_after
    jitter = (rng or random).uniform(0.75, 1.25)
    return min(cap, base * (2**attempt) * jitter)
