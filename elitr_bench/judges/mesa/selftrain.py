"""MESA self-training (Sec. 2.5): feedback on human-annotated samples -> per-type guidance.

1. MESA assesses the feedback summaries (with the current guidance, if any).
2. Per summary, a judge compares MESA's per-type ratings and reasoning with the human
   annotations: reasoning completeness / overlap / logic and a difference label from
   "no difference" to "major difference", "critical disagreement" for conflicting
   observations.
3. Per error type, a second call detects patterns in that feedback and writes the
   consolidated guidance, which :mod:`.guidance` saves for review and which is appended to
   the step prompts of later assessments.

Feedback and evaluated summaries are disjoint by meeting: :func:`split_meetings` refuses an
overlap, and the guidance file records its feedback meetings so that MESA refuses to
assess them later (:meth:`Guidance.check_disjoint`).

What AutoMin 2023 offers as "human annotations": the paper's feedback compares against
per-error-type Likert scores and written reasoning (QMSum Mistake). AutoMin 2023 released
neither, only 1-5 scores of adequacy, fluency, grammaticality and relevance per summary
(document level, and the mean of hunk-level judgements). So the feedback judge can check
MESA's *calibration* (is a summary humans found adequate rated as heavily omitting?) but not
its instance-level reasoning, and the mapping from criteria to error types is indirect; the
prompt says so (see :func:`human_block`), and "overlap with human reasoning" is null.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.judges.mesa.debate import Agent
from elitr_bench.judges.mesa.guidance import Guidance
from elitr_bench.judges.mesa.method import MesaMethod
from elitr_bench.judges.mesa.prompts import consolidation_prompt, feedback_prompt
from elitr_bench.judges.reading import Reading, Reply, json_values
from elitr_bench.judges.summary.base import MinutesAssessment, MinutesItem
from elitr_bench.llm.client import JudgeClient

ANNOTATIONS_NOTE = (
    "AutoMin 2023 human scores (1-5, 5 = best) of adequacy, fluency, grammaticality and "
    "relevance, per summary and averaged over hunks; no per-error-type ratings or reasoning"
)


class SplitError(ElitrBenchError):
    """Feedback and evaluated meetings overlap, or one side is empty."""


@dataclass(frozen=True)
class FeedbackSample:
    """A summary with its human annotations.

    Attributes:
        item: The summary and its meeting.
        human: Annotation name (``document adequacy``, ``hunk fluency``...) -> value.
    """

    item: MinutesItem
    human: Mapping[str, float]


@dataclass
class TrainResult:
    """Guidance plus everything it was built from (kept for review)."""

    guidance: Guidance
    assessments: list[MinutesAssessment] = field(default_factory=list)
    feedback: list[dict[str, Any]] = field(default_factory=list)


def split_meetings(
    all_meetings: Sequence[str], feedback: Sequence[str], evaluate: Sequence[str] | None = None
) -> tuple[list[str], list[str]]:
    """Feedback and evaluation meetings, disjoint (evaluation defaults to the rest).

    Raises:
        SplitError: An overlap, or nothing left on one side.
    """
    fb = sorted(set(feedback))
    ev = sorted(set(evaluate)) if evaluate is not None else sorted(set(all_meetings) - set(fb))
    overlap = sorted(set(fb) & set(ev))
    if overlap:
        raise SplitError(
            f"MESA self-training: meeting(s) {', '.join(overlap)} are both feedback and "
            "evaluation meetings; they must be disjoint (pick other --feedback-meetings)"
        )
    if not fb:
        raise SplitError("MESA self-training needs at least one feedback meeting")
    if not ev:
        raise SplitError("MESA self-training: no meeting left to evaluate")
    return fb, ev


def automin_feedback_samples(
    meetings: Sequence[str], systems: Sequence[str] | None = None
) -> list[FeedbackSample]:
    """AutoMin 2023 summaries of these meetings that have human scores (others dropped)."""
    from elitr_bench.data.minutes import load_automin_human_scores
    from elitr_bench.judges.mesa.automin import automin_items

    items = automin_items(systems, meetings)
    human: dict[tuple[str, str], dict[str, float]] = {}
    for score in load_automin_human_scores():
        key = (score.meeting_id, score.system)
        human.setdefault(key, {})[f"{score.level} {score.criterion}"] = score.value
    out = []
    for item in items:
        scores = human.get((item.meeting_id, item.system))
        if scores:
            out.append(FeedbackSample(item, dict(sorted(scores.items()))))
    return out


def human_block(human: Mapping[str, float]) -> str:
    """The human annotations as shown to the feedback judge, with what they can tell."""
    lines = [f"- {name}: {value:g}" for name, value in human.items()]
    return (
        "Scores from 1 (worst) to 5 (best) given by human annotators (AutoMin 2023); "
        "'document' judges the whole summary, 'hunk' is the mean over its parts:\n"
        + "\n".join(lines)
        + "\nThese are the only annotations: there are no per-error-type ratings and no "
        "written reasoning. Adequacy reflects omissions and hallucinations; fluency and "
        "grammaticality reflect language, repetition, incoherence and structure; relevance "
        "reflects irrelevant content. Use them as evidence of how harsh or lenient each "
        "error-type rating is, not as per-type ratings."
    )


def assessment_block(assessment: MinutesAssessment) -> str:
    """MESA's per-type ratings, confidence and reasoning, as shown to the feedback judge."""
    types = assessment.details.get("types", {})
    rows = {
        code: {
            "rating": data.get("rating"),
            "confidence": data.get("confidence"),
            "instances": data.get("instances"),
            "reasoning": data.get("reasoning") or data.get("reason"),
        }
        for code, data in types.items()
    }
    return json.dumps(rows, ensure_ascii=False, indent=1)


