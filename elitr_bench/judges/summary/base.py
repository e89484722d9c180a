"""What a minutes judge sees and returns, and the protocol every minutes method implements.

Minutes judges differ a lot (one prompt with four scores, a turn classifier plus a prompt,
MESA's multi-step debate), but lm-eval's filter, ``elitr-bench score`` and
``minutes-check`` only need the same three things from each: how many calls it plans
(for the cost preview), an async ``assess`` over the shared :class:`JudgeClient`, and
named metrics. Scores that a method could not obtain are ``None``, never a number, so a
mean never silently includes a guess.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig
    from elitr_bench.judges.overlength import Overlong
    from elitr_bench.llm.client import JudgeClient

AssessmentStatus = Literal["ok", "partial", "unscored", "error", "skipped"]
STATUSES: tuple[str, ...] = ("ok", "partial", "unscored", "error", "skipped")


@dataclass(frozen=True)
class MinutesItem:
    """One system's minutes of one meeting, with what a judge may compare them to.

    Attributes:
        meeting_id: Meeting identifier (e.g. ``meeting_en_test2023_002``).
        system: AutoMin system name or the name of one of our runs.
        transcript: The meeting transcript the minutes summarise.
        minutes: The minutes to judge (unchanged text).
        references: Human reference minutes (reference-free judges ignore them).
    """

    meeting_id: str
    system: str
    transcript: str
    minutes: str
    references: tuple[str, ...] = ()


def _json_safe(value: Any) -> Any:
    """Replace NaN/inf (invalid JSON) by None and tuples by lists, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


