"""The ``elitr_minutes_judge`` lm-eval filter and per-sample metrics of every minutes method.

lm-eval hands a filter all responses of a task at once, so the minutes judge runs every
meeting concurrently through the shared client. Each response becomes the JSON string
``{"response": <minutes>, "judge": <MinutesAssessment.to_dict()>}`` (the shape the QA
judge filter logs, read back by :func:`elitr_bench.judges.metrics.parse_filtered`), so the
generated minutes stay in the sample log whatever the judge did: a judge that fails
(network, quota, context length) gives ``status: "error"`` with its reason, never an
exception that would discard the run. As with the QA judge filter, lm-eval then writes
its results and samples, and the command exits non-zero with one line naming the
``elitr-bench score RUN_DIR --judge ...`` call that judges the minutes again. A plan over
the spec's ``max_cost=`` sends nothing and ends the run the same way.

Shared by every minutes method (the AutoMin GPT judges, MESA, an installed one): the
method comes from the registry, and its own fields are its to declare.

Metrics: each of the method's metrics is reported per sample only when scored, so lm-eval's
built-in ``mean`` runs over scored samples and gets its closed-form stderr (see
:mod:`elitr_bench.judges.metrics`); ``judge_unscored`` counts samples the judge answered
without any score and ``judge_errors`` those it failed on (``judge_count``); then the
fields the method declares (:meth:`~.base.MinutesMethod.extra_metric_entries`, valued by
:meth:`~.base.MinutesMethod.sample_fields`; the AutoMin judges' filler compression, say).
Meetings the method flags (:meth:`~.base.MinutesMethod.flag`) keep their scores and are
named on the console and in the run's usage.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lm_eval.api.filter import Filter
from lm_eval.api.registry import register_filter

from elitr_bench.judges.filtering import (
    cap_hint,
    finish_hint,
    first_text,
    judged_json,
    record_failures,
    refused_by_cap,
)
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.metrics import (
    JUDGE_ERRORS,
    JUDGE_FORMAT_IN_ANSWER,
    JUDGE_UNSCORED,
    parse_filtered,
    register_lm_eval_aggregations,
)
from elitr_bench.judges.overlength import CONTEXT_DETAIL, Overlong, larger_judge, way_out
from elitr_bench.judges.readiness import check_judge_ready
from elitr_bench.judges.spec import get_run_judge, resolve_run_judge
from elitr_bench.judges.summary.base import (
    MinutesAssessment,
    MinutesItem,
    MinutesMethod,
    error_assessment,
)
from elitr_bench.judges.summary.registry import get_method, metric_entries
from elitr_bench.judges.summary.run import (
    MinutesRun,
    assess_items_run,
    context_line,
    context_over,
    plan,
    warn_unsure,
)
from elitr_bench.llm.context_window import judge_window

log = logging.getLogger(__name__)

FILTER_NAME = "elitr_minutes_judge"

_LAST_RUN: MinutesRun | None = None

TranscriptLookup = Callable[[str], tuple[str, tuple[str, ...]]]


def last_run() -> MinutesRun | None:
    """The most recent minutes-judging run of this process (usage, cost, identity)."""
    return _LAST_RUN


def split_of(meeting_id: str) -> str:
    """The data split a meeting id belongs to (``test2023``, ``dev`` or ``test2``)."""
    match = re.match(r"meeting_en_(test2023|dev|test2)_\d+$", meeting_id)
    return match.group(1) if match else ""


def load_meeting_texts(meeting_id: str) -> tuple[str, tuple[str, ...]]:
    """Transcript and reference minutes of a meeting, from the data layer.

    Raises:
        elitr_bench.data.errors.DataError: Unknown meeting or missing data.
    """
    from elitr_bench.data.errors import DataError
    from elitr_bench.data.minutes import load_automin_meetings, load_elitr_minutes_meetings

    split = split_of(meeting_id)
    if split == "test2023":
        meetings = load_automin_meetings([meeting_id])
    elif split in ("dev", "test2"):
        elitr = load_elitr_minutes_meetings("dev" if split == "dev" else "test2")
        meetings = [m for m in elitr if m.meeting_id == meeting_id]
    else:
        meetings = []
    if not meetings:
        raise DataError(f"minutes judge: no transcript for meeting {meeting_id!r}")
    meeting = meetings[0]
    return meeting.transcript, tuple(r.text for r in meeting.references)


def item_from_doc(
    doc: Mapping[str, Any],
    minutes: str,
    system: str = "",
    lookup: TranscriptLookup = load_meeting_texts,
) -> MinutesItem:
    """The judge's view of one minutes-task document and its generated minutes.

    Documents may carry ``transcript`` and ``references`` themselves; otherwise they are
    looked up by ``meeting_id`` (minutes-task docs keep the long transcript out of the log).
    """
    meeting_id = str(doc.get("meeting_id", ""))
    transcript = doc.get("transcript")
    references = doc.get("references")
    if not isinstance(transcript, str) or not transcript:
        transcript, looked_up = lookup(meeting_id)
        if not isinstance(references, (list, tuple)):
            references = looked_up
    refs = tuple(
        str(r.get("text", "")) if isinstance(r, Mapping) else str(r) for r in references or ()
    )
    return MinutesItem(
        meeting_id=meeting_id,
        system=str(doc.get("system") or system),
        transcript=transcript,
        minutes=minutes,
        references=refs,
    )


def _skipped(item_ids: tuple[str, str], method: str, reason: str) -> dict[str, Any]:
    return MinutesAssessment(
        meeting_id=item_ids[0],
        system=item_ids[1],
        method=method,
        scores={},
        status="skipped",
        reason=reason,
    ).to_dict()


def judge_minutes(
    resps: Sequence[Any],
    docs: Sequence[Mapping[str, Any]],
    config: JudgeConfig | None,
    system: str = "",
    lookup: TranscriptLookup = load_meeting_texts,
) -> list[list[str]]:
    """Judge generated minutes against their docs; one ``[<judged JSON>]`` per instance.

    Never raises for a judge failure: every response is returned with its assessment
    (``error`` with the reason when the judge could not run), and the process exits
    non-zero once lm-eval has written its files (see :func:`record_failures`).
    """
    global _LAST_RUN
    texts = [first_text(r) for r in resps]
    ids = [(str(d.get("meeting_id", "")), str(d.get("system") or system)) for d in docs]
    if config is None:
        return [
            [judged_json(t, _skipped(i, "", "judging disabled"))]
            for t, i in zip(texts, ids, strict=True)
        ]
    try:
        method = get_method(config)
        check_judge_ready(config)
        items = [
            item_from_doc(doc, text, system, lookup) for doc, text in zip(docs, texts, strict=True)
        ]
        # The minutes exist now: a prompt that cannot fit is not sent, its minutes are kept.
        over = context_over(items, method)
        warn_unsure(items, method, config)
        todo = [item for item, o in zip(items, over, strict=True) if o is None]
        preview = plan(todo, method, config)
        _log_plan(method.name, config, preview)
        cost = preview["estimated_cost_usd"] if preview["priced"] else None
        refused = refused_by_cap(cost, int(preview["calls"]), config)
        if refused is None:
            run = run_sync(todo, config, method)
        else:  # over the spec's max_cost=: nothing is sent, the minutes are kept
            log.error("minutes judge: %s; the minutes are kept unjudged", refused)
            run = _refused_run(todo, config, method, refused)
    except Exception as exc:  # the minutes must survive any judge failure
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        log.error("minutes judge failed, minutes kept unjudged: %s", reason)
        failed = [
            MinutesAssessment(i[0], i[1], config.method or config.rubric, {}, "error", reason)
            for i in ids
        ]
        _record(failed, config)
        return [[judged_json(t, a.to_dict())] for t, a in zip(texts, failed, strict=True)]
    overlong = [o for o in over if o is not None]
    if overlong:
        log.error(
            "%s; those minutes are kept unjudged",
            context_line("minutes judge", overlong, method, config),
        )
        run = _with_overlong(run, items, over, config, method.name)
    # ... and those found too long only after filler compression.
    overlong += [
        Overlong(a.meeting_id, int(a.details[CONTEXT_DETAIL]["prompt_tokens"]), config.max_tokens)
        for a in run.assessments
        if a.status == "error" and isinstance(a.details.get(CONTEXT_DETAIL), Mapping)
    ]
    hint = _context_hint(config, overlong, method) if overlong else ""
    if refused is not None:  # score judges what the cap held back
        hint = cap_hint(config, bool(preview["priced"]))
    _LAST_RUN = run
    _log_outcome(run)
    _record(run.assessments, config, hint)
    out = []
    for text, assessment in zip(texts, run.assessments, strict=True):
        entry = assessment.to_dict()
        entry["identity"] = run.identity
        out.append([judged_json(text, entry)])
    return out


def _log_plan(method: str, config: JudgeConfig, preview: Mapping[str, Any]) -> None:
    """The plan line lm_eval's log shows before the first minutes judge call."""
    log.warning(
        "minutes judge %s (%s): up to %d calls, estimated cost %s (%d restatements "
        "included; cache hits are free)",
        method,
        config.spec or config.backend,
        preview["calls"],
        f"${preview['estimated_cost_usd']}{' at the batch price' if preview.get('batch') else ''}"
        if preview["priced"]
        else "unknown (unpriced)",
        preview["restated_max"],
    )


