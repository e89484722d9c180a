"""Meta-evaluate a judge on the 390 human-scored responses (paper Sec. 6, Table 4, Fig. 2).

The released ``qa/test2/st`` all-eval file holds 3 systems x 130 responses with GPT-4-judge,
Prometheus, gold-human and silver-human scores. A judge is run on those responses and
compared with the human scores (Pearson and Spearman), per system (Table 4 layout) and
per gold-human score bin (Fig. 2a: mean and 95 % confidence interval).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.qa.engine import Judge, JudgeItem, JudgeRun, judge_items
from elitr_bench.judges.qa.plan import QAPlan, plan_items
from elitr_bench.judges.usage import usage_line
from elitr_bench.markdown import fixed
from elitr_bench.metaeval.stats import correlations

SYSTEM_ORDER = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")
"""Row order of the paper's Table 4."""

EVALUATORS = ("judge", "gpt4", "prometheus", "gold_human", "silver_human")
_LABELS = {
    "judge": "Judge",
    "gpt4": "GPT-4",
    "prometheus": "Prometheus",
    "gold_human": "Gold Human",
    "silver_human": "Silver Human",
}


@dataclass(frozen=True)
class CheckRow:
    """One of the 390 responses with the judge's and the released scores."""

    system: str
    meeting_id: str
    question_id: str
    judge: float | None
    status: str
    gpt4: float
    prometheus: float
    gold_human: float
    silver_human: float


def load_check_items() -> tuple[list[JudgeItem], list[dict[str, float]], list[str]]:
    """The 390 items, their released scores, and their systems, in released order."""
    from elitr_bench.data import load_released_responses

    released = load_released_responses("qa", "test2", "st", "all-eval")
    items, scores, systems = [], [], []
    for r in released:
        items.append(JudgeItem.from_released(r))
        scores.append(dict(r.scores))
        systems.append(r.system)
    return items, scores, systems


def _corr(xs: Sequence[float], ys: Sequence[float]) -> dict[str, float | None]:
    corr = correlations(xs, ys)
    return {"pearson": corr.pearson, "spearman": corr.spearman, "n": corr.n}


def _mean_ci(values: Sequence[float]) -> dict[str, float | int | None]:
    from scipy import stats

    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "ci_low": None, "ci_high": None}
    mean = statistics.fmean(values)
    if n < 2:
        return {"n": n, "mean": mean, "ci_low": None, "ci_high": None}
    half = float(stats.t.ppf(0.975, n - 1)) * statistics.stdev(values) / math.sqrt(n)
    return {"n": n, "mean": mean, "ci_low": mean - half, "ci_high": mean + half}


def analyse(rows: Sequence[CheckRow]) -> dict[str, Any]:
    """Correlations, Table-4 means and Fig.-2a bins from scored rows."""
    scored = [r for r in rows if r.judge is not None]

    def col(rs: Sequence[CheckRow], name: str) -> list[float]:
        return [float(getattr(r, name)) for r in rs]

    correlations: dict[str, Any] = {}
    for a, b in (
        ("judge", "gold_human"),
        ("judge", "silver_human"),
        ("gpt4", "gold_human"),
        ("prometheus", "gold_human"),
        ("silver_human", "gold_human"),
        ("gpt4", "silver_human"),
    ):
        source = scored if "judge" in (a, b) else list(rows)
        correlations[f"{a}~{b}"] = _corr(col(source, a), col(source, b))
    systems = [s for s in SYSTEM_ORDER if any(r.system == s for r in rows)]
    systems += sorted({r.system for r in rows} - set(systems))
    table4: dict[str, dict[str, float | None]] = {}
    for system in systems:
        mine = [r for r in rows if r.system == system]
        mine_scored = [r for r in mine if r.judge is not None]
        table4[system] = {
            "judge": statistics.fmean(col(mine_scored, "judge")) if mine_scored else None,
            **{name: statistics.fmean(col(mine, name)) for name in EVALUATORS[1:]},
            "n": len(mine),
            "judge_unscored": sum(r.judge is None for r in mine),
        }
    bins: dict[str, Any] = {}
    for level in range(1, 11):
        members = [r for r in rows if round(r.gold_human) == level]
        bins[str(level)] = {
            "n": len(members),
            "judge": _mean_ci(col([r for r in members if r.judge is not None], "judge")),
            "silver_human": _mean_ci(col(members, "silver_human")),
            "gpt4": _mean_ci(col(members, "gpt4")),
        }
    return {
        "n": len(rows),
        "n_scored": len(scored),
        "n_unscored": len(rows) - len(scored),
        "correlations": correlations,
        "table4": table4,
        "gold_bins": bins,
    }


