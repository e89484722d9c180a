"""Agreement between judges and with the human scores (paper Sec. 6.2, Table 4, Fig. 2).

Scores are pooled per *evaluator* over *items*, an item being one response to one
question ``(setting, split, mode, meeting, question, response hash)``. Evaluators come
from ``elitr-bench judge-check --output`` files (the judge, plus the released GPT-4,
Prometheus, gold-human and silver-human scores of the same 390 responses) and from runs
whose samples were scored by different judges (e.g. a run and its ``elitr-bench score``
re-judging).

Evaluators rarely score the same items: a replayed run's judge covers every answer of the
run, the humans only the 390 single-turn test answers. Comparing a mean over one set of
items with a mean over another says nothing about the evaluators, so every table and
figure here is computed on one :class:`Panel`: the items scored by *every* evaluator in
it, and the table says how many. An evaluator that would shrink the panel to a small
part of the reference's items is left out of it, named in a note, and still appears in
the pairwise-complete correlation table (each pair on the items both scored, n per cell).
An evaluator whose scores repeat another's on every item (the ``replay`` judge *is* the
released GPT-4 judge) is shown once.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elitr_bench.markdown import fixed
from elitr_bench.metaeval.stats import correlations, mean_t_interval
from elitr_bench.report.errors import ReportError
from elitr_bench.report.runs import TaskRun, judge_id, response_hash
from elitr_bench.report.tables import Table

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
    """Scores per evaluator per item, where each evaluator came from, and whose answer each item is.

    Attributes:
        scores: ``{evaluator: {item: score}}``.
        sources: Where each evaluator's scores were read.
        rows: The system or model that wrote each item's answer (Table 4's rows).
        merged: Evaluators dropped as exact repeats of another, ``{dropped: kept}``.
    """

    scores: dict[str, dict[ItemKey, float]]
    sources: dict[str, str]
    rows: dict[ItemKey, str] = field(default_factory=dict)
    merged: dict[str, str] = field(default_factory=dict)

    def add(self, evaluator: str, item: ItemKey, score: float, source: str, row: str = "") -> None:
        """Record a score (first one wins if an evaluator scored an item twice)."""
        self.scores.setdefault(evaluator, {}).setdefault(item, score)
        self.sources.setdefault(evaluator, source)
        if row:
            self.rows.setdefault(item, row)


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
                data.add(label, key, float(item["judge"]), f"judge-check {path}", rel.system)
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
            data.add(
                s.judge.label,
                key,
                s.scores["judge_score"],
                f"runs ({s.judge.label})",
                run.model.label,
            )
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
    merge_duplicates(data)
    if len(data.scores) < 2:
        return None
    return data


_FIXED = (RELEASED_GPT4, RELEASED_PROMETHEUS, GOLD, SILVER)


def _order(data: AgreementData) -> list[str]:
    judges = sorted(e for e in data.scores if e not in _FIXED)
    return judges + [e for e in _FIXED if e in data.scores]


def merge_duplicates(data: AgreementData) -> None:
    """Drop each evaluator whose scores repeat another evaluator's on every item it scored.

    The ``replay`` judge returns the released GPT-4 (or Prometheus) scores, so next to the
    released evaluator it would be a second, identical series in every table and figure.
    The released evaluator is kept (it covers at least the same items); the dropped one is
    recorded in :attr:`AgreementData.merged` so the report can say so.
    """
    for name in [e for e in _order(data) if e not in _FIXED]:
        mine = data.scores[name]
        candidates = [e for e in _FIXED if e in data.scores] + [
            e for e in _order(data) if e not in _FIXED and e != name
        ]
        for other in candidates:
            theirs = data.scores[other]
            if mine and all(k in theirs and theirs[k] == v for k, v in mine.items()):
                data.merged[name] = other
                del data.scores[name]
                break


@dataclass(frozen=True)
class Panel:
    """The evaluators compared together and the items every one of them scored.

    Attributes:
        reference: Evaluator whose score bins Fig. 2a (Gold Human by default).
        evaluators: Evaluators in the panel, in report order (reference included).
        items: Items scored by every evaluator of the panel.
        left_out: ``(evaluator, items shared with the reference)`` for evaluators left out
            because they scored too few of the reference's items.
    """

    reference: str
    evaluators: tuple[str, ...]
    items: tuple[ItemKey, ...]
    left_out: tuple[tuple[str, int], ...] = ()

    @property
    def others(self) -> list[str]:
        """The evaluators other than the reference."""
        return [e for e in self.evaluators if e != self.reference]

    def values(self, data: AgreementData, evaluator: str) -> list[float]:
        """The evaluator's scores of the panel items, in item order."""
        return [data.scores[evaluator][k] for k in self.items]


