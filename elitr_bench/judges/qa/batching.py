"""Judging answers through batches (``batch=on``, ``--batch-write``, ``--batch-read``).

The passes are the judges core's (:mod:`elitr_bench.judges.batching`); this module
supplies what the QA judge judges in them: each group's items, through its own judge
(its own usage counters), an item waiting when its judgement is an ``error`` that says so.
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

__all__ = ["BatchOutcome", "BatchPlan", "judge_in_batches"]


def _waiting(judgement: Judgement) -> bool:
    return judgement.status == "error" and waiting_reason(judgement.reason)


def judge_in_batches(
    groups: Sequence[tuple[str, Sequence[JudgeItem]]], config: JudgeConfig, plan: BatchPlan
) -> BatchOutcome[JudgeRun]:
    """Judge each group (a task's items) with its own judge, all through shared batches.

    Each group keeps its own usage counters (one task's ``judge_usage``); the batches
    hold the requests of every group, so a run is one batch per pass, split only at the
    API's limits.

    Raises:
        JudgeConfigError: ``--batch-read`` left requests waiting and no ``--batch-write``
            says where they go.
        BatchFailed: The endpoint has no Batch API, or a batch failed validation.
    """
    with BatchSession(config) as session:
        judges: list[LLMJudge] = []
        try:
            for _ in groups:
                judge = make_judge(config, cache=session.cache)
                assert isinstance(judge, LLMJudge)  # batch=on is refused for other backends
                session.attach(judge.client)
                judges.append(judge)
            runs: list[JudgeRun | None] = [None] * len(groups)

            def judge_some(g: int, todo: list[int]) -> list[Judgement]:
                desc, items = groups[g]
                run = judge_items(
                    [items[i] for i in todo], config, judge=judges[g], desc=desc, on_error="record"
                )
                runs[g] = run
                return run.judgements

            sizes = [len(items) for _, items in groups]
            outcome = session.judge(Passes(sizes, judge_some, _waiting), plan)
            if outcome.parked:
                return outcome.with_runs([])
            finished = []
            for g, (judge, final) in enumerate(zip(judges, outcome.runs, strict=True)):
                done = runs[g] or judge_items([], config, judge=judge, on_error="record")
                finished.append(
                    JudgeRun(final, done.identity, judge.usage(), done.elapsed_s, summarize(final))
                )
            return outcome.with_runs(finished)
        finally:
            for judge in judges:
                run_coroutine(judge.aclose)
