"""Meta-evaluation of minutes metrics and judges against AutoMin 2023's human scores.

Everything here is a pure function of in-memory values (the command module reads the
inputs and writes the outputs), so the statistics are testable on toy data.

Definitions:

* **System level**: a system's metric score is its mean over the meetings where the metric
  has a value (AutoMin Sec. 7.1: "averaging scores from all meetings"); its human score is
  the release's per-system mean: document level, the mean over the judged meetings;
  hunk level, the mean over all judged hunks (the release pools hunks, so per-meeting
  hunk means are weighted by their hunk counts). This reproduces the released overall TSVs
  to their 2-decimal rounding.
* **Pairwise accuracy** (Kocmi et al. 2021, AutoMin Eq. 5): the share of system pairs whose
  metric difference has the same sign as the human difference. A tie (difference exactly
  0) is its own sign, so a metric tie agrees only with a human tie; ties are counted and
  shown.
* **Document level**: one point per (meeting, system) with both a metric value and a human
  value (the document score, or that document's mean hunk score).
* Pearson, Spearman and Kendall (tau-b) from scipy; None with fewer than 3 points or a
  constant side.
* **Column bound**: for two human columns A and B over the same system pairs, a metric agrees
  with A and with B on every pair that A and B order alike (or with neither), so its two
  pairwise accuracies differ by at most (pairs that A and B order differently) / pairs.
  Printed accuracies that differ by more cannot come from one metric (:func:`column_bounds`,
  :func:`bound_violations`).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from elitr_bench.data.records import HumanScores
from elitr_bench.judges.summary.base import lower_is_better
from elitr_bench.metaeval import stats
from elitr_bench.metaeval.minutes_paper import HUMAN_COLUMNS

#: metric -> (system, meeting_id) -> value; meeting "" = a system-level value.
MetricValues = Mapping[str, Mapping[tuple[str, str], float]]

#: Derived metrics: name -> components averaged per document (Table 9's "avg" rows).
DERIVED: Mapping[str, tuple[str, ...]] = {
    "art_avg": ("art_adequacy", "art_relevance", "art_topicality"),
    "afgr_avg": ("afgr_adequacy", "afgr_fluency", "afgr_grammaticality", "afgr_relevance"),
}


def add_derived(values: MetricValues) -> dict[str, dict[tuple[str, str], float]]:
    """Add ``art_avg`` / ``afgr_avg`` where every component has a value for a document."""
    out = {m: dict(v) for m, v in values.items()}
    for name, parts in DERIVED.items():
        if name in out or not all(p in out for p in parts):
            continue
        keys = set.intersection(*(set(out[p]) for p in parts))
        if keys:
            out[name] = {k: statistics.fmean(out[p][k] for p in parts) for k in keys}
    return out


def human_document_values(
    scores: Iterable[HumanScores], level: str, criterion: str
) -> dict[tuple[str, str], tuple[float, int]]:
    """(system, meeting) -> (value, weight) of one human column."""
    return {
        (s.system, s.meeting_id): (s.value, s.count)
        for s in scores
        if s.level == level and s.criterion == criterion
    }


def human_system_means(
    scores: Iterable[HumanScores], level: str, criterion: str
) -> dict[str, float]:
    """System -> human mean (documents averaged; hunks pooled by their counts)."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for (system, _), (value, count) in human_document_values(scores, level, criterion).items():
        weight = float(count) if level == "hunk" else 1.0
        sums[system][0] += value * weight
        sums[system][1] += weight
    return {s: total / n for s, (total, n) in sums.items() if n > 0}


def system_means(
    values: Mapping[tuple[str, str], float], meetings: Sequence[str] | None = None
) -> dict[str, float]:
    """System -> mean of its document values (or its system-level value if it has one)."""
    per: dict[str, list[float]] = defaultdict(list)
    system_level: dict[str, float] = {}
    for (system, meeting), value in values.items():
        if not math.isfinite(value):
            continue
        if meeting == "":
            system_level[system] = value
        elif meetings is None or meeting in meetings:
            per[system].append(value)
    out = {s: statistics.fmean(v) for s, v in per.items() if v}
    out.update(system_level)
    return out


def system_spread(
    values: Mapping[tuple[str, str], float], meetings: Sequence[str] | None = None
) -> dict[str, tuple[float, float, int]]:
    """System -> (mean, std, n) over its document values (Table 7 cells).

    The std is the population std (ddof=0), as AutoMin's tables use it: Table 5's GPT-4
    words, 551.1 ± 219.9, and NTR lines, 60.8 ± 24.6, come out of the released minutes
    only this way (the sample std gives 229.7 and 25.7).
    """
    per: dict[str, list[float]] = defaultdict(list)
    for (system, meeting), value in values.items():
        if meeting and math.isfinite(value) and (meetings is None or meeting in meetings):
            per[system].append(value)
    return {s: (statistics.fmean(v), statistics.pstdev(v), len(v)) for s, v in per.items() if v}


@dataclass(frozen=True)
class ColumnBound:
    """How far one metric's pairwise accuracies against two human columns can differ.

    Attributes:
        first: Label of the first human column (``D Adeq``).
        second: Label of the second one.
        disagree: System pairs that the two columns order differently (a tie is its own
            order).
        pairs: System pairs with both columns.
    """

    first: str
    second: str
    disagree: int
    pairs: int

    @property
    def points(self) -> float:
        """The bound in percentage points (``100 * disagree / pairs``)."""
        return 100.0 * self.disagree / self.pairs if self.pairs else 0.0


