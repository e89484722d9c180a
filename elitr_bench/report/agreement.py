"""Agreement between judges and with the human scores (paper Sec. 6.2, Fig. 2).

Scores are pooled per *evaluator* over *items*, an item being one response to one
question ``(setting, split, mode, meeting, question, response hash)``. Evaluators come
from ``elitr-bench judge-check --output`` files (the judge, plus the released GPT-4,
Prometheus, gold-human and silver-human scores of the same 390 responses) and from runs
whose samples were scored by different judges (e.g. a run and its ``elitr-bench score``
re-judging). Correlations are pairwise-complete: each pair uses the items both scored.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elitr_bench.report.errors import ReportError
from elitr_bench.report.runs import TaskRun, judge_id, response_hash
from elitr_bench.report.stats import correlation, mean_t_interval
from elitr_bench.report.tables import Table, fmt

#: (setting, split, mode, meeting, question, system, response hash); system is the
#: released system name when known (judge-check items, replayed runs), else "".
ItemKey = tuple[str, str, str, str, str, str, str]

GOLD = "Gold Human"
SILVER = "Silver Human"
RELEASED_GPT4 = "GPT-4 judge (released)"
RELEASED_PROMETHEUS = "Prometheus (released)"
_RELEASED_KEYS = {
    "gpt4": RELEASED_GPT4,
    "prometheus": RELEASED_PROMETHEUS,
    "gold_human": GOLD,
    "silver_human": SILVER,
}
#: The three levels the paper's GPT-4 judge separates (Sec. 6.2): [1,2], [3,5], [6,10].
CLUSTERS: tuple[tuple[str, float, float], ...] = (
    ("[1-2]", -math.inf, 2.5),
    ("[3-5]", 2.5, 5.5),
    ("[6-10]", 5.5, math.inf),
)


def cluster_of(score: float) -> str:
    """The paper's score cluster of a (possibly fractional) score; edges at 2.5 and 5.5."""
    for name, low, high in CLUSTERS:
        if low <= score < high:
            return name
    return CLUSTERS[-1][0]


@dataclass
class AgreementData:
    """Scores per evaluator per item, and where each evaluator came from."""

    scores: dict[str, dict[ItemKey, float]]
    sources: dict[str, str]

    def add(self, evaluator: str, item: ItemKey, score: float, source: str) -> None:
        """Record a score (first one wins if an evaluator scored an item twice)."""
        self.scores.setdefault(evaluator, {}).setdefault(item, score)
        self.sources.setdefault(evaluator, source)