def _log_outcome(run: MinutesRun) -> None:
    """The run's counts per status and usage, and each meeting the method flagged."""
    summary = run.summary
    log.warning(
        "minutes judge %s: %d ok, %d partial, %d unscored, %d error; usage %s",
        run.method,
        summary["ok"],
        summary["partial"],
        summary["unscored"],
        summary["error"],
        run.usage,
    )
    for meeting, note in run.flagged.items():
        log.warning("minutes judge %s: %s flagged: %s; scores kept", run.method, meeting, note)


def _refused_run(
    items: Sequence[MinutesItem], config: JudgeConfig, method: MinutesMethod, reason: str
) -> MinutesRun:
    """The run of minutes a spec's ``max_cost=`` held back: an ``error`` each, nothing sent."""
    from elitr_bench.judges.summary.run import identity_of, summarize

    metrics = tuple(method.metrics)
    assessments = [error_assessment(item, method.name, metrics, reason) for item in items]
    run = MinutesRun(
        assessments=assessments,
        identity=identity_of(config, method),
        usage={"requests": 0, "over_cap": len(items)},
        elapsed_s=0.0,
        method=method.name,
        metrics=metrics,
        errors=len(assessments),
        flag_key=method.flag_key,
    )
    run.summary = summarize(assessments, metrics)
    return run


