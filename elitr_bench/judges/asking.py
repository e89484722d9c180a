"""Ask -> read -> re-ask: the one loop every judge family runs its prompts through.

A family hands in how to build the request of each attempt (its draw and seed schedule,
which the cache keys depend on) and how to read a completion (its grammar under the
policy of :mod:`.reading`). The loop sends attempt after attempt until a reading is
complete or the attempts run out, and keeps the most complete reading (the earliest of
equally complete ones). Every completion goes through the one client, so each is cached
before it is read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from elitr_bench.judges.config import JudgeConfig
from elitr_bench.judges.reading import Grammar, Reading, read_reply
from elitr_bench.llm.base import CompletionBackend, CompletionRequest
from elitr_bench.llm.cache import Completion, JudgeCache, open_cache
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.context_window import judge_window
from elitr_bench.llm.factory import make_backend
from elitr_bench.llm.ratelimit import RateLimiter


@dataclass(frozen=True)
class Asked:
    """The outcome of asking one prompt (after re-asks).

    Attributes:
        reading: The most complete reading (the first complete one when there is one).
        raws: The text of every attempt, in order.
        attempts: Completions asked.
        best: Index of the attempt ``reading`` comes from.
        finish_reasons: The backend's finish reason of every attempt.
    """

    reading: Reading
    raws: tuple[str, ...]
    attempts: int
    best: int = 0
    finish_reasons: tuple[str | None, ...] = ()

    @property
    def raw(self) -> str:
        """The text of the attempt the reading comes from."""
        return self.raws[self.best] if self.raws else ""

    @property
    def last(self) -> str:
        """The text of the last attempt."""
        return self.raws[-1] if self.raws else ""


class _Sampling(Protocol):
    """What :func:`request_for` reads of a judge config."""

    @property
    def seed(self) -> int | None: ...
    @property
    def temperature(self) -> float: ...
    @property
    def top_p(self) -> float: ...
    @property
    def max_tokens(self) -> int: ...


def request_for(
    spec: _Sampling,
    prompt: str,
    draw: int,
    messages: tuple[tuple[str, str], ...] = (),
    *,
    max_tokens: int | None = None,
) -> CompletionRequest:
    """The request of one draw: the judge's sampling, seed ``seed + draw``.

    Every family builds its requests here, so seeds and sampling mean the same in all of
    them (and the cache keys, which hash the request, stay as they were).
    """
    seed = None if spec.seed is None else spec.seed + draw
    return CompletionRequest(
        prompt,
        spec.temperature,
        spec.top_p,
        spec.max_tokens if max_tokens is None else max_tokens,
        seed,
        messages,
    )


Reader = Callable[[Completion], Reading]


def reader_of(grammar: Grammar, evaluated: Sequence[str] = ()) -> Reader:
    """Read completions with ``grammar`` under the policy (cut-off, quotes, agreement)."""

    def read(completion: Completion) -> Reading:
        return read_reply(grammar, completion.text, completion.finish_reason, evaluated)

    return read


async def ask(
    client: JudgeClient,
    attempt_request: Callable[[int], tuple[CompletionRequest, int]],
    read: Reader,
    attempts: int,
) -> Asked:
    """Ask until a reading is complete or ``attempts`` completions were asked.

    Args:
        client: The judge's client (cache, de-duplication, rate limits, retries).
        attempt_request: Attempt index -> ``(request, draw)``; the draw is part of the
            cache key, so every attempt is its own cached completion.
        read: Completion -> reading (see :func:`reader_of`).
        attempts: At most this many completions (``reask + 1``).
    """
    raws: list[str] = []
    reasons: list[str | None] = []
    best: Reading | None = None
    best_at = 0
    for attempt in range(max(1, attempts)):
        request, draw = attempt_request(attempt)
        completion = await client.complete(request, draw)
        raws.append(completion.text or "")
        reasons.append(completion.finish_reason)
        reading = read(completion)
        if best is None or reading.n_scored > best.n_scored:
            best, best_at = reading, attempt
        if reading.complete:
            break
    assert best is not None
    return Asked(best, tuple(raws), len(raws), best_at, tuple(reasons))


def make_client(
    config: JudgeConfig,
    cache: JudgeCache | None = None,
    backend: CompletionBackend | None = None,
) -> JudgeClient:
    """The one way a judge of any family gets its client (backend, cache, limits, retries).

    Args:
        config: The LLM judge config (backend, limits, retries, cache setting, window).
        cache: A cache owned by someone else (a second client of the same run, MESA's
            debate pool, the filler classifier); None opens ``config.cache`` and the
            client owns (closes) it.
        backend: A backend to use instead of the config's (tests, reuse).
    """
    return JudgeClient(
        backend or make_backend(config),
        cache if cache is not None else open_cache(config.cache),
        RateLimiter(config.rpm, config.tpm),
        concurrency=config.concurrency,
        retries=config.retries,
        backoff=config.backoff,
        owns_cache=cache is None,
        window=judge_window(config),
    )
