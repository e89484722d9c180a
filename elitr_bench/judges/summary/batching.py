"""Judging minutes through batches (``batch=on``, ``--batch-write``, ``--batch-read``).

The passes are the judges core's (:mod:`elitr_bench.judges.batching`); this module
supplies what a minutes method judges in them: each group's minutes (a task's), through
its own client (its own usage counters), a meeting waiting when its assessment is an
``error`` that says so. A method's requests that depend on others (the AutoMin judges'
prompt on the filler classifier's answers, restatements on replies) go in later
passes, each read from the cache as one-by-one judging would read it.
"""

from __future__ import annotations

from collections.abc import Sequence

from elitr_bench.judges.batching import (
    BatchOutcome,
    BatchPlan,
    BatchSession,
    Passes,
    waiting_reason,
)
from elitr_bench.judges.config import JudgeConfig
from elitr_bench.judges.summary.base import MinutesAssessment, MinutesItem, MinutesMethod
from elitr_bench.judges.summary.run import (
    MinutesRun,
    assess_items_run,
    finished_run,
    make_client,
    usage_of,
)
from elitr_bench.llm.aio import run_coroutine
from elitr_bench.llm.client import JudgeClient


def _waiting(assessment: MinutesAssessment) -> bool:
    return assessment.status == "error" and waiting_reason(assessment.reason)


def assess_in_batches(
    groups: Sequence[tuple[str, Sequence[MinutesItem]]],
    config: JudgeConfig,
    method: MinutesMethod,
    plan: BatchPlan,
) -> BatchOutcome[MinutesRun]:
    """Judge each group (a task's minutes) with its own client, all through shared batches.

    Raises:
        JudgeConfigError: ``--batch-read`` left requests waiting and no ``--batch-write``
            says where they go.
        BatchFailed: The endpoint has no Batch API, or a batch failed validation.
    """
    with BatchSession(config) as session:
        clients: list[JudgeClient] = []
        try:
            for _ in groups:
                clients.append(session.attach(make_client(config, session.cache)))
            elapsed = [0.0] * len(groups)

            def judge_some(g: int, todo: list[int]) -> list[MinutesAssessment]:
                desc, items = groups[g]
                chosen = [items[i] for i in todo]
                run = run_coroutine(
                    lambda: assess_items_run(chosen, config, clients[g], method=method, desc=desc)
                )
                elapsed[g] += run.elapsed_s
                return run.assessments

            sizes = [len(items) for _, items in groups]
            outcome = session.judge(Passes(sizes, judge_some, _waiting), plan)
            if outcome.parked:
                return outcome.with_runs([])
            return outcome.with_runs(
                [
                    finished_run(final, config, method, usage_of(config, client), seconds)
                    for final, client, seconds in zip(outcome.runs, clients, elapsed, strict=True)
                ]
            )
        finally:
            for client in clients:
                run_coroutine(client.aclose)
