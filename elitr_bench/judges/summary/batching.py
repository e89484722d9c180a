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
from dataclasses import dataclass

from elitr_bench.judges.aio import run_coroutine
from elitr_bench.judges.batching import (
    BatchOutcome,
    BatchPlan,
    judge_groups,
)
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.summary.base import MinutesAssessment, MinutesItem, MinutesMethod
from elitr_bench.judges.summary.run import (
    MinutesRun,
    assess_items_run,
    finished_run,
    make_client,
    usage_of,
)
from elitr_bench.llm.cache import JudgeCache
from elitr_bench.llm.client import JudgeClient


@dataclass
class _TaskMinutes:
    """The minutes method over one group's client: its passes and their time."""

    client: JudgeClient
    config: JudgeConfig
    method: MinutesMethod
    seconds: float = 0.0

    def judge(self, items: list[MinutesItem], desc: str) -> list[MinutesAssessment]:
        run = run_coroutine(
            lambda: assess_items_run(items, self.config, self.client, method=self.method, desc=desc)
        )
        self.seconds += run.elapsed_s
        return run.assessments

    def run(self, final: list[MinutesAssessment]) -> MinutesRun:
        """The group's run of its final assessments."""
        usage = usage_of(self.config, self.client)
        return finished_run(final, self.config, self.method, usage, self.seconds)

    async def aclose(self) -> None:
        await self.client.aclose()


def assess_in_batches(
    groups: Sequence[tuple[str, Sequence[MinutesItem]]],
    config: JudgeConfig,
    method: MinutesMethod,
    plan: BatchPlan,
) -> BatchOutcome[MinutesRun]:
    """Judge each group (a task's minutes) with ``method`` over a client of its own.

    One batch per pass holds every group's requests (:func:`~elitr_bench.judges.batching.
    judge_groups`, whose errors these are); no runs while the judging waits for batches.
    """

    def make(cache: JudgeCache) -> _TaskMinutes:
        return _TaskMinutes(make_client(config, cache), config, method)

    outcome = judge_groups(groups, config, plan, make)
    return outcome.with_runs([task.run(final) for task, final in outcome.runs])
