"""Batch input and output files: the JSONL that OpenAI's Batch API and vLLM's run_batch read.

One input line per request that missed the cache: ``custom_id`` is the request's cache
key, so a reply read back is filed exactly where the one-by-one path would have filed
it, and ``body`` is the body that path sends (:func:`~elitr_bench.llm.openai_backend.chat_body`).
The API takes at most 50,000 requests and 200 MB per input file and one model per
batch: :func:`split_lines` cuts the lines into parts that fit (the limits are settable,
so a test can split a handful). Output lines are read back into :class:`LineOutcome`
records; a line the server answered with an error is never stored, only retried.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from elitr_bench.llm.cache import Completion
from elitr_bench.llm.env import env_number

#: The endpoint every judge batch line asks.
CHAT_URL = "/v1/chat/completions"

#: The Batch API's limits per batch (requests, bytes of the input file).
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024


@dataclass(frozen=True)
class BatchLimits:
    """How much one batch may hold.

    Attributes:
        requests: Lines per input file.
        bytes: Bytes per input file.
    """

    requests: int = MAX_REQUESTS
    bytes: int = MAX_BYTES


#: Environment variables lowering the limits (a test's split, a provider's lower caps).
ENV_MAX_REQUESTS = "ELITR_BATCH_MAX_REQUESTS"
ENV_MAX_MB = "ELITR_BATCH_MAX_MB"


def limits_from_env(environ: Mapping[str, str] | None = None) -> BatchLimits:
    """The API's limits, lowered by ``ELITR_BATCH_MAX_REQUESTS`` / ``ELITR_BATCH_MAX_MB``.

    Raises:
        JudgeConfigError: A value that is not a positive number.
    """
    requests = env_number(ENV_MAX_REQUESTS, "a number of requests, e.g. 1000", environ)
    megabytes = env_number(ENV_MAX_MB, "a number of megabytes, e.g. 50", environ)
    return BatchLimits(
        min(int(requests), MAX_REQUESTS) if requests else MAX_REQUESTS,
        min(int(megabytes * 1024 * 1024), MAX_BYTES) if megabytes else MAX_BYTES,
    )


@dataclass(frozen=True)
class BatchLine:
    """One request waiting for a batch.

    Attributes:
        key: The cache key of the request (the line's ``custom_id``).
        body: The chat-completions body, exactly as the one-by-one path sends it.
    """

    key: str
    body: Mapping[str, Any]

    def jsonl(self) -> str:
        """The input line (no trailing newline)."""
        line = {"custom_id": self.key, "method": "POST", "url": CHAT_URL, "body": self.body}
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def split_lines(lines: Sequence[BatchLine], limits: BatchLimits) -> list[list[BatchLine]]:
    """Cut ``lines`` into batches: one model each, within the request and byte limits.

    Raises:
        ValueError: One line alone is larger than the byte limit (no batch can hold it).
    """
    parts: list[list[BatchLine]] = []
    by_model: dict[str, list[BatchLine]] = {}
    for line in lines:
        by_model.setdefault(str(line.body.get("model", "")), []).append(line)
    for group in by_model.values():
        current: list[BatchLine] = []
        size = 0
        for line in group:
            blob = len(line.jsonl().encode("utf-8")) + 1
            if blob > limits.bytes:
                raise ValueError(
                    f"one judge request is {blob} bytes, over the batch limit of "
                    f"{limits.bytes} bytes"
                )
            if current and (len(current) >= limits.requests or size + blob > limits.bytes):
                parts.append(current)
                current, size = [], 0
            current.append(line)
            size += blob
        if current:
            parts.append(current)
    return parts


def input_text(lines: Iterable[BatchLine]) -> str:
    """The JSONL input file of one batch."""
    return "".join(line.jsonl() + "\n" for line in lines)


@dataclass(frozen=True)
class LineOutcome:
    """One output or error line read back.

    Attributes:
        key: The line's ``custom_id`` (a cache key).
        completion: The reply, when the line was answered with a usable completion.
        error: Why not, in one line, otherwise.
        status: The HTTP status the server gave the line (None: no answer at all).
        detail: The server's error object (``message``, ``param``, ``code``), if any.
    """

    key: str
    completion: Completion | None = None
    error: str = ""
    status: int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def param(self) -> Any:
        """The parameter the error names (as an SDK error's ``param``)."""
        return self.detail.get("param")

    @property
    def code(self) -> Any:
        """The error's code (as an SDK error's ``code``)."""
        return self.detail.get("code")

    def __str__(self) -> str:
        return self.error


def read_lines(text: str) -> list[LineOutcome]:
    """The outcomes of an output or error file (OpenAI's and vLLM's line format).

    A line is answered when its ``response`` has status 200 and a body whose first
    choice holds text; anything else (``error`` set, another status, no text) is an
    error outcome carrying the server's message, so the request is retried, never lost.
    Lines that are not JSON objects with a ``custom_id`` are skipped.
    """
    from elitr_bench.llm.base import RetryableError
    from elitr_bench.llm.openai_backend import finish_reason, reply_text

    out: list[LineOutcome] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            continue
        key = line["custom_id"]
        response = _mapping(line.get("response"))
        body = _mapping(response.get("body"))
        status = response.get("status_code")
        if line.get("error") or status != 200:
            out.append(
                LineOutcome(
                    key,
                    error=_line_error(line.get("error"), status, body),
                    status=status if isinstance(status, int) else None,
                    detail=_error_object(line.get("error"), body),
                )
            )
            continue
        try:
            text_out = reply_text(body)
        except RetryableError as exc:
            out.append(LineOutcome(key, error=str(exc)))
            continue
        usage = _mapping(body.get("usage"))
        completion = Completion(
            text=text_out,
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            finish_reason=finish_reason(body),
        )
        out.append(LineOutcome(key, completion))
    return out


def _error_object(error: Any, body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The error object of a failed line: OpenAI's ``error``, vLLM's ``{"error": {...}}``."""
    found = _mapping(error) or _mapping(body.get("error"))
    nested = _mapping(found.get("error"))
    return nested or found


def _line_error(error: Any, status: Any, body: Mapping[str, Any]) -> str:
    """One line saying why a batch line has no reply."""
    found: Any = _error_object(error, body) or error
    if isinstance(found, dict):
        message = " ".join(str(found.get("message", "")).split())[:200]
        code = found.get("code")
        what = f"{code}: {message}" if code else message
    else:
        what = " ".join(str(found or "no reply").split())[:200]
    return f"HTTP {status}: {what}" if isinstance(status, int) else what


def _mapping(value: Any) -> Mapping[str, Any]:
    """A JSON object of a line, or an empty one when the field is missing or not one."""
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
