"""The paper's result tables (2, 3, 9, 10), Fig. 1 and Fig. 3 data, from task runs.

Each builder returns a :class:`Table`: Markdown cells for reading plus long-form records
(unrounded numbers, run ids, counts) for CSV/JSON, so every printed number can be traced
to the runs and samples it came from.

Conventions shared by all builders:

* A row is a model (seed-free identity) and, for judge scores, the judge identity: runs of
  one model scored by two judges are two rows, never averaged together.
* Runs of the same row, setting, mode, split and noise level are seeded repeats. A cell's
  value is the mean of the per-run means (the paper's Table 2 test column); question-level
  analyses (intervals, Tables 3 and 10, Fig. 3) first average each question over the runs.
* Setting, mode, split and noise level come from the documents, not task names.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from elitr_bench.data.records import SPLITS as BENCH_SPLITS
from elitr_bench.markdown import fixed
from elitr_bench.metaeval.stats import CIMethod, Interval, Stratum, interval, mean_sd, welch_less
from elitr_bench.report.runs import JudgeId, ModelId, Sample, TaskRun

#: A row: the model, the judge (for judge scores) and the questions' language, so that a
#: model's Czech runs are never averaged with its English ones as if they were seeds.
RowKey = tuple[ModelId, str | None, str]
GroupKey = tuple[RowKey, str, str, str]  # row, setting, mode, split

#: Row order of the paper's tables; other models follow alphabetically.
PAPER_ORDER = (
    "GPT-3.5",
    "GPT-4",
    "GPT-4o",
    "LongAlpaca-7B",
    "LongAlpaca-13B",
    "LongChat-7B-v1.5",
    "Vicuna-7B-v1.5",
    "Vicuna-13B-v1.5",
    "LongAlign-7B",
    "LongAlign-13B",
    "LLaMA-3.1-8B",
    "Phi-3-small",
)
#: (setting, mode, column title); the first three are Table 2's settings.
SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("qa", "st", "Single-turn QA"),
    ("qa", "mt", "Multi-turn QA"),
    ("conv", "mt", "Multi-turn Conv"),
    ("conv", "st", "Single-turn Conv"),
)
SPLITS: tuple[str, ...] = ("dev", "test2")
SPLIT_TITLES = {"dev": "Dev", "test2": "Test", "mean": "Mean"}
TYPES = (("who", "Who"), ("what", "What"), ("when", "When"), ("howmany", "How many"))
POSITIONS = (("B", "Begin"), ("M", "Middle"), ("E", "End"), ("S", "Several"))
METRIC_TITLES = {
    "judge_score": "judge score (1-10)",
    "f1": "token F1 (fallback: no judge scores; not comparable with the paper)",
    "rouge_l": "ROUGE-L F (fallback: no judge scores; not comparable with the paper)",
}


@dataclass(frozen=True)
class Table:
    """A rendered table plus its machine-readable records.

    Attributes:
        key: File stem for the CSV/JSON files.
        title: Heading in the Markdown report.
        columns: Markdown header.
        rows: Markdown cells (formatted).
        records: Long-form records with unrounded values, counts and run ids.
        notes: Lines printed under the table.
    """

    key: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    records: tuple[Mapping[str, Any], ...]
    notes: tuple[str, ...] = ()


def setting_title(setting: str, mode: str) -> str:
    """Human title of a (setting, mode) pair."""
    for s, m, title in SETTINGS:
        if (s, m) == (setting, mode):
            return title
    return f"{setting}/{mode}"


@dataclass
class ReportContext:
    """The runs a report is built from, the metric, and the interval options."""

    runs: Sequence[TaskRun]
    metric: str = "judge_score"
    ci: CIMethod = "cluster-t"
    level: float = 0.95
    n_resamples: int = 10_000
    seed: int = 0
    _labels: dict[RowKey, str] = field(default_factory=dict, init=False)
    _judges: dict[str, JudgeId] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.runs = [r for r in self.runs if r.has(self.metric)]
        for run in self.runs:
            if run.judge is not None:
                self._judges.setdefault(run.judge.key, run.judge)
        keys = list(dict.fromkeys(self.row_key(r) for r in self.runs))
        by_label: dict[str, set[ModelId]] = defaultdict(set)
        for model, _, _ in keys:
            by_label[model.label].add(model)
        judge_keys = {j for _, j, _ in keys}
        for model, judge, language in keys:
            label = model.label
            if len(by_label[label]) > 1:
                digest = hashlib.sha1(repr((model.model, model.args)).encode()).hexdigest()[:6]
                label = f"{label} ({model.model} {digest})"
            if len(judge_keys) > 1:
                label += f" [{self._judges[judge].label if judge else 'no judge'}]"
            if language != "en":
                label += f" ({language})"
            self._labels[(model, judge, language)] = label

    def row_key(self, run: TaskRun) -> RowKey:
        """Model, (for judge scores) judge identity and questions' language of a run."""
        judge = run.judge.key if self.metric == "judge_score" and run.judge else None
        return (run.model, judge, run.language)

    def label(self, key: RowKey) -> str:
        """Display label of a row."""
        return self._labels[key]

    def ordered(self, keys: Iterable[RowKey]) -> list[RowKey]:
        """Rows in the paper's order, unknown models alphabetically after."""
        rank = {name: i for i, name in enumerate(PAPER_ORDER)}
        return sorted(
            set(keys),
            key=lambda k: (rank.get(k[0].label, len(rank)), self.label(k)),
        )

    def groups(self, clean: bool = True) -> dict[GroupKey, list[TaskRun]]:
        """Seeded-repeat groups of clean (or noisy) runs."""
        out: dict[GroupKey, list[TaskRun]] = defaultdict(list)
        for run in self.runs:
            if run.is_clean == clean:
                out[(self.row_key(run), run.setting, run.mode, run.split)].append(run)
        return dict(out)

    def interval(self, strata: Sequence[Stratum], center: float | None = None) -> Interval:
        """The configured interval for the mean of strata means."""
        return interval(strata, self.ci, self.level, self.n_resamples, self.seed, center)


