"""The ``elitr_judge`` lm-eval filter: judge all responses of a task at once.

lm-eval hands a filter every response of a task in one call, which is where judging can
run concurrently (a metric function would see one document at a time). Importing this
module registers the filter and the ``judge_count`` aggregation.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lm_eval.api.filter import Filter
from lm_eval.api.registry import register_filter

from elitr_bench.judges.config import (
    JudgeConfig,
    check_judge_ready,
    get_run_judge,
    resolve_run_judge,
)
from elitr_bench.judges.engine import SKIPPED, JudgeItem, JudgeRun, judge_items
from elitr_bench.judges.metrics import register_lm_eval_aggregations

log = logging.getLogger(__name__)

FILTER_NAME = "elitr_judge"

_LAST_RUN: JudgeRun | None = None


def last_run() -> JudgeRun | None:
    """The most recent judging run of this process (usage, cost, identity)."""
    return _LAST_RUN


def _finite(value: Any) -> Any:
    """Replace NaN and infinities (not valid JSON) by None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def judged_json(response: str, judge: dict[str, Any]) -> str:
    """One judged response as a JSON string.

    lm-eval logs filter outputs with ``str()``; a JSON string keeps the judge's raw
    output, score and status readable by any tool (``jq``, pandas), not just Python.
    """
    return json.dumps(_finite({"response": response, "judge": judge}), ensure_ascii=False)


def _first_text(resp: Any) -> str:
    """A response may arrive as the raw repeats list or already reduced to a string."""
    while isinstance(resp, (list, tuple)):
        if not resp:
            return ""
        resp = resp[0]
    return "" if resp is None else str(resp)


def judge_responses(
    resps: Sequence[Any], docs: Sequence[Mapping[str, Any]], config: JudgeConfig | None
) -> list[list[str]]:
    """Judge responses against their docs; one ``[<judged JSON>]`` per instance."""
    global _LAST_RUN
    texts = [_first_text(r) for r in resps]
    if config is None:
        skipped = SKIPPED.to_dict()
        return [[judged_json(t, dict(skipped))] for t in texts]
    check_judge_ready(config)
    items = [JudgeItem.from_doc(doc, text) for doc, text in zip(docs, texts, strict=True)]
    run = judge_items(items, config, desc="elitr judge")
    _LAST_RUN = run
    log.info(
        "elitr judge %s: %s scored, %s unscored; usage %s",
        config.spec or config.backend,
        run.summary["judge_scored"],
        run.summary["judge_unscored"],
        run.usage,
    )
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
