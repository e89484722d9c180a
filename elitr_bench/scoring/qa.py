"""Second-stage judging of QA runs: what ``elitr-bench score`` does, without argparse.

It judges the responses logged by ``lm_eval --log_samples`` without loading
the generating model, so a run can be judged later, by another judge, or finished after
a judge outage: items already judged by the same judge (same identity) are kept as
they are, and only the others (status ``error`` or ``skipped``, or another judge) are
sent, so a finished run costs nothing more. What it writes follows lm-eval's rules
(:mod:`elitr_bench.scoring.rescore`): ``samples_<task>_<date>.jsonl`` per task, named as
lm-eval names samples so that its tools read them as the task, and
``results_rescored_<date>.json`` (same date), a complete results file of the re-judged
tasks and their groups as lm-eval would have written it with this judge; the
``results_rescored_`` name tells our readers that the samples of that date re-judge
another file (``rescored_from``), so a run counts once. The command itself is
:mod:`elitr_bench.cli.score`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from elitr_bench.data.run_files import (
    lm_eval_samples_below,
    new_stamp,
    parse_samples_name,
    read_json_lines,
    rescored_results_path,
    rescored_samples_path,
    rescoring_runs,
    run_results_of,
    task_of,
)
from elitr_bench.judges.batching import BatchOutcome, BatchPlan
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.metrics import (
    JUDGE_ERRORS,
    JUDGE_UNSCORED,
    SCORE_METRICS,
    judge_filter_name,
    parse_filtered,
)
from elitr_bench.judges.options import with_options
from elitr_bench.judges.qa.batching import judge_in_batches
from elitr_bench.judges.qa.engine import (
    Judge,
    JudgeItem,
    Judgement,
    check_items_fit,
    judge_items,
)
from elitr_bench.judges.qa.plan import QAPlan, plan_items
from elitr_bench.judges.rubrics import RUBRICS
from elitr_bench.judges.spec import parse_judge_spec, resolve_judge_spec
from elitr_bench.scoring.rescore import (
    JudgedTask,
    Rebuilt,
    check_tasks,
    dump,
    dump_row,
    read_run_results,
    rebuild,
)

#: Per-sample metrics the QA judge produces (never kept from the log when re-judging).
QA_JUDGE_METRICS = frozenset({*SCORE_METRICS, JUDGE_UNSCORED, JUDGE_ERRORS})
#: Fields every ELITR-Bench document (QA and minutes) carries.
_DOC_FIELDS = ("meeting_id",)


def judge_config_from_args(judge: str | None, rubric: str | None) -> JudgeConfig:
    """The judge for a command: ``--judge`` (else ``ELITR_JUDGE``/default) and ``--rubric``."""
    text = resolve_judge_spec(judge)
    if text.strip().lower() == "none":
        from elitr_bench.judges.summary.registry import method_selectors

        raise JudgeConfigError(
            "--judge none: these commands need a judge; pick e.g. --judge replay (QA runs) "
            f"or --judge openai:gpt-4o,{method_selectors()[0]} (minutes runs)"
        )
    config = parse_judge_spec(text)
    if rubric:
        if rubric not in RUBRICS:
            raise JudgeConfigError(
                f"--rubric {rubric}: unknown rubric; use one of {', '.join(RUBRICS)}"
            )
        config = with_options(config, rubric=rubric)
    return config


def find_samples(paths: Iterable[str | Path]) -> list[Path]:
    """Expand files and directories into lm-eval ``samples_*.jsonl`` files.

    A folder gives the samples lm-eval wrote (not earlier rescorings of them, nor files a
    stopped writer left cut: :func:`~elitr_bench.data.run_files.partial_files`, which the
    command names); a file named otherwise is refused, as it is no lm-eval samples file.
    """
    found: list[Path] = []
    given = [str(p) for p in paths]
    for raw in given:
        path = Path(raw)
        if path.is_dir():
            found += lm_eval_samples_below(path)
        elif path.is_file():
            if parse_samples_name(path) is None:
                raise JudgeConfigError(
                    f"score: {path} is not an lm-eval samples file (lm_eval --log_samples "
                    "writes samples_<task>_<date>.jsonl); pass those files or their folder"
                )
            found.append(path)
        else:
            raise JudgeConfigError(
                f"score: {path} does not exist; pass samples_*.jsonl files or a results dir"
            )
    if not found:
        raise JudgeConfigError(
            f"score: no samples_*.jsonl found in {', '.join(given) or 'the given paths'}; "
            "run lm_eval with --log_samples --output_path DIR and pass DIR"
        )
    return found


def response_of(sample: dict[str, Any]) -> str:
    """The response text of one logged sample (judge-filter dict, else first raw response)."""
    filtered = sample.get("filtered_resps")
    judged = parse_filtered(filtered)
    if judged is not None and "response" in judged:
        return str(judged["response"])
    entry = filtered
    while isinstance(entry, list) and entry:
        entry = entry[0]
    if isinstance(entry, str):
        return entry
    resps = sample.get("resps")
    while isinstance(resps, list) and resps:
        resps = resps[0]
    if isinstance(resps, str):
        return resps
    raise JudgeConfigError(f"score: sample doc_id={sample.get('doc_id')} has no response text")


def read_samples(path: Path) -> list[dict[str, Any]]:
    """Samples of one file, one per doc (lm-eval repeats a doc once per filter)."""
    seen: set[Any] = set()
    out = []
    for number, sample in read_json_lines(
        path, "is this an lm-eval samples file?", JudgeConfigError
    ):
        if not isinstance(sample, dict) or not isinstance(sample.get("doc"), dict):
            raise JudgeConfigError(
                f"score: {path}:{number} has no 'doc'; is this an lm-eval samples file?"
            )
        missing = [f for f in _DOC_FIELDS if f not in sample["doc"]]
        if missing:
            raise JudgeConfigError(
                f"score: {path}:{number} is no ELITR-Bench sample (its doc has no "
                f"{missing[0]!r}); score judges the samples of elitr_* and automin23_en tasks"
            )
        key = sample.get("doc_id", number)
        if key in seen:
            continue
        seen.add(key)
        out.append(sample)
    if not out:
        raise JudgeConfigError(
            f"score: {path} holds no samples (empty file); re-run lm_eval with --log_samples "
            "or leave this file out"
        )
    return out


#: Statuses that are a judge's final word on an item (kept when the judge is the same).
_FINAL = ("scored", "unscored")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def reusable_judgement(sample: dict[str, Any], identity: dict[str, Any]) -> Judgement | None:
    """The logged judgement of a sample if this judge already gave its final word on it."""
    judged = parse_filtered(sample.get("filtered_resps"))
    judge = judged.get("judge") if judged is not None else None
    if not isinstance(judge, dict) or judge.get("status") not in _FINAL:
        return None
    if _canonical(judge.get("identity")) != _canonical(identity):
        return None
    return Judgement.from_dict(judge)


def spec_of(config: JudgeConfig) -> str:
    """The judge as ``--metadata judge=`` takes it (a ``--rubric`` override included)."""
    spec = config.spec or config.backend
    if parse_judge_spec(spec).rubric != config.rubric:
        spec += f",rubric={config.rubric}"
    return spec


def write_rescoring(
    rebuilt: Rebuilt, judged: list[JudgedTask], stamp: str, output: Path | None
) -> Path:
    """Write the rescored samples and results; returns the results file.

    The samples get lm-eval's own name (``samples_<task>_<stamp>.jsonl``) next to the
    samples they re-judge; the results go beside them as ``results_rescored_<stamp>.json``
    (the mark our readers know a rescoring by) and, with ``--output``, to that file too.
    Every file is written whole to a temp file first and renamed into place only when all
    were written, the results last: a full disk leaves the folder as it was (one line),
    never a cut samples file under lm-eval's name.
    """
    files: list[tuple[Path, str]] = [
        (
            rescored_samples_path(item.source, item.task, stamp),
            "".join(dump_row(row) + "\n" for row in rebuilt.rows[item.task]),
        )
        for item in judged
    ]
    text = dump(rebuilt.results)
    beside = rescored_results_path(judged[0].source, stamp)
    files.append((beside, text))
    target = beside
    if output is not None and output.resolve() != beside.resolve():
        output.parent.mkdir(parents=True, exist_ok=True)
        files.append((output, text))
        target = output
    staged = _stage(files)
    for path, temp in staged:
        os.replace(temp, path)
    return target


def _stage(files: list[tuple[Path, str]]) -> list[tuple[Path, Path]]:
    """Write each text to a temp file beside its target (all or none); target -> temp."""
    from elitr_bench.data.folder import stage_text

    staged: list[tuple[Path, Path]] = []
    try:
        for path, text in files:
            staged.append((path, stage_text(path, text)))
    except BaseException:
        for _, temp in staged:
            temp.unlink(missing_ok=True)
        raise
    return staged


def _score_run(
    files: list[Path],
    config: JudgeConfig,
    stamp: str,
    output: Path | None,
    judge: Judge | None,
    include_path: Sequence[str] = (),
    batch: BatchPlan | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Judge the samples files of one lm-eval run; write its rescored files.

    Raises:
        BatchParked: The judging waits for batches (``--no-wait``, ``--batch-write``):
            nothing is written yet.
    """
    from elitr_bench.judges.filtering import judged_json

    identity: dict[str, Any] = config.identity()
    usage: dict[str, Any] = {}
    judged: list[JudgedTask] = []
    errors = 0
    tasks = {task_of(path): path for path in files}
    check_tasks(tasks, include_path=include_path)  # before any judge call is paid
    prepared = []
    for path in files:
        samples = read_samples(path)
        items = [JudgeItem.from_doc(s["doc"], response_of(s)) for s in samples]
        judgements: list[Judgement | None] = [reusable_judgement(s, identity) for s in samples]
        todo = [i for i, j in enumerate(judgements) if j is None]
        prepared.append((path, samples, items, judgements, todo))
    batched = None
    if batch is not None or config.batch:
        groups = [
            (f"score {task_of(p)}", [items[i] for i in todo]) for p, _, items, _, todo in prepared
        ]
        batched = judge_in_batches(groups, config, batch or BatchPlan())
        if batched.parked:
            raise BatchParked(batched)
    for n, (path, samples, items, judgements, todo) in enumerate(prepared):
        task = task_of(path)
        sent = [items[i] for i in todo]
        if batched is not None:
            run = batched.runs[n]
        else:
            run = judge_items(sent, config, judge=judge, desc=f"score {task}", on_error="record")
        for i, judgement in zip(todo, run.judgements, strict=True):
            judgements[i] = judgement
        final = [j for j in judgements if j is not None]
        errors += sum(j.status == "error" for j in final)
        usage[task] = {**run.usage, "judged_now": len(todo), "kept": len(samples) - len(todo)}
        if config.is_llm:  # the plan printed before the run (the command's preview)
            usage[task]["plan"] = plan_items(sent, config).to_dict()
        filtered = tuple(
            [judged_json(item.response, {**j.to_dict(), "identity": identity})]
            for item, j in zip(items, final, strict=True)
        )
        judged.append(JudgedTask(task, path, tuple(samples), filtered))
    rebuilt = rebuild(
        read_run_results(run_results_of(files[0])),
        judged,
        judge_spec=spec_of(config),
        identity=identity,
        filter_name=judge_filter_name(identity),
        judge_keys=QA_JUDGE_METRICS,
        usage=usage,
        include_path=include_path,
    )
    payload = rescoring_payload(rebuilt, judged, identity, usage, stamp)
    payload["judge_errors"] = errors
    return write_rescoring(rebuilt, judged, stamp, output), payload