#: An evaluator joins the panel if it scored at least this share of the reference items
#: that the best-covering other evaluator scored; fewer would shrink every table to a
#: sliver of the data (a judge re-scoring one run next to 390 human-scored answers).
MIN_COVERAGE = 0.5


def choose_panel(data: AgreementData, reference: str) -> Panel:
    """The evaluators to compare on common items, and those items."""
    ref_items = set(data.scores[reference])
    shared = {e: len(ref_items & set(data.scores[e])) for e in _order(data) if e != reference}
    best = max(shared.values(), default=0)
    keep = [
        e
        for e in _order(data)
        if e == reference or (shared[e] >= 3 and shared[e] >= MIN_COVERAGE * best)
    ]
    items = set.intersection(*(set(data.scores[e]) for e in keep))
    return Panel(
        reference=reference,
        evaluators=tuple(keep),
        items=tuple(sorted(items)),
        left_out=tuple((e, n) for e, n in shared.items() if e not in keep),
    )


def panel_notes(data: AgreementData, panel: Panel) -> list[str]:
    """Sentences on what the panel holds, what was merged, and what was left out."""
    notes = [
        f"Every table and figure of this section compares the evaluators on the same "
        f"{len(panel.items)} items (answers scored by all of: {', '.join(panel.evaluators)})."
    ]
    for dropped, kept in data.merged.items():
        notes.append(
            f"{dropped} gave exactly the scores of {kept} on every item it scored (the replay "
            f"judge returns the released scores), so it is shown once, as {kept}."
        )
    for name, n in panel.left_out:
        notes.append(
            f"{name} scored only {n} of {panel.reference}'s {len(data.scores[panel.reference])} "
            "items, so it is left out of the common-item tables; it appears in the "
            "pairwise-complete correlation table."
        )
    return notes


def correlation_tables(data: AgreementData, panel: Panel) -> list[Table]:
    """Pearson and Spearman matrices (Fig. 2b) on the panel's common items."""
    names = list(panel.evaluators)
    matrices: dict[str, list[tuple[str, ...]]] = {"pearson": [], "spearman": []}
    records = []
    n = len(panel.items)
    for a in names:
        prow, srow = [a], [a]
        for b in names:
            corr = correlations(panel.values(data, a), panel.values(data, b))
            p, s = corr.pearson, corr.spearman
            prow.append(fixed(p))
            srow.append(fixed(s))
            records.append({"a": a, "b": b, "pearson": p, "spearman": s, "n": n})
        matrices["pearson"].append(tuple(prow))
        matrices["spearman"].append(tuple(srow))
    tables = []
    for kind, title in (("pearson", "Pearson"), ("spearman", "Spearman")):
        tables.append(
            Table(
                key=f"agreement_{kind}",
                title=f"Judge agreement (Fig. 2b): {title} correlation, N = {n} common items",
                columns=("Evaluator", *names),
                rows=tuple(matrices[kind]),
                records=tuple(records) if kind == "pearson" else (),
                notes=(f"Every cell uses the same {n} items, scored by all evaluators shown.",),
            )
        )
    return tables