def _with_overlong(
    run: MinutesRun,
    items: Sequence[MinutesItem],
    over: Sequence[Overlong | None],
    config: JudgeConfig,
    method: str,
) -> MinutesRun:
    """The run's assessments with an ``error`` for every item that was not sent, in order."""
    from elitr_bench.judges.summary.run import summarize

    window = judge_window(config)
    judged = iter(run.assessments)
    assessments = []
    for item, o in zip(items, over, strict=True):
        if o is None:
            assessments.append(next(judged))
            continue
        reason = (
            f"{item.meeting_id}: the judge prompt has {o.tokens:,} tokens and exceeds "
            f"{window.describe(o.max_tokens)}; it was not sent"
        )
        assessments.append(error_assessment(item, method, run.metrics, reason))
    run.assessments = assessments
    run.errors = sum(a.status == "error" for a in assessments)
    run.summary = summarize(assessments, run.metrics)
    return run


def _context_hint(config: JudgeConfig, over: Sequence[Overlong], method: MinutesMethod) -> str:
    """What to do about minutes whose judge prompts were too long: another judge, then score."""
    alternatives = tuple(method.context_way_out())
    bigger = larger_judge(config, max(o.tokens + o.max_tokens for o in over))
    return (
        f"{way_out(config, over, *alternatives)}; "
        f"{finish_hint(bigger or 'A_JUDGE_WITH_A_LARGER_WINDOW')}"
    )


def _record(assessments: Sequence[MinutesAssessment], config: JudgeConfig, hint: str = "") -> None:
    """Hand the failed assessments to the QA filter's deferred one-line exit."""
    failed = [a.reason for a in assessments if a.status == "error"]
    record_failures(
        failed,
        len(assessments),
        config,
        source=FILTER_NAME,
        judge="the minutes judge",
        items="minutes",
        hint=hint,
    )