class BatchParked(Exception):
    """Judging waits for batches: submitted and left running, or written to a file.

    Attributes:
        outcome: The batch ids submitted, or the input files written.
    """

    def __init__(self, outcome: BatchOutcome[Any]) -> None:
        super().__init__("judging waits for batches")
        self.outcome = outcome


def score_runs(
    paths: Iterable[str | Path],
    config: JudgeConfig,
    output: Path | None = None,
    judge: Judge | None = None,
    include_path: Sequence[str] = (),
    batch: BatchPlan | None = None,
) -> list[tuple[Path, dict[str, Any]]]:
    """Judge logged samples; one results file (and rescored samples) per lm-eval run.

    A run is the samples files lm-eval wrote together (one folder, one date stamp); its
    ``results_rescored_<date>.json`` is that run's results file as lm-eval would have
    written it with this judge. Items this judge already judged (same identity, status
    scored/unscored) are kept; only the rest is sent. Failed items get status ``error``
    (``judge_errors`` counts them) and the files are written anyway, so a second call
    finishes the job.

    ``include_path``: folders of tasks outside our package, as ``lm_eval --include_path``
    took them (lm-eval rebuilds the results through the tasks).

    ``batch``: judge through batches (:mod:`elitr_bench.judges.qa.batching`); a judge
    with ``batch=on`` does so through its endpoint's Batch API without it.

    Raises:
        JudgeConfigError: ``output`` names one file but the samples come from several runs.
    """
    return [
        _score_run(files, config, stamp, output, judge, include_path, batch)
        for stamp, files in runs_to_rescore(paths, output)
    ]


