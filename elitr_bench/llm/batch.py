"""The batch sending layer: judge requests answered by a batch instead of one by one.

It is one more :class:`~elitr_bench.llm.send.Sender` under the client's cache and adapt
layers (:class:`BatchSender`). It does not send: a request that missed the cache is put
on a :class:`BatchQueue` and its caller gets :class:`BatchPending` (the item waits for
the next pass). When a judging pass ends, the queue's lines go out as one batch
(OpenAI's Batch API, :class:`BatchJobs`) or into a file (:func:`write_batch_file`, for
vLLM's offline ``run_batch``). Every answered line is kept in the cache file (the
ledger's ``batch_replies``) before anything reads it; in the next pass the ordinary path
asks again, this sender hands over the kept reply (counted as paid, at the batch
price), the client files it in the cache as any reply, and the restatements it needs are
queued for the next batch. A line that fails inside a batch (its own error, a batch
that expired or was cancelled) is sent by the ordinary path in the next pass (or, with
batch files, goes into the next file), never dropped; a line refused for an optional
extra (a ``response_format``) is handed to the adapt layer as a refusal sent alone is.

Nothing is paid twice: the ids of every submitted batch and the keys it holds are in the
ledger (:class:`BatchLedger`, tables of the cache file) before the first poll, so a run
that is stopped or killed polls the same batch when run again, and a request already in
a live batch or answered by one is never submitted again.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from elitr_bench.llm import interrupt
from elitr_bench.llm.base import CompletionRequest, RequestRefused
from elitr_bench.llm.batch_files import (
    CHAT_URL,
    BatchLimits,
    BatchLine,
    LineOutcome,
    input_text,
    read_lines,
    split_lines,
)
from elitr_bench.llm.cache import Completion, JudgeCache, SQLiteCache
from elitr_bench.llm.env import env_number
from elitr_bench.llm.errors import JudgeConfigError, JudgeRequestError
from elitr_bench.llm.send import Sender
from elitr_bench.llm.usage import Usage

#: How a waiting item's reason begins (the judge path tells waiting items by it).
WAITING = "waiting for a judge batch"

#: Environment variable: seconds between two looks at a submitted batch (tests set 0).
ENV_POLL_S = "ELITR_BATCH_POLL_S"
DEFAULT_POLL_S = 30.0

#: The API's own limits per batch.
DEFAULT_LIMITS = BatchLimits()

#: Batch states after which nothing more changes.
FINAL_STATES = frozenset({"completed", "failed", "expired", "cancelled"})


class BatchPending(JudgeRequestError):
    """The request waits for a batch: the item is judged in a later pass."""


class BatchFailed(JudgeRequestError):
    """The Batch API refused a batch (its validation errors) or is not served there."""


def poll_interval(environ: Mapping[str, str] | None = None) -> float:
    """Seconds between polls: ``ELITR_BATCH_POLL_S``, else 30.

    Raises:
        JudgeConfigError: The value is not a number of seconds of 0 or more.
    """
    value = env_number(ENV_POLL_S, "seconds (0 or more), e.g. 30", environ, zero=True)
    return DEFAULT_POLL_S if value is None else value


@dataclass
class BatchQueue:
    """Requests waiting for a batch, and what the batches of this run could not answer.

    Attributes:
        model: The judge model every line asks (one model per batch).
        waiting: Cache key -> line, in the order they were deferred.
        direct: Keys a batch failed to answer: sent one by one from now on.
        rejected: Keys whose line the server refused, with its answer (a refused extra
            is learnt from it as from a request sent alone).
    """

    model: str
    waiting: dict[str, BatchLine] = field(default_factory=dict)
    direct: set[str] = field(default_factory=set)
    rejected: dict[str, LineOutcome] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def defer(self, key: str, request: CompletionRequest) -> BatchPending:
        """Queue a request for the next batch; the error its caller gets meanwhile."""
        from elitr_bench.llm.openai_backend import chat_body

        with self._lock:
            self.waiting.setdefault(key, BatchLine(key, chat_body(self.model, request)))
        return BatchPending(f"{WAITING} (request {key[:12]})")

    def take(self) -> list[BatchLine]:
        """The waiting lines (the queue is empty afterwards)."""
        with self._lock:
            lines, self.waiting = list(self.waiting.values()), {}
        return lines

    def failed(self, outcomes: Sequence[LineOutcome], direct: bool = True) -> int:
        """Note lines a batch failed: sent one by one next (``direct``), else queued again."""
        with self._lock:
            for outcome in outcomes:
                self.rejected[outcome.key] = outcome
                if direct:
                    self.direct.add(outcome.key)
        return len(outcomes)

    def refusal(self, key: str) -> RequestRefused | None:
        """The refusal of the request's line, when the server refused one of its extras."""
        from elitr_bench.llm.openai_backend import classify

        with self._lock:
            outcome = self.rejected.pop(key, None)
        if outcome is None or outcome.status is None:
            return None
        typed = classify(outcome.status, str(outcome), outcome.param, outcome.code, None)
        return typed if isinstance(typed, RequestRefused) else None