@dataclass(frozen=True)
class _FeedbackGrammar:
    """The feedback reply: one JSON object keyed by error type (field ``feedback``)."""

    fields: tuple[str, ...] = ("feedback",)
    restatement: None = None  # free text feedback: an unreadable reply is asked again

    def read(self, reply: Reply) -> Reading:
        objects = [v for v in json_values(reply.text) if isinstance(v, Mapping) and v]
        if len(objects) != 1:
            why = "expected a JSON object keyed by error type"
            if len(objects) > 1:
                why = f"{len(objects)} JSON objects, expected one keyed by error type"
            return Reading({"feedback": None}, {"feedback": f"feedback reply: {why}"})
        return Reading({"feedback": {str(k).upper(): v for k, v in objects[0].items()}})


@dataclass(frozen=True)
class _GuidanceGrammar:
    """The consolidation reply: the guidance text itself (field ``guidance``)."""

    fields: tuple[str, ...] = ("guidance",)
    restatement: None = None

    def read(self, reply: Reply) -> Reading:
        return Reading({"guidance": reply.raw.strip()})


_FEEDBACK = _FeedbackGrammar()
_GUIDANCE = _GuidanceGrammar()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _feedback_text(entry: Any) -> str:
    if isinstance(entry, Mapping):
        keys = ("difference", "completeness", "overlap", "logic")
        parts = [f"{k}={entry[k]}" for k in keys if entry.get(k) is not None]
        return "; ".join(parts) + f". {_text(entry.get('feedback'))}".rstrip()
    return ""


def _entry_for(feedback: Mapping[str, Any], code: str, method: MesaMethod) -> Any:
    """The feedback entry of a type, keyed by its code or an alias (``RED`` for ``REP``)."""
    for key, entry in feedback.items():
        try:
            if method.types.get(key).code == code:
                return entry
        except ElitrBenchError:
            continue
    return None


async def train(
    samples: Sequence[FeedbackSample],
    method: MesaMethod,
    client: JudgeClient,
    *,
    meta: Mapping[str, Any] | None = None,
) -> TrainResult:
    """One self-training iteration: assess, compare with humans, consolidate per type."""
    if not samples:
        raise SplitError("MESA self-training: no feedback summary has human annotations")
    agent = Agent(method.config, client)
    reask = method.config.reask
    assessments = list(
        await asyncio.gather(
            *(method.assess_item(s.item, client, feedback_run=True) for s in samples)
        )
    )
    definitions = "\n".join(f"- {t.code} ({t.name}): {t.definition}" for t in method.types)

    async def one(sample: FeedbackSample, assessment: MinutesAssessment) -> dict[str, Any]:
        prompt = feedback_prompt(
            definitions=definitions,
            transcript=sample.item.transcript,
            summary=sample.item.minutes,
            assessment=assessment_block(assessment),
            human=human_block(sample.human),
        )
        reply = await agent.respond(prompt, _FEEDBACK, reask)
        return {
            "meeting_id": sample.item.meeting_id,
            "system": sample.item.system,
            "human": dict(sample.human),
            "mesa": {k: v for k, v in assessment.scores.items()},
            "raw": reply.kept,
            "valid": reply.reading.complete,
            "feedback": reply.reading.value("feedback") or {},
        }

    feedback = list(
        await asyncio.gather(*(one(s, a) for s, a in zip(samples, assessments, strict=True)))
    )

    async def consolidate(code: str) -> str:
        etype = method.types.get(code)
        lines = []
        for record in feedback:
            entry = _entry_for(record["feedback"], code, method)
            text = _feedback_text(entry)
            if text:
                lines.append(f"- {record['system']} / {record['meeting_id']}: {text}")
        if not lines:
            return ""
        reply = await agent.respond(consolidation_prompt(etype, "\n".join(lines)), _GUIDANCE, reask)
        return str(reply.reading.value("guidance") or "")

    texts = await asyncio.gather(*(consolidate(code) for code in method.types.codes))
    meetings = tuple(sorted({s.item.meeting_id for s in samples}))
    info = {
        "summaries": len(samples),
        "systems": sorted({s.item.system for s in samples}),
        "annotations": ANNOTATIONS_NOTE,
        "feedback_valid": sum(r["valid"] for r in feedback),
        **dict(meta or {}),
    }
    guidance = Guidance(dict(zip(method.types.codes, texts, strict=True)), meetings, info)
    return TrainResult(guidance, assessments, feedback)