def runs_to_rescore(
    paths: Iterable[str | Path], output: Path | None
) -> list[tuple[str, list[Path]]]:
    """The lm-eval runs under ``paths``, each with the stamp of its rescoring.

    See :func:`~elitr_bench.data.run_files.rescoring_runs` for the names.

    Raises:
        JudgeConfigError: ``output`` names one file but the samples come from several runs.
    """
    runs = rescoring_runs(find_samples(paths), new_stamp())
    if output is not None and len(runs) > 1:
        raise JudgeConfigError(
            f"score: --output names one file but the samples come from {len(runs)} runs; "
            "drop --output (each run gets its own results_rescored_<date>.json)"
        )
    return runs


def rescoring_payload(
    rebuilt: Rebuilt,
    judged: Sequence[JudgedTask],
    identity: dict[str, Any],
    usage: dict[str, Any],
    stamp: str,
) -> dict[str, Any]:
    """The results file of a rescoring: lm-eval's, with the judge, its usage and sources."""
    payload = rebuilt.results
    payload["judge"] = identity
    payload["judge_usage"] = usage
    payload["rescored_from"] = {item.task: str(item.source) for item in judged}
    payload["rescored_date"] = stamp
    if rebuilt.notes:
        payload["rescore_notes"] = rebuilt.notes
    return payload