@dataclass
class BatchSender:
    """The send layer in batch mode (a :class:`~elitr_bench.llm.send.Sender`).

    Attributes:
        direct: The client's own sender: lines a batch failed go through it.
        usage: The client's usage (a batch's reply is counted as paid when handed over).
        queue: Where waiting requests go.
        ledger: Where batches' replies are kept until the ordinary path reads them.
        scope: The model and endpoint (``model@endpoint``).
    """

    direct: Sender
    usage: Usage
    queue: BatchQueue
    ledger: BatchLedger
    scope: str

    async def send(self, request: CompletionRequest, key: str = "") -> Completion:
        """A batch's kept reply, else the request waits for the next batch.

        Raises:
            BatchPending: The request was queued (its item waits for the next pass).
            RequestRefused: Its line was refused for an extra (the adapt layer learns).
        """
        if not key:  # a caller that names no cache key cannot be answered by a batch
            return await self.direct.send(request, key)
        reply = await asyncio.to_thread(self.ledger.reply, key)
        if reply is not None:
            self.usage.requests += 1
            self.usage.answered += 1
            self.usage.batched += 1
            self.usage.batched_prompt_tokens += reply.prompt_tokens
            self.usage.batched_completion_tokens += reply.completion_tokens
            self.usage.prompt_tokens += reply.prompt_tokens
            self.usage.completion_tokens += reply.completion_tokens
            return reply
        refused = self.queue.refusal(key)
        if refused is not None:
            self.usage.requests += 1
            self.usage.refused += 1
            raise refused
        if key in self.queue.direct:
            return await self.direct.send(request, key)
        raise self.queue.defer(key, request)

    def refusal(self) -> str | None:
        """Why nothing may be sent now (the direct sender's refused credentials)."""
        return self.direct.refusal()

    async def aclose(self) -> None:
        """Close the direct sender (and its backend)."""
        await self.direct.aclose()


# The ledger ------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerEntry:
    """One submitted batch or written batch file.

    Attributes:
        id: The batch id (``batch_...``) or ``file:<path>`` of a written input file.
        scope: The model and endpoint the lines ask (``model@endpoint``).
        keys: The cache key of every line in it.
        input_file: The uploaded input file's id (``file-...``), or the written file.
    """

    id: str
    scope: str
    keys: tuple[str, ...]
    input_file: str = ""


class BatchLedger(Protocol):
    """Where live batches and their replies are kept (before the first poll, before use)."""

    def record(self, entry: LedgerEntry) -> None:
        """Record a batch as live (committed before returning)."""
        ...

    def live(self, scope: str, kind: str = "batch") -> list[LedgerEntry]:
        """The live entries of a scope: ``batch`` (API) or ``file`` entries."""
        ...

    def finish(self, batch_id: str, state: str) -> None:
        """Record that a batch reached a final state (it is no longer polled)."""
        ...

    def keep(self, replies: Sequence[tuple[str, Completion]]) -> None:
        """Keep answered lines (committed before returning) until the judge path reads them."""
        ...

    def reply(self, key: str) -> Completion | None:
        """A kept reply, or None."""
        ...

    def close(self) -> None:
        """Release the ledger's connection."""
        ...