@dataclass(frozen=True)
class MinutesAssessment:
    """A method's verdict on one :class:`MinutesItem`.

    Attributes:
        meeting_id: Meeting of the judged minutes.
        system: System of the judged minutes.
        method: Method name (``gpt-art``, ``gpt-afgr``, ``mesa``, ...).
        scores: Metric name -> value; ``None`` = unscored for that metric.
        status: ``ok`` (all metrics scored), ``partial`` (some), ``unscored`` (none; the
            judge answered but without usable scores), ``error`` (the judge failed; the
            minutes are kept by the caller) or ``skipped`` (judging disabled).
        reason: Why a metric is unscored or the judge failed ("" when ``ok``).
        details: Raw outputs and per-method data (e.g. filler-compression token savings).
    """

    meeting_id: str
    system: str
    method: str
    scores: Mapping[str, float | None]
    status: str
    reason: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    def scored(self) -> dict[str, float]:
        """Only the metrics that have a finite value."""
        return {
            k: float(v) for k, v in self.scores.items() if v is not None and math.isfinite(float(v))
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (logged per sample by the lm-eval filter and written by commands)."""
        return {
            "meeting_id": self.meeting_id,
            "system": self.system,
            "method": self.method,
            "scores": _json_safe(dict(self.scores)),
            "status": self.status,
            "reason": self.reason,
            "details": _json_safe(dict(self.details)),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MinutesAssessment:
        """Inverse of :meth:`to_dict` (for reading sample logs back)."""
        scores = data.get("scores") or {}
        return cls(
            meeting_id=str(data.get("meeting_id", "")),
            system=str(data.get("system", "")),
            method=str(data.get("method", "")),
            scores={
                str(k): (float(v) if isinstance(v, (int, float)) else None)
                for k, v in scores.items()
            },
            status=str(data.get("status", "")),
            reason=str(data.get("reason", "")),
            details=dict(data.get("details") or {}),
        )


def status_for(scores: Mapping[str, float | None]) -> str:
    """``ok`` when every metric has a value, ``partial`` when some do, else ``unscored``."""
    have = sum(v is not None for v in scores.values())
    if scores and have == len(scores):
        return "ok"
    return "partial" if have else "unscored"


def error_assessment(
    item: MinutesItem, method: str, metrics: tuple[str, ...], reason: str
) -> MinutesAssessment:
    """The assessment of an item whose judge failed: every metric unscored, reason kept."""
    return MinutesAssessment(
        meeting_id=item.meeting_id,
        system=item.system,
        method=method,
        scores=dict.fromkeys(metrics),
        status="error",
        reason=reason,
    )


@dataclass(frozen=True)
class SideCalls:
    """Calls a method sends to another model than the judge's (planned and priced apart).

    Attributes:
        label: What they are for (``filler_classifier``); the usage block's key.
        config: The other model's judge config (same backend options as the judge).
        calls: Completions at most.
        prompt_chars: Characters of their prompts at most.
        completion_tokens: Output tokens at most.
    """

    label: str
    config: JudgeConfig
    calls: int
    prompt_chars: int
    completion_tokens: int


class MinutesMethod(ABC):
    """One way of judging minutes; registered by name in :mod:`.registry`.

    A method implements :meth:`planned_calls` and :meth:`assess` and sets ``name`` and
    ``metrics``; every other hook has a default here that means "nothing special", so
    the registry calls each hook directly (no probing with ``getattr``) and a new method
    overrides only what it does differently: a finer cost preview
    (:meth:`planned_prompt_chars`, :meth:`planned_completion_tokens`), calls to another
    model (:meth:`planned_side_calls`, closed in :meth:`finish_run`), a context-window
    check before anything is paid (:meth:`context_over` and friends), or fields of its
    own besides its scores (:meth:`extra_metric_entries`, :meth:`sample_fields`,
    :meth:`flag`): the shared filter and ``score`` name no method's fields.

    Attributes:
        name: Method name as selected by the judge spec (``rubric=`` or ``method=``).
        metrics: Metric names it reports (each becomes an lm-eval metric, mean over scored).
        prompt_hash: Hash of its prompts, written into the judge identity (None: none).
        flag_key: The key under which a run's usage lists the meetings :meth:`flag` flagged.
    """

    name: str
    metrics: tuple[str, ...]
    prompt_hash: str | None = None
    flag_key: str = "flagged"

    @abstractmethod
    def planned_calls(self, item: MinutesItem) -> int:
        """Upper bound of completions :meth:`assess` asks for (cost preview, cache ignored)."""

    @abstractmethod
    async def assess(self, item: MinutesItem, client: JudgeClient) -> MinutesAssessment:
        """Judge one item through the shared client (cached, rate-limited, retried)."""

    def planned_restatements(self, item: MinutesItem) -> int:
        """Restatement turns among :meth:`planned_calls` at most (none by default)."""
        return 0

    def planned_prompt_chars(self, item: MinutesItem) -> int:
        """Characters sent at most: by default the transcript and minutes, per call."""
        return self.planned_calls(item) * (len(item.transcript) + len(item.minutes))

    def planned_completion_tokens(self, item: MinutesItem) -> int | None:
        """Output tokens at most; None: ``max_tokens`` per planned call."""
        return None

    def planned_side_calls(self, item: MinutesItem) -> Sequence[SideCalls]:
        """Calls to another model than the judge's, priced at that model (none)."""
        return ()

    async def finish_run(self) -> dict[str, dict[str, Any]]:
        """Close clients the method opened itself; their usage by label (none)."""
        return {}

    def context_over(self, items: Sequence[MinutesItem]) -> list[Overlong | None]:
        """Per item: its judge prompt when it cannot fit the window (None: unchecked here).

        By default only the judge client checks, call by call.
        """
        return [None] * len(items)

    def context_unsure(self, items: Sequence[MinutesItem]) -> list[Overlong | None]:
        """Per item: a prompt that fits or not depending on what a paid step returns."""
        return [None] * len(items)

    @property
    def context_basis(self) -> str:
        """What :meth:`context_over` counts, said in the stop line ("": the prompt)."""
        return ""

    def context_way_out(self) -> tuple[str, ...]:
        """The method's own ways to shorten an over-long prompt (none)."""
        return ()

    def extra_metric_entries(self) -> list[dict[str, Any]]:
        """lm-eval ``metric_list`` entries it writes besides its scores and the counts.

        Fields describing what the method did (not qualities), e.g. tokens a compression
        saved; none by default. :meth:`sample_fields` gives their per-sample values.
        """
        return []

    def sample_fields(self, assessment: MinutesAssessment) -> dict[str, float]:
        """Per-sample values of its :meth:`extra_metric_entries`, read from an assessment.

        The assessment is one it wrote (as logged: its ``details``); none by default.
        """
        return {}

    def flag(self, assessment: MinutesAssessment) -> str:
        """Why an assessment's scores, kept, deserve a look ("" for none, the default).

        The meetings flagged are listed in the run's usage under :attr:`flag_key` and named
        on the console; their scores count like any other.
        """
        return ""


def lower_is_better(metric: str) -> bool:
    """Whether ``metric`` (``@LABEL`` ignored) scores errors, so that lower is better.

    Each family declares its own (``JudgeFamily.lower_is_better``); a metric no family
    claims is higher-is-better.
    """
    from elitr_bench.judges.family import families

    name = metric.partition("@")[0]
    return any(f.lower_is_better is not None and f.lower_is_better(name) for f in families())


def metric_scale(metric: str) -> tuple[float, float] | None:
    """The fixed score range of a judge metric (``@LABEL`` ignored), as its family declares.

    None: a metric without one (ROUGE, counts) or that no family claims.
    """
    from elitr_bench.judges.family import families

    name = metric.partition("@")[0]
    for family in families():
        scale = family.scale(name) if family.scale is not None else None
        if scale is not None:
            return scale
    return None