def load_judge_check(path: Path) -> dict[str, Any]:
    """Read an ``elitr-bench judge-check --output`` file.

    Raises:
        ReportError: The file is missing, not JSON, or lacks ``judge``/``items``.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(f"--judge-check {path}: unreadable ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("items"), list) or "judge" not in data:
        raise ReportError(
            f"--judge-check {path}: not a judge-check report (needs 'judge' and 'items'); "
            "write one with `elitr-bench judge-check --output FILE`"
        )
    return data


def _released_index() -> dict[tuple[str, str, str], Any]:
    from elitr_bench.data import load_released_responses

    return {
        (r.system, r.meeting_id, r.question_id): r
        for r in load_released_responses("qa", "test2", "st", "all-eval")
    }


def _released_by_text() -> dict[tuple[str, ...], dict[str, dict[str, float]]]:
    """Released scores per (setting, split, mode, meeting, question, response hash), by system.

    A few answers were released verbatim by two systems (with different scores), so the
    system is kept and used to disambiguate.
    """
    from elitr_bench.data import RELEASED_FILES, load_released_responses

    out: dict[tuple[str, ...], dict[str, dict[str, float]]] = defaultdict(dict)
    for setting, split, mode, source in RELEASED_FILES:
        for r in load_released_responses(setting, split, mode, source):
            key = (setting, split, mode, r.meeting_id, r.question_id, response_hash(r.response))
            out[key].setdefault(r.system, {}).update(r.scores)
    return out


def _released_scores(
    released: Mapping[tuple[str, ...], Mapping[str, Mapping[str, float]]], item: ItemKey
) -> Mapping[str, float]:
    by_system = released.get(item[:5] + item[6:], {})
    if item[5]:
        return by_system.get(item[5], {})
    candidates = list(by_system.values())
    if len(candidates) == 1 or all(c == candidates[0] for c in candidates):
        return candidates[0] if candidates else {}
    return {}  # same text released by several systems with different scores: ambiguous


def collect(
    runs: Sequence[TaskRun], judge_checks: Sequence[Path], with_released: bool = True
) -> AgreementData | None:
    """Pool judge-check files and multi-judge runs; None when there is nothing to compare.

    Runs contribute only when at least two judges scored the same items, or when a
    judge-check file is given, or when a non-replay judge scored released responses
    (then the released GPT-4 and human scores of those responses join in).
    """
    data = AgreementData(scores={}, sources={})
    released_idx = _released_index() if judge_checks else {}
    for path in judge_checks:
        report = load_judge_check(path)
        label = judge_id(report.get("judge")).label
        if label in data.scores:
            label = f"{label} ({Path(path).name})"
        for item in report["items"]:
            rel = released_idx.get(
                (str(item.get("system")), str(item.get("meeting_id")), str(item.get("question_id")))
            )
            if rel is None:
                continue
            key = (
                "qa",
                "test2",
                "st",
                rel.meeting_id,
                rel.question_id,
                rel.system,
                response_hash(rel.response),
            )
            if item.get("judge") is not None:
                data.add(label, key, float(item["judge"]), f"judge-check {path}")
    run_judges: dict[str, str] = {}
    for run in runs:
        system = run.model.label if run.model.model == "elitr-replay" else ""
        for s in run.samples:
            if s.judge is None or "judge_score" not in s.scores:
                continue
            key = (
                s.setting,
                s.split,
                s.mode,
                s.meeting_id,
                s.question_id,
                system,
                response_hash(s.response),
            )
            run_judges.setdefault(s.judge.label, s.judge.identity.get("backend", ""))
            data.add(s.judge.label, key, s.scores["judge_score"], f"runs ({s.judge.label})")
    items_of = {e: set(v) for e, v in data.scores.items()}
    shared = any(len(items_of[a] & items_of[b]) >= 3 for a in items_of for b in items_of if a < b)
    non_replay = any(b != "replay" for b in run_judges.values())
    if not (judge_checks or shared or non_replay):
        return None
    if with_released:
        released = _released_by_text()
        all_items: set[ItemKey] = set().union(*items_of.values()) if items_of else set()
        for key in all_items:
            for name, score in _released_scores(released, key).items():
                if name in _RELEASED_KEYS:
                    data.add(_RELEASED_KEYS[name], key, float(score), "released ELITR-Bench files")
    if len(data.scores) < 2:
        return None
    return data


def _order(data: AgreementData) -> list[str]:
    fixed = [RELEASED_GPT4, RELEASED_PROMETHEUS, GOLD, SILVER]
    judges = sorted(e for e in data.scores if e not in fixed)
    return judges + [e for e in fixed if e in data.scores]


def correlation_tables(data: AgreementData) -> list[Table]:
    """Pearson and Spearman matrices (Fig. 2b) with the pair sizes."""
    names = _order(data)
    matrices: dict[str, list[tuple[str, ...]]] = {"pearson": [], "spearman": []}
    records = []
    for a in names:
        prow, srow = [a], [a]
        for b in names:
            common = sorted(set(data.scores[a]) & set(data.scores[b]))
            xs = [data.scores[a][k] for k in common]
            ys = [data.scores[b][k] for k in common]
            p, s = correlation(xs, ys)
            prow.append(f"{fmt(p)} ({len(common)})")
            srow.append(f"{fmt(s)} ({len(common)})")
            records.append({"a": a, "b": b, "pearson": p, "spearman": s, "n": len(common)})
        matrices["pearson"].append(tuple(prow))
        matrices["spearman"].append(tuple(srow))
    tables = []
    for kind, title in (("pearson", "Pearson"), ("spearman", "Spearman")):
        tables.append(
            Table(
                key=f"agreement_{kind}",
                title=f"Judge agreement (Fig. 2b): {title} correlation (n items)",
                columns=("Evaluator", *names),
                rows=tuple(matrices[kind]),
                records=tuple(records) if kind == "pearson" else (),
                notes=("Pairwise-complete: each cell uses the items both evaluators scored.",),
            )
        )
    return tables


def pick_reference(data: AgreementData, wanted: str | None) -> str:
    """The reference evaluator for binning: ``wanted`` (substring match) or Gold Human.

    Raises:
        ReportError: ``wanted`` matches no evaluator.
    """
    names = _order(data)
    if wanted:
        hits = [n for n in names if wanted.lower() in n.lower()]
        if not hits:
            raise ReportError(
                f"--reference {wanted!r}: no such evaluator; choose one of {', '.join(names)}"
            )
        return hits[0]
    return GOLD if GOLD in data.scores else names[0]


def bin_tables(data: AgreementData, reference: str) -> tuple[list[Table], dict[str, Any]]:
    """Fig. 2a: other evaluators' mean [95% CI] per reference score bin; cluster shares.

    Returns:
        The tables and the plotted data ``{evaluator: {bin: Interval-like dict}}``.
    """
    ref = data.scores[reference]
    others = [e for e in _order(data) if e != reference]
    bins: dict[int, list[ItemKey]] = defaultdict(list)
    for key, score in ref.items():
        bins[min(10, max(1, math.floor(score + 0.5)))].append(key)
    rows, records = [], []
    plot: dict[str, Any] = {e: {} for e in others}
    for level in range(1, 11):
        members = bins.get(level, [])
        cells = [str(level), str(len(members))]
        for e in others:
            vals = [data.scores[e][k] for k in members if k in data.scores[e]]
            iv = mean_t_interval(vals)
            cells.append(
                f"{fmt(iv.estimate)} [{fmt(iv.low)}, {fmt(iv.high)}] ({iv.n})" if vals else "-"
            )
            plot[e][level] = {
                "mean": iv.estimate if vals else None,
                "low": iv.low,
                "high": iv.high,
                "n": iv.n,
            }
            records.append(
                {
                    "reference": reference,
                    "bin": level,
                    "evaluator": e,
                    "n": iv.n,
                    "mean": iv.estimate if vals else None,
                    "ci_low": iv.low,
                    "ci_high": iv.high,
                }
            )
        rows.append(tuple(cells))
    dist = Table(
        key="agreement_bins",
        title=f"Score distribution per {reference} score bin (Fig. 2a)",
        columns=("Bin", "N", *others),
        rows=tuple(rows),
        records=tuple(records),
        notes=("Cells: mean [95% t CI] (n items scored by that evaluator in the bin).",),
    )
    share_rows, share_records = [], []
    for e in _order(data):
        vals = list(data.scores[e].values())
        counts = {name: sum(cluster_of(v) == name for v in vals) for name, _, _ in CLUSTERS}
        share_rows.append(
            (e, str(len(vals)), *(f"{100 * counts[c] / len(vals):.1f}%" for c, _, _ in CLUSTERS))
        )
        share_records.append(
            {"evaluator": e, "n": len(vals), **{c: counts[c] / len(vals) for c in counts}}
        )
    shares = Table(
        key="agreement_clusters",
        title="Share of scores in the paper's clusters [1-2], [3-5], [6-10]",
        columns=("Evaluator", "N", *(c for c, _, _ in CLUSTERS)),
        rows=tuple(share_rows),
        records=tuple(share_records),
        notes=("Fractional scores (averages, k samples) are assigned with edges 2.5 and 5.5.",),
    )
    by_cluster_rows, by_cluster_records = [], []
    for name, _, _ in CLUSTERS:
        members = [k for k, s in ref.items() if cluster_of(s) == name]
        cells = [name, str(len(members))]
        for e in others:
            vals = [data.scores[e][k] for k in members if k in data.scores[e]]
            mean = math.fsum(vals) / len(vals) if vals else None
            cells.append(f"{fmt(mean)} ({len(vals)})")
            by_cluster_records.append(
                {
                    "reference": reference,
                    "cluster": name,
                    "evaluator": e,
                    "n": len(vals),
                    "mean": mean,
                }
            )
        by_cluster_rows.append(tuple(cells))
    by_cluster = Table(
        key="agreement_reference_clusters",
        title=f"Mean score of each evaluator within {reference}'s clusters",
        columns=(f"{reference} cluster", "N", *others),
        rows=tuple(by_cluster_rows),
        records=tuple(by_cluster_records),
    )
    return [dist, shares, by_cluster], plot
