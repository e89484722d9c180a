"""Read lm-eval output directories into typed per-task runs.

lm-eval 0.4 writes ``<output_path>/<model>/results_<ts>.json`` plus one
``samples_<task>_<ts>.jsonl`` per task when ``--log_samples`` is on. A report needs the
samples (per-question scores, meetings, question types, judge identities), so one
:class:`TaskRun` is one task of one results file together with its samples file.
Everything the tables group by (setting, mode, split, noise level) is read from the
documents themselves, so renamed or new tasks report correctly as long as their
documents carry the ELITR-Bench fields.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from elitr_bench.data.minutes import MINUTES_KIND, MINUTES_TASKS, holds_minutes
from elitr_bench.data.run_files import (
    families,
    first_doc,
    partial_notes,
    read_json_lines,
    read_results_file,
    rescored_sources,
    results_files_below,
    results_payload,
    run_results_of,
    samples_file_of,
    stamp_of,
    supersede_note,
)
from elitr_bench.judges.metrics import parse_filtered
from elitr_bench.report.errors import ReportError

#: Per-sample metrics a report can use; judge_score first because it is the paper's score.
METRICS: tuple[str, ...] = ("judge_score", "f1", "rouge_l")
#: Scores of other scorers that the report shows in its judge column, labelled with the
#: scorer (the results files keep them apart: ``lexical_score`` is no judge score).
_SCORE_ALIASES = {"lexical_score": "judge_score"}

#: Keys of ``model_args`` that pick the model (lm-eval's own order, see
#: ``GeneralConfigTracker._get_model_name``); the first present one names the row.
_NAME_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")
#: Arguments that vary between seeded runs of one model and so must not split a row.
_SEED_KEYS = frozenset({"seed", "random_seed"})
_DOC_FIELDS = ("meeting_id", "question_id")
#: ``rag_budget`` of a retrieval task run without the option (``TaskOptions``' default).
DEFAULT_RAG_BUDGET = 2048


def is_our_task(task: str) -> bool:
    """Whether an lm-eval task is one of ours (every ELITR task is ``elitr_*``; AutoMin's)."""
    return task.startswith("elitr_") or task in MINUTES_TASKS


def read_samples(path: Path, task: str) -> Iterator[tuple[int, Any]]:
    """The decoded lines of a samples file, with their line numbers.

    A report built from part of a run would be a wrong number that looks right, so a
    file that stops mid-line or holds no sample at all is refused, naming the file.

    Raises:
        ReportError: A line is not JSON (truncated or corrupt file), or the file is empty.
    """
    seen = 0
    for number, line in read_json_lines(
        path, "the file is truncated or corrupt, re-run the task", ReportError
    ):
        seen += 1
        yield number, line
    if not seen:
        raise ReportError(
            f"{path}: empty samples file (no sample of task {task}; the run stopped before "
            f"writing them?); re-run the task with --log_samples, or move the file out of "
            f"{path.parent}"
        )


@dataclass(frozen=True)
class ModelId:
    """Which model produced a run, independent of its seed.

    Attributes:
        model: lm-eval model type (``hf``, ``elitr-replay``, ...).
        args: Sorted ``model_args`` without seed arguments.
        label: Short display name (replayed system or checkpoint basename).
    """

    model: str
    args: tuple[tuple[str, str], ...]
    label: str


@dataclass(frozen=True)
class JudgeId:
    """Which judge scored a sample; seeds are left out so seeded runs group together.

    Attributes:
        key: Canonical JSON of the identity without seeds (the grouping key).
        label: Short display name, e.g. ``openai:gpt-4-0613/gpt4-rubric``.
        identity: The identity as logged in the samples file.
    """

    key: str
    label: str
    identity: Mapping[str, Any] = field(compare=False, hash=False)


UNKNOWN_JUDGE = JudgeId(key="unknown", label="unknown judge (identity not logged)", identity={})


@dataclass(frozen=True)
class Sample:
    """One scored (or unscored) answer of a run, with the fields the tables need."""

    meeting_id: str
    question_id: str
    split: str
    setting: str
    mode: str
    question_type: str
    answer_position: str
    question: str
    response: str
    scores: Mapping[str, float]
    judge_status: str
    judge: JudgeId | None
    target_wer: float | None = None
    effective_wer: float | None = None
    noise_seed: str | None = None
    language: str = "en"
    transcript_tokens: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        """``(meeting_id, question_id)``: the question this sample answers."""
        return (self.meeting_id, self.question_id)


@dataclass(frozen=True)
class TaskRun:
    """One task of one lm-eval results file, with its samples.

    Attributes:
        run_id: Short id used in every table (``R1``, ``R2``, ...), listed in the report.
        task: lm-eval task name.
        results_path: The ``results_*.json`` file.
        samples_path: The ``samples_<task>_*.jsonl`` file.
        model: Model identity without seed.
        seeds: Every seed the run used (lm-eval seeds, generation seed, judge seed,
            noise seed), for the runs table and Table 9.
        samples: The samples, in file order.
        reported: Metrics as lm-eval aggregated them in the results file.
        n_logged: Effective sample count from the results file's ``n-samples``.
        context_budget: ``--metadata context_budget`` (transcript tokens), None for
            the whole transcript.
        rag_budget: Transcript tokens of the retrieved passages (retrieval tasks only).
        window: The model's context window the task saw (None when not recorded, as for
            API models and runs older than the score-versus-context curve).
    """

    run_id: str
    task: str
    results_path: Path
    samples_path: Path
    model: ModelId
    seeds: Mapping[str, str]
    samples: tuple[Sample, ...]
    reported: Mapping[str, float]
    n_logged: int | None = None
    context_budget: int | None = None
    rag_budget: int | None = None
    window: int | None = None

    @property
    def is_full_context(self) -> bool:
        """Whether the prompts held the whole transcript (no budget, no retrieval)."""
        return self.context_budget is None and self.rag_budget is None

    @property
    def context_label(self) -> str:
        """``full``, ``budget N`` or ``BM25 N``: what of the transcript the prompts held."""
        if self.rag_budget is not None:
            return f"BM25 {self.rag_budget}"
        if self.context_budget is not None:
            return f"budget {self.context_budget}"
        return "full"

    def _only(self, name: str) -> Any:
        values = {getattr(s, name) for s in self.samples}
        return values.pop() if len(values) == 1 else None

    @property
    def split(self) -> str:
        """``dev`` or ``test2`` (``mixed`` if the documents disagree)."""
        return self._only("split") or "mixed"

    @property
    def language(self) -> str:
        """The questions' language (``en``, or ``cs`` for the Czech tasks)."""
        return self._only("language") or "mixed"

    @property
    def setting(self) -> str:
        """``qa`` or ``conv``."""
        return self._only("setting") or "mixed"

    @property
    def mode(self) -> str:
        """``st`` or ``mt``."""
        return self._only("mode") or "mixed"

    @property
    def target_wer(self) -> float | None:
        """Target WER of a noisy run; None (or 0) for the clean transcripts."""
        value = self._only("target_wer")
        return None if value is None else float(value)

    @property
    def is_clean(self) -> bool:
        """Whether the run used the manual (clean) transcripts."""
        return not self.target_wer

    @property
    def effective_wer(self) -> float | None:
        """Mean over meetings of the achieved WER (each meeting counted once)."""
        per_meeting = {
            s.meeting_id: s.effective_wer for s in self.samples if s.effective_wer is not None
        }
        if not per_meeting:
            return None
        return sum(per_meeting.values()) / len(per_meeting)

    @property
    def kept_tokens(self) -> float | None:
        """Transcript tokens the prompts held, mean over meetings (None: not recorded).

        What a budget's cut kept (``transcript_tokens``) or the retrieved passages'
        tokens (``rag_tokens``); a meeting's questions are averaged first, so every
        meeting counts once.
        """
        per_meeting: dict[str, list[float]] = {}
        for s in self.samples:
            if s.transcript_tokens is not None:
                per_meeting.setdefault(s.meeting_id, []).append(s.transcript_tokens)
        if not per_meeting:
            return None
        return math.fsum(math.fsum(v) / len(v) for v in per_meeting.values()) / len(per_meeting)

    @property
    def judge(self) -> JudgeId | None:
        """The judge of the run's judge scores (most frequent if several)."""
        judges = Counter(s.judge for s in self.samples if s.judge is not None)
        return judges.most_common(1)[0][0] if judges else None

    @property
    def judges(self) -> tuple[JudgeId, ...]:
        """Every judge identity seen in the samples."""
        return tuple(dict.fromkeys(s.judge for s in self.samples if s.judge is not None))

    @property
    def seed_label(self) -> str:
        """``key=value`` list of the run's seeds."""
        return " ".join(f"{k}={v}" for k, v in self.seeds.items()) or "-"

    def values(self, metric: str) -> list[float]:
        """The metric's per-sample values (judge_score: scored samples only)."""
        return [s.scores[metric] for s in self.samples if metric in s.scores]

    def count(self, status: str) -> int:
        """Samples whose judgement has ``status`` (``scored``, ``unscored``, ``skipped``)."""
        return sum(s.judge_status == status for s in self.samples)

    def mean(self, metric: str) -> float | None:
        """Mean of the metric over samples that have it."""
        values = self.values(metric)
        return math.fsum(values) / len(values) if values else None

    def has(self, metric: str) -> bool:
        """Whether any sample has the metric."""
        return any(metric in s.scores for s in self.samples)


# ------------------------------------------------------------------ parsing helpers
def parse_args_string(value: Any) -> dict[str, str]:
    """``model_args``/``gen_kwargs`` as a dict, whether logged as a dict or ``k=v,k=v``."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if not value:
        return {}
    out: dict[str, str] = {}
    for part in str(value).split(","):
        if "=" in part:
            key, _, val = part.partition("=")
            out[key.strip()] = val.strip()
    return out


def _strip_seeds(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {k: _strip_seeds(v) for k, v in obj.items() if k not in _SEED_KEYS}
    return obj


def judge_id(identity: Mapping[str, Any] | None) -> JudgeId:
    """Group key and label of a logged judge identity (seeds removed from the key)."""
    if not identity:
        return UNKNOWN_JUDGE
    key = json.dumps(_strip_seeds(identity), sort_keys=True, default=str)
    backend = str(identity.get("backend", "?"))
    model = str(identity.get("model") or "")
    rubric = str(identity.get("rubric") or "")
    label = f"{backend}:{model}" if model else backend
    if rubric:
        label += f"/{rubric}"
    sampling = identity.get("sampling")
    if isinstance(sampling, Mapping) and int(sampling.get("samples", 1) or 1) > 1:
        label += f" (k={sampling['samples']})"
    return JudgeId(key=key, label=label, identity=dict(identity))


@functools.lru_cache(maxsize=64)
def _replay_label(system: str) -> str:
    try:
        from elitr_bench.models.replay import all_systems, canonical_system

        return canonical_system(system, all_systems())
    except Exception:
        return system


def model_id(config: Mapping[str, Any]) -> ModelId:
    """Seed-free model identity and display label from a results file's ``config``."""
    model = str(config.get("model", "?"))
    args = parse_args_string(config.get("model_args"))
    if model == "elitr-replay":  # `model` is the run name the replay records (same system)
        args = {k: v for k, v in args.items() if k != "model"}
    kept = tuple(sorted((k, v) for k, v in args.items() if k not in _SEED_KEYS))
    if model == "elitr-replay":
        label = _replay_label(args.get("system", "gpt-4"))
    else:
        name = next((args[k] for k in _NAME_KEYS if args.get(k)), model)
        label = name.rstrip("/").rsplit("/", 1)[-1] or name
    return ModelId(model=model, args=kept, label=label)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def parse_sample(
    line: Mapping[str, Any], fallback: Mapping[str, str], judges: dict[str, JudgeId]
) -> Sample | None:
    """One samples-file line as a :class:`Sample` (None if it is no ELITR-Bench doc).

    Args:
        line: The decoded JSON line.
        fallback: split/setting/mode from the task config, for documents lacking them.
        judges: Cache of already built judge identities (keeps identical ones shared).
    """
    doc = line.get("doc")
    if not isinstance(doc, Mapping) or any(f not in doc for f in _DOC_FIELDS):
        return None
    filtered = parse_filtered(line.get("filtered_resps"))
    judge_info = filtered.get("judge") if filtered else None
    judge_info = judge_info if isinstance(judge_info, Mapping) else None
    if filtered is not None and "response" in filtered:
        response = str(filtered["response"])
    else:
        resps = line.get("resps")
        while isinstance(resps, (list, tuple)) and resps:
            resps = resps[0]
        response = "" if resps is None or isinstance(resps, (list, tuple)) else str(resps)
    scores: dict[str, float] = {}
    for metric in METRICS:
        value = _float(line.get(metric))
        if value is not None:
            scores[metric] = value
    for alias, metric in _SCORE_ALIASES.items():
        value = _float(line.get(alias))
        if value is not None and metric not in scores:
            scores[metric] = value
    status = str(judge_info.get("status", "")) if judge_info else ""
    if "judge_score" not in scores and judge_info and status == "scored":
        value = _float(judge_info.get("score"))
        if value is not None:
            scores["judge_score"] = value
    if not status:
        if "judge_score" in scores:
            status = "scored"
        elif _float(line.get("judge_unscored")):
            status = "unscored"
    judge: JudgeId | None = None
    if status in ("scored", "unscored"):
        identity = judge_info.get("identity") if judge_info else None
        ident = identity if isinstance(identity, Mapping) else None
        cache_key = json.dumps(ident, sort_keys=True, default=str)
        if cache_key not in judges:
            judges[cache_key] = judge_id(ident)
        judge = judges[cache_key]
    return Sample(
        meeting_id=str(doc["meeting_id"]),
        question_id=str(doc["question_id"]),
        split=str(doc.get("split") or fallback.get("split", "")),
        setting=str(doc.get("setting") or fallback.get("setting", "")),
        mode=str(doc.get("mode") or fallback.get("mode", "")),
        question_type=str(doc.get("question_type", "")),
        answer_position=str(doc.get("answer_position", "")),
        question=str(doc.get("question", "")),
        response=response,
        scores=scores,
        judge_status=status,
        judge=judge,
        target_wer=_float(doc.get("target_wer")),
        effective_wer=_float(doc.get("effective_wer")),
        noise_seed=None if doc.get("noise_seed") is None else str(doc["noise_seed"]),
        # The Czech tasks' documents say so; every other document is English.
        language=str(doc.get("language") or "en"),
        # a budget's cut (the sample's metric) or the retrieved passages (the document's)
        transcript_tokens=_float(line.get("transcript_tokens", doc.get("rag_tokens"))),
    )


# ------------------------------------------------------------------ discovery
def find_results_files(paths: Iterable[str | Path]) -> list[Path]:
    """Every ``results_*.json`` at or below the given paths, each once, sorted.

    Raises:
        ReportError: A path does not exist or holds no results file.
    """
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ReportError(f"run path {path} does not exist; pass an lm-eval --output_path dir")
        if path.is_file():
            if not (path.name.startswith("results") and path.suffix == ".json"):
                raise ReportError(
                    f"{path}: not an lm-eval results_*.json file; pass the run directory instead"
                )
            candidates = [path]
        else:
            candidates = results_files_below(path)
        if not candidates:
            raise ReportError(
                f"{path}: no lm-eval results_*.json below it; pass the --output_path of a run "
                "made with --log_samples"
            )
        for candidate in candidates:
            found.setdefault(candidate.resolve(), None)
    return sorted(found)


def _holds_our_documents(samples: Path) -> bool:
    """Whether a samples file's first sample is an ELITR-Bench question or meeting.

    A renamed copy of our tasks, or a task from an ``--include_path`` folder that reuses
    our classes, writes the same documents.
    """
    doc = first_doc(samples)
    return doc is not None and (
        all(f in doc for f in _DOC_FIELDS) or doc.get("task_kind") == MINUTES_KIND
    )


def foreign_input(path: str | Path) -> str | None:
    """Why a RUN_DIR holds nothing to report (None if it holds a run of ours with samples).

    A run of ours is a logged task with one of our names, or with ELITR-Bench questions as
    its documents (a renamed copy of our tasks); another benchmark's lm-eval folder is
    refused by name instead of reading as an empty report.
    """
    ours: set[str] = set()
    others: set[str] = set()
    for results in find_results_files([path]):
        data = _load_json(results)
        for task in data["results"]:
            samples = samples_file_of(results, task)
            if samples is not None and (is_our_task(task) or _holds_our_documents(samples)):
                return None
            (ours if is_our_task(task) else others).add(task)
    if ours:
        return (
            f"{path}: results of {', '.join(sorted(ours))} but no samples file of them; "
            "re-run lm_eval with --log_samples"
        )
    listed = sorted(others)
    shown = ", ".join(listed[:6]) + (f" and {len(listed) - 6} more" if len(listed) > 6 else "")
    return (
        f"{path}: lm-eval results of {shown or 'no task'}, none of them ours (elitr_* or "
        "automin23_en); pass the --output_path of an ELITR-Bench or minutes run"
    )


def _load_json(path: Path) -> dict[str, Any]:
    data = read_results_file(path, ReportError, "re-run or remove it")
    if "results" not in data:
        raise ReportError(
            f"{path}: no 'results' key, so not an lm-eval results file; move it away or pass "
            "the --output_path of an lm_eval run (results_<date>.json, samples_<task>_<date>.jsonl)"
        )
    return dict(data)


def _seeds(config: Mapping[str, Any], task_metadata: Mapping[str, Any]) -> dict[str, str]:
    seeds: dict[str, str] = {}
    if config.get("random_seed") is not None:
        seeds["random_seed"] = str(config["random_seed"])
    gen = parse_args_string(config.get("gen_kwargs"))
    if "seed" in gen:
        seeds["gen_seed"] = gen["seed"]
    margs = parse_args_string(config.get("model_args"))
    for key in sorted(_SEED_KEYS & set(margs)):
        seeds[f"model_{key}"] = margs[key]
    if task_metadata.get("noise_seed") is not None:
        seeds["noise_seed"] = str(task_metadata["noise_seed"])
    return seeds


def _int_or_none(value: Any) -> int | None:
    number = _float(value)
    return int(number) if number is not None and number > 0 else None


def _context_of(metadata: Mapping[str, Any], retrieved: bool) -> dict[str, int | None]:
    """Budget, retrieval budget and window as the task recorded them in its metadata.

    A retrieval task ignores ``context_budget`` (one ``--metadata`` may serve both kinds
    of task), so its run is placed by its ``rag_budget`` only. Its documents say it
    retrieved (``rag_passages``) even where a results file lost the task's ``retrieval``
    record; the budget is then the option as given, or its default.
    """
    rag = metadata.get("retrieval")
    rag_budget = _int_or_none(rag.get("rag_budget")) if isinstance(rag, Mapping) else None
    if retrieved and rag_budget is None:
        rag_budget = _int_or_none(metadata.get("rag_budget")) or DEFAULT_RAG_BUDGET
    return {
        "context_budget": None if rag_budget else _int_or_none(metadata.get("context_budget")),
        "rag_budget": rag_budget,
        "window": _int_or_none(metadata.get("context_window")),
    }


def _rescored_config(results_path: Path, data: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` of the run an ``elitr-bench score`` results file re-judged.

    Rescored files name their source samples files (``rescored_from``); the original
    ``results_<ts>.json`` of that run holds the model and seeds.
    """
    for path in rescored_sources(results_path, data).values():
        original = run_results_of(path)
        config = results_payload(original).get("config") if original is not None else None
        if isinstance(config, dict):
            return config
    return {}


def _reported(results: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in results.items():
        number = _float(value)
        if "," in key and number is not None and "_stderr" not in key:
            metric = key.split(",", 1)[0]
            out[_SCORE_ALIASES.get(metric, metric)] = number
    return out


def _judge_key(run: TaskRun) -> str | None:
    return run.judge.key if run.judge is not None else None


def _age(run: TaskRun) -> tuple[str, str]:
    return (stamp_of(run.samples_path), run.samples_path.name)


def _judge_only(run: TaskRun) -> TaskRun:
    """The run with its judge scores only (its answers' F1/ROUGE count elsewhere)."""
    samples = tuple(
        replace(s, scores={k: v for k, v in s.scores.items() if k == "judge_score"})
        for s in run.samples
    )
    reported = {k: v for k, v in run.reported.items() if k.startswith("judge_")}
    return replace(run, samples=samples, reported=reported)


def _rescorings_resolved(
    pending: Sequence[TaskRun],
    loaded: Sequence[tuple[Path, Mapping[str, Any]]],
    notes: list[str],
) -> list[TaskRun]:
    """Count the answers of a run re-judged by ``elitr-bench score`` once.

    A rescored results file and the file it re-judged hold the same answers; read both
    and the report would count one run twice (n=2 in Table 9, a "repeat" note). Among a
    run and its rescorings, per judge only the newest is kept (a rescoring by the run's
    own judge finishes or redoes it; one of a run without judge scores adds them). A
    rescoring by another judge is that judge's view of the same answers: it stays for
    the judge tables and agreement, with its F1/ROUGE left to the run that keeps them.
    """
    links: list[tuple[Path, Path]] = []
    for results_path, data in loaded:
        for task, source in rescored_sources(results_path, data).items():
            rescored = samples_file_of(results_path, task)
            if rescored is not None:
                links.append((rescored, source))
    family_of: dict[Path, Path] = {}
    for first, rescorings in families(links).items():
        for path in (first, *rescorings):
            family_of[path] = first
    members: dict[Path, list[TaskRun]] = {}
    for run in pending:
        key = run.samples_path.resolve()
        members.setdefault(family_of.get(key, key), []).append(run)
    keep: dict[int, TaskRun] = {}
    for family in members.values():
        newest: dict[str | None, TaskRun] = {}
        for run in sorted(family, key=_age):
            newest[_judge_key(run)] = run
        if len(newest) > 1:
            newest.pop(None, None)  # a judge re-judged answers that had no judge scores
        latest = max(newest.values(), key=_age)
        root = family_of.get(family[0].samples_path.resolve())
        primary = next((r for r in newest.values() if r.samples_path.resolve() == root), latest)
        for run in family:
            if not any(run is kept for kept in newest.values()):
                current = newest.get(_judge_key(run), latest)
                notes.append(
                    f"{run.results_path.name}, task {run.task}: "
                    + supersede_note(run.samples_path, current.samples_path)
                )
            elif run is primary:
                keep[id(run)] = run
            else:
                judge = run.judge.label if run.judge else "none"
                notes.append(
                    f"{run.samples_path.name} re-judged the answers of "
                    f"{primary.samples_path.name} with another judge ({judge}): its judge "
                    "scores are reported, the answers' F1/ROUGE only once, from the latter"
                )
                keep[id(run)] = _judge_only(run)
    return [keep[id(run)] for run in pending if id(run) in keep]


@dataclass(frozen=True)
class LoadedRuns:
    """Runs found under the given paths, with notes on what was skipped and why."""

    runs: tuple[TaskRun, ...]
    notes: tuple[str, ...]


def load_runs(paths: Sequence[str | Path], *, require: bool = True) -> LoadedRuns:
    """Load every ELITR-Bench task run (results + samples) below ``paths``.

    Tasks without a samples file, or whose documents are not ELITR-Bench documents, are
    skipped with a note rather than failing the whole report.

    Args:
        paths: lm-eval output dirs or results files.
        require: Raise when no ELITR-Bench run is found (the report passes False, as its
            other section builders may use runs of other tasks).

    Raises:
        ReportError: A path is missing or holds no results file, or (with ``require``)
            nothing usable was found.
    """
    notes: list[str] = partial_notes(Path(p) for p in paths)
    judges: dict[str, JudgeId] = {}
    loaded = [(path, _load_json(path)) for path in find_results_files(paths)]
    pending: list[TaskRun] = []
    for results_path, data in loaded:
        config = data.get("config") or _rescored_config(results_path, data)
        configs = data.get("configs") or {}
        tasks = [t for t in data["results"] if t in configs] or list(data["results"])
        for task in tasks:
            run = _task_run(results_path, data, config, task, judges, notes)
            if run is not None:
                pending.append(run)
    runs = _counted_once(_rescorings_resolved(pending, loaded, notes), notes)
    if not runs and require:
        raise ReportError(
            "no ELITR-Bench runs with samples found; run lm_eval with --log_samples on elitr_* "
            "tasks and pass its --output_path"
        )
    _check_duplicates(runs, notes)
    return LoadedRuns(runs=tuple(runs), notes=tuple(notes))


def _task_run(
    results_path: Path,
    data: Mapping[str, Any],
    config: Mapping[str, Any],
    task: str,
    judges: dict[str, JudgeId],
    notes: list[str],
) -> TaskRun | None:
    """One task of a results file as a run (no id yet); None, with a note, when skipped.

    Raises:
        ReportError: A task of ours whose samples file holds no ELITR-Bench question.
    """
    configs = data.get("configs") or {}
    samples_path = samples_file_of(results_path, task)
    if samples_path is None:
        if task in configs:
            notes.append(
                f"{results_path}: task {task} has no samples file (run without "
                "--log_samples?); skipped"
            )
        return None
    if holds_minutes(samples_path):
        # Minutes runs hold no QA documents; the report's minutes part reads them.
        return None
    task_cfg = configs.get(task) or {}
    metadata = task_cfg.get("metadata") or {}
    fallback = {
        "split": str(task_cfg.get("test_split", "")),
        "setting": str(task_cfg.get("dataset_name", "")),
        "mode": str((task_cfg.get("dataset_kwargs") or {}).get("mode", "")),
    }
    samples: list[Sample] = []
    foreign = 0
    retrieved = False  # documents of a retrieval task record their passages
    try:
        for _, line in read_samples(samples_path, task):
            doc = line.get("doc")
            retrieved = retrieved or (isinstance(doc, Mapping) and "rag_passages" in doc)
            sample = parse_sample(line, fallback, judges)
            if sample is None:
                foreign += 1
            else:
                samples.append(sample)
    except ReportError as exc:
        if is_our_task(task):
            raise
        notes.append(f"{exc} (task {task} is not ours: skipped)")
        return None
    if not samples and is_our_task(task):
        raise ReportError(
            f"{samples_path}: no line holds an ELITR-Bench question (doc.meeting_id and "
            f"doc.question_id), so it is no lm-eval samples file of {task}; re-run the "
            "task with --log_samples, or move the file away"
        )
    if not samples:
        notes.append(f"{samples_path}: no ELITR-Bench documents (task {task}); skipped")
        return None
    if foreign:
        notes.append(f"{samples_path}: {foreign} lines without ELITR-Bench docs ignored")
    n_logged = (data.get("n-samples") or {}).get(task, {}).get("effective")
    return TaskRun(
        run_id="",
        task=task,
        results_path=results_path,
        samples_path=samples_path,
        model=model_id(config),
        seeds=_run_seeds(config, metadata, samples),
        samples=tuple(samples),
        reported=_reported(data["results"].get(task) or {}),
        n_logged=int(n_logged) if n_logged is not None else None,
        **_context_of(metadata, retrieved),
    )


def _run_seeds(
    config: Mapping[str, Any], metadata: Mapping[str, Any], samples: Sequence[Sample]
) -> dict[str, str]:
    """The run's seeds, with the judge's and the noise's as its samples record them."""
    seeds = _seeds(config, metadata)
    judge_seeds = {
        str((s.judge.identity.get("sampling") or {}).get("seed"))
        for s in samples
        if s.judge is not None and isinstance(s.judge.identity.get("sampling"), Mapping)
    } - {"None"}
    if judge_seeds:
        seeds["judge_seed"] = ",".join(sorted(judge_seeds))
    noise_seeds = {s.noise_seed for s in samples if s.noise_seed is not None}
    if noise_seeds and "noise_seed" not in seeds:
        seeds["noise_seed"] = ",".join(sorted(noise_seeds))
    return seeds


def _counted_once(pending: Sequence[TaskRun], notes: list[str]) -> list[TaskRun]:
    """The runs numbered ``R1``, ``R2``, ...; an identical copy of one is counted once."""
    runs: list[TaskRun] = []
    copies: dict[tuple[Any, ...], TaskRun] = {}
    for run in pending:
        same = (*_same_run(run.model, run.seeds, run.samples), run.context_label)
        if same in copies:
            notes.append(
                f"{run.samples_path.name} is an identical copy of {copies[same].run_id} (same "
                "model, seeds, judge, answers and scores): counted once"
            )
            continue
        runs.append(replace(run, run_id=f"R{len(runs) + 1}"))
        copies[same] = runs[-1]
    return runs


def response_hash(text: str) -> str:
    """Short stable hash of a response text, to match the same answer across runs."""
    return hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:16]


def _same_run(
    model: ModelId, seeds: Mapping[str, str], samples: Sequence[Sample]
) -> tuple[Any, ...]:
    """What makes two task runs the same run: model, seeds and every sample's content.

    Running the same command twice into one output dir (``make demo`` twice) leaves two
    results files of one run; counting both would make Table 9 report n=2 of a single run.
    File names, dates and paths are left out on purpose.
    """
    content = tuple(
        (
            s.setting,
            s.split,
            s.mode,
            s.meeting_id,
            s.question_id,
            s.response,
            tuple(sorted(s.scores.items())),
            s.judge_status,
            s.judge.key if s.judge else None,
            s.target_wer,
            s.effective_wer,
            s.language,
        )
        for s in samples
    )
    return (model, tuple(sorted(seeds.items())), content)


def _check_duplicates(runs: Sequence[TaskRun], notes: list[str]) -> None:
    seen: dict[tuple[Any, ...], str] = {}
    for run in runs:
        key = (
            run.model,
            run.judge.key if run.judge else None,
            run.language,
            run.setting,
            run.mode,
            run.split,
            run.target_wer,
            run.context_label,
            tuple(sorted(run.seeds.items())),
        )
        if key in seen:
            notes.append(
                f"{run.run_id} repeats {seen[key]} (same model, judge, task data and seeds, "
                "different answers or scores); both are counted as separate runs"
            )
        else:
            seen[key] = run.run_id