# ------------------------------------------------------------------ question level
def question_means(
    runs: Sequence[TaskRun], metric: str, keep: Callable[[Sample], bool] | None = None
) -> dict[tuple[str, str], tuple[float, Sample]]:
    """Per question, the metric averaged over the runs that scored it, and one sample."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    first: dict[tuple[str, str], Sample] = {}
    for run in runs:
        for s in run.samples:
            if metric in s.scores and (keep is None or keep(s)):
                values[s.key].append(s.scores[metric])
                first.setdefault(s.key, s)
    return {k: (math.fsum(v) / len(v), first[k]) for k, v in values.items()}


def stratum(
    runs: Sequence[TaskRun], metric: str, keep: Callable[[Sample], bool] | None = None
) -> Stratum:
    """``(question means, meeting of each)`` for interval estimation."""
    q = question_means(runs, metric, keep)
    keys = sorted(q)
    return ([q[k][0] for k in keys], [k[0] for k in keys])


def runs_mean(runs: Sequence[TaskRun], metric: str) -> float:
    """Mean over runs of each run's mean (seeded runs weigh equally)."""
    means = [m for m in (r.mean(metric) for r in runs) if m is not None]
    return math.fsum(means) / len(means)


def _ids(runs: Iterable[TaskRun]) -> str:
    return " ".join(r.run_id for r in runs)


def _ci_cell(value: float, iv: Interval, n_runs: int) -> str:
    cell = f"{fixed(value)} [{fixed(iv.low)}, {fixed(iv.high)}]"
    return cell + (f" ×{n_runs}" if n_runs > 1 else "")


def _base(ctx: ReportContext, key: RowKey) -> dict[str, Any]:
    model, judge, language = key
    return {
        "row": ctx.label(key),
        "model": model.label,
        "language": language,
        "model_type": model.model,
        "model_args": ",".join(f"{k}={v}" for k, v in model.args),
        "judge": ctx._judges[judge].label if judge else None,
        "metric": ctx.metric,
    }


