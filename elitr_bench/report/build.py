"""Build the whole report: load runs, compute tables, draw figures, write files.

Output layout under ``--out``::

    report.md             every table, the notes, the runs and judges used
    report.json           the same tables as records, plus runs, judges and notes
    tables/<key>.csv      one long-form CSV per table (unrounded values, run ids)
    tables/<key>.json     the same records as JSON
    figures/*.png         Table 2 bars, Fig. 1 (noise), Fig. 2a/2b (agreement), Fig. 3,
                          context.png (score vs context budget and retrieval)

The report is assembled by :data:`SECTION_BUILDERS`, one function per kind of input (the
ELITR-Bench QA/Conv runs, the judge agreement); a new kind of run adds its builder there.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from elitr_bench import __version__
from elitr_bench.data.errors import DataError
from elitr_bench.data.folder import write_atomic
from elitr_bench.markdown import fixed, markdown_table
from elitr_bench.metaeval.stats import CIMethod
from elitr_bench.report import agreement, figures
from elitr_bench.report.errors import ReportError
from elitr_bench.report.minutes import minutes_sections
from elitr_bench.report.records import Report, ReportInputs, SectionBuilder
from elitr_bench.report.runs import LoadedRuns, TaskRun, foreign_input, load_runs
from elitr_bench.report.tables import (
    ReportContext,
    Table,
    context_table,
    differing_questions,
    figure3_table,
    noise_table,
    setting_title,
    table2,
    table3,
    table9,
    table10,
)


def _runs_table(runs: Sequence[TaskRun], metric: str) -> Table:
    rows, records = [], []
    for r in runs:
        mean = r.mean(metric)
        reported = r.reported.get(metric)
        if mean is None or reported is None:
            check = "-"
        else:
            check = (
                "ok" if math.isclose(mean, reported, abs_tol=1e-6) else f"≠ {fixed(reported, 4)}"
            )
        judge = ", ".join(j.label for j in r.judges) or "none"
        rows.append(
            (
                r.run_id,
                r.task,
                r.model.label,
                ",".join(f"{k}={v}" for k, v in r.model.args) or "-",
                r.seed_label,
                judge,
                f"{setting_title(r.setting, r.mode)} {r.split}"
                + ("" if r.is_full_context else f", {r.context_label}"),
                fixed(r.target_wer) if r.target_wer else "-",
                str(len(r.samples)),
                str(r.count("scored")),
                str(r.count("unscored")),
                fixed(mean, 4),
                check,
                f"{r.results_path.name}, {r.samples_path.name}",
            )
        )
        records.append(_run_record(r, metric, mean, reported))
    return Table(
        key="runs",
        title="Runs used",
        columns=(
            "Run",
            "Task",
            "Model",
            "Model args",
            "Seeds",
            "Judge",
            "Setting",
            "Target WER",
            "N",
            "Scored",
            "Unscored",
            f"Mean {metric}",
            "vs results file",
            "Files",
        ),
        rows=tuple(rows),
        records=tuple(records),
        notes=(
            "Mean: recomputed from the samples file; 'ok' = equals lm-eval's aggregate in the "
            "results file. Full paths are in tables/runs.csv.",
        ),
    )


def _run_record(
    r: TaskRun, metric: str, mean: float | None, reported: float | None
) -> dict[str, Any]:
    """A run's row of ``tables/runs.csv``: everything it was run with, and its files."""
    return {
        "run": r.run_id,
        "task": r.task,
        "model": r.model.label,
        "language": r.language,
        "model_type": r.model.model,
        "model_args": ",".join(f"{k}={v}" for k, v in r.model.args),
        "seeds": dict(r.seeds),
        "judges": [j.label for j in r.judges],
        "setting": r.setting,
        "mode": r.mode,
        "split": r.split,
        "target_wer": r.target_wer,
        "effective_wer": r.effective_wer,
        "context_budget": r.context_budget,
        "rag_budget": r.rag_budget,
        "context_window": r.window,
        "n_samples": len(r.samples),
        "n_logged": r.n_logged,
        "n_scored": r.count("scored"),
        "n_unscored": r.count("unscored"),
        f"mean_{metric}": mean,
        f"reported_{metric}": reported,
        "results_file": str(r.results_path),
        "samples_file": str(r.samples_path),
    }


