"""The ``elitr_judge`` lm-eval filter: judge all responses of a task at once.

lm-eval hands a filter every response of a task in one call, which is where judging can
run concurrently (a metric function would see one document at a time). Importing this
module registers the filter and the ``judge_count`` aggregation.

A judge that fails after generation never costs the generated answers: each item it
could not judge gets status ``error`` with the reason, lm-eval writes its results and
samples as usual, and the command then exits non-zero with one line saying how to finish
(``elitr-bench score RUN_DIR --judge ...`` judges exactly the missing items).
"""

from __future__ import annotations

import json
import logging
import math
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lm_eval.api.filter import Filter
from lm_eval.api.registry import register_filter

from elitr_bench.cli_errors import exit_with_error_after_run, install_excepthook
from elitr_bench.judges.config import (
    JudgeConfig,
    check_judge_ready,
    get_run_judge,
    resolve_run_judge,
)
from elitr_bench.judges.engine import (
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
from elitr_bench.judges.metrics import register_lm_eval_aggregations
from elitr_bench.llm.context_window import (
    judge_window,
    larger_judge,
    overlength_line,
    way_out,
)
from elitr_bench.llm.redact import MASK

log = logging.getLogger(__name__)

FILTER_NAME = "elitr_judge"

_LAST_RUN: JudgeRun | None = None
#: Judge failures of this process per filter: failed and judged item counts, first
#: reason, judge spec.
_FAILURES: dict[str, dict[str, Any]] = {}


def last_run() -> JudgeRun | None:
    """The most recent judging run of this process (usage, cost, identity)."""
    return _LAST_RUN


def _argv_value(names: tuple[str, ...]) -> str | None:
    """The value of a command-line option of this process (``--opt V`` or ``--opt=V``)."""
    argv = sys.argv[1:]
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def finish_hint(spec: str) -> str:
    """How to judge the items a failed judge left (names the run's ``--output_path``)."""
    logged = any(a in ("--log_samples", "-s") for a in sys.argv[1:])
    out = _argv_value(("--output_path", "-o"))
    if _argv_value(("--config", "-C")) is not None:  # options may come from a YAML file
        logged, out = True, out or "OUTPUT_PATH"
    if not logged or not out:
        return (
            "the answers were not saved because --log_samples --output_path DIR was not set; "
            "re-run with them (or with --predict_only) to keep answers when the judge fails"
        )
    if spec.split(",")[0].strip().lower() == "replay":
        # The released scores have none for these answers, now or later: asking replay
        # again would fail the same way.
        return (
            "the released judge scores have none for them, so judge them with an LLM judge "
            f"or lexical: elitr-bench score {shlex.quote(out)} --judge openai:MODEL "
            "(or --judge lexical)"
        )
    hint = f"finish with: elitr-bench score {shlex.quote(out)} --judge {shlex.quote(spec)}"
    if MASK + "@" in spec:  # concealed credentials (llm/redact.py) cannot be copied
        hint += f" (with the real user info in place of {MASK}, or in OPENAI_BASE_URL)"
    return hint


def record_failures(
    reasons: Sequence[str],
    total: int,
    config: JudgeConfig,
    *,
    source: str = FILTER_NAME,
    judge: str = "the judge",
    items: str = "answers",
    hint: str = "",
) -> None:
    """Count the items a judge filter could not judge and arrange the one-line exit.

    Counts add up over the tasks of one process (one line per filter ``source``), so the
    line lm-eval's run ends with covers every task.

    Args:
        reasons: One reason per item judged with status ``error`` (empty: all judged).
        total: Items the filter judged this time.
        config: The judge, named in the ``elitr-bench score`` hint.
        source: The filter, one line each.
        judge: Who failed, as the line says it.
        items: What was judged (plural noun).
        hint: What to do instead of re-running the same judge (e.g. when its window is
            too small for some prompts); default: the ``elitr-bench score`` call.
    """
    counts = _FAILURES.setdefault(source, {"failed": 0, "total": 0, "first": "", "spec": ""})
    counts["total"] += total
    if not reasons:
        return
    counts["failed"] += len(reasons)
    counts["first"] = counts["first"] or reasons[0]
    counts["spec"] = config.spec or config.backend
    counts["hint"] = hint or counts.get("hint") or ""
    exit_with_error_after_run(
        f"{judge} failed on {counts['failed']} of {counts['total']} {items} "
        f"({counts['first']}); results and samples are still written, with status "
        f"'error' on those items; {counts['hint'] or finish_hint(counts['spec'])}",
        source=source,
    )


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


def first_text(resp: Any) -> str:
    """A response may arrive as the raw repeats list or already reduced to a string.

    Shared by the QA and minutes judge filters and the minutes task's scoring.
    """
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
        run = judge_items(todo, config, desc="elitr judge", on_error="record")
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