class MemoryLedger:
    """The ledger of an in-memory (or no) cache: lives as long as the cache object."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[LedgerEntry, str]] = {}
        self._replies: dict[str, Completion] = {}

    def record(self, entry: LedgerEntry) -> None:
        """Record a batch as live."""
        self._entries[entry.id] = (entry, "live")

    def live(self, scope: str, kind: str = "batch") -> list[LedgerEntry]:
        """The live entries of a scope."""
        return [
            e
            for e, state in self._entries.values()
            if state == "live" and e.scope == scope and _kind(e.id) == kind
        ]

    def finish(self, batch_id: str, state: str) -> None:
        """Record a final state."""
        if batch_id in self._entries:
            self._entries[batch_id] = (self._entries[batch_id][0], state)

    def keep(self, replies: Sequence[tuple[str, Completion]]) -> None:
        """Keep answered lines."""
        self._replies.update(replies)

    def reply(self, key: str) -> Completion | None:
        """A kept reply, or None."""
        return self._replies.get(key)

    def close(self) -> None:
        """Nothing to release: the ledger lives with its cache object."""


class SQLiteLedger:
    """The ``batches`` and ``batch_replies`` tables of a cache file (shared by processes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            str(path), timeout=60.0, isolation_level=None, check_same_thread=False
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS batches (id TEXT PRIMARY KEY, scope TEXT, state TEXT,"
            " keys TEXT, input_file TEXT, created REAL)"
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS batch_replies (key TEXT PRIMARY KEY, text TEXT,"
            " prompt_tokens INTEGER, completion_tokens INTEGER, finish_reason TEXT,"
            " created REAL)"
        )

    def record(self, entry: LedgerEntry) -> None:
        """Record a batch as live (autocommit: on disk when this returns)."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO batches (id, scope, state, keys, input_file, created)"
                " VALUES (?, ?, 'live', ?, ?, ?)",
                (
                    entry.id,
                    entry.scope,
                    json.dumps(list(entry.keys)),
                    entry.input_file,
                    time.time(),
                ),
            )

    def live(self, scope: str, kind: str = "batch") -> list[LedgerEntry]:
        """The live entries of a scope, oldest first."""
        rows = self._select(
            "SELECT id, scope, keys, input_file FROM batches WHERE state = 'live' AND scope = ?"
            " ORDER BY created",
            scope,
        )
        return [
            LedgerEntry(r[0], r[1], tuple(json.loads(r[2])), r[3] or "")
            for r in rows
            if _kind(r[0]) == kind
        ]

    def finish(self, batch_id: str, state: str) -> None:
        """Record a final state."""
        with self._lock:
            self._conn.execute("UPDATE batches SET state = ? WHERE id = ?", (state, batch_id))

    def keep(self, replies: Sequence[tuple[str, Completion]]) -> None:
        """Keep answered lines, in one transaction."""
        now = time.time()
        rows = [
            (key, c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason, now)
            for key, c in replies
        ]
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO batch_replies (key, text, prompt_tokens,"
                    " completion_tokens, finish_reason, created) VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def reply(self, key: str) -> Completion | None:
        """A kept reply, or None."""
        rows = self._select(
            "SELECT text, prompt_tokens, completion_tokens, finish_reason"
            " FROM batch_replies WHERE key = ?",
            key,
        )
        if not rows:
            return None
        row = rows[0]
        return Completion(row[0], int(row[1] or 0), int(row[2] or 0), finish_reason=row[3])

    def _select(self, sql: str, *args: Any) -> list[Any]:
        """The rows of one query (under the connection's lock)."""
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def _kind(entry_id: str) -> str:
    return "file" if entry_id.startswith("file:") else "batch"


_MEMORY_LEDGERS: weakref.WeakKeyDictionary[Any, MemoryLedger] = weakref.WeakKeyDictionary()


def ledger_for(cache: JudgeCache) -> BatchLedger:
    """The ledger kept with a cache: tables of its file, or one in memory beside it."""
    if isinstance(cache, SQLiteCache):
        return SQLiteLedger(cache.path)
    ledger = _MEMORY_LEDGERS.get(cache)
    if ledger is None:
        ledger = _MEMORY_LEDGERS[cache] = MemoryLedger()
    return ledger


def keep_outcomes(
    outcomes: Sequence[LineOutcome],
    keys: set[str],
    ledger: BatchLedger,
    queue: BatchQueue,
    direct: bool = True,
) -> tuple[int, int]:
    """Keep the answered lines of ``keys`` (before any use); note the failed ones.

    Lines of other keys are left out: only requests of ours are ever filed.

    Returns:
        (answered, failed) counts.
    """
    ours = [o for o in outcomes if o.key in keys]
    answered = [(o.key, o.completion) for o in ours if o.completion is not None]
    ledger.keep(answered)
    failed = queue.failed([o for o in ours if o.completion is None], direct)
    return len(answered), failed


# Offline batch files (vLLM's run_batch) ---------------------------------------------


def write_batch_file(
    path: Path, lines: Sequence[BatchLine], limits: BatchLimits, ledger: BatchLedger, scope: str
) -> list[Path]:
    """Write the input file(s) of ``lines`` (nothing is sent); recorded in the ledger.

    One file when the lines fit the limits, else ``<stem>.part<N><suffix>`` beside it.
    """
    parts = split_lines(lines, limits)
    paths = (
        [path]
        if len(parts) == 1
        else [path.with_name(f"{path.stem}.part{n}{path.suffix}") for n in range(1, len(parts) + 1)]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    for target, part in zip(paths, parts, strict=True):
        target.write_text(input_text(part), encoding="utf-8")
        where = str(target.resolve())
        ledger.record(LedgerEntry(f"file:{where}", scope, tuple(line.key for line in part), where))
    return paths


def read_batch_file(
    path: Path, queue: BatchQueue, ledger: BatchLedger, scope: str
) -> tuple[int, int]:
    """Keep the answered lines of an output file whose input this judge wrote.

    Only lines whose ``custom_id`` a written input file of this scope holds are kept;
    any other line is left out. A failed line goes into the next file.

    Returns:
        (answered, failed) counts.

    Raises:
        JudgeConfigError: The file cannot be read.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise JudgeConfigError(
            f"--batch-read {path}: cannot read it ({exc.strerror or exc}); name the output "
            "file run_batch wrote (-o)"
        ) from None
    keys = {key for entry in ledger.live(scope, "file") for key in entry.keys}
    return keep_outcomes(read_lines(text), keys, ledger, queue, direct=False)


# The Batch API ------------------------------------------------------------------------


@dataclass(frozen=True)
class Submitted:
    """What one round of :meth:`BatchJobs.run` did.

    Attributes:
        created: Batch ids created in this round.
        resumed: Live batch ids of an earlier run that were polled.
        answered: Lines answered (kept in the cache file's ledger).
        failed: Lines the batches failed to answer (sent one by one next).
        waiting: False when the sender did not wait (``--no-wait``): the batches live on.
    """

    created: tuple[str, ...] = ()
    resumed: tuple[str, ...] = ()
    answered: int = 0
    failed: int = 0
    waiting: bool = True


@dataclass
class BatchJobs:
    """Submits queued lines to an OpenAI-compatible Batch API, polls, keeps the replies.

    Attributes:
        backend: The judge's OpenAI backend (its SDK client, credentials and endpoint).
        ledger: Where the batches are recorded before the first poll, and their replies
            kept before any use.
        limits: Requests and bytes per batch.
        poll_s: Seconds between polls.
        progress: Show a progress bar while polling.
    """

    backend: Any
    ledger: BatchLedger
    limits: BatchLimits = DEFAULT_LIMITS
    poll_s: float = DEFAULT_POLL_S
    progress: bool = True

    @property
    def scope(self) -> str:
        """The model and endpoint of the batches (one model per batch)."""
        return f"{self.backend.model}@{self.backend.endpoint}"

    async def run(
        self, lines: Sequence[BatchLine], queue: BatchQueue, wait: bool = True
    ) -> Submitted:
        """Submit what no live batch holds, poll every live batch of this scope, store.

        Raises:
            BatchFailed: The endpoint serves no Batch API, or a batch failed validation.
        """
        live = self.ledger.live(self.scope)
        held = {key for entry in live for key in entry.keys}
        fresh = [line for line in lines if line.key not in held]
        created: list[LedgerEntry] = []
        for part in split_lines(fresh, self.limits) if fresh else []:
            created.append(await self._submit(part))
        entries = [*live, *created]
        if not wait:
            return Submitted(tuple(e.id for e in created), tuple(e.id for e in live), waiting=False)
        answered = failed = 0
        for done in await self._poll(entries):
            a, f = await self._collect(done, entries, queue)
            answered, failed = answered + a, failed + f
        return Submitted(tuple(e.id for e in created), tuple(e.id for e in live), answered, failed)

    async def _submit(self, part: Sequence[BatchLine]) -> LedgerEntry:
        """Upload one input file, create its batch, record it (before any poll)."""
        import openai

        if interrupt.stopping():  # after a signal nothing new is submitted
            raise interrupt.not_sending()
        client = self.backend.sdk_client()
        blob = input_text(part).encode("utf-8")
        try:
            uploaded = await client.files.create(
                file=("judge-batch.jsonl", blob, "application/jsonl"), purpose="batch"
            )
            batch = await client.batches.create(
                input_file_id=uploaded.id, endpoint=CHAT_URL, completion_window="24h"
            )
        except openai.NotFoundError as exc:
            raise BatchFailed(
                f"judge {self.backend.model} at {self.backend.base_url}: no Batch API there "
                f"({self.backend.scrub(exc)}); use batch=off in the judge spec"
            ) from None
        except openai.APIStatusError as exc:
            raise BatchFailed(
                f"judge {self.backend.model} at {self.backend.base_url}: the batch was refused "
                f"(HTTP {exc.status_code}: {self.backend.scrub(exc)}); nothing was judged, "
                "re-run when fixed or use batch=off in the judge spec"
            ) from None
        entry = LedgerEntry(batch.id, self.scope, tuple(line.key for line in part), uploaded.id)
        self.ledger.record(entry)  # before the first poll: a killed run resumes this batch
        return entry

    async def _poll(self, entries: Sequence[LedgerEntry]) -> list[Any]:
        """Poll until every batch is final; their last states (a progress bar meanwhile)."""
        client = self.backend.sdk_client()
        total = sum(len(e.keys) for e in entries)
        bar: Any = None
        if self.progress and total:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, desc=f"judge batch {self.backend.model}", unit="request")
        done: dict[str, Any] = {}
        try:
            while len(done) < len(entries):
                counts = [0, 0]
                for entry in entries:
                    batch = done.get(entry.id) or await client.batches.retrieve(entry.id)
                    if batch.status in FINAL_STATES:
                        done[entry.id] = batch
                    counts[0] += int(getattr(batch.request_counts, "completed", 0) or 0)
                    counts[1] += int(getattr(batch.request_counts, "failed", 0) or 0)
                if bar is not None:
                    bar.n = min(total, counts[0] + counts[1])
                    bar.set_postfix(completed=counts[0], failed=counts[1], refresh=True)
                if len(done) < len(entries):
                    if interrupt.stopping():  # the batches live on: a rerun polls them
                        raise interrupt.not_sending()
                    await asyncio.sleep(self.poll_s)
        finally:
            if bar is not None:
                bar.close()
        return [done[e.id] for e in entries]

    async def _collect(
        self, batch: Any, entries: Sequence[LedgerEntry], queue: BatchQueue
    ) -> tuple[int, int]:
        """Keep a final batch's answered lines; its other lines are sent one by one next."""
        entry = next(e for e in entries if e.id == batch.id)
        if batch.status == "failed":
            self.ledger.finish(batch.id, "failed")
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            first = "; ".join(
                f"line {getattr(e, 'line', '?')}: {getattr(e, 'message', '')}" for e in errors[:3]
            )
            raise BatchFailed(
                f"judge batch {batch.id} failed validation ({first or 'no reason given'}); "
                "nothing of it was paid: fix the request, or use batch=off in the judge spec"
            )
        outcomes: list[LineOutcome] = []
        client = self.backend.sdk_client()
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await client.files.content(file_id)
                outcomes += read_lines(content.text)
        answered, failed = keep_outcomes(outcomes, set(entry.keys), self.ledger, queue)
        seen = {o.key for o in outcomes}
        missing = [key for key in entry.keys if key not in seen]  # expired, cancelled
        queue.direct.update(missing)
        self.ledger.finish(batch.id, batch.status)  # after its replies are kept
        return answered, failed + len(missing)


__all__ = [
    "DEFAULT_LIMITS",
    "WAITING",
    "BatchFailed",
    "BatchJobs",
    "BatchLedger",
    "BatchLimits",
    "BatchLine",
    "BatchPending",
    "BatchQueue",
    "BatchSender",
    "LedgerEntry",
    "MemoryLedger",
    "SQLiteLedger",
    "Submitted",
    "ledger_for",
    "poll_interval",
    "read_batch_file",
    "write_batch_file",
]