def _judges_table(runs: Sequence[TaskRun]) -> Table | None:
    judges: dict[str, tuple[Any, list[str]]] = {}
    for r in runs:
        for j in r.judges:
            judges.setdefault(j.key, (j, []))[1].append(r.run_id)
    if not judges:
        return None
    rows, records = [], []
    for judge, run_ids in judges.values():
        ident = json.dumps(dict(judge.identity), sort_keys=True, default=str)
        rows.append((judge.label, " ".join(run_ids), f"`{ident}`"))
        records.append({"judge": judge.label, "runs": run_ids, "identity": dict(judge.identity)})
    return Table(
        key="judges",
        title="Judge identities",
        columns=("Judge", "Runs", "Identity (as logged)"),
        rows=tuple(rows),
        records=tuple(records),
        notes=("Seeds are ignored when grouping runs by judge (they vary across seeded runs).",),
    )


def qa_sections(inputs: ReportInputs, report: Report) -> None:
    """Runs, judges, Tables 2, 9, 3, 10 and Figs. 1 and 3 of the ELITR-Bench QA/Conv runs."""
    runs = list(inputs.runs)
    if not runs:
        return
    metric, out = inputs.metric, inputs.out
    opts = {"ci": inputs.ci, "n_resamples": inputs.n_resamples, "seed": inputs.seed}
    main_runs = [r for r in runs if r.has(metric)]
    rest = [r for r in runs if not r.has(metric)]
    if not main_runs and metric == "judge_score":
        report.notes.append(
            "No run has judge scores (judge=none?): all tables use token F1 instead and are "
            "NOT comparable with the paper's judge scores."
        )
        metric, main_runs, rest = "f1", [r for r in runs if r.has("f1")], []
    elif rest:
        report.notes.append(
            f"Runs without {metric}: {' '.join(r.run_id for r in rest)}; they appear only in "
            "the fallback tables (token F1 / ROUGE-L), clearly labelled."
        )
    report.options["metric"] = metric

    report.section("Runs", _runs_table(runs, metric))
    judges = _judges_table(runs)
    if judges:
        report.section("Judges", judges)
    if any(not r.is_full_context for r in main_runs):
        every = ReportContext(main_runs, metric=metric, **opts)  # type: ignore[arg-type]
        curve = context_table(every)
        if curve is not None:
            report.section("Score vs context budget", curve)
            report.figures.append(figures.context_figure(curve, out / "figures" / "context.png"))
        # the paper's tables compare models on the whole transcript only
        main_runs = [r for r in main_runs if r.is_full_context]
    if main_runs:
        ctx = ReportContext(main_runs, metric=metric, **opts)  # type: ignore[arg-type]
        t2 = table2(ctx)
        report.section("Main results (Table 2)", t2)
        if t2.records:
            report.figures.append(figures.table2_figure(t2, out / "figures" / "table2.png"))
        t9 = table9(ctx)
        report.section(
            "Seeded runs (Table 9)",
            t9 if t9 else "Only one run per model/setting/split: Table 9 needs seeded repeats.",
        )
        report.section("Question type and answer position (Table 3)", *table3(ctx))
        report.section("Lost in the middle (Table 10)", *table10(ctx))
        try:
            fig3 = figure3_table(ctx, differing_questions())
        except DataError as exc:
            fig3 = None
            report.notes.append(f"Figure 3 skipped: benchmark data unavailable ({exc})")
        if fig3 is not None and fig3.records:
            report.section("QA/Conv-differing questions (Figure 3)", fig3)
            report.figures.append(figures.figure3(fig3, out / "figures" / "figure3.png"))
        elif fig3 is not None:  # runs, but none of their questions is one of those
            report.notes.append(
                "Figure 3 skipped: none of the runs' questions is one whose QA and Conv "
                "wording differ (a --limit run may stop before them)."
            )
        noise = noise_table(ctx)
        if noise is not None:
            report.section("Noise robustness (Figure 1)", noise)
            report.figures.append(figures.figure1(noise, out / "figures" / "figure1.png"))
        else:
            report.notes.append("Figure 1 skipped: no noisy-transcript runs (elitr_qa_wer*).")
    for fallback in ("f1", "rouge_l"):
        fb_runs = [r for r in rest if r.has(fallback) and r.is_full_context]
        if fb_runs:
            fctx = ReportContext(fb_runs, metric=fallback, **opts)  # type: ignore[arg-type]
            report.section(f"Fallback: {fallback} for runs without {metric}", table2(fctx))