# ------------------------------------------------------------------ Table 2
def table2(ctx: ReportContext) -> Table:
    """Model x setting x split (dev, test, mean) with meeting-clustered intervals."""
    groups = ctx.groups(clean=True)
    present = {(s, m) for _, s, m, _ in groups}
    settings = [x for x in SETTINGS[:3]] + [x for x in SETTINGS[3:] if x[:2] in present]
    extra = sorted(present - {x[:2] for x in SETTINGS})
    settings += [(s, m, f"{s}/{m}") for s, m in extra]
    columns = ["Model"]
    for _, _, title in settings:
        columns += [f"{title} {SPLIT_TITLES[sp]}" for sp in ("dev", "test2", "mean")]
    rows, records = [], []
    multi = False
    for key in ctx.ordered(k for k, _, _, _ in groups):
        cells = [ctx.label(key)]
        for setting, mode, _ in settings:
            per_split: dict[str, tuple[float, Stratum, list[TaskRun]]] = {}
            for split in SPLITS:
                runs = groups.get((key, setting, mode, split))
                if not runs:
                    cells.append("-")
                    continue
                multi |= len(runs) > 1
                value = runs_mean(runs, ctx.metric)
                st = stratum(runs, ctx.metric)
                iv = ctx.interval([st], center=value)
                per_split[split] = (value, st, runs)
                cells.append(_ci_cell(value, iv, len(runs)))
                records.append(_t2_record(ctx, key, setting, mode, split, value, iv, runs))
            if len(per_split) == 2:
                value = sum(v for v, _, _ in per_split.values()) / 2
                iv = ctx.interval([st for _, st, _ in per_split.values()], center=value)
                all_runs = [r for _, _, rs in per_split.values() for r in rs]
                cells.append(_ci_cell(value, iv, 1))
                records.append(_t2_record(ctx, key, setting, mode, "mean", value, iv, all_runs))
            else:
                cells.append("-")
        rows.append(tuple(cells))
    how = (
        "CR1 cluster-robust SE by meeting with t(G-1) quantile (Welch-Satterthwaite df "
        "for the Mean column)"
        if ctx.ci == "cluster-t"
        else f"meeting-level cluster bootstrap, {ctx.n_resamples} resamples, seed {ctx.seed}, "
        "percentile interval (stratified by split for the Mean column)"
    )
    notes = [
        f"Cells: mean {ctx.metric} [{int(ctx.level * 100)}% CI]; CI: {how}.",
        "Mean = unweighted mean of Dev and Test, as in the paper.",
    ]
    if multi:
        notes.append(
            "×k: the cell averages k seeded runs (mean of per-run means; see Table 9); the CI "
            "uses per-question scores averaged over the runs."
        )
    return Table(
        key=f"table2_{ctx.metric}",
        title=f"Table 2 layout: {METRIC_TITLES.get(ctx.metric, ctx.metric)}",
        columns=tuple(columns),
        rows=tuple(rows),
        records=tuple(records),
        notes=tuple(notes),
    )


def _t2_record(
    ctx: ReportContext,
    key: RowKey,
    setting: str,
    mode: str,
    split: str,
    value: float,
    iv: Interval,
    runs: Sequence[TaskRun],
) -> dict[str, Any]:
    return {
        **_base(ctx, key),
        "setting": setting,
        "mode": mode,
        "split": split,
        "value": value,
        "ci_low": iv.low,
        "ci_high": iv.high,
        "ci_method": iv.method,
        "se": iv.se,
        "df": iv.df,
        "n_questions": iv.n,
        "n_meetings": iv.n_clusters,
        "n_runs": len(runs),
        "n_scored_samples": sum(len(r.values(ctx.metric)) for r in runs),
        "runs": _ids(runs),
    }


