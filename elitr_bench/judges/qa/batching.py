"""Judging answers through batches (``batch=on``, ``--batch-write``, ``--batch-read``).

The passes are the judges core's (:mod:`elitr_bench.judges.batching`); this module
supplies what the QA judge judges in them: each group's items, through its own judge
(its own usage counters), an item waiting when its judgement is an ``error`` that says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from elitr_bench.judges.batching import (
    BatchOutcome,
    BatchPlan,
    judge_groups,
)
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.qa.engine import (
    JudgeItem,
    Judgement,
    JudgeRun,
    LLMJudge,
    judge_items,
    make_judge,
    summarize,
)
from elitr_bench.llm.cache import JudgeCache
from elitr_bench.llm.client import JudgeClient


@dataclass
class _TaskJudge:
    """The QA judge of one group: its passes, and the last one's run (identity, time)."""

    llm: LLMJudge
    config: JudgeConfig
    last: JudgeRun | None = None

    @property
    def client(self) -> JudgeClient:
        return self.llm.client

    def judge(self, items: list[JudgeItem], desc: str) -> list[Judgement]:
        self.last = judge_items(items, self.config, judge=self.llm, desc=desc, on_error="record")
        return self.last.judgements

    def run(self, final: list[Judgement]) -> JudgeRun:
        """The group's run of its final judgements."""
        done = self.last or judge_items([], self.config, judge=self.llm, on_error="record")
        return JudgeRun(final, done.identity, self.llm.usage(), done.elapsed_s, summarize(final))

    async def aclose(self) -> None:
        await self.llm.aclose()


def judge_in_batches(
    groups: Sequence[tuple[str, Sequence[JudgeItem]]], config: JudgeConfig, plan: BatchPlan
) -> BatchOutcome[JudgeRun]:
    """Judge each group (a task's answers) with its own judge, all through shared batches.

    The runs are empty while the judging waits for batches (``outcome.parked``); the
    errors are :func:`~elitr_bench.judges.batching.judge_groups`'s.
    """

    def make(cache: JudgeCache) -> _TaskJudge:
        llm = make_judge(config, cache=cache)
        assert isinstance(llm, LLMJudge)  # batch=on is refused for other backends
        return _TaskJudge(llm, config)

    outcome = judge_groups(groups, config, plan, make)
    return outcome.with_runs([judge.run(final) for judge, final in outcome.runs])