def pairwise_table(data: AgreementData, panel: Panel) -> Table | None:
    """Pearson on each pair's own shared items, when that adds pairs or items to the panel.

    None when every pair shares exactly the panel's items (nothing to add).
    """
    names = _order(data)
    n = len(panel.items)
    shared = {
        (a, b): sorted(set(data.scores[a]) & set(data.scores[b]))
        for a in names
        for b in names
        if a != b
    }
    if all(len(common) == n for common in shared.values()):
        return None
    rows, records = [], []
    for a in names:
        cells = [a]
        for b in names:
            if a == b:
                cells.append("")
                continue
            common = shared[(a, b)]
            xs = [data.scores[a][k] for k in common]
            ys = [data.scores[b][k] for k in common]
            p = correlations(xs, ys).pearson
            cells.append(f"{fixed(p)} (n={len(common)})")
            records.append({"a": a, "b": b, "pearson": p, "n": len(common)})
        rows.append(tuple(cells))
    return Table(
        key="agreement_pearson_pairwise",
        title="Pearson correlation, pairwise-complete (each pair on the items both scored)",
        columns=("Evaluator", *names),
        rows=tuple(rows),
        records=tuple(records),
        notes=(
            "Cells differ in their items (n per cell): compare a cell with the common-item "
            "table above only when its n matches.",
        ),
    )


def pick_reference(data: AgreementData, wanted: str | None) -> str:
    """The reference evaluator for binning: ``wanted`` (substring match) or Gold Human.

    Raises:
        ReportError: ``wanted`` matches no evaluator.
    """
    names = _order(data)
    if wanted:
        hits = [n for n in names if wanted.lower() in n.lower()]
        if not hits:
            merged = [k for k, v in data.merged.items() if wanted.lower() in k.lower()]
            if merged:
                return data.merged[merged[0]]
            raise ReportError(
                f"--reference {wanted!r}: no such evaluator; choose one of {', '.join(names)}"
            )
        return hits[0]
    return GOLD if GOLD in data.scores else names[0]


def score_bin(score: float) -> int:
    """The 1-10 bin of a (possibly fractional) score: nearest integer, halves rounded up."""
    return min(10, max(1, math.floor(score + 0.5)))


def bin_tables(data: AgreementData, panel: Panel) -> tuple[list[Table], dict[str, Any]]:
    """Fig. 2a: other evaluators' mean [95% CI] per reference score bin; cluster shares.

    Returns:
        The tables and the plotted data ``{"bins": {bin: n}, "series": {evaluator: {bin:
        {"mean", "low", "high", "n"}}}}``.
    """
    ref = data.scores[panel.reference]
    bins: dict[int, list[ItemKey]] = defaultdict(list)
    for key in panel.items:
        bins[score_bin(ref[key])].append(key)
    dist, series = _bin_table(data, panel, bins)
    tables = [dist, _cluster_shares(data, panel), _reference_clusters(data, panel)]
    plot = {"bins": {level: len(bins.get(level, [])) for level in range(1, 11)}, "series": series}
    return tables, plot


def _bin_table(
    data: AgreementData, panel: Panel, bins: Mapping[int, list[ItemKey]]
) -> tuple[Table, dict[str, dict[int, dict[str, Any]]]]:
    """Fig. 2a's table: each other evaluator's mean [95% CI] per reference bin; its series."""
    reference = panel.reference
    others = panel.others
    n_all = len(panel.items)
    rows, records = [], []
    series: dict[str, dict[int, dict[str, Any]]] = {e: {} for e in others}
    for level in range(1, 11):
        members = bins.get(level, [])
        cells = [str(level), str(len(members))]
        for e in others:
            vals = [data.scores[e][k] for k in members]
            iv = mean_t_interval(vals)
            mean = iv.estimate if vals else None
            cells.append(f"{fixed(mean)} [{fixed(iv.low)}, {fixed(iv.high)}]" if vals else "-")
            series[e][level] = {"mean": mean, "low": iv.low, "high": iv.high, "n": iv.n}
            records.append(
                {
                    "reference": reference,
                    "bin": level,
                    "evaluator": e,
                    "n": iv.n,
                    "mean": mean,
                    "ci_low": iv.low,
                    "ci_high": iv.high,
                }
            )
        rows.append(tuple(cells))
    dist = Table(
        key="agreement_bins",
        title=f"Score distribution per {reference} score bin (Fig. 2a), N = {n_all} items",
        columns=("Bin", "N", *others),
        rows=tuple(rows),
        records=tuple(records),
        notes=(
            "Cells: mean [95% t CI] of the evaluator's scores of the bin's N items; every "
            f"evaluator scored all {n_all} items.",
        ),
    )
    return dist, series