# ------------------------------------------------------------------ Table 9
def table9(ctx: ReportContext) -> Table | None:
    """Mean ± sample std over seeded runs; None when no cell has several runs."""
    groups = ctx.groups(clean=True)
    if not any(len(v) > 1 for v in groups.values()):
        return None
    cols = sorted(
        {(s, m, sp) for _, s, m, sp in groups},
        key=lambda c: (
            [x[:2] for x in SETTINGS].index(c[:2]) if c[:2] in [x[:2] for x in SETTINGS] else 99,
            c,
        ),
    )
    columns = ["Model"] + [f"{setting_title(s, m)} {SPLIT_TITLES[sp]}" for s, m, sp in cols]
    rows, records = [], []
    for key in ctx.ordered(k for k, _, _, _ in groups):
        cells = [ctx.label(key)]
        for s, m, sp in cols:
            runs = groups.get((key, s, m, sp))
            if not runs:
                cells.append("-")
                continue
            means = [r.mean(ctx.metric) for r in runs]
            vals = [x for x in means if x is not None]
            mean, sd = mean_sd(vals)
            cells.append(f"{fixed(mean)} ± {fixed(sd)} (n={len(vals)})")
            records.append(
                {
                    **_base(ctx, key),
                    "setting": s,
                    "mode": m,
                    "split": sp,
                    "mean": mean,
                    "sd": sd,
                    "n_runs": len(vals),
                    "run_means": vals,
                    "seeds": [r.seed_label for r in runs],
                    "runs": _ids(runs),
                }
            )
        rows.append(tuple(cells))
    return Table(
        key=f"table9_{ctx.metric}",
        title=f"Table 9 layout: mean ± sample std over seeded runs ({ctx.metric})",
        columns=tuple(columns),
        rows=tuple(rows),
        records=tuple(records),
        notes=("std uses ddof=1 (sample standard deviation); '-' std: a single run.",),
    )


# ------------------------------------------------------------------ Table 3
def table3(ctx: ReportContext) -> list[Table]:
    """By question type and answer position, one table per setting/mode/split present."""
    groups = ctx.groups(clean=True)
    tables = []
    combos = sorted({(s, m, sp) for _, s, m, sp in groups}, key=_combo_order)
    for s, m, sp in combos:
        keys = ctx.ordered(k for k, s2, m2, sp2 in groups if (s2, m2, sp2) == (s, m, sp))
        cells_by_row: list[tuple[str, ...]] = []
        records = []
        ns: dict[str, set[int]] = defaultdict(set)
        for key in keys:
            runs = groups[(key, s, m, sp)]
            q = question_means(runs, ctx.metric)
            cells = [ctx.label(key)]
            for attr, items in (("question_type", TYPES), ("answer_position", POSITIONS)):
                for code, title in items:
                    vals = [v for v, smp in q.values() if getattr(smp, attr) == code]
                    mean = math.fsum(vals) / len(vals) if vals else None
                    ns[title].add(len(vals))
                    cells.append(f"{fixed(mean)} ({len(vals)})")
                    records.append(
                        {
                            **_base(ctx, key),
                            "setting": s,
                            "mode": m,
                            "split": sp,
                            "by": attr,
                            "group": code,
                            "value": mean,
                            "n_questions": len(vals),
                            "n_runs": len(runs),
                            "runs": _ids(runs),
                        }
                    )
            cells_by_row.append(tuple(cells))
        columns = ["Model"]
        for _, title in (*TYPES, *POSITIONS):
            n = ns[title]
            columns.append(f"{title} (N={n.pop()})" if len(n) == 1 else title)
        tables.append(
            Table(
                key=f"table3_{ctx.metric}_{s}_{m}_{sp}",
                title=(
                    f"Table 3 layout: {ctx.metric} by question type and answer position, "
                    f"{setting_title(s, m)}, {SPLIT_TITLES.get(sp, sp)}"
                ),
                columns=tuple(columns),
                rows=tuple(cells_by_row),
                records=tuple(records),
                notes=(
                    "Cells: mean (N questions); each question is first averaged over the "
                    "row's seeded runs.",
                ),
            )
        )
    return tables


def _combo_order(c: tuple[str, str, str]) -> tuple[int, int, str]:
    order = [x[:2] for x in SETTINGS]
    # The paper's Tables 3 and 10 are on test, single-turn QA: put test first.
    return (order.index(c[:2]) if c[:2] in order else 99, 0 if c[2] == "test2" else 1, c[2])


