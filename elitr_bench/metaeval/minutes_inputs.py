"""Inputs of ``minutes-check`` and the minutes report: metric values per system and meeting.

Three sources, merged into one ``metric -> (system, meeting) -> value`` table:

* metrics computed here on AutoMin's released minutes (ROUGE through the minutes task's
  own :func:`~elitr_bench.tasks.minutes_metrics.rouge_scores`, optionally BERTScore and
  BARTScore);
* our lm-eval runs of a minutes task (``--log_samples`` output): every numeric per-sample
  metric and every judge score in the logged assessment. A run of the ``elitr-replay``
  model on ``automin23_en`` replays a released system's minutes, so its values count for
  that system (and meet its human scores); any other model is a system of its own, named
  after the run;
* ``--metric-file``: CSV ``system,meeting_id,metric,value`` (empty meeting = system level)
  or JSONL with ``system``, ``meeting_id`` and numeric fields (MESA's output), as the
  minutes contract fixes. An empty value (CSV ``""``/``nan``, JSON ``null``) is missing. A
  metric whose values are all equal or all missing cannot order systems (e.g. the Elo 1000
  of every system of an arena whose comparisons all failed): it is left out with a note,
  and a file with no other metric is refused (:func:`usable_metric_values`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elitr_bench.data.errors import DataError
from elitr_bench.data.minutes import (
    minutes_samples_files,
    run_results,
    run_system_name,
)
from elitr_bench.data.run_files import (
    parse_samples_name,
    read_json_lines,
    read_results_file,
    results_file_of,
    task_of,
)
from elitr_bench.judges.minutes.family import TOKENS_SAVED
from elitr_bench.judges.summary.lm_eval_filter import assessment_of

#: Per-sample keys of a minutes task that are bookkeeping, not quality metrics.
NON_METRICS = frozenset(
    {
        "overlength_skipped",
        "overlength_truncated",
        "sections",
        "prompt_tokens",
        "judge_unscored",
        "judge_errors",
        "effective_wer",
    }
)
#: Numeric fields of a JSONL metric file that describe the judgement, not the summary (MESA's
#: per-type ``confidence`` and ``instances``): as "metrics" they would fill Tables 7 and 9
#: with 16 columns that no human score is meant to match.
JUDGEMENT_FIELDS = frozenset({"confidence", "instances"})
RELEASED_METRICS: tuple[str, ...] = ("rouge1", "rouge2", "rougeL", "bertscore_f1", "bartscore")

Values = dict[str, dict[tuple[str, str], float]]


@dataclass
class RunValues:
    """What one lm-eval run of a minutes task contributes.

    Attributes:
        name: System name its values are filed under (replayed system or run name).
        path: Where it was read from.
        model: lm-eval model type.
        judge: The judge identity logged in the results file (``{}`` if none).
        values: metric -> (system, meeting) -> value.
        filler: meeting -> filler-compression stats of the judge (if it compressed).
        statuses: assessment status -> count.
        tasks: Tasks read (from the samples file names).
        usage: The judge's usage and cost as logged in the results file (``{}`` if none).
        notes: Files left out because ``elitr-bench score`` re-judged them later.
    """

    name: str
    path: str
    model: str = ""
    judge: dict[str, Any] = field(default_factory=dict)
    values: Values = field(default_factory=dict)
    filler: dict[str, dict[str, Any]] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    tasks: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def merge_values(
    target: Values, source: Mapping[str, Mapping[tuple[str, str], float]], origin: str
) -> None:
    """Add ``source`` into ``target``; a different value for the same cell is an error.

    Raises:
        DataError: Two inputs give one (metric, system, meeting) different values.
    """
    for metric, cells in source.items():
        table = target.setdefault(metric, {})
        for key, value in cells.items():
            old = table.get(key)
            if old is not None and abs(old - value) > 1e-9:
                raise DataError(
                    f"{origin}: {metric} of {key[0]}/{key[1] or 'system'} is {value:g}, another "
                    f"input gave {old:g}; label runs (--run DIR:LABEL) to keep both"
                )
            table[key] = value


def released_metric_values(
    metrics: Sequence[str] = ("rouge1", "rouge2", "rougeL"),
    systems: Sequence[str] | None = None,
    meetings: Sequence[str] | None = None,
) -> Values:
    """Reference metrics of AutoMin's released minutes (the human reference is skipped).

    Raises:
        DataError: Unknown metric. MetricUnavailableError: BERTScore/BARTScore model missing.
    """
    from elitr_bench.data.minutes import (
        AUTOMIN_REFERENCE,
        load_automin_meetings,
        load_automin_minutes,
    )
    from elitr_bench.tasks import minutes_metrics as mm

    unknown = [m for m in metrics if m not in RELEASED_METRICS]
    if unknown:
        raise DataError(
            f"--metrics {','.join(unknown)}: not computable on released minutes; use "
            f"{', '.join(RELEASED_METRICS)} (other metrics come from --run or --metric-file)"
        )
    refs = {m.meeting_id: [r.text for r in m.references] for m in load_automin_meetings(meetings)}
    chosen = [s for s in (systems or ()) if s != AUTOMIN_REFERENCE] or None
    out: Values = {m: {} for m in metrics}
    rouge = [m for m in metrics if m in mm.ROUGE_TYPES]
    minutes = [
        m
        for m in load_automin_minutes(chosen, meetings)
        if m.system != AUTOMIN_REFERENCE and m.meeting_id in refs
    ]
    try:
        from tqdm.auto import tqdm

        iterator: Iterable[Any] = tqdm(minutes, desc="released minutes", leave=False)
    except ImportError:  # pragma: no cover
        iterator = minutes
    for item in iterator:
        key = (item.system, item.meeting_id)
        references = refs[item.meeting_id]
        if rouge:
            scores = mm.rouge_scores(item.text, references)
            for name in rouge:
                out[name][key] = float(scores[name])
        if "bertscore_f1" in metrics:
            out["bertscore_f1"][key] = float(mm.bertscore_f1(item.text, references))
        if "bartscore" in metrics:
            out["bartscore"][key] = float(mm.bartscore(item.text, references))
    return out


def _samples_files(path: Path) -> tuple[list[Path], list[str]]:
    """The minutes samples files of a ``--run`` (other tasks' samples are set aside), notes."""
    try:
        return minutes_samples_files(path)
    except DataError as exc:
        raise DataError(f"--run {exc}") from None


def read_run(path: str | Path, label: str = "") -> RunValues:
    """Metric values of one lm-eval run of a minutes task.

    Args:
        path: Output folder (searched recursively) or one samples file.
        label: Appended to every metric name as ``metric@label`` (to compare judges).

    Raises:
        DataError: Missing/unreadable samples, or a sample that is not a minutes sample.
    """
    root = Path(path).expanduser()
    files, notes = _samples_files(root)
    run = RunValues(name="", path=str(root), notes=notes)
    for samples in files:
        results = run_results(samples)
        name = run_system_name(results, samples.parent.name)
        if run.name and name != run.name:
            raise DataError(
                f"--run {root}: holds runs of {run.name} and {name}; pass each run folder "
                "separately"
            )
        run.name = name
        config = results.get("config") if isinstance(results.get("config"), Mapping) else {}
        run.model = str((config or {}).get("model", ""))
        parsed = parse_samples_name(samples)
        task = task_of(samples)
        if task not in run.tasks:
            run.tasks.append(task)
        rescoring = results_file_of(samples) if parsed and parsed.rescored else None
        _read_judge(run, results, rescoring, task)
        seen: set[Any] = set()
        for lineno, sample in read_json_lines(samples, "is this an lm-eval samples file?"):
            where = f"{samples}:{lineno}"
            doc = sample.get("doc") if isinstance(sample, Mapping) else None
            meeting = doc.get("meeting_id") if isinstance(doc, Mapping) else None
            if not isinstance(meeting, str):
                raise DataError(
                    f"{where}: no doc.meeting_id; pass runs of automin23_en / elitr_minutes_*"
                )
            if sample.get("doc_id", lineno) in seen:
                continue
            seen.add(sample.get("doc_id", lineno))
            key = (name, meeting)
            cells: dict[str, float] = {}
            for metric in sample.get("metrics") or []:
                value = _finite(sample.get(metric))
                if value is not None and metric not in NON_METRICS:
                    cells[metric] = value
            found = assessment_of(sample.get("filtered_resps"))
            if found is not None:
                assessment = found[1]
                run.statuses[assessment.status] = run.statuses.get(assessment.status, 0) + 1
                cells.update(assessment.scored())
                filler = assessment.details.get("filler")
                if isinstance(filler, Mapping):
                    run.filler[meeting] = dict(filler)
            cells.pop(TOKENS_SAVED, None)
            for metric, value in cells.items():
                named = f"{metric}@{label}" if label else metric
                run.values.setdefault(named, {})[key] = value
    return run


def _read_judge(
    run: RunValues, results: Mapping[str, Any], rescoring: Path | None, task: str
) -> None:
    """Set the run's judge identity and usage: the task's, else ``elitr-bench score``'s."""
    for task_cfg in (results.get("configs") or {}).values():
        metadata = task_cfg.get("metadata") or {}
        identity = metadata.get("judge_identity")
        if isinstance(identity, Mapping) and identity.get("backend") != "none":
            run.judge = dict(identity)
        if isinstance(metadata.get("judge_usage"), Mapping):
            run.usage = dict(metadata["judge_usage"])
    if rescoring is not None:  # the judge of ``elitr-bench score``, not of the run
        rescored = read_results_file(rescoring)
        if isinstance(rescored.get("judge"), Mapping):
            run.judge = dict(rescored["judge"])
        usage = (rescored.get("judge_usage") or {}).get(task)
        if isinstance(usage, Mapping):
            run.usage = dict(usage)


def _flatten(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects as dotted names (``types: {OM: {rating: 2}}`` -> ``types.OM.rating``)."""
    out: dict[str, Any] = {}
    for name, value in obj.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def read_metric_file(path: str | Path) -> Values:
    """A ``--metric-file``: CSV ``system,meeting_id,metric,value`` or JSONL (see module doc).

    Raises:
        DataError: Missing file, wrong header, non-numeric value, or a JSONL line without
            ``system``.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise DataError(f"--metric-file {file}: no such file")
    out: Values = {}
    if file.suffix.lower() == ".csv":
        with file.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            need = {"system", "meeting_id", "metric", "value"}
            if not need <= set(reader.fieldnames or ()):
                raise DataError(
                    f"--metric-file {file}: header must be system,meeting_id,metric,value "
                    f"(got {','.join(reader.fieldnames or ())})"
                )
            for lineno, row in enumerate(reader, 2):
                if any(row.get(k) is None for k in need) or None in row:
                    raise DataError(
                        f"--metric-file {file}:{lineno}: expected 4 comma-separated fields "
                        "system,meeting_id,metric,value (leave meeting_id empty, not out)"
                    )
                cells = out.setdefault(row["metric"].strip(), {})
                if row["value"].strip().lower() in _MISSING:
                    continue
                try:
                    value = float(row["value"])
                except (TypeError, ValueError):
                    raise DataError(
                        f"--metric-file {file}:{lineno}: value {row['value']!r} is not a number"
                    ) from None
                if math.isfinite(value):
                    cells[(row["system"].strip(), (row["meeting_id"] or "").strip())] = value
        return out
    fix = "use a .csv (system,meeting_id,metric,value) or JSONL file as --metric-file"
    for lineno, obj in read_json_lines(file, fix):
        if not isinstance(obj, Mapping) or not obj.get("system"):
            raise DataError(f"--metric-file {file}:{lineno}: object without 'system'")
        key = (str(obj["system"]), str(obj.get("meeting_id") or ""))
        for name, raw in _flatten(obj).items():
            if name in ("system", "meeting_id") or name.rpartition(".")[2] in JUDGEMENT_FIELDS:
                continue
            number = _finite(raw)
            if number is not None:
                out.setdefault(str(name), {})[key] = number
            elif raw is None:  # unscored: missing, and named if it is missing everywhere
                out.setdefault(str(name), {})
    return out


_MISSING = frozenset({"", "nan", "none", "null", "na", "n/a"})


def usable_metric_values(values: Values, origin: str) -> tuple[Values, list[str]]:
    """The metrics of a ``--metric-file`` that can order systems, and notes on the others.

    A metric whose values are all missing, or all equal (two values or more), gives every
    system pair a tie: its pairwise accuracy would count ties against the humans' order
    and its correlations are undefined, so it is left out, with a note naming it.

    Args:
        values: What :func:`read_metric_file` read.
        origin: How to name the file in messages (``--metric-file PATH``).

    Returns:
        The usable metrics' values and one note per left-out metric.

    Raises:
        DataError: No metric of the file is usable (one line naming the file and metrics).
    """
    problems: dict[str, str] = {}
    for metric, cells in values.items():
        distinct = {round(v, 9) for v in cells.values()}
        if not cells:
            problems[metric] = f"{metric} has no value"
        elif len(cells) > 1 and len(distinct) == 1:
            problems[metric] = (
                f"{metric} is {next(iter(cells.values())):g} in all {len(cells)} rows"
            )
    usable = {m: dict(c) for m, c in values.items() if m not in problems}
    if not problems:
        return usable, []
    if not usable:
        named = list(problems.values())
        more = f" and {len(named) - 4} more" if len(named) > 4 else ""
        raise DataError(
            f"{origin}: no metric can order the systems ({'; '.join(named[:4])}{more}): "
            "pairwise accuracy over ties means nothing; was every judgement of the run that "
            "wrote it unscored? Re-run it, or leave this file out"
        )
    return usable, [
        f"{origin}: {reason}, so it cannot order systems; left out" for reason in problems.values()
    ]


def check_metric_file_keys(values: Values, origin: str) -> list[str]:
    """Make sure a ``--metric-file`` names AutoMin systems and meetings, as its rows must.

    Only the released AutoMin 2023 systems have human scores, so rows of other systems
    cannot be meta-evaluated, and a misspelt meeting id would silently drop values from
    every statistic. A file without any AutoMin system (e.g. display names such as
    ``GPT-4`` for ``gpt4``) is therefore refused, as is a meeting id that is not an
    AutoMin test meeting; rows of other systems in an otherwise valid file are noted.

    Args:
        values: What :func:`read_metric_file` read.
        origin: How to name the file in messages (``--metric-file PATH``).

    Returns:
        Notes naming the systems whose rows have no human scores to meet.

    Raises:
        DataError: No AutoMin system in the file, or an unknown meeting id.
    """
    from elitr_bench.data.minutes import AUTOMIN_MEETINGS, AUTOMIN_SYSTEMS

    keys = {key for cells in values.values() for key in cells}
    systems = sorted({system for system, _ in keys})
    if keys and not any(system in AUTOMIN_SYSTEMS for system in systems):
        raise DataError(
            f"{origin}: no row names an AutoMin system (got {', '.join(systems[:5])}); "
            f"use the ids {', '.join(AUTOMIN_SYSTEMS)}"
        )
    for system, meeting in sorted(keys):
        if meeting and meeting not in AUTOMIN_MEETINGS and system in AUTOMIN_SYSTEMS:
            raise DataError(
                f"{origin}: meeting_id {meeting!r} (system {system}) is not an AutoMin 2023 "
                f"test meeting; use {AUTOMIN_MEETINGS[0]} .. {AUTOMIN_MEETINGS[-1]}, or leave "
                "it empty for a system-level value"
            )
    others = [s for s in systems if s not in AUTOMIN_SYSTEMS]
    if not others:
        return []
    return [f"{origin}: rows of {', '.join(others)} have no AutoMin human scores to compare"]