def _cluster_shares(data: AgreementData, panel: Panel) -> Table:
    """Each evaluator's share of scores in the paper's three clusters."""
    n_all = len(panel.items)
    share_rows, share_records = [], []
    for e in panel.evaluators:
        vals = panel.values(data, e)
        counts = {name: sum(cluster_of(v) == name for v in vals) for name, _, _ in CLUSTERS}
        share_rows.append(
            (e, str(len(vals)), *(f"{100 * counts[c] / len(vals):.1f}%" for c, _, _ in CLUSTERS))
        )
        share_records.append(
            {"evaluator": e, "n": len(vals), **{c: counts[c] / len(vals) for c in counts}}
        )
    return Table(
        key="agreement_clusters",
        title=(
            f"Share of scores in the paper's clusters [1-2], [3-5], [6-10], N = {n_all} "
            "common items"
        ),
        columns=("Evaluator", "N", *(c for c, _, _ in CLUSTERS)),
        rows=tuple(share_rows),
        records=tuple(share_records),
        notes=(
            f"Every row counts the same {n_all} items. Fractional scores (averages, k "
            "samples) are assigned with edges 2.5 and 5.5.",
        ),
    )


def _reference_clusters(data: AgreementData, panel: Panel) -> Table:
    """Each other evaluator's mean score within the reference evaluator's clusters."""
    reference = panel.reference
    ref = data.scores[reference]
    others = panel.others
    n_all = len(panel.items)
    by_cluster_rows, by_cluster_records = [], []
    for name, _, _ in CLUSTERS:
        members = [k for k in panel.items if cluster_of(ref[k]) == name]
        cells = [name, str(len(members))]
        for e in others:
            vals = [data.scores[e][k] for k in members]
            mean = math.fsum(vals) / len(vals) if vals else None
            cells.append(fixed(mean))
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
    return Table(
        key="agreement_reference_clusters",
        title=f"Mean score of each evaluator within {reference}'s clusters, N = {n_all} items",
        columns=(f"{reference} cluster", "N", *others),
        rows=tuple(by_cluster_rows),
        records=tuple(by_cluster_records),
        notes=("Cells: mean over the cluster's N items (scored by every evaluator).",),
    )


# ------------------------------------------------------------------ Table 4
#: Paper Table 4 (qa, test, single-turn, one seeded run): mean score per system and evaluator.
PAPER_TABLE4: dict[str, dict[str, float]] = {
    "GPT-4": {RELEASED_GPT4: 8.33, RELEASED_PROMETHEUS: 5.68, GOLD: 7.93, SILVER: 7.21},
    "Vicuna-13B-v1.5": {RELEASED_GPT4: 6.69, RELEASED_PROMETHEUS: 4.80, GOLD: 6.19, SILVER: 5.80},
    "LongAlpaca-7B": {RELEASED_GPT4: 5.57, RELEASED_PROMETHEUS: 4.46, GOLD: 4.55, SILVER: 4.72},
}
#: Pearson correlations the paper states for Fig. 2b (Sec. 6.2 text; the figure itself is
#: an image). Prometheus is only described as "between 0.2 and 0.3" with all the others.
PAPER_FIG2B: dict[tuple[str, str], float] = {
    (RELEASED_GPT4, GOLD): 0.82,
    (RELEASED_GPT4, SILVER): 0.78,
    (GOLD, SILVER): 0.89,
}
PAPER_PROMETHEUS_RANGE = (0.2, 0.3)
#: Row order of Table 4, then other systems alphabetically.
TABLE4_ORDER = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")
_PAPER_ITEMS = ("qa", "test2", "st")
_SETTING_TITLES = {("qa", "st"): "Single-turn QA", ("qa", "mt"): "Multi-turn QA"}