def column_bounds(human: Sequence[HumanScores], systems: Sequence[str]) -> list[ColumnBound]:
    """The bound of every pair of human columns over ``systems`` (see module doc).

    Args:
        human: Per-meeting human scores of the release.
        systems: The systems compared (Table 9: its seven).
    """
    means = {
        label: human_system_means(human, level, criterion)
        for level, criterion, label in HUMAN_COLUMNS
    }
    bounds = []
    for (first, one), (second, two) in itertools.combinations(means.items(), 2):
        usable = [s for s in systems if s in one and s in two]
        disagree = pairs = 0
        for a, b in itertools.combinations(usable, 2):
            pairs += 1
            disagree += not stats.same_order(one[a], one[b], two[a], two[b])
        bounds.append(ColumnBound(first, second, disagree, pairs))
    return bounds


@dataclass(frozen=True)
class BoundViolation:
    """Two accuracies of one metric that differ by more than their columns allow.

    Attributes:
        bound: The two columns and their bound.
        first: The accuracy (%) against ``bound.first``.
        second: The accuracy (%) against ``bound.second``.
    """

    bound: ColumnBound
    first: float
    second: float

    @property
    def gap(self) -> float:
        """``|first - second|`` in points."""
        return abs(self.first - self.second)


def bound_violations(
    accuracies: Mapping[str, float], bounds: Sequence[ColumnBound]
) -> list[BoundViolation]:
    """The column pairs whose accuracies (%, column label -> value) break their bound.

    Printed percentages are rounded to 0.1; they are compared as counts of agreeing pairs
    (``round(percent * pairs / 100)``), so rounding never makes a violation.
    """
    found = []
    for bound in bounds:
        one, two = accuracies.get(bound.first), accuracies.get(bound.second)
        if one is None or two is None or not bound.pairs:
            continue
        agree_one = round(one * bound.pairs / 100)
        agree_two = round(two * bound.pairs / 100)
        if abs(agree_one - agree_two) > bound.disagree:
            found.append(BoundViolation(bound, one, two))
    return found


def correlations(xs: Sequence[float], ys: Sequence[float]) -> dict[str, float | None]:
    """Pearson, Spearman and Kendall tau-b (None when undefined), as the tables read them."""
    corr = stats.correlations(xs, ys)
    return {
        "pearson": corr.pearson,
        "spearman": corr.spearman,
        "kendall": corr.kendall,
        "n": float(corr.n),
    }


@dataclass(frozen=True)
class MetaRow:
    """One (metric, human column) cell of the meta-evaluation."""

    metric: str
    column: str
    level: str
    criterion: str
    pairwise: stats.Pairwise
    system: Mapping[str, float | None]
    document: Mapping[str, float | None]

    def to_dict(self) -> dict[str, Any]:
        """Flat dict for CSV / JSON."""
        p = self.pairwise
        out: dict[str, Any] = {
            "metric": self.metric,
            "human": self.column,
            "pairwise_accuracy": p.accuracy,
            "agree": p.agree,
            "pairs": p.pairs,
            "metric_ties": p.metric_ties,
            "human_ties": p.human_ties,
            "missing_systems": " ".join(p.missing),
        }
        for scope, corr in (("system", self.system), ("document", self.document)):
            for name in ("pearson", "spearman", "kendall", "n"):
                out[f"{scope}_{name}"] = corr.get(name)
        return out


def meta_evaluate(
    values: MetricValues,
    human: Sequence[HumanScores],
    systems: Sequence[str],
    meetings: Sequence[str] | None = None,
) -> list[MetaRow]:
    """Every metric against every human column (system and document level).

    Args:
        values: Metric values (document or system level) per system and meeting.
        human: Per-meeting human scores of the release.
        systems: Systems compared (others are ignored).
        meetings: Meetings whose metric values enter system means (None = all).

    Metrics where lower is better (:func:`lower_is_better`) are negated first.
    """
    rows = []
    chosen = set(systems)
    for metric, raw_doc in values.items():
        # An error rating agrees with humans when it is LOWER for the better system:
        # negated, its pairwise accuracy and correlations read like every other metric's.
        sign = -1.0 if lower_is_better(metric) else 1.0
        per_doc = {k: sign * v for k, v in raw_doc.items()}
        metric_sys = system_means(per_doc, meetings)
        for level, criterion, label in HUMAN_COLUMNS:
            human_sys = human_system_means(human, level, criterion)
            pair = stats.pairwise_accuracy(metric_sys, human_sys, systems)
            common = [s for s in systems if s in metric_sys and s in human_sys]
            sys_corr = correlations([metric_sys[s] for s in common], [human_sys[s] for s in common])
            docs = human_document_values(human, level, criterion)
            keys = sorted(
                k
                for k in docs
                if k[0] in chosen and k in per_doc and (meetings is None or k[1] in meetings)
            )
            doc_corr = correlations([per_doc[k] for k in keys], [docs[k][0] for k in keys])
            rows.append(MetaRow(metric, label, level, criterion, pair, sys_corr, doc_corr))
    return rows