# ------------------------------------------------------------------ Table 10
def table10(ctx: ReportContext) -> list[Table]:
    """One-tailed Welch t-test: middle-position answers score lower than the others."""
    groups = ctx.groups(clean=True)
    tables = []
    combos = sorted({(s, m, sp) for _, s, m, sp in groups}, key=_combo_order)
    for s, m, sp in combos:
        rows, records = [], []
        for key in ctx.ordered(k for k, s2, m2, sp2 in groups if (s2, m2, sp2) == (s, m, sp)):
            runs = groups[(key, s, m, sp)]
            q = question_means(runs, ctx.metric)
            middle = [v for v, smp in q.values() if smp.answer_position == "M"]
            other = [v for v, smp in q.values() if smp.answer_position != "M"]
            res = welch_less(middle, other)
            p = res.p
            mark = " *" if p is not None and p < 0.05 else ""
            rows.append(
                (
                    ctx.label(key),
                    fixed(p, 3) + mark,
                    fixed(res.t, 3),
                    fixed(res.df, 1),
                    f"{fixed(res.mean_x)} ({res.n_x})",
                    f"{fixed(res.mean_y)} ({res.n_y})",
                )
            )
            records.append(
                {
                    **_base(ctx, key),
                    "setting": s,
                    "mode": m,
                    "split": sp,
                    "p_value": p,
                    "t": res.t,
                    "df": res.df,
                    "mean_middle": res.mean_x,
                    "n_middle": res.n_x,
                    "mean_other": res.mean_y,
                    "n_other": res.n_y,
                    "n_runs": len(runs),
                    "runs": _ids(runs),
                }
            )
        tables.append(
            Table(
                key=f"table10_{ctx.metric}_{s}_{m}_{sp}",
                title=(
                    f"Table 10 layout: lost-in-the-middle Welch test ({ctx.metric}), "
                    f"{setting_title(s, m)}, {SPLIT_TITLES.get(sp, sp)}"
                ),
                columns=("Model", "p-value", "t", "df", "Middle mean (N)", "Others mean (N)"),
                rows=tuple(rows),
                records=tuple(records),
                notes=(
                    "H1: mean score of middle-position answers < mean of the other questions; "
                    "scipy.stats.ttest_ind(equal_var=False, alternative='less') on per-question "
                    "scores (averaged over seeded runs). * p < 0.05.",
                ),
            )
        )
    return tables


# ------------------------------------------------------------------ Figure 3 data
def differing_questions() -> dict[str, set[tuple[str, str]]]:
    """Per split, the questions whose QA and Conv wordings differ (16 dev, 17 test)."""
    from elitr_bench.data import load_benchmark

    bench = load_benchmark()
    out: dict[str, set[tuple[str, str]]] = {}
    for split in BENCH_SPLITS:
        qa = {(q.meeting_id, q.question_id): q.question for q in bench.questions("qa", split)}
        conv = {(q.meeting_id, q.question_id): q.question for q in bench.questions("conv", split)}
        out[split] = {k for k in qa if k in conv and qa[k].strip() != conv[k].strip()}
    return out


FIG3_SETTINGS = (("qa", "st"), ("qa", "mt"), ("conv", "mt"))


def figure3_table(
    ctx: ReportContext, differing: Mapping[str, set[tuple[str, str]]]
) -> Table | None:
    """Scores restricted to the QA/Conv-differing questions, mean of dev and test means."""
    groups = ctx.groups(clean=True)
    keys = ctx.ordered(k for k, s, m, _ in groups if (s, m) in FIG3_SETTINGS)
    if not keys:
        return None
    rows, records = [], []
    partial = False
    for key in keys:
        cells = [ctx.label(key)]
        for s, m in FIG3_SETTINGS:
            split_means: dict[str, tuple[float, int]] = {}
            used: list[TaskRun] = []
            for split in SPLITS:
                runs = groups.get((key, s, m, split))
                if not runs:
                    continue
                wanted: set[tuple[str, str]] = differing.get(split, set())

                def keep(smp: Sample, w: set[tuple[str, str]] = wanted) -> bool:
                    return smp.key in w

                q = question_means(runs, ctx.metric, keep=keep)
                if q:
                    split_means[split] = (math.fsum(v for v, _ in q.values()) / len(q), len(q))
                    used += runs
            if not split_means:
                cells.append("-")
                continue
            value = math.fsum(v for v, _ in split_means.values()) / len(split_means)
            only = "" if len(split_means) == 2 else f" ({SPLIT_TITLES[next(iter(split_means))]})"
            partial |= bool(only)
            cells.append(fixed(value) + only)
            records.append(
                {
                    **_base(ctx, key),
                    "setting": s,
                    "mode": m,
                    "value": value,
                    "splits": sorted(split_means),
                    **{f"value_{sp}": v for sp, (v, _) in split_means.items()},
                    **{f"n_{sp}": n for sp, (_, n) in split_means.items()},
                    "runs": _ids(used),
                }
            )
        rows.append(tuple(cells))
    notes = [
        f"Questions whose QA and Conv wording differ: {len(differing.get('dev', ()))} dev, "
        f"{len(differing.get('test2', ()))} test; value = mean of the dev and test means "
        "(as the paper's Fig. 3).",
    ]
    if partial:
        notes.append("(Dev)/(Test): only that split was available for the cell.")
    return Table(
        key=f"figure3_{ctx.metric}",
        title=f"Figure 3 data: QA/Conv-differing questions ({ctx.metric})",
        columns=("Model", *(setting_title(s, m) for s, m in FIG3_SETTINGS)),
        rows=tuple(rows),
        records=tuple(records),
        notes=tuple(notes),
    )