def table4(data: AgreementData, panel: Panel) -> Table | None:
    """Table 4: mean score per system (rows) and evaluator (columns) on the panel's items.

    A row is the system or model that wrote the answers, split by setting when the panel
    holds several (the paper's Table 4 is single-turn QA, test, only).
    """
    groups: dict[tuple[str, str, str, str], list[ItemKey]] = defaultdict(list)
    for key in panel.items:
        groups[(data.rows.get(key, "?"), key[0], key[2], key[1])].append(key)
    if not groups:
        return None
    combos = {g[1:] for g in groups}
    rank = {name: i for i, name in enumerate(TABLE4_ORDER)}
    rows, records = [], []
    for group in sorted(groups, key=lambda g: (rank.get(g[0], len(rank)), g)):
        system, setting, mode, split = group
        members = groups[group]
        label = system
        if len(combos) > 1:
            title = _SETTING_TITLES.get((setting, mode), f"{setting}/{mode}")
            label += f" ({title}, {'test' if split == 'test2' else split})"
        cells = [label, str(len(members))]
        for e in panel.evaluators:
            mean = math.fsum(data.scores[e][k] for k in members) / len(members)
            cells.append(fixed(mean))
            records.append(
                {
                    "system": system,
                    "setting": setting,
                    "mode": mode,
                    "split": split,
                    "evaluator": e,
                    "n": len(members),
                    "mean": mean,
                    "paper": PAPER_TABLE4.get(system, {}).get(e)
                    if (setting, split, mode) == _PAPER_ITEMS
                    else None,
                }
            )
        rows.append(tuple(cells))
    return Table(
        key="table4",
        title=f"Table 4 layout: mean score per system and evaluator, N = {len(panel.items)} items",
        columns=("Model", "N", *panel.evaluators),
        rows=tuple(rows),
        records=tuple(records),
        notes=(
            "Scores 1-10 (Prometheus' 1-5 scores x2, as in the paper). Each row's evaluators "
            "scored the same N answers.",
        ),
    )


def paper_comparison(t4: Table | None, pearson: Table) -> Table | None:
    """Our Table 4 and Fig. 2b numbers next to the printed ones, with the differences.

    Only when the panel holds the paper's items: the 130 single-turn QA test answers of
    each of the paper's three systems. None otherwise.
    """
    if t4 is None:
        return None
    ours = {
        (r["system"], r["evaluator"]): r
        for r in t4.records
        if (r["setting"], r["split"], r["mode"]) == _PAPER_ITEMS
    }
    paper_rows = [
        (system, e, value)
        for system, by_e in PAPER_TABLE4.items()
        for e, value in by_e.items()
        if (system, e) in ours and ours[(system, e)]["n"] == 130
    ]
    if not paper_rows:
        return None
    rows, records = [], []

    def add(what: str, value: float | None, printed: str, ok: bool, diff: float | None) -> None:
        verdict = "same" if ok else "DIFFERS"
        rows.append((what, fixed(value), printed, fixed(diff, 3), verdict))
        records.append(
            {"quantity": what, "ours": value, "paper": printed, "difference": diff, "same": ok}
        )

    for system, e, printed in paper_rows:
        value = ours[(system, e)]["mean"]
        diff = value - printed
        add(f"Table 4: {system}, {e}", value, fixed(printed), round(value, 2) == printed, diff)
    corr = {(r["a"], r["b"]): r["pearson"] for r in pearson.records}
    for (a, b), printed in PAPER_FIG2B.items():
        if (a, b) in corr and corr[(a, b)] is not None:
            value = corr[(a, b)]
            add(
                f"Fig. 2b: Pearson {a} ~ {b}",
                value,
                fixed(printed),
                round(value, 2) == printed,
                value - printed,
            )
    low, high = PAPER_PROMETHEUS_RANGE
    for e in (RELEASED_GPT4, GOLD, SILVER):
        value = corr.get((RELEASED_PROMETHEUS, e))
        if value is not None:
            ok = low <= round(value, 2) <= high
            add(
                f"Fig. 2b: Pearson {RELEASED_PROMETHEUS} ~ {e}",
                value,
                f"{low}-{high} (text)",
                ok,
                None,
            )
    return Table(
        key="paper_table4_fig2b",
        title="Table 4 and Fig. 2b: computed from the released scores vs printed in the paper",
        columns=("Quantity", "Ours", "Paper", "Ours - paper", "Rounded equal"),
        rows=tuple(rows),
        records=tuple(records),
        notes=(
            "Paper values: Table 4, and the Pearson correlations quoted in Sec. 6.2 (Fig. 2b "
            "is an image; Prometheus is only described as 'between 0.2 and 0.3').",
            "A mean over 130 answers moves in steps of 1/130 = 0.0077: a difference below "
            "that is one score point on one answer (e.g. 869/130 = 6.68 vs 870/130 = 6.69).",
        ),
    )