def score_samples(
    paths: Iterable[str | Path],
    config: JudgeConfig,
    output: Path | None = None,
    judge: Judge | None = None,
) -> tuple[Path, dict[str, Any]]:
    """:func:`score_runs` for callers that expect one run: its results path and content."""
    return score_runs(paths, config, output, judge)[0]


def split_by_kind(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """Samples files of QA tasks and of minutes tasks (``make demo`` writes both).

    A minutes task is known by its documents (:func:`~elitr_bench.data.minutes.holds_minutes`),
    so one from an ``--include_path`` folder is split like ours.
    """
    from elitr_bench.data.minutes import holds_minutes

    minutes = [f for f in files if holds_minutes(f)]
    return [f for f in files if f not in minutes], minutes


def model_of(samples: Path) -> str:
    """The ``--model`` of the lm-eval run that wrote a samples file ("" if unknown)."""
    from elitr_bench.data.minutes import run_results

    config = run_results(samples).get("config")
    return str(config.get("model") or "") if isinstance(config, dict) else ""


def generated_runs(files: list[Path]) -> list[Path]:
    """Samples files whose answers a model generated (replay has no scores for them).

    A file whose run cannot be told (no lm-eval results file next to it) is not counted.
    """
    return [f for f in files if model_of(f) not in ("elitr-replay", "")]


def tasks_of(files: list[Path]) -> str:
    """The task names of samples files, for messages (``a, b``)."""
    return ", ".join(sorted({task_of(f) for f in files}))


def items_to_judge(path: Path, config: JudgeConfig) -> list[JudgeItem]:
    """The answers of a samples file that ``score`` will send (not already judged by it)."""
    identity = config.identity()
    return [
        JudgeItem.from_doc(s["doc"], response_of(s))
        for s in read_samples(path)
        if reusable_judgement(s, identity) is None
    ]


def check_qa_fit(files: list[Path], config: JudgeConfig) -> None:
    """Stop before any request when an answer still to judge has a prompt over the window.

    Raises:
        ContextWindowError: One line naming the items, their tokens and the way out.
    """
    items = [item for path in files for item in items_to_judge(path, config)]
    check_items_fit(items, config, "score")


def plan_qa_files(files: list[Path], config: JudgeConfig) -> list[tuple[str, QAPlan]]:
    """Per samples file, its task and the plan of judging what ``score`` will send.

    The answers this judge already judged are kept, not sent, so they are not counted.
    """
    return [(task_of(path), plan_items(items_to_judge(path, config), config)) for path in files]
