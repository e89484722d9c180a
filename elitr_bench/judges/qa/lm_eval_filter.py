"""The ``elitr_judge`` lm-eval filter: judge all responses of a task at once.

lm-eval hands a filter every response of a task in one call, which is where judging can
run concurrently (a metric function would see one document at a time). Importing this
module registers the filter and the ``judge_count`` aggregation.

A judge that fails after generation never costs the generated answers: each item it
could not judge gets status ``error`` with the reason, lm-eval writes its results and
samples as usual, and the command then exits non-zero with one line saying how to finish
(``elitr-bench score RUN_DIR --judge ...`` judges exactly the missing items). A spec's
``max_cost=`` ends the run the same way, before any request, when the plan exceeds it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lm_eval.api.filter import Filter
from lm_eval.api.registry import register_filter

from elitr_bench.cli_errors import install_excepthook
from elitr_bench.judges.batching import BatchPlan
from elitr_bench.judges.filtering import (
    FILTER_NAME,
    cap_hint,
    finish_hint,
    first_text,
    judged_json,
    record_failures,
    refused_by_cap,
)
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.metrics import register_lm_eval_aggregations
from elitr_bench.judges.overlength import larger_judge, overlength_line, way_out
from elitr_bench.judges.qa.batching import judge_in_batches
from elitr_bench.judges.qa.engine import (
    SKIPPED,
    JudgeItem,
    JudgeRun,
    error_judgement,
    failure_reason,
    judge_items,
    overlong_items,
    overlong_judgement,
    summarize,
)
from elitr_bench.judges.qa.plan import plan_items
from elitr_bench.judges.readiness import check_judge_ready
from elitr_bench.judges.spec import get_run_judge, resolve_run_judge
from elitr_bench.llm.context_window import judge_window

log = logging.getLogger(__name__)

_LAST_RUN: JudgeRun | None = None


def last_run() -> JudgeRun | None:
    """The most recent judging run of this process (usage, cost, identity)."""
    return _LAST_RUN


def _judge(items: Sequence[JudgeItem], config: JudgeConfig) -> JudgeRun:
    """Judge one task's answers: through batches with ``batch=on`` (submitted, waited for)."""
    if config.batch:
        return judge_in_batches([("elitr judge", items)], config, BatchPlan()).runs[0]
    return judge_items(items, config, desc="elitr judge", on_error="record")


def judge_responses(
    resps: Sequence[Any], docs: Sequence[Mapping[str, Any]], config: JudgeConfig | None
) -> list[list[str]]:
    """Judge responses against their docs; one ``[<judged JSON>]`` per instance."""
    global _LAST_RUN
    texts = [first_text(r) for r in resps]
    if config is None:
        skipped = SKIPPED.to_dict()
        return [[judged_json(t, dict(skipped))] for t in texts]
    items = [JudgeItem.from_doc(doc, text) for doc, text in zip(docs, texts, strict=True)]
    hint = ""
    try:
        check_judge_ready(config)  # no network: the task checked the judge before generation
        # A prompt that cannot fit its window is not sent; the answer is kept.
        over = overlong_items(items, config)
        todo = [item for item, o in zip(items, over, strict=True) if o is None]
        plan = plan_items(todo, config) if config.is_llm else None
        if plan is not None:  # what the run may spend, before it spends anything
            log.warning("%s", plan.line())
        refused = refused_by_cap(plan.cost_usd, plan.calls, config) if plan else None
        if refused is None:
            run = _judge(todo, config)
        else:  # over the spec's max_cost=: nothing is sent, the answers are kept
            log.error("elitr judge: %s; the answers are kept unjudged", refused)
            refusals = [error_judgement(refused)] * len(todo)
            usage = {"requests": 0, "over_cap": len(todo)}
            run = JudgeRun(refusals, config.identity(), usage, 0.0)
            run.summary = summarize(refusals)
        if plan is not None:
            run.usage["plan"] = plan.to_dict()
        if len(todo) < len(items):
            sent = iter(run.judgements)
            run.judgements = [
                next(sent) if o is None else overlong_judgement(o, config) for o in over
            ]
            run.summary = summarize(run.judgements)
            overlong = [o for o in over if o is not None]
            log.error(
                "%s; those answers are kept unjudged",
                overlength_line("judge", overlong, judge_window(config), way_out(config, overlong)),
            )
            bigger = larger_judge(config, max(o.tokens + o.max_tokens for o in overlong))
            hint = (
                f"{way_out(config, overlong)}; "
                f"{finish_hint(bigger or 'A_JUDGE_WITH_A_LARGER_WINDOW')}"
            )
        if refused is not None and plan is not None:  # score judges what the cap held back
            hint = cap_hint(config, plan.priced)
    except Exception as exc:  # the judge could not even start (model load, data): keep answers
        judgements = [error_judgement(failure_reason(exc))] * len(items)
        run = JudgeRun(judgements, config.identity(), {"requests": 0}, 0.0)
        run.summary = summarize(judgements)
    _LAST_RUN = run
    log.info(
        "elitr judge %s: %s scored, %s unscored, %s failed; usage %s",
        config.spec or config.backend,
        run.summary["judge_scored"],
        run.summary["judge_unscored"],
        run.summary["judge_errors"],
        run.usage,
    )
    failed = [j.reason for j in run.judgements if j.status == "error"]
    record_failures(failed, len(run.judgements), config, hint=hint)
    identity = run.identity
    out = []
    for text, judgement in zip(texts, run.judgements, strict=True):
        judged = judgement.to_dict()
        judged["identity"] = identity
        out.append([judged_json(text, judged)])
    return out


@register_filter(FILTER_NAME)
class ElitrJudgeFilter(Filter):
    """Replace each response by ``[json.dumps({"response": text, "judge": {...}})]``.

    Args:
        judge: Optional spec overriding the process-level run judge (for YAML use).
    """

    def __init__(self, judge: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._spec = judge

    def apply(self, resps: Iterable[Any], docs: Sequence[dict[str, Any]]) -> list[list[str]]:
        """Judge every response of the task concurrently."""
        config = resolve_run_judge(self._spec) if self._spec else get_run_judge()
        return judge_responses(list(resps), list(docs), config)


register_lm_eval_aggregations()
install_excepthook()