# ------------------------------------------------------------------ Figure 1 data
#: A line of a figure: (row key, setting, mode, split).
Line = tuple[RowKey, str, str, str]


def _ordered_lines(ctx: ReportContext, lines: Iterable[Line]) -> list[Line]:
    """Lines in the report's row order, then by setting, mode and split."""
    lines = list(lines)
    order = {k: i for i, k in enumerate(ctx.ordered(k for k, _, _, _ in lines))}
    return sorted(lines, key=lambda x: (order[x[0]], x[1:]))


def _line_record(
    ctx: ReportContext,
    line: Line,
    value: float,
    iv: Interval,
    runs: Sequence[TaskRun],
    **point: Any,
) -> dict[str, Any]:
    """The record of one point of a line; ``point`` places it (its x-axis fields)."""
    key, s, m, sp = line
    return {
        **_base(ctx, key),
        "setting": s,
        "mode": m,
        "split": sp,
        **point,
        "value": value,
        "ci_low": iv.low,
        "ci_high": iv.high,
        "n_questions": iv.n,
        "n_runs": len(runs),
        "runs": _ids(runs),
    }


def noise_table(ctx: ReportContext) -> Table | None:
    """Score per target WER (with effective WER) per model; clean runs give WER 0."""
    noisy = ctx.groups(clean=False)
    if not noisy:
        return None
    by_wer: dict[tuple[RowKey, str, str, str], dict[float, list[TaskRun]]] = defaultdict(dict)
    for run in ctx.runs:
        if run.is_clean:
            continue
        line = (ctx.row_key(run), run.setting, run.mode, run.split)
        by_wer[line].setdefault(float(run.target_wer or 0.0), []).append(run)
    clean = ctx.groups(clean=True)
    for line in by_wer:
        if line in clean:
            by_wer[line][0.0] = clean[line]
    rows, records = [], []
    for line in _ordered_lines(ctx, by_wer):
        key, s, m, sp = line
        for target in sorted(by_wer[line]):
            runs = by_wer[line][target]
            value = runs_mean(runs, ctx.metric)
            iv = ctx.interval([stratum(runs, ctx.metric)], center=value)
            effs = [r.effective_wer for r in runs if r.effective_wer is not None]
            eff = math.fsum(effs) / len(effs) if effs else (0.0 if target == 0 else None)
            rows.append(
                (
                    ctx.label(key),
                    f"{setting_title(s, m)} {SPLIT_TITLES.get(sp, sp)}",
                    fixed(target),
                    fixed(eff, 3),
                    _ci_cell(value, iv, len(runs)),
                    _ids(runs),
                )
            )
            records.append(
                _line_record(ctx, line, value, iv, runs, target_wer=target, effective_wer=eff)
            )
    return Table(
        key=f"figure1_{ctx.metric}",
        title=f"Figure 1 data: {ctx.metric} vs transcript noise",
        columns=("Model", "Setting", "Target WER", "Effective WER", "Score [CI]", "Runs"),
        rows=tuple(rows),
        records=tuple(records),
        notes=(
            "Effective WER: achieved WER averaged over the run's meetings (each meeting once); "
            "target 0.00 = the clean-transcript run of the same model and setting.",
        ),
    )


