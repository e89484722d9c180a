"""Judging answers through batches (``batch=on``, ``--batch-write``, ``--batch-read``).

The ordinary judge path runs in passes. In each pass every waiting item is judged; a
request that misses the cache is queued (the item waits, :mod:`elitr_bench.llm.batch`)
instead of sent. The queued requests then go out as one batch (or into a batch input
file), their replies are stored in the cache, and the next pass reads them as cache
hits and queues the restatements they need. The passes end when nothing is queued, so
a batch judges exactly as one-by-one calls do: same requests, same cache keys, same
readings, same scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from elitr_bench.judges.config import JudgeConfig
from elitr_bench.judges.qa.engine import (
    JudgeItem,
    Judgement,
    JudgeRun,
    LLMJudge,
    judge_items,
    make_judge,
    summarize,
)
from elitr_bench.llm.aio import run_coroutine
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

#: Passes at most: the prompts, re-asks and restatements of a sample need a few; a pass
#: that left requests waiting without a batch answering any of them would repeat forever.
MAX_PASSES = 12


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
class BatchOutcome:
    """What the batched judging came to.

    Attributes:
        runs: One judge run per group, when every item got its judgement.
        written: Input files written for the next offline round (runs is then empty).
        submitted: Batches submitted and left to run (``--no-wait``; runs is empty).
        answered: Lines the batches of this run answered.
        failed: Lines they failed (sent one by one afterwards).
    """

    runs: list[JudgeRun] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    submitted: list[str] = field(default_factory=list)
    answered: int = 0
    failed: int = 0


def _waiting(judgement: Judgement) -> bool:
    return judgement.status == "error" and judgement.reason.startswith(WAITING)


def judge_in_batches(
    groups: Sequence[tuple[str, Sequence[JudgeItem]]], config: JudgeConfig, plan: BatchPlan
) -> BatchOutcome:
    """Judge each group (a task's items) with its own judge, all through shared batches.

    Each group keeps its own usage counters (one task's ``judge_usage``); the batches
    hold the requests of every group, so a run is one batch per pass, split only at the
    API's limits.

    Raises:
        JudgeConfigError: ``--batch-read`` left requests waiting and no ``--batch-write``
            says where they go.
        BatchFailed: The endpoint has no Batch API, or a batch failed validation.
    """
    cache = open_cache(config.cache)
    queue = BatchQueue(config.model)
    ledger = ledger_for(cache)
    judges: list[LLMJudge] = []
    scope = ""
    for _ in groups:
        judge = make_judge(config, cache=cache)
        assert isinstance(judge, LLMJudge)  # batch=on is refused for other backends
        client = judge.client
        scope = f"{config.model}@{client.backend.endpoint}"
        client.sender = BatchSender(client.sender, client.usage, queue, ledger, scope)
        judges.append(judge)
    outcome = BatchOutcome()
    results: list[list[Judgement | None]] = [[None] * len(items) for _, items in groups]
    runs: list[JudgeRun | None] = [None] * len(groups)
    try:
        if plan.read is not None:
            outcome.answered, outcome.failed = read_batch_file(plan.read, queue, ledger, scope)
        for _ in range(MAX_PASSES):
            for g, (desc, items) in enumerate(groups):
                todo = [i for i, r in enumerate(results[g]) if r is None or _waiting(r)]
                if not todo:
                    continue
                run = judge_items(
                    [items[i] for i in todo],
                    config,
                    judge=judges[g],
                    desc=desc,
                    on_error="record",
                )
                for i, judgement in zip(todo, run.judgements, strict=True):
                    results[g][i] = judgement
                runs[g] = run
            lines = queue.take()
            if not lines:
                break
            if plan.mode == "file":
                if plan.write is None:
                    raise JudgeConfigError(
                        f"--batch-read: {len(lines)} judge request(s) still wait (the "
                        "restatements the replies need); add --batch-write FILE to write them"
                    )
                outcome.written = write_batch_file(plan.write, lines, plan.limits, ledger, scope)
                return outcome
            jobs = BatchJobs(
                judges[0].client.backend, ledger, plan.limits, poll_interval(), config.progress
            )
            sent = _send(jobs, lines, queue, plan.wait)
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
        for g, judge in enumerate(judges):
            final = [r for r in results[g] if r is not None]
            done = runs[g] or judge_items([], config, judge=judge, on_error="record")
            outcome.runs.append(
                JudgeRun(final, done.identity, judge.usage(), done.elapsed_s, summarize(final))
            )
        return outcome
    finally:
        for judge in judges:
            run_coroutine(judge.aclose)
        ledger.close()
        cache.close()


def _send(jobs: BatchJobs, lines: list[BatchLine], queue: BatchQueue, wait: bool) -> Submitted:
    """One round of the Batch API, from the synchronous judge path."""
    return run_coroutine(lambda: jobs.run(lines, queue, wait=wait))