def agreement_sections(inputs: ReportInputs, report: Report) -> None:
    """Table 4 and Fig. 2: judges against each other and against the human scores."""
    data = agreement.collect(list(inputs.runs), list(inputs.judge_checks))
    if data is None:
        if inputs.runs:
            report.notes.append(
                "Judge agreement skipped: pass --judge-check FILE or runs re-judged by a second "
                "judge (`elitr-bench score`)."
            )
        return
    out = inputs.out
    ref = agreement.pick_reference(data, inputs.reference)
    panel = agreement.choose_panel(data, ref)
    sources = "; ".join(
        f"{k}: {v}" + (f" (= {data.merged[k]})" if k in data.merged else "")
        for k, v in data.sources.items()
    )
    intro = [f"Evaluators and sources: {sources}.", *agreement.panel_notes(data, panel)]
    pairwise = agreement.pairwise_table(data, panel)
    if len(panel.evaluators) < 2 or len(panel.items) < 3:
        report.section(
            "Judge agreement (Figure 2)",
            *intro,
            f"Fewer than 3 items are scored by {ref} and another evaluator: no common-item tables.",
            *([pairwise] if pairwise else []),
        )
        return
    corr = agreement.correlation_tables(data, panel)
    t4 = agreement.table4(data, panel)
    versus = agreement.paper_comparison(t4, corr[0])
    bins, plot = agreement.bin_tables(data, panel)
    if t4 is not None:
        report.section("Evaluators per system (Table 4)", t4, *([versus] if versus else []))
    report.section(
        "Judge agreement (Figure 2)", *intro, *corr, *([pairwise] if pairwise else []), *bins
    )
    report.figures.append(
        figures.figure2b(
            corr[0].records,
            list(panel.evaluators),
            len(panel.items),
            out / "figures" / "figure2b.png",
        )
    )
    report.figures.append(figures.figure2a(plot, ref, out / "figures" / "figure2a.png"))


#: The report's section builders, in report order. Each kind of run gets its own builder:
#: the minutes report (``report/minutes.py``) imports its builder above and appends it here.
#: A builder reads its own runs below ``ReportInputs.run_paths``, ignores folders without
#: any, and adds nothing when it finds none; the report fails only if no builder adds a
#: section. (``load_runs`` notes tasks without ELITR-Bench QA documents as skipped; a
#: builder that reports them may drop those notes from ``report.notes``.)
SECTION_BUILDERS: list[SectionBuilder] = [qa_sections, agreement_sections, minutes_sections]