# ------------------------------------------------------------------ score vs context
#: How each kind of point of the context figure is named in its table.
CONTEXT_KINDS = {"budget": "context budget", "full": "full context", "retrieval": "BM25 retrieval"}


def _context_point(run: TaskRun) -> tuple[str, int | None]:
    """(kind, nominal tokens) of a run: its budget, its window, or its rag_budget."""
    if run.rag_budget is not None:
        return "retrieval", run.rag_budget
    if run.context_budget is not None:
        return "budget", run.context_budget
    return "full", run.window


def _kept_tokens(runs: Sequence[TaskRun], nominal: int | None) -> int | None:
    """Transcript tokens the point's prompts held: what its runs recorded, else ``nominal``.

    A budget's cut keeps a little less than the budget, and BM25 passages fill theirs
    only as far as whole passages go; runs from before the cut recorded it sit at the
    budget.
    """
    kept = [run.kept_tokens for run in runs]
    if not kept or any(k is None for k in kept):
        return nominal
    return round(math.fsum(k for k in kept if k is not None) / len(kept))


def context_table(ctx: ReportContext) -> Table | None:
    """Score per context budget per model (and setting), retrieval runs beside them.

    A line is a model's runs of one setting and split at several ``context_budget``
    values, its full-context run placed at the model's window, and its retrieval runs
    (``elitr_qa_rag_*``) at their ``rag_budget``. Only lines with a budget or retrieval
    run are drawn; seeded repeats of one point are averaged as in Table 2.
    """
    if all(run.is_full_context for run in ctx.runs):
        return None
    points: dict[tuple[RowKey, str, str, str], dict[tuple[str, int | None], list[TaskRun]]]
    points = defaultdict(lambda: defaultdict(list))
    for run in ctx.runs:
        line = (ctx.row_key(run), run.setting, run.mode, run.split)
        points[line][_context_point(run)].append(run)
    rows, records = [], []
    notes = [
        "Tokens: transcript tokens of the model's tokenizer the prompts held, mean over "
        "meetings, as the runs recorded them (the budget itself for runs that did not); "
        "Budget: --metadata context_budget, or rag_budget for retrieval; a full-context "
        "run is placed at the model's window. Intervals: 95%, clustered by meeting.",
    ]
    for line in _ordered_lines(ctx, points):
        if all(kind == "full" for kind, _ in points[line]):
            continue
        key, s, m, sp = line
        for (kind, budget), runs in sorted(
            points[line].items(), key=lambda p: (p[0][0] == "retrieval", p[0][1] or 0)
        ):
            tokens = budget if kind == "full" else _kept_tokens(runs, budget)
            value = runs_mean(runs, ctx.metric)
            iv = ctx.interval([stratum(runs, ctx.metric)], center=value)
            if tokens is None:
                notes.append(
                    f"{ctx.label(key)} ({_ids(runs)}): full-context run without a recorded "
                    "window (API model or older run): in the table, not in the figure."
                )
            rows.append(
                (
                    ctx.label(key),
                    f"{setting_title(s, m)} {SPLIT_TITLES.get(sp, sp)}",
                    CONTEXT_KINDS[kind],
                    str(budget) if budget is not None else "?",
                    str(tokens) if tokens is not None else "?",
                    _ci_cell(value, iv, len(runs)),
                    _ids(runs),
                )
            )
            records.append(
                _line_record(ctx, line, value, iv, runs, kind=kind, budget=budget, tokens=tokens)
            )
    if not records:
        return None
    if any(r["ci_low"] is None for r in records):
        notes.append(
            "[-, -]: no interval, as the point's questions come from fewer than two meetings "
            "(a small --limit takes the first meeting's questions only)."
        )
    return Table(
        key=f"context_{ctx.metric}",
        title=f"{ctx.metric} vs context budget (full transcript, middle cut, BM25 retrieval)",
        columns=("Model", "Setting", "Context", "Budget", "Tokens", "Score [CI]", "Runs"),
        rows=tuple(rows),
        records=tuple(records),
        notes=tuple(notes),
    )
