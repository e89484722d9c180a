"""What a judging run sent and paid, counted where it happens (every layer adds to one)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
        structured_refused: Requests refused while they carried a ``response_format``
            (any 4xx that taught :mod:`elitr_bench.llm.structured`; also under
            ``refused``): each was sent again without it.
        unstructured: Completions asked without the ``response_format`` they were built
            with, because the endpoint refuses it (learnt from a refusal in this process,
            or OpenAI's models known to, see :mod:`elitr_bench.llm.structured`).
        batched: Completions a batch answered (also under ``requests`` and ``answered``;
            their tokens are paid at the batch price).
        batched_prompt_tokens: The prompt tokens of ``batched`` (also in ``prompt_tokens``).
        batched_completion_tokens: Their completion tokens (also in ``completion_tokens``).
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
    batched_prompt_tokens: int = 0
    batched_completion_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The counters (a judge adds its cost estimate to them)."""
        return asdict(self)