def build_report(
    run_paths: Sequence[str | Path],
    out_dir: str | Path,
    *,
    judge_checks: Sequence[str | Path] = (),
    metric: str = "judge_score",
    ci: CIMethod = "cluster-t",
    n_resamples: int = 10_000,
    seed: int = 0,
    reference: str | None = None,
    builders: Sequence[SectionBuilder] | None = None,
) -> Report:
    """Build and write the report for lm-eval run dirs and/or judge-check files.

    Args:
        run_paths: lm-eval ``--output_path`` dirs (or results files) of elitr_* tasks.
        out_dir: Where to write ``report.md``, tables and figures.
        judge_checks: ``elitr-bench judge-check --output`` JSON files.
        metric: Main per-sample metric (``judge_score``; ``f1``/``rouge_l`` to force them).
        ci: ``cluster-t`` (default) or ``bootstrap``.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.
        reference: Evaluator to bin by for Fig. 2a (default Gold Human).
        builders: Section builders to run (default :data:`SECTION_BUILDERS`).

    Raises:
        ReportError: Nothing to report, or unusable input.
    """
    if not run_paths and not judge_checks:
        raise ReportError("report: give at least one RUN_DIR or --judge-check FILE")
    out = Path(out_dir)
    for path in run_paths:  # each RUN_DIR must hold a run of ours, or it was a mistake
        refusal = foreign_input(path)
        if refusal is not None:
            raise ReportError(refusal)
    loaded = load_runs(run_paths, require=False) if run_paths else LoadedRuns(runs=(), notes=())
    inputs = ReportInputs(
        run_paths=tuple(Path(p) for p in run_paths),
        judge_checks=tuple(Path(p) for p in judge_checks),
        out=out,
        runs=loaded.runs,
        metric=metric,
        ci=ci,
        n_resamples=n_resamples,
        seed=seed,
        reference=reference,
    )
    report = Report(runs=loaded.runs, notes=list(loaded.notes))
    report.options.update(
        {"metric": metric, "ci": ci, "n_resamples": n_resamples, "seed": seed, "level": 0.95}
    )
    for builder in SECTION_BUILDERS if builders is None else builders:
        builder(inputs, report)
    if not report.sections:
        raise ReportError(
            "no ELITR-Bench runs with samples found; run lm_eval with --log_samples on elitr_* "
            "tasks and pass its --output_path"
        )
    write_report(report, out, report.options)
    return report


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def _markdown(table: Table) -> list[str]:
    lines = [f"### {table.title}", ""]
    if not table.rows:
        return [*lines, "_(no data)_", ""]
    lines += markdown_table(table.columns, table.rows)
    lines.append("")
    lines += [f"_{n}_  " for n in table.notes]
    lines.append(f"Data: `tables/{table.key}.csv`")
    lines.append("")
    return lines


def write_report(report: Report, out: Path, options: Mapping[str, Any]) -> Path:
    """Write ``report.md``, ``report.json`` and the per-table CSV/JSON files."""
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for table in report.tables:
        keys: dict[str, None] = {}
        for rec in table.records:
            keys.update(dict.fromkeys(rec))
        fh = io.StringIO(newline="")
        writer = csv.DictWriter(fh, fieldnames=list(keys))
        writer.writeheader()
        for rec in table.records:
            writer.writerow({k: _cell(v) for k, v in rec.items()})
        write_atomic(out / "tables" / f"{table.key}.csv", fh.getvalue())
        write_atomic(
            out / "tables" / f"{table.key}.json",
            json.dumps(list(table.records), indent=1, default=str),
        )
    header = f"elitr-bench {__version__}"
    if report.runs:  # metric and CI apply to the QA/Conv tables only
        header += f"; metric `{options['metric']}`; CI `{options['ci']}`" + (
            f" ({options['n_resamples']} resamples, seed {options['seed']})"
            if options["ci"] == "bootstrap"
            else ""
        )
    lines = ["# ELITR-Bench report", "", header, ""]
    if report.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in report.notes] + [""]
    for heading, parts in report.sections:
        lines += [f"## {heading}", ""]
        for part in parts:
            lines += _markdown(part) if isinstance(part, Table) else [part, ""]
    if report.figures:
        lines += ["## Figures", ""]
        lines += [f"![{p.stem}](figures/{p.name})" for p in report.figures] + [""]
    path = out / "report.md"
    write_atomic(path, "\n".join(lines))
    write_atomic(
        out / "report.json",
        json.dumps(
            {
                "version": __version__,
                "options": dict(options),
                "notes": report.notes,
                "tables": {
                    t.key: {"title": t.title, "records": list(t.records), "notes": list(t.notes)}
                    for t in report.tables
                },
                "figures": [str(p) for p in report.figures],
            },
            indent=1,
            default=str,
        ),
    )
    return path
