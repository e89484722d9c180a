"""Per-sample judge metrics and their lm-eval aggregations.

:func:`judge_metrics` OMITS ``judge_score`` for unscored and skipped items, so nothing
ever counts an unscored answer as a number. The tasks turn that into what lm-eval's clients
need (every listed metric in every sample, ``None`` here), aggregate it with a mean that
skips ``None`` and write the meeting-clustered stderr
(:mod:`elitr_bench.tasks.metrics`). ``judge_unscored`` is a 0/1 value per item summed by the
``judge_count`` aggregation registered here (a count has no stderr: "N/A"), and so is
``judge_errors`` (items the judge failed on; ``elitr-bench score`` finishes them).

The score's name says what produced it, because that name is half of the
``<metric>,<filter>`` key every lm-eval client and leaderboard reads: ``judge_score`` for a
rubric judge on the paper's 1-10 scale (an LLM, or the released GPT-4 judge scores
replayed), ``lexical_score`` for the ``lexical`` fallback (token F1 mapped onto 1-10, no
judge at all), so a lexical number can never stand in a judge column. Which judge exactly
(backend, model, rubric, prompt hash, sampling) is the task's ``judge_identity`` in the
results file's ``configs``; who judged is the other half of the key, the filter name
(:func:`judge_filter_name`).
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

JUDGE_SCORE = "judge_score"
LEXICAL_SCORE = "lexical_score"
#: Every name a QA answer's score can have (one per kind of scorer).
SCORE_METRICS = (JUDGE_SCORE, LEXICAL_SCORE)
JUDGE_UNSCORED = "judge_unscored"
JUDGE_ERRORS = "judge_errors"
#: Answers written in the judge's own reply format (counted; see ``Judgement.minimum``).
JUDGE_FORMAT_IN_ANSWER = "judge_format_in_answer"
COUNT_AGGREGATION = "judge_count"
#: The rubric a QA judge uses unless told otherwise (not repeated in filter names).
DEFAULT_QA_RUBRIC = "gpt4-rubric"


def judged_entry(filtered: Any) -> Mapping[str, Any]:
    """The judged dict in what process_results receives (JSON string, dict, or lists of them)."""
    entry = parse_filtered(filtered)
    if entry is None:
        raise TypeError(f"expected the elitr_judge filter's output, got {str(filtered)[:80]!r}")
    return entry


def judge_filter_name(identity: Mapping[str, Any] | None) -> str:
    """The lm-eval filter name of a task judged by this judge: who judged, in short.

    lm-eval keys every number by ``<metric>,<filter>`` (``results``, ``make_table``'s Filter
    column, W&B, the Hub details), and leaderboards read exactly that key; it is lm-eval's
    way of saying that one task's numbers came out of different scoring pipelines
    (gsm8k's ``strict-match`` and ``flexible-extract``). Our judge *is* the task's filter,
    so the filter carries its name and two judges never share a key, the group scores
    included (lm-eval's groups aggregate per filter): ``replay`` (the released GPT-4
    judge scores), ``lexical``, ``<backend>:<model>`` (``openai:gpt-4-0613``,
    ``hf:prometheus-7b-v2.0``) with ``:<rubric or method>`` unless it is the QA default
    rubric, and ``none`` without a judge. No ``,`` (lm-eval's key separator) and no ``/``
    (W&B's section separator): a model path contributes its last part.
    """
    backend = str((identity or {}).get("backend") or "none")
    if identity is None or backend in ("none", "replay", "lexical"):
        return backend
    path = str(identity.get("model") or "").replace("\\", "/").rstrip("/")
    model = path.rsplit("/", 1)[-1]
    name = f"{backend}:{model}" if model else backend
    rubric = str(identity.get("rubric") or "")
    extra = str(identity.get("method") or (rubric if rubric != DEFAULT_QA_RUBRIC else ""))
    if extra:
        name += f":{extra}"
    return name.replace(",", ";")


def score_metric(backend: str | None) -> str:
    """The score's metric name for a judge backend (``lexical_score`` or ``judge_score``)."""
    return LEXICAL_SCORE if backend == "lexical" else JUDGE_SCORE


def with_score_metric(metric_list: Sequence[Any], backend: str | None) -> list[Any]:
    """A task's metric list with its ``judge_score`` entry named for the run's judge."""
    name = score_metric(backend)
    return [
        {**m, "metric": name} if isinstance(m, Mapping) and m.get("metric") == JUDGE_SCORE else m
        for m in metric_list
    ]


def judge_metrics(judged: Mapping[str, Any] | Sequence[Any]) -> dict[str, float]:
    """Per-sample metric values for ``process_results``.

    Args:
        judged: The filter's ``{"response": ..., "judge": {...}}`` dict (or the list lm-eval
            passes around it).

    Returns:
        The score for a scored item only (``judge_score``, or ``lexical_score`` when the
        judge's identity says ``lexical``), plus the 0/1 counters ``judge_unscored`` (no
        valid score), ``judge_errors`` (the judge failed; the item waits for
        ``elitr-bench score``) and ``judge_format_in_answer`` (the answer holds the
        judge's reply format) for every item.
    """
    entry = judged_entry(judged)
    judge = entry.get("judge", entry)
    status = judge.get("status")
    score = judge.get("score")
    errors = 1.0 if status == "error" else 0.0
    identity = judge.get("identity")
    backend = identity.get("backend") if isinstance(identity, Mapping) else None
    counts = {
        JUDGE_ERRORS: errors,
        JUDGE_FORMAT_IN_ANSWER: 1.0 if judge.get("format_in_answer") else 0.0,
    }
    if status == "scored" and isinstance(score, (int, float)) and not math.isnan(float(score)):
        return {score_metric(backend): float(score), JUDGE_UNSCORED: 0.0, **counts}
    return {JUDGE_UNSCORED: 1.0 if status == "unscored" else 0.0, **counts}


def judge_count(items: Sequence[float | None]) -> float:
    """Sum of per-item 0/1 values (count of unscored items); ``None`` counts nothing."""
    return float(sum(v for v in items if v is not None))


def register_lm_eval_aggregations() -> None:
    """Register ``judge_count`` with lm-eval (idempotent).

    ``lm_eval.api.metrics`` is imported first: lm-eval only auto-imports its built-in
    aggregations while the registry is empty, so registering ours first would hide
    ``mean`` and friends.
    """
    import lm_eval.api.metrics  # noqa: F401  (populates the built-in aggregations)
    from lm_eval.api.registry import aggregation_registry

    if COUNT_AGGREGATION not in aggregation_registry:
        aggregation_registry.register(COUNT_AGGREGATION)(judge_count)


# --- reading judged responses back from lm-eval sample logs ---------------------------
class _NanNames(ast.NodeTransformer):
    """Let ``ast.literal_eval`` read the ``nan``/``inf`` that Python's repr writes."""

    _VALUES: ClassVar[dict[str, Any]] = {
        "nan": math.nan,
        "inf": math.inf,
        "None": None,
        "True": True,
        "False": False,
    }

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self._VALUES:
            return ast.copy_location(ast.Constant(self._VALUES[node.id]), node)
        return node


def parse_filtered(value: Any) -> Mapping[str, Any] | None:
    """The ``{"response", "judge"}`` dict of a sample's ``filtered_resps``, or None.

    lm-eval 0.4 stringifies non-string filter outputs with ``str()``, so the dict usually
    arrives as a Python repr; it is read with ``ast.literal_eval`` (never ``eval``).
    """
    while isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    if isinstance(value, Mapping):
        return value
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        try:
            tree = _NanNames().visit(ast.parse(value.strip(), mode="eval"))
            parsed = ast.literal_eval(tree)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return parsed if isinstance(parsed, Mapping) else None