def run_sync(items: Sequence[MinutesItem], config: JudgeConfig, method: Any) -> MinutesRun:
    """Run :func:`assess_items_run` from synchronous code (lm-eval filters are sync).

    With ``batch=on`` the requests go through the endpoint's Batch API, submitted and
    waited for (:mod:`~elitr_bench.judges.summary.batching`).
    """
    from elitr_bench.judges.aio import run_coroutine

    if config.batch:
        from elitr_bench.judges.batching import BatchPlan
        from elitr_bench.judges.summary.batching import assess_in_batches

        return assess_in_batches([("minutes judge", items)], config, method, BatchPlan()).runs[0]
    return run_coroutine(
        lambda: assess_items_run(items, config, method=method, desc="minutes judge")
    )


@register_filter(FILTER_NAME)
class ElitrMinutesJudgeFilter(Filter):
    """Replace each minutes response by ``[json.dumps({"response": ..., "judge": {...}})]``.

    Args:
        judge: Judge spec (default: the process-level run judge, ``ELITR_JUDGE``).
        system: System name recorded in assessments when docs carry none.
    """

    def __init__(self, judge: str | None = None, system: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._spec = judge
        self._system = system

    def apply(self, resps: Iterable[Any], docs: Sequence[dict[str, Any]]) -> list[list[str]]:
        """Judge every response of the task concurrently."""
        config = resolve_run_judge(self._spec) if self._spec else get_run_judge()
        return judge_minutes(list(resps), list(docs), config, self._system)


def assessment_of(filtered: Any) -> tuple[str, MinutesAssessment] | None:
    """The minutes text and assessment in a sample's filtered response, or None."""
    entry = parse_filtered(filtered)
    if entry is None or "judge" not in entry or "response" not in entry:
        return None
    judge = entry["judge"]
    if not isinstance(judge, Mapping) or "scores" not in judge:
        return None
    return str(entry["response"]), MinutesAssessment.from_dict(judge)


def minutes_judge_metrics(filtered: Any, method: MinutesMethod | None = None) -> dict[str, float]:
    """Per-sample metric values of a judged minutes response (pure).

    Args:
        filtered: A sample's filtered response, as the filter logged it.
        method: The method that judged it, for its own fields (None: the shared ones only).

    Returns:
        Every scored metric of the assessment, ``judge_unscored`` (1.0 when the judge
        answered without any usable score), ``judge_errors`` (1.0 when the judge failed;
        ``elitr-bench score`` can judge those minutes later), ``judge_format_in_answer``,
        then the method's :meth:`~.base.MinutesMethod.sample_fields`. An unscored metric is
        absent, never a number.
    """
    found = assessment_of(filtered)
    if found is None:
        return {}
    _, assessment = found
    out: dict[str, float] = {k: v for k, v in assessment.scored().items() if not math.isnan(v)}
    out[JUDGE_UNSCORED] = 1.0 if assessment.status == "unscored" else 0.0
    out[JUDGE_ERRORS] = 1.0 if assessment.status == "error" else 0.0
    out[JUDGE_FORMAT_IN_ANSWER] = 1.0 if assessment.details.get("format_in_answer") else 0.0
    if method is not None:
        out.update(method.sample_fields(assessment))
    return out


def metric_list(config: JudgeConfig | None) -> list[dict[str, Any]]:
    """lm-eval ``metric_list`` entries for a minutes task judged by ``config``.

    lm-eval aggregates only metrics its task config lists, and which metrics exist depends
    on the judge, so the minutes task adds these at construction time
    (:func:`~elitr_bench.judges.summary.registry.metric_entries`).
    """
    if config is None:
        return []
    register_lm_eval_aggregations()
    return metric_entries(config)


def usage_metadata() -> dict[str, Any] | None:
    """Usage, cost and summary of the last run, for the task's ``metadata.judge_usage``."""
    run = _LAST_RUN
    if run is None:
        return None
    out = {**run.usage, "seconds": round(run.elapsed_s, 3), **run.summary}
    if run.flagged:  # scores kept; the meetings the method flagged, with why
        out[run.flag_key] = dict(run.flagged)
    return out


register_lm_eval_aggregations()
