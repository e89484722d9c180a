"""The names of lm-eval's run files: which are current, and what ``elitr-bench score`` writes.

lm-eval writes ``results_<stamp>.json`` and one ``samples_<task>_<stamp>.jsonl`` per task.
``elitr-bench score`` judges logged samples again (to finish a run whose judge failed, or
with another judge) and writes ``samples_<task>_<stamp2>.jsonl`` next to each source
samples file (lm-eval's own name, so that lm-eval's tools, e.g. its Hub logger, read it
as the task) plus ``results_rescored_<stamp2>.json``, whose ``rescored_from`` maps each
task to the samples file it re-judged. That results file beside it is what marks a
samples file as a rescoring (older versions wrote ``samples_<task>_rescored_<stamp2>``,
still read). Both versions hold the same answers, so a
reader that took every file would count one run twice (two seeds in Table 9, or the
same meeting's minutes twice). The readers (report, ``minutes-check --run``,
:func:`~elitr_bench.data.minutes.load_run_minutes`) ask this module which file is
current: of a run's samples file and all its rescorings, the newest rescoring. The
writers (``score`` for QA and for minutes runs) take the names of what they write from
here too (:func:`rescoring_runs`), so that the readers and the writers share one rule.

Reading them is here too, so that every command finds and reads them alike: where a
run's files lie (:func:`samples_below`, :func:`lm_eval_samples_below`,
:func:`results_files_below`, :func:`samples_file_of`), a samples file's task
(:func:`task_of`), the results files (:func:`read_results_file`) and the one JSON-lines
reader (:func:`read_json_lines`), whose error names the file and the line, for samples
files and for our own ``*.jsonl`` (arena folders, ``--metric-file``, ``read-reply --jsonl``,
noise rules and pairs).

Only the standard library and the data layer's own modules are used: the data layer must
not import judges or lm-eval.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from elitr_bench.data.errors import DataError, ElitrBenchError

#: lm-eval's (and ``elitr-bench score``'s) file stamp: ``2026-11-22T22-21-47.123456``,
#: ``score`` appends ``-2``, ``-3`` when one call writes several runs of one folder
#: (:func:`rescoring_runs`).
_STAMP = r"\d{4}-\d{2}-\d{2}T[0-9.\-]+"
_SAMPLES_RE = re.compile(rf"^samples_(?P<task>.+)_(?P<stamp>{_STAMP})\.jsonl$")
#: The name older versions of ``score`` gave rescored samples.
_LEGACY_RESCORED = "_rescored"


@dataclass(frozen=True)
class SamplesName:
    """What a samples file's name says.

    Attributes:
        task: lm-eval task name.
        stamp: Date stamp of the run (or of the rescoring).
        rescored: Whether ``elitr-bench score`` wrote it (a ``results_rescored_<stamp>``
            file lies beside it).
    """

    task: str
    stamp: str
    rescored: bool


def parse_samples_name(path: Path) -> SamplesName | None:
    """Task, stamp and kind of a ``samples_*.jsonl`` file (None for other names).

    The kind is read from the folder: a rescoring's samples have a
    ``results_rescored_<stamp>.json`` of their stamp beside them.
    """
    match = _SAMPLES_RE.match(path.name)
    if not match:
        return None
    task, stamp = match["task"], match["stamp"]
    if task.endswith(_LEGACY_RESCORED):
        return SamplesName(task.removesuffix(_LEGACY_RESCORED), stamp, True)
    rescored = path.with_name(f"results_rescored_{stamp}.json").is_file()
    return SamplesName(task, stamp, rescored)


def task_of(samples_file: Path) -> str:
    """The lm-eval task a samples file belongs to (from its name).

    ``samples_<task>[_rescored]_<timestamp>.jsonl``; task names may contain underscores, so
    a name without a recognised stamp falls back to everything before its last ``_``.
    """
    parsed = parse_samples_name(samples_file)
    if parsed is not None:
        return parsed.task
    return samples_file.stem.removeprefix("samples_").rsplit("_", 1)[0]


def results_file_of(samples: Path) -> Path | None:
    """The results file written with a samples file (same folder and stamp), if present."""
    name = parse_samples_name(samples)
    if name is None:
        return None
    kind = "results_rescored" if name.rescored else "results"
    path = samples.with_name(f"{kind}_{name.stamp}.json")
    return path if path.is_file() else None


def samples_file_of(results: Path, task: str) -> Path | None:
    """The samples of ``task`` written with a results file (same folder and stamp), if present.

    The inverse of :func:`results_file_of`: ``results_<stamp>.json`` goes with
    ``samples_<task>_<stamp>.jsonl``, ``results_rescored_<stamp>.json`` with the rescoring's
    samples of that stamp (older versions of ``score`` named them
    ``samples_<task>_rescored_<stamp>.jsonl``).
    """
    stamp = results.stem.removeprefix("results_")
    rescored = stamp.startswith("rescored_")
    stamp = stamp.removeprefix("rescored_")
    names = [f"samples_{task}_{stamp}.jsonl"]
    if rescored:
        names.append(f"samples_{task}{_LEGACY_RESCORED}_{stamp}.jsonl")
    for name in names:
        if results.with_name(name).exists():
            return results.with_name(name)
    return None


def samples_below(root: Path) -> list[Path]:
    """Every ``samples_*.jsonl`` below a folder, sorted; a file is its own only one.

    A missing path has none. lm-eval's files and rescorings alike: the readers choose the
    current ones (:func:`current_samples`).
    """
    root = Path(root)
    if root.is_file():
        return [root]
    return sorted(root.rglob("samples_*.jsonl")) if root.is_dir() else []


def lm_eval_samples_below(folder: Path) -> list[Path]:
    """The samples files lm-eval wrote below a folder, sorted: what ``score`` re-judges.

    Left out are rescorings (``score`` judges lm-eval's answers, not its own earlier
    verdicts) and files a stopped writer left cut (:func:`partial_files`, which the
    commands name instead).
    """
    partial = {path for path, _ in partial_files(folder)}
    return [
        path
        for path in samples_below(folder)
        if (name := parse_samples_name(path)) is not None
        and not name.rescored
        and path not in partial
    ]


def results_files_below(root: Path) -> list[Path]:
    """Every ``results*.json`` below a folder, sorted (lm-eval's and ``score``'s)."""
    return sorted(Path(root).rglob("results*.json"))


def newest_lm_eval_results(folder: Path) -> Path | None:
    """A folder's newest ``results_<stamp>.json`` that lm-eval wrote (not a rescoring's)."""
    found = sorted(
        path for path in Path(folder).glob("results_*.json") if "_rescored_" not in path.name
    )
    return found[-1] if found else None


def parse_json_lines(
    lines: Iterable[str],
    source: str | Path,
    fix: str,
    error: type[ElitrBenchError] = DataError,
    skip_invalid: bool = False,
) -> Iterator[tuple[int, Any]]:
    """Decode JSON lines, yielding ``(line number, value)``; blank lines are passed over.

    The one JSON-lines reader of the package, so that every bad line is refused alike: one
    line naming the file and the line, then the caller's fix. Lines are split at line
    breaks only (a file's own lines, or a text split at newlines), never at the U+2028 and
    friends that JSON strings may hold, which ``str.splitlines`` would cut them at.

    Args:
        lines: The text's lines.
        source: The file (``-`` for standard input) named in the error.
        fix: What to do about a bad line, appended to the error.
        error: The caller's error type (its command prints it as one line).
        skip_invalid: Pass over lines that are not JSON instead: a record an appender
            killed mid-line left, which its writer simply redoes.

    Raises:
        ElitrBenchError: ``error``, for a line that is not JSON.
    """
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except ValueError as exc:
            if skip_invalid:
                continue
            raise error(f"{source}:{number}: not JSON ({exc}); {fix}") from None
        yield number, value


def read_json_lines(
    path: Path,
    fix: str,
    error: type[ElitrBenchError] = DataError,
    skip_invalid: bool = False,
) -> Iterator[tuple[int, Any]]:
    """The decoded lines of a JSON-lines file, read as it goes (see :func:`parse_json_lines`).

    Raises:
        OSError: The file cannot be opened (callers say why they wanted it).
        ElitrBenchError: ``error``, for a line that is not JSON.
    """
    with Path(path).open(encoding="utf-8") as handle:
        yield from parse_json_lines(handle, path, fix, error, skip_invalid)


def read_results_file(
    path: Path,
    error: type[ElitrBenchError] = DataError,
    fix: str = "re-run what wrote it, or move it away",
) -> Mapping[str, Any]:
    """One lm-eval (or ``elitr-bench score``) results file as a mapping ({} if not a mapping).

    Raises:
        ElitrBenchError: ``error``: the file cannot be read or is not JSON.
    """
    try:
        payload = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise error(f"{path}: unreadable lm-eval results file ({exc}); {fix}") from None
    return payload if isinstance(payload, Mapping) else {}


def results_payload(path: Path) -> Mapping[str, Any]:
    """A results file as a mapping, {} where it cannot be read (what only helps, if there)."""
    try:
        return read_results_file(path)
    except DataError:
        return {}


def rescored_sources(results: Path, payload: Mapping[str, Any]) -> dict[str, Path]:
    """Map each task to the samples file a ``results_rescored_*.json`` re-judged.

    ``score`` records the paths as given on its command line, possibly relative to a
    working directory long gone; the source lies next to the rescored samples, so a file
    of that name in the results file's folder is preferred.
    """
    sources = payload.get("rescored_from")
    out: dict[str, Path] = {}
    if not isinstance(sources, Mapping):
        return out
    for task, raw in sources.items():
        given = Path(str(raw))
        beside = results.with_name(given.name)
        out[str(task)] = beside if beside.is_file() else given
    return out


def source_of(samples: Path) -> Path | None:
    """The samples file a rescored samples file re-judged (None for lm-eval's own files).

    Read from the ``rescored_from`` of the rescoring's results file; for an old-style
    rescoring without that file, the folder's only lm-eval samples file of the task.
    """
    name = parse_samples_name(samples)
    if name is None or not name.rescored:
        return None
    results = results_file_of(samples)
    if results is not None:
        source = rescored_sources(results, results_payload(results)).get(name.task)
        if source is not None:
            return source
    same_task = [
        p
        for p in samples.parent.glob(f"samples_{name.task}_*.jsonl")
        if (other := parse_samples_name(p)) is not None
        and other.task == name.task
        and not other.rescored
    ]
    return same_task[0] if len(same_task) == 1 else None


def run_results_of(samples: Path) -> Path | None:
    """lm-eval's own ``results_<stamp>.json`` of the run a samples file belongs to.

    For a rescoring, the source's run (followed through rescorings of rescorings): it
    holds the model, its arguments and the task configs that ``score`` does not repeat.
    """
    seen: set[Path] = set()
    current: Path | None = samples
    while current is not None and current not in seen:
        seen.add(current)
        name = parse_samples_name(current)
        if name is None:
            return None
        if not name.rescored:
            return results_file_of(current)
        current = source_of(current)
    return None


def first_doc(samples: Path) -> Mapping[str, Any] | None:
    """The document of a samples file's first sample (None: unreadable, empty or no doc).

    Only that line is read: what a task's documents say about it (ELITR-Bench questions,
    ``task_kind``) is the same on every line.
    """
    try:
        with samples.open(encoding="utf-8") as handle:
            _, first = next(parse_json_lines(handle, samples, "not read"), (0, None))
    except (OSError, ValueError):  # our errors are ValueErrors too
        return None
    doc = first.get("doc") if isinstance(first, Mapping) else None
    return doc if isinstance(doc, Mapping) else None


def stamp_of(path: Path) -> str:
    """A samples file's date stamp ("" for other names); later stamps sort higher."""
    name = parse_samples_name(path)
    return name.stamp if name is not None else ""


def new_stamp(now: datetime | None = None) -> str:
    """A stamp for files written now, as lm-eval stamps its own (``isoformat``, ``:`` -> ``-``)."""
    return (now or datetime.now()).isoformat().replace(":", "-")


def rescoring_runs(samples: Iterable[Path], stamp: str) -> list[tuple[str, list[Path]]]:
    """Samples files grouped into the lm-eval runs they came from, each with its new stamp.

    A run is the samples files lm-eval wrote together: one folder, one stamp. Each run's
    rescoring is stamped ``stamp``; a second, third run of the same folder gets
    ``<stamp>-2``, ``<stamp>-3``, so that no two runs' files share a name. Numbering is
    per folder: an lm-eval output folder is one model's runs, and a run alone in its
    folder is named as lm-eval would name it, whatever other folders one call rescores.

    Args:
        samples: lm-eval samples files, in the order they are rescored.
        stamp: The stamp of this rescoring (:func:`new_stamp`).

    Returns:
        ``(stamp of the rescoring, the run's samples files)`` per run, in first-seen order.
    """
    runs: dict[tuple[Path, str], list[Path]] = {}
    for path in samples:
        runs.setdefault((path.parent, stamp_of(path)), []).append(path)
    numbered: dict[Path, int] = {}
    out = []
    for (folder, _), files in runs.items():
        count = numbered[folder] = numbered.get(folder, 0) + 1
        out.append((stamp if count == 1 else f"{stamp}-{count}", files))
    return out


def rescored_samples_path(source: Path, task: str, stamp: str) -> Path:
    """Where a rescoring of ``source`` goes: beside it, under lm-eval's own samples name."""
    return source.with_name(f"samples_{task}_{stamp}.jsonl")


def rescored_results_path(source: Path, stamp: str) -> Path:
    """The results file of a rescoring, beside the samples it re-judged.

    Its ``results_rescored_`` prefix is what marks the samples of its stamp as a
    rescoring (:func:`parse_samples_name`).
    """
    return source.with_name(f"results_rescored_{stamp}.json")


def families(links: Iterable[tuple[Path, Path]]) -> dict[Path, list[Path]]:
    """Group rescorings under the lm-eval samples file whose answers they re-judged.

    Args:
        links: ``(rescored samples, its source samples)`` pairs.

    Returns:
        Resolved first samples file -> resolved rescorings of it (also rescorings of
        rescorings).
    """
    parent: dict[Path, Path] = {}
    for new, old in links:
        parent[new.resolve()] = old.resolve()

    def root(path: Path) -> Path:
        seen = {path}
        while path in parent and parent[path] not in seen:
            path = parent[path]
            seen.add(path)
        return path

    out: dict[Path, list[Path]] = {}
    for new in parent:
        out.setdefault(root(new), []).append(new)
    return out


def newest_versions(links: Iterable[tuple[Path, Path]]) -> dict[Path, Path]:
    """Map every superseded samples file to the current one.

    Args:
        links: ``(rescored samples, its source samples)`` pairs.

    Returns:
        Resolved path -> resolved path: each run's first samples file and all its
        rescorings but the newest (by stamp) map to that newest rescoring.
    """
    out: dict[Path, Path] = {}
    for first, rescorings in families(links).items():
        newest = max(rescorings, key=lambda p: (stamp_of(p), p.name))
        for path in (first, *rescorings):
            if path != newest:
                out[path] = newest
    return out


def supersede_note(stale: Path, current: Path) -> str:
    """The report line saying which file was left out for which."""
    return (
        f"{stale.name} left out: {current.name} re-judged the same answers "
        "(elitr-bench score) and is newer; the run is counted once, from the newer file"
    )


def is_cut(path: Path) -> bool:
    """Whether a JSON-lines file stops mid-line (a writer killed or out of disk space).

    Only the tail is read: the file does not end with a newline, or its last non-blank
    line (when it fits the last MiB) is not JSON. An empty or blank file is not cut.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            if size == 0:
                return False  # empty, not cut: the readers say so in their own words
            handle.seek(max(0, size - (1 << 20)))
            tail = handle.read()
    except OSError:
        return True
    if not tail.strip():
        return False
    if not tail.endswith(b"\n"):
        return True
    lines = tail.rstrip().split(b"\n")
    if len(lines) < 2 and size > len(tail):
        return False  # one long last line: not checked
    try:
        json.loads(lines[-1])
    except ValueError:
        return True
    return False


def partial_files(folder: Path) -> list[tuple[Path, str]]:
    """Files of an output folder that a stopped writer left half-made, each with the fix.

    Temp files of our writers (``.NAME.<random>.tmp``, see :mod:`elitr_bench.data.folder`)
    and samples files cut mid-line without their results file (older versions of ``score``
    wrote in place). Readers name them instead of skipping them silently or failing on
    them; they are never read as samples.
    """
    from elitr_bench.data.folder import TEMP_SUFFIX

    folder = Path(folder)
    if not folder.is_dir():
        return []
    found: list[tuple[Path, str]] = []
    for path in sorted(folder.rglob(f".*{TEMP_SUFFIX}")):
        if path.is_file():
            found.append(
                (path, "a temp file left by a writer that was stopped; nothing reads it, delete it")
            )
    for path in sorted(folder.rglob("samples_*.jsonl")):
        if parse_samples_name(path) is not None and results_file_of(path) is None and is_cut(path):
            found.append(
                (
                    path,
                    "a samples file cut mid-line with no results file of its stamp (a writer "
                    "stopped); left out: delete it, or re-run what wrote it",
                )
            )
    return found


def partial_notes(folders: Iterable[Path]) -> list[str]:
    """One line per half-made file under ``folders`` (see :func:`partial_files`)."""
    seen: set[Path] = set()
    notes = []
    for folder in folders:
        for path, why in partial_files(folder):
            if path.resolve() not in seen:
                seen.add(path.resolve())
                notes.append(f"{path}: {why}")
    return notes


def current_samples(files: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """The samples files that count: rescorings replace their sources, newest first.

    Args:
        files: Samples files of lm-eval runs and their rescorings, in reading order.

    Returns:
        The current files (order kept) and one note per file left out.
    """
    links = []
    for path in files:
        source = source_of(path)
        if source is not None:
            links.append((path, source))
    stale = newest_versions(links)
    kept: list[Path] = []
    notes: list[str] = []
    for path in files:
        current = stale.get(path.resolve())
        if current is None:
            kept.append(path)
        else:
            notes.append(supersede_note(path, current))
    return kept, notes


__all__ = [
    "SamplesName",
    "current_samples",
    "families",
    "first_doc",
    "is_cut",
    "lm_eval_samples_below",
    "new_stamp",
    "newest_lm_eval_results",
    "newest_versions",
    "parse_json_lines",
    "parse_samples_name",
    "partial_files",
    "partial_notes",
    "read_json_lines",
    "read_results_file",
    "rescored_results_path",
    "rescored_samples_path",
    "rescored_sources",
    "rescoring_runs",
    "results_file_of",
    "results_files_below",
    "results_payload",
    "run_results_of",
    "samples_below",
    "samples_file_of",
    "source_of",
    "stamp_of",
    "supersede_note",
    "task_of",
]
