"""Per-sample judge metrics and their lm-eval aggregations.

:func:`judge_metrics` OMITS ``judge_score`` for unscored and skipped items, so nothing
ever counts an unscored answer as a number. The tasks turn that into what lm-eval's clients
need (every listed metric in every sample, ``None`` here), aggregate it with a mean that
skips ``None`` and write the meeting-clustered stderr
(:mod:`elitr_bench.tasks.metrics`). ``judge_unscored`` is a 0/1 value per item summed by the
``judge_count`` aggregation registered here (a count has no stderr: "N/A"), and so is
``judge_errors`` (items the judge failed on; ``elitr-bench score`` finishes them).
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

JUDGE_SCORE = "judge_score"
JUDGE_UNSCORED = "judge_unscored"
JUDGE_ERRORS = "judge_errors"
COUNT_AGGREGATION = "judge_count"


def judged_entry(filtered: Any) -> Mapping[str, Any]:
    """The judged dict in what process_results receives (JSON string, dict, or lists of them)."""
    entry = parse_filtered(filtered)
    if entry is None:
        raise TypeError(f"expected the elitr_judge filter's output, got {str(filtered)[:80]!r}")
    return entry


def judge_metrics(judged: Mapping[str, Any] | Sequence[Any]) -> dict[str, float]:
    """Per-sample metric values for ``process_results``.

    Args:
        judged: The filter's ``{"response": ..., "judge": {...}}`` dict (or the list lm-eval
            passes around it).

    Returns:
        ``judge_score`` for a scored item only, plus the 0/1 counters
        ``judge_unscored`` (no valid score) and ``judge_errors`` (the judge failed;
        the item waits for ``elitr-bench score``) for every item.
    """
    entry = judged_entry(judged)
    judge = entry.get("judge", entry)
    status = judge.get("status")
    score = judge.get("score")
    errors = 1.0 if status == "error" else 0.0
    if status == "scored" and isinstance(score, (int, float)) and not math.isnan(float(score)):
        return {JUDGE_SCORE: float(score), JUDGE_UNSCORED: 0.0, JUDGE_ERRORS: errors}
    return {JUDGE_UNSCORED: 1.0 if status == "unscored" else 0.0, JUDGE_ERRORS: errors}


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