def judge_check_plan(config: JudgeConfig) -> QAPlan:
    """Calls and cost of judging the 390 responses with ``config`` (before any request)."""
    return plan_items(load_check_items()[0], config)


def run_judge_check(
    config: JudgeConfig, judge: Judge | None = None, plan: QAPlan | None = None
) -> dict[str, Any]:
    """Judge the 390 responses with ``config`` and analyse against the human scores.

    Args:
        config: The judge.
        judge: An existing judge to reuse (else one is built here).
        plan: The plan the command printed before the run (:func:`judge_check_plan`),
            kept in the usage; planned here when not given.
    """
    items, scores, systems = load_check_items()
    run: JudgeRun = judge_items(items, config, judge=judge, desc="judge-check")
    if config.is_llm:
        run.usage["plan"] = (plan or plan_items(items, config)).to_dict()
    rows = [
        CheckRow(
            system=system,
            meeting_id=item.meeting_id,
            question_id=item.question_id,
            judge=j.score,
            status=j.status,
            gpt4=s["gpt4"],
            prometheus=s["prometheus"],
            gold_human=s["gold_human"],
            silver_human=s["silver_human"],
        )
        for item, s, system, j in zip(items, scores, systems, run.judgements, strict=True)
    ]
    report = analyse(rows)
    report["judge"] = run.identity
    report["usage"] = run.usage
    report["summary"] = run.summary
    report["items"] = [
        {
            "system": r.system,
            "meeting_id": r.meeting_id,
            "question_id": r.question_id,
            "judge": r.judge,
            "status": r.status,
            "gold_human": r.gold_human,
            "silver_human": r.silver_human,
        }
        for r in rows
    ]
    return report


def format_report(report: dict[str, Any]) -> str:
    """Plain-text rendering: correlations, Table 4 layout, Fig. 2a bins."""
    lines = [
        f"judge-check: {report['judge'].get('backend')}:{report['judge'].get('model')} "
        f"rubric={report['judge'].get('rubric')}  n={report['n']} scored={report['n_scored']} "
        f"unscored={report['n_unscored']}"
    ]
    lines.append("correlations (Pearson / Spearman, n):")
    for name, c in report["correlations"].items():
        a, b = name.split("~")
        lines.append(
            f"  {_LABELS[a]:>12} vs {_LABELS[b]:<12} "
            f"{fixed(c['pearson'])} / {fixed(c['spearman'])}  n={c['n']}"
        )
    lines.append("per-system means (Table 4 layout):")
    header = f"  {'Model':<16}" + "".join(f"{_LABELS[e]:>14}" for e in EVALUATORS)
    lines.append(header)
    for system, row in report["table4"].items():
        lines.append(f"  {system:<16}" + "".join(f"{fixed(row[e]):>14}" for e in EVALUATORS))
    lines.append("judge score by gold-human bin (Fig. 2a: mean [95% CI], N):")
    for level, b in report["gold_bins"].items():
        j = b["judge"]
        lines.append(
            f"  gold={level:>2}  N={b['n']:>3}  judge {fixed(j['mean'])} "
            f"[{fixed(j['ci_low'])}, {fixed(j['ci_high'])}]  "
            f"silver {fixed(b['silver_human']['mean'])}"
        )
    usage = report.get("usage", {})
    lines.append(
        f"usage: {usage_line(usage)}, estimated_cost_usd={usage.get('estimated_cost_usd', 0.0)}"
    )
    return "\n".join(lines)
