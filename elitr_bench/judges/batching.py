"""Judging through batches (``batch=on``, ``--batch-write``, ``--batch-read``), any family.

The ordinary judge path runs in passes. In each pass every waiting item is judged; a
request that misses the cache is queued (the item waits, :mod:`elitr_bench.llm.batch`)
instead of sent. The queued requests then go out as one batch (or into a batch input
file), their replies are stored in the cache, and the next pass reads them as cache
hits and queues the requests they lead to (restatements, a judge prompt built on a
classifier's answers). The passes end when nothing is queued, so a batch judges exactly
as one-by-one calls do: same requests, same cache keys, same readings, same scores.

This is the one pass loop (:func:`judge_groups`) of every family that batches
(``JudgeFamily.batches``); a family supplies its judge of one group of items
(:class:`GroupJudge`: a client, and one pass over some items), and an item waits while
its verdict is an ``error`` whose reason says so (:func:`waits`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from elitr_bench.judges.aio import run_coroutine
from elitr_bench.llm.batch import (
    DEFAULT_LIMITS,
    WAITING,
    BatchJobs,
    BatchLimits,
    BatchLine,
    BatchQueue,
    BatchSender,
    Submitted,
    ledger_for,
    poll_interval,
    read_batch_file,
    write_batch_file,
)
from elitr_bench.llm.cache import open_cache
from elitr_bench.llm.errors import JudgeConfigError, JudgeRequestError

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig
    from elitr_bench.llm.base import CompletionBackend
    from elitr_bench.llm.cache import JudgeCache
    from elitr_bench.llm.client import JudgeClient

#: Passes at most: a request waits for the replies it is built on, so a judge needs as
#: many passes as its longest chain of requests: a QA answer's prompt, re-asks and
#: restatement a few, an AutoMin judge's filler classification one more, MESA's three
#: steps per error type, each debated (draft, challengers, synthesis, their re-asks and
#: restatements), some twenty. A pass that left requests waiting without a batch
#: answering any of them would repeat forever.
MAX_PASSES = 48

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class BatchPlan:
    """How a run's batches go.

    Attributes:
        mode: ``api`` (the endpoint's Batch API) or ``file`` (offline batch files).
        write: ``--batch-write``: where the next input file goes (file mode).
        read: ``--batch-read``: an answered output file to read first (file mode).
        wait: Poll until the batches are answered (False: ``--no-wait``).
        limits: Requests and bytes per batch.
    """

    mode: Literal["api", "file"] = "api"
    write: Path | None = None
    read: Path | None = None
    wait: bool = True
    limits: BatchLimits = DEFAULT_LIMITS


@dataclass
class BatchOutcome(Generic[R]):
    """What the batched judging came to.

    Attributes:
        runs: One run per group (the family's), when every item got its verdict.
        written: Input files written for the next offline round (runs is then empty).
        submitted: Batches submitted and left to run (``--no-wait``; runs is empty).
        answered: Lines the batches of this run answered.
        failed: Lines they failed (sent one by one afterwards).
    """

    runs: list[R] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    submitted: list[str] = field(default_factory=list)
    answered: int = 0
    failed: int = 0

    @property
    def parked(self) -> bool:
        """Whether the judging waits for batches (submitted, or written to a file)."""
        return bool(self.written or self.submitted)

    def with_runs(self, runs: list[T]) -> BatchOutcome[T]:
        """The same outcome with the family's runs."""
        return BatchOutcome(runs, self.written, self.submitted, self.answered, self.failed)


class Verdict(Protocol):
    """What every family's verdict on an item has: its status and why."""

    @property
    def status(self) -> str:
        """``error`` for an item that waits (and for one that failed)."""
        ...

    @property
    def reason(self) -> str:
        """Why: for an item that waits, a line beginning with the batch layer's WAITING."""
        ...


V = TypeVar("V", bound=Verdict)


def waits(verdict: Verdict) -> bool:
    """Whether a verdict is one of an item that waits for a batch (nothing failed)."""
    return verdict.status == "error" and verdict.reason.startswith(WAITING)


class GroupJudge(Protocol[V]):
    """A family's judge of one group (a task's items), as the pass loop drives it."""

    @property
    def client(self) -> JudgeClient:
        """Its client: the session sends its requests that miss the cache into batches."""
        ...

    def judge(self, items: list[Any], desc: str) -> list[V]:
        """One pass over these items: their verdicts, in order (an item may wait)."""
        ...

    async def aclose(self) -> None:
        """Close what the judge opened (not the session's cache)."""
        ...


G = TypeVar("G", bound=GroupJudge[Any])


class BatchSession:
    """The queue, ledger and cache the clients of one batched run share.

    Args:
        config: The judge (its model is the one model of every batch line).
    """

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.cache = open_cache(config.cache)
        self.queue = BatchQueue(config.model)
        self.ledger = ledger_for(self.cache)
        self.scope = ""
        self.backend: CompletionBackend | None = None

    def attach(self, client: JudgeClient) -> None:
        """Send the client's requests that miss the cache into this session's batches."""
        self.scope = f"{self.config.model}@{client.backend.endpoint}"
        self.backend = self.backend or client.backend
        client.sender = BatchSender(
            client.sender, client.usage, self.queue, self.ledger, self.scope
        )

    def close(self) -> None:
        """Close the ledger and the cache."""
        self.ledger.close()
        self.cache.close()

    def judge(
        self,
        groups: Sequence[tuple[str, Sequence[Any]]],
        judges: Sequence[GroupJudge[V]],
        plan: BatchPlan,
    ) -> BatchOutcome[list[V]]:
        """Judge every group in passes until nothing waits; the verdicts per group.

        Raises:
            JudgeConfigError: ``--batch-read`` left requests waiting and no
                ``--batch-write`` says where they go.
            BatchFailed: The endpoint has no Batch API, or a batch failed validation.
            JudgeRequestError: Requests still wait after :data:`MAX_PASSES` passes.
        """
        outcome: BatchOutcome[list[V]] = BatchOutcome()
        results: list[list[V | None]] = [[None] * len(items) for _, items in groups]
        if plan.read is not None:
            outcome.answered, outcome.failed = read_batch_file(
                plan.read, self.queue, self.ledger, self.scope
            )
        for _ in range(MAX_PASSES):
            for (desc, items), judge, found in zip(groups, judges, results, strict=True):
                todo = [i for i, r in enumerate(found) if r is None or waits(r)]
                if todo:
                    verdicts = judge.judge([items[i] for i in todo], desc)
                    for i, verdict in zip(todo, verdicts, strict=True):
                        found[i] = verdict
            lines = self.queue.take()
            if not lines:
                break
            if plan.mode == "file":
                if plan.write is None:
                    raise JudgeConfigError(
                        f"--batch-read: {len(lines)} judge request(s) still wait (the "
                        "requests the replies lead to); add --batch-write FILE to write them"
                    )
                outcome.written = write_batch_file(
                    plan.write, lines, plan.limits, self.ledger, self.scope
                )
                return outcome
            assert self.backend is not None  # a queued request came through an attached client
            jobs = BatchJobs(
                self.backend, self.ledger, plan.limits, poll_interval(), self.config.progress
            )
            sent = _send(jobs, lines, self.queue, plan.wait)
            if not sent.waiting:
                outcome.submitted = [*sent.created, *sent.resumed]
                return outcome
            outcome.answered += sent.answered
            outcome.failed += sent.failed
        else:
            raise JudgeRequestError(
                f"judge batches: requests still wait after {MAX_PASSES} passes; finished "
                "replies are kept: run the same command again, or use batch=off"
            )
        outcome.runs = [[r for r in found if r is not None] for found in results]
        return outcome


def judge_groups(
    groups: Sequence[tuple[str, Sequence[Any]]],
    config: JudgeConfig,
    plan: BatchPlan,
    make: Callable[[JudgeCache], G],
) -> BatchOutcome[tuple[G, list[Any]]]:
    """Judge each group with its own judge (``make``), all through shared batches.

    Each group keeps its own judge, so its own usage counters (one task's
    ``judge_usage``); the batches hold the requests of every group, so a run is one
    batch per pass, split only at the API's limits. The runs are each group's judge with
    its verdicts (none while the judging waits for batches: :attr:`BatchOutcome.parked`).

    Args:
        groups: ``(description, items)`` per group.
        config: The judge.
        plan: How the batches go.
        make: A family's judge of one group, over the session's cache. An item waits
            while its verdict is an ``error`` whose reason says so (:func:`waits`).

    Raises:
        JudgeConfigError: ``--batch-read`` left requests waiting and no ``--batch-write``
            says where they go.
        BatchFailed: The endpoint has no Batch API, or a batch failed validation.
    """
    session = BatchSession(config)
    judges: list[G] = []
    try:
        for _ in groups:
            judges.append(make(session.cache))
            session.attach(judges[-1].client)
        outcome = session.judge(groups, judges, plan)
        runs = [] if outcome.parked else list(zip(judges, outcome.runs, strict=True))
        return outcome.with_runs(runs)
    finally:
        for judge in judges:
            run_coroutine(judge.aclose)
        session.close()


def _send(jobs: BatchJobs, lines: list[BatchLine], queue: BatchQueue, wait: bool) -> Submitted:
    """One round of the Batch API, from the synchronous judge path."""
    return run_coroutine(lambda: jobs.run(lines, queue, wait=wait))
