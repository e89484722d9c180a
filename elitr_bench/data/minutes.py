"""Meeting minutes: the ELITR reference minutes and AutoMin 2023's English release.

Two sources feed the minutes tasks, metrics and judges through the records of
:mod:`elitr_bench.data.records`:

* the 18 ELITR-Bench meetings (``meeting_en_dev_*``, ``meeting_en_test2_*``): transcript and
  one or several human reference minutes (``minutes_GENER_annotNN.txt``) from the same
  ``ELITR-English-{dev,test}.tar.zip`` archives the QA tasks read;
* AutoMin 2023 Task A, English test set (``ufal/automin-2023-data``, pinned commit, one
  file at a time through a manifest of sha256 hashes): 12 ``meeting_en_test2023_*``
  meetings with transcript and reference minutes, the minutes of the 9 scored systems, and
  the human Adequacy/Fluency/Grammaticality/Relevance scores (1-5) per document and per hunk.

Quirks of the AutoMin release, handled here (each is checked by a test):

* **De-identified file names.** References are ``minutes_GENER_annotNN.deidentified.txt``
  and meeting 002's transcript is ``transcript_MAN_annot08.deidentified.txt``; the
  ``evaluation+...`` files name the same minutes sometimes with, sometimes without
  ``.deidentified`` (meeting 002: ``minutes_GENER_annot08.txt``). Names are matched with
  the suffix removed.
* **References are ``annotNN`` per meeting but ``annot`` overall.** The overall TSVs score
  the human reference as one system ``minutes_GENER_annot``; here its minutes and scores use
  system ``annot`` and keep the ``annotNN`` file in ``Minutes.source``. In
  :class:`MinutesMeeting` the references keep their ``annotNN`` names.
* **Column order of the scores.** The overall TSV header is ``A G F R`` (adequacy,
  grammaticality, fluency, relevance) while the ``evaluation+...`` files hold
  ``A^G^R^F`` — NOT ``A^F^G^R``. Decided from the numbers: the per-meeting document means
  reproduce the TSV (and the paper's Table 6, e.g. NTR D-Fluency 3.00, D-Relevance 3.44)
  only with columns 3 and 4 read as relevance and fluency; and at hunk level columns 1 and
  4 move together (e.g. ``4.0^5.0^5.0^4.0``), matching the paper's Table 6 where hunk
  Adequacy and Fluency are often identical. See :data:`EVALUATION_COLUMNS`.
* **Evaluation file layout.** First line: the document-level scores; then one line per
  minutes line (hunk scores, ``-1^-1^-1`` for a line without an aligned hunk, e.g. empty
  lines). ``+aggreg-hunks``: four ``mean<TAB>sample-stdev`` lines, same column order.
* **Meetings without scores.** 001, 008 and 012 have no ``evaluation`` files (the paper's
  Table 3 counts 9 judged English meetings); their minutes load, their scores do not exist.
* **davinci003 in meeting 011.** Its document line is ``1.0^1.0^1.0^1.0``, a placeholder
  (the paper, Table 6 caption: "Due to an annotator's error, davinci-003 did not have the
  document-level scores provided"); the overall TSV's davinci003 document means are the
  means over the other 8 meetings, so this line is skipped. Its hunk scores are kept.
* **Hunk-level system means pool hunks.** The overall hunk TSV is the mean over all scored
  hunks of a system, not the mean of the per-meeting means; ``HumanScores.count`` carries
  the number of hunks so callers can weight.
* **Signature lines.** Darbarer ends with ``✍ Submitted by: Darbarer`` and Synapse with
  ``Minuted by: Team Synapse``; the text is kept unchanged (they were part of what the
  annotators and the paper's metrics saw).

In the ELITR archives: ``minutes_ORIG.txt`` (original notes, not reference minutes) is
skipped and ``minutes_GENER_Annot13.txt`` (capital A, meeting_en_test2_005) is named
``annot13``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from elitr_bench.data import store
from elitr_bench.data.archives import read_tar_in_zip
from elitr_bench.data.errors import DataError
from elitr_bench.data.loaders import _location_key, parse_transcripts
from elitr_bench.data.records import (
    CRITERIA,
    SCORE_LEVELS,
    SPLITS,
    Criterion,
    HumanScores,
    Minutes,
    MinutesMeeting,
    RunMinutes,
    ScoreLevel,
    Split,
    SystemHumanScore,
)
from elitr_bench.data.run_files import (
    current_samples,
    first_doc,
    newest_lm_eval_results,
    read_json_lines,
    read_results_file,
    run_results_of,
    samples_below,
    task_of,
)
from elitr_bench.data.sources import (
    AUTOMIN_DIR,
    TRANSCRIPTS_DEV,
    TRANSCRIPTS_TEST,
    Source,
    automin_sources,
)

log = logging.getLogger(__name__)

#: The 9 scored systems of AutoMin 2023 English, as named in the overall TSVs minus
#: ``minutes_GENER_`` / ``.txt``; ``annot`` is the human reference.
AUTOMIN_SYSTEMS: tuple[str, ...] = (
    "annot",
    "darbarer",
    "davinci003",
    "gpt4",
    "kmjec",
    "ntr",
    "synapse",
    "zoom-long",
    "zoom-short",
)
AUTOMIN_REFERENCE = "annot"
AUTOMIN_MEETINGS: tuple[str, ...] = tuple(f"meeting_en_test2023_{i:03d}" for i in range(1, 13))
AUTOMIN_SPLIT = "test2023"

#: Column order of the ``evaluation+...`` files and their ``+aggreg-hunks`` companions
#: (``A^G^R^F``), decided from the numbers as explained in the module docstring.
EVALUATION_COLUMNS: tuple[Criterion, ...] = ("adequacy", "grammaticality", "relevance", "fluency")
#: Letters of the overall TSV headers (``A-mean G-mean F-mean R-mean``).
TSV_LETTERS: Mapping[str, Criterion] = {
    "A": "adequacy",
    "F": "fluency",
    "G": "grammaticality",
    "R": "relevance",
}
#: Document-level lines that are placeholders, not judgements (see the module docstring).
MISSING_DOCUMENT_SCORES: Mapping[tuple[str, str], str] = {
    ("meeting_en_test2023_011", "davinci003"): (
        "1.0 placeholder; the paper's Table 6 caption reports davinci-003's missing "
        "document-level scores and the overall TSV excludes this meeting"
    ),
}
_OVERALL_TSV: Mapping[ScoreLevel, str] = {
    "document": "submissions-and-scores/elmi-en-overall-doc-level-scores.tsv",
    "hunk": "submissions-and-scores/elmi-en-overall-hunk-level-scores.tsv",
}
_ELMI = "submissions-and-scores/ELMI-en"
_MINUTES_RE = re.compile(r"^minutes_GENER_(?P<name>.+?)(?:\.deidentified)?\.txt$")
_EVAL_RE = re.compile(
    r"^evaluation\+(?P<transcript>transcript_MAN[^+]*)\+minutes_GENER_(?P<name>[^+]+?)"
    r"(?:\.deidentified)?\.txt(?P<agg>\+aggreg-hunks)?$"
)
_ELITR_MINUTES_RE = re.compile(
    r"(?:^|/)(meeting_en_(?:dev|test2)_\d+)/minutes_GENER_([Aa]nnot\d+)\.txt$"
)
_FETCH_HINT = (
    f"run `elitr-bench data fetch`, or set {store.DATA_DIR_ENV} to a directory holding "
    f"{AUTOMIN_DIR}/"
)


def system_of(name: str) -> str:
    """AutoMin system of a ``minutes_GENER_<name>`` file: ``annotNN`` -> ``annot``."""
    low = name.lower()
    return AUTOMIN_REFERENCE if re.fullmatch(r"annot\d*", low) else low


def select_meetings(
    spec: str | int | Sequence[str | int] | None, all_ids: Sequence[str]
) -> list[str]:
    """The one parser of meeting selections (CLI ``--meetings`` and loader arguments).

    Args:
        spec: ``None``/``""``/``"all"`` = every meeting; an int or a digit string ``N`` =
            the first N meetings (sorted ids); a comma-separated string or a sequence of
            full ids = these; a sequence of ints (or ``"1,3"``) = 1-based indices.
        all_ids: The meetings to choose from.

    Returns:
        The selected ids, sorted, without duplicates.

    Raises:
        DataError: An unknown id, an index out of range, or a count below 1 or above the
            number of meetings.
    """
    ids = sorted(all_ids)
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "all")):
        return ids
    if isinstance(spec, int) or (isinstance(spec, str) and spec.strip().isdigit()):
        count = int(spec)
        if count < 1:
            raise DataError(f"meetings={spec!r}: a count must be at least 1 (of {len(ids)})")
        if count > len(ids):  # silently taking all of them would hide a typo or a wrong set
            raise DataError(
                f"meetings={spec!r}: there are only {len(ids)} meetings; pass a count of at "
                f"most {len(ids)}, ids, 1-based indices, or all"
            )
        return ids[:count]
    items: list[str | int] = (
        [part.strip() for part in spec.split(",") if part.strip()]
        if isinstance(spec, str)
        else list(spec)
    )
    chosen: set[str] = set()
    as_indices = all(isinstance(i, int) or str(i).isdigit() for i in items)
    for item in items:
        if as_indices:
            index = int(item)
            if not 1 <= index <= len(ids):
                raise DataError(
                    f"meetings: index {index} is out of range 1..{len(ids)} (1-based, sorted ids)"
                )
            chosen.add(ids[index - 1])
        elif str(item) in ids:
            chosen.add(str(item))
        else:
            raise DataError(f"meetings: unknown meeting {item!r}; valid: {', '.join(ids)}")
    return sorted(chosen)


def require_lines(minutes: Minutes, fix: str = "") -> Minutes:
    """Return ``minutes`` if it has at least one non-blank line, else a one-line DataError.

    Released and reference minutes are never empty; an empty file means a damaged copy.
    (Generated minutes may be empty: a model can answer nothing, and scores 0 for it.)
    """
    if not minutes.lines:
        where = minutes.source or f"{minutes.meeting_id}/{minutes.system}"
        raise DataError(f"{where}: minutes file has no lines{'; ' + fix if fix else ''}")
    return minutes


def _check_systems(systems: Iterable[str] | None) -> tuple[str, ...]:
    if systems is None:
        return AUTOMIN_SYSTEMS
    chosen = tuple(dict.fromkeys(systems))
    for name in chosen:
        if name not in AUTOMIN_SYSTEMS:
            raise DataError(
                f"unknown AutoMin system {name!r}; valid systems: {', '.join(AUTOMIN_SYSTEMS)}"
            )
    return chosen


# --- AutoMin file access ---------------------------------------------------------------


@lru_cache(maxsize=1)
def _automin_index() -> Mapping[str, Source]:
    """Pinned AutoMin files by repository path (``submissions-and-scores/...``)."""
    prefix = f"{AUTOMIN_DIR}/"
    return {s.relpath.removeprefix(prefix): s for s in automin_sources()}


def _read_automin(repo_path: str) -> str:
    """Verified text of one pinned AutoMin file (downloaded into the cache if needed)."""
    source = _automin_index().get(repo_path)
    if source is None:  # pragma: no cover - a programming error, not user input
        raise DataError(f"{repo_path}: not in the AutoMin manifest")
    path = store.resolve(source)
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc}); {_FETCH_HINT}") from None


def _meeting_files(meeting_id: str) -> list[str]:
    """Base names of the pinned files of one AutoMin meeting folder."""
    prefix = f"{_ELMI}/{meeting_id}/"
    return sorted(p.removeprefix(prefix) for p in _automin_index() if p.startswith(prefix))


def _automin_meeting_ids(meetings: str | int | Sequence[str | int] | None) -> list[str]:
    return select_meetings(meetings, AUTOMIN_MEETINGS)


@lru_cache(maxsize=4)
def _automin_meetings_for(_location: str) -> tuple[MinutesMeeting, ...]:
    out: list[MinutesMeeting] = []
    for meeting_id in AUTOMIN_MEETINGS:
        names = _meeting_files(meeting_id)
        transcripts = [n for n in names if n.startswith("transcript_MAN")]
        if len(transcripts) != 1:
            raise DataError(
                f"{AUTOMIN_DIR}/{_ELMI}/{meeting_id}: expected one transcript_MAN file, "
                f"found {transcripts}; the manifest is not the pinned release"
            )
        refs: list[Minutes] = []
        for name in names:
            match = _MINUTES_RE.match(name)
            if match and system_of(match["name"]) == AUTOMIN_REFERENCE:
                rel = f"{_ELMI}/{meeting_id}/{name}"
                refs.append(
                    require_lines(
                        Minutes(
                            meeting_id, match["name"], _read_automin(rel), f"{AUTOMIN_DIR}/{rel}"
                        ),
                        _FETCH_HINT,
                    )
                )
        rel = f"{_ELMI}/{meeting_id}/{transcripts[0]}"
        out.append(
            MinutesMeeting(
                meeting_id=meeting_id,
                split=AUTOMIN_SPLIT,
                transcript=_read_automin(rel),
                references=tuple(sorted(refs, key=lambda m: m.system)),
                source=f"{AUTOMIN_DIR}/{rel}",
            )
        )
    return tuple(out)


def load_automin_meetings(
    meetings: str | int | Sequence[str | int] | None = None,
) -> list[MinutesMeeting]:
    """AutoMin 2023's 12 English test meetings with transcript and reference minutes.

    Args:
        meetings: A selection as understood by :func:`select_meetings` (default: all 12).

    Raises:
        DataError: A file is missing or corrupt (naming it and the fix), or a bad selection.
    """
    wanted = set(_automin_meeting_ids(meetings))
    return [m for m in _automin_meetings_for(_location_key()) if m.meeting_id in wanted]


@lru_cache(maxsize=4)
def _automin_minutes_for(_location: str) -> tuple[Minutes, ...]:
    out: list[Minutes] = []
    for meeting_id in AUTOMIN_MEETINGS:
        found: dict[str, Minutes] = {}
        for name in _meeting_files(meeting_id):
            match = _MINUTES_RE.match(name)
            if match is None:
                continue
            system = system_of(match["name"])
            rel = f"{_ELMI}/{meeting_id}/{name}"
            if system in found:
                raise DataError(
                    f"{AUTOMIN_DIR}/{rel}: a second minutes file of system {system!r} in "
                    f"{meeting_id}; the manifest is not the pinned release"
                )
            found[system] = require_lines(
                Minutes(meeting_id, system, _read_automin(rel), f"{AUTOMIN_DIR}/{rel}"),
                _FETCH_HINT,
            )
        missing = [s for s in AUTOMIN_SYSTEMS if s not in found]
        if missing:
            raise DataError(
                f"{AUTOMIN_DIR}/{_ELMI}/{meeting_id}: no minutes of {', '.join(missing)}; "
                "the manifest is not the pinned release"
            )
        out.extend(found[s] for s in AUTOMIN_SYSTEMS)
    return tuple(out)


def load_automin_minutes(
    systems: Sequence[str] | None = None,
    meetings: str | int | Sequence[str | int] | None = None,
) -> list[Minutes]:
    """The released minutes of AutoMin 2023's English test set, meeting by meeting.

    Args:
        systems: Systems of :data:`AUTOMIN_SYSTEMS` (default: all 9; ``annot`` = reference).
        meetings: A selection as understood by :func:`select_meetings` (default: all 12).

    Raises:
        DataError: Unknown system or meeting (naming the valid ones), or a bad file.
    """
    chosen = set(_check_systems(systems))
    wanted = set(_automin_meeting_ids(meetings))
    return [
        m
        for m in _automin_minutes_for(_location_key())
        if m.system in chosen and m.meeting_id in wanted
    ]


def _parse_values(line: str, where: str) -> list[float] | None:
    """One ``^``-separated score line; None for an unscored ``-1^-1^-1`` line."""
    parts = line.strip().split("^")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise DataError(f"{where}: {line.strip()!r} is not a ^-separated score line") from None
    if all(v == -1 for v in values):
        return None
    if len(values) != len(EVALUATION_COLUMNS) or not all(1 <= v <= 5 for v in values):
        raise DataError(
            f"{where}: {line.strip()!r} should be four 1-5 scores "
            f"({'^'.join(c[0].upper() for c in EVALUATION_COLUMNS)}); {_FETCH_HINT}"
        )
    return values


def parse_evaluation(text: str, where: str) -> tuple[list[float] | None, list[list[float]]]:
    """Split an ``evaluation+...`` file into its document line and its scored hunk lines.

    Returns:
        (document scores or None when unscored, scores of each scored hunk), both in
        :data:`EVALUATION_COLUMNS` order.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise DataError(f"{where}: empty evaluation file; {_FETCH_HINT}")
    document = _parse_values(lines[0], f"{where}:1")
    hunks = [
        values
        for i, line in enumerate(lines[1:], start=2)
        if (values := _parse_values(line, f"{where}:{i}")) is not None
    ]
    return document, hunks


def parse_aggregated_hunks(text: str, where: str) -> list[tuple[float, float]]:
    """The four ``mean<TAB>stdev`` lines of a ``+aggreg-hunks`` file."""
    rows: list[tuple[float, float]] = []
    for i, line in enumerate((ln for ln in text.splitlines() if ln.strip()), start=1):
        parts = line.split("\t")
        try:
            mean, stdev = float(parts[0]), float(parts[1])
        except (ValueError, IndexError):
            raise DataError(f"{where}:{i}: {line!r} is not 'mean<TAB>stdev'") from None
        rows.append((mean, stdev))
    if len(rows) != len(EVALUATION_COLUMNS):
        raise DataError(f"{where}: {len(rows)} lines, expected 4 (one per criterion)")
    return rows


@lru_cache(maxsize=4)
def _automin_scores_for(_location: str) -> tuple[HumanScores, ...]:
    out: list[HumanScores] = []
    for meeting_id in AUTOMIN_MEETINGS:
        names = _meeting_files(meeting_id)
        for name in names:
            match = _EVAL_RE.match(name)
            if match is None or match["agg"]:
                continue
            system = system_of(match["name"])
            if system not in AUTOMIN_SYSTEMS:
                raise DataError(f"{name}: unknown system {system!r} in {meeting_id}")
            rel = f"{_ELMI}/{meeting_id}/{name}"
            where = f"{AUTOMIN_DIR}/{rel}"
            document, hunks = parse_evaluation(_read_automin(rel), where)
            if document is not None and (meeting_id, system) not in MISSING_DOCUMENT_SCORES:
                out.extend(
                    HumanScores(meeting_id, system, "document", criterion, value)
                    for criterion, value in zip(EVALUATION_COLUMNS, document, strict=True)
                )
            agg_name = f"{name}+aggreg-hunks"
            if agg_name not in names or not hunks:
                continue
            aggregated = parse_aggregated_hunks(
                _read_automin(f"{rel}+aggreg-hunks"), f"{where}+aggreg-hunks"
            )
            for column, (criterion, (mean, _stdev)) in enumerate(
                zip(EVALUATION_COLUMNS, aggregated, strict=True)
            ):
                recomputed = sum(h[column] for h in hunks) / len(hunks)
                if abs(recomputed - mean) > 1e-6:
                    raise DataError(
                        f"{where}+aggreg-hunks: {criterion} mean {mean} disagrees with the "
                        f"{len(hunks)} hunks of {name} ({recomputed:.4f}); {_FETCH_HINT}"
                    )
                out.append(HumanScores(meeting_id, system, "hunk", criterion, mean, len(hunks)))
    return tuple(out)


def load_automin_human_scores(level: ScoreLevel | None = None) -> list[HumanScores]:
    """AutoMin 2023's per-meeting human scores (English), document and/or hunk level.

    Meetings 001, 008 and 012 were not judged; davinci003's document line in meeting 011
    is a placeholder and skipped (see the module docstring).

    Args:
        level: ``document``, ``hunk`` or None for both.
    """
    if level is not None and level not in SCORE_LEVELS:
        raise DataError(f"level={level!r}: expected one of {SCORE_LEVELS}")
    scores = _automin_scores_for(_location_key())
    return [s for s in scores if level is None or s.level == level]


def load_automin_overall_scores(level: ScoreLevel | None = None) -> list[SystemHumanScore]:
    """The released system-level means and stdevs (``elmi-en-overall-*-level-scores.tsv``)."""
    levels: tuple[ScoreLevel, ...] = SCORE_LEVELS if level is None else (level,)
    out: list[SystemHumanScore] = []
    for lvl in levels:
        if lvl not in _OVERALL_TSV:
            raise DataError(f"level={lvl!r}: expected one of {SCORE_LEVELS}")
        rel = _OVERALL_TSV[lvl]
        where = f"{AUTOMIN_DIR}/{rel}"
        lines = [ln for ln in _read_automin(rel).splitlines() if ln.strip()]
        if not lines:
            raise DataError(f"{where}: empty file; {_FETCH_HINT}")
        header = lines[0].split("\t")
        for i, line in enumerate(lines[1:], start=2):
            cells = dict(zip(header, line.split("\t"), strict=False))
            name = cells.get("team", "").removeprefix("minutes_GENER_").removesuffix(".txt")
            system = system_of(name)
            if system not in AUTOMIN_SYSTEMS:
                raise DataError(f"{where}:{i}: unknown team {cells.get('team')!r}")
            for letter, criterion in TSV_LETTERS.items():
                try:
                    mean = float(cells[f"{letter}-mean"])
                    stdev = float(cells[f"{letter}-stdev"])
                except (KeyError, ValueError):
                    raise DataError(
                        f"{where}:{i}: missing or non-numeric {letter}-mean/{letter}-stdev; "
                        f"{_FETCH_HINT}"
                    ) from None
                out.append(SystemHumanScore(system, lvl, criterion, mean, stdev))
    return out


# --- ELITR-Bench meetings with their reference minutes -----------------------------------


def parse_elitr_minutes(files: Mapping[str, bytes], where: str) -> dict[str, list[Minutes]]:
    """Reference minutes (``minutes_GENER_annotNN.txt``) per meeting of an extracted archive."""
    out: dict[str, list[Minutes]] = {}
    for name in sorted(files):
        match = _ELITR_MINUTES_RE.search(name)
        if match is None:
            continue
        try:
            text = files[name].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"{where}:{name}: not UTF-8 text ({exc})") from None
        meeting_id, annot = match.group(1), match.group(2).lower()
        minutes = Minutes(meeting_id, annot, text, f"{where}:{name}")
        out.setdefault(meeting_id, []).append(
            require_lines(
                minutes, "replace the archive with the pinned one (`elitr-bench data verify`)"
            )
        )
    return out


@lru_cache(maxsize=4)
def _elitr_minutes_meetings_for(_location: str, split: Split) -> tuple[MinutesMeeting, ...]:
    source = TRANSCRIPTS_DEV if split == "dev" else TRANSCRIPTS_TEST
    path = store.resolve(source)
    member = source.filename.removesuffix(".zip")
    files = read_tar_in_zip(path, member)
    where = f"{path.name}:{member}"
    transcripts = parse_transcripts(files, split, where)
    references = parse_elitr_minutes(files, where)
    out: list[MinutesMeeting] = []
    for meeting_id, meeting in sorted(transcripts.items()):
        refs = references.get(meeting_id)
        if not refs:
            raise DataError(
                f"{where}: {meeting_id} has no minutes_GENER_annot* file; replace "
                f"{source.relpath} with the pinned archive (`elitr-bench data verify`)"
            )
        out.append(
            MinutesMeeting(
                meeting_id=meeting_id,
                split=split,
                transcript=meeting.transcript,
                references=tuple(sorted(refs, key=lambda m: m.system)),
                source=f"{where}:{meeting.source_name}",
            )
        )
    return tuple(out)


def load_elitr_minutes_meetings(split: Split) -> list[MinutesMeeting]:
    """The ELITR-Bench meetings of a split (10 dev, 8 test2) with their reference minutes.

    The transcript is the same ``transcript_MAN*`` file the QA tasks use.
    """
    if split not in SPLITS:
        raise DataError(f"split={split!r}: expected one of {SPLITS}")
    return list(_elitr_minutes_meetings_for(_location_key(), split))


# --- Minutes written by our own lm-eval runs ---------------------------------------------

#: Task options and generation settings that tell two runs of one model apart.
RUN_SETTING_KEYS: tuple[str, ...] = (
    "overlength",
    "wer",
    "prompt_role",
    "max_gen_toks",
    "chunk_tokens",
)
#: Their defaults, left out of run names.
RUN_SETTING_DEFAULTS: Mapping[str, str] = {
    "overlength": "error",
    "prompt_role": "user",
    "max_gen_toks": "1024",
}


#: Our lm-eval tasks whose samples hold minutes (tasks/elitr_minutes/), known by name so
#: that a damaged file of theirs is still read as minutes (and its damage named).
MINUTES_TASKS: tuple[str, ...] = ("automin23_en", "elitr_minutes_dev", "elitr_minutes_test")

#: The ``task_kind`` that every document of a minutes task carries (the minutes task class
#: writes it, ``tasks/minutes.py``), so a samples file says itself that it holds minutes.
MINUTES_KIND = "minutes"


def holds_minutes(samples_file: Path) -> bool:
    """Whether a samples file holds minutes: its documents say so, or its task is ours.

    Every document of a minutes task carries ``task_kind: minutes`` (a task from an
    ``--include_path`` folder that reuses the minutes task class too, so ``report``,
    ``score`` and ``minutes-check`` read its runs as ours); our own minutes tasks are also
    known by name (:data:`MINUTES_TASKS`), so that a damaged file of theirs is named.
    """
    if task_of(samples_file) in MINUTES_TASKS:
        return True
    doc = first_doc(samples_file)
    return doc is not None and doc.get("task_kind") == MINUTES_KIND


def minutes_candidates(root: Path) -> tuple[list[Path], list[Path]]:
    """The samples files of minutes tasks below ``root``, and all samples files found there.

    A file is its own only candidate; a missing path has none. Nothing is raised, so the
    report (which also reads QA runs) and ``minutes_samples_files`` (which explains what
    is missing) share one search.
    """
    found = samples_below(root)
    return [f for f in found if holds_minutes(f)], found


def minutes_samples_files(path: Path) -> tuple[list[Path], list[str]]:
    """A run's samples files of minutes tasks, and notes on what was set aside.

    An output folder may also hold runs of the QA tasks (``make demo`` writes both into one
    folder): those are skipped, not an error. A rescoring (``elitr-bench score``) replaces
    the samples file it re-judged.

    Raises:
        DataError: No such path, no samples at all, or no samples of a minutes task.
    """
    if path.is_file():
        return [path], []
    if not path.is_dir():
        raise DataError(f"{path}: no such lm-eval output folder or samples file")
    files, found = minutes_candidates(path)
    if not found:
        raise DataError(
            f"{path}: no samples_*.jsonl; run lm_eval with --log_samples --output_path {path}"
        )
    if not files:
        others = sorted({task_of(f) for f in found})
        raise DataError(
            f"{path}: no samples of a minutes task ({', '.join(MINUTES_TASKS)}), only of "
            f"{', '.join(others)}; run lm_eval --tasks automin23_en (or elitr_minutes) "
            "with --log_samples"
        )
    kept, notes = current_samples(files)
    if len(files) < len(found):
        notes = [
            *notes,
            f"{path}: {len(found) - len(files)} samples file(s) of other tasks skipped",
        ]
    return kept, notes


def _samples_files(path: Path) -> list[Path]:
    kept, notes = minutes_samples_files(path)
    for note in notes:
        log.info("%s", note)
    return kept


def run_results(samples_file: Path) -> Mapping[str, Any]:
    """lm-eval's results_*.json of the run (for a rescoring: of the run it re-judged).

    Without a results file of the same stamp, the folder's newest lm-eval results file;
    {} when the folder has none.

    Raises:
        DataError: The results file cannot be read.
    """
    found = run_results_of(samples_file) or newest_lm_eval_results(samples_file.parent)
    return {} if found is None else read_results_file(found)


def minutes_text_of(sample: Mapping[str, Any]) -> str | None:
    """The generated minutes of one logged sample of a minutes task.

    That is the model's response as lm-eval logs it in ``resps`` (for ``overlength=chunked``
    the task has already joined the sections' minutes there). ``filtered_resps`` is not
    used: a judge filter replaces it by JSON.
    """
    resps = sample.get("resps")
    if isinstance(resps, list) and resps:
        first = resps[0]
        while isinstance(first, list) and first:
            first = first[0]
        if isinstance(first, str):
            return first
    return None


def run_name(model: str, model_args: str, settings: Mapping[str, str]) -> str:
    """A readable run name: model, the model_args that name a model, and the settings."""
    parts = [model]
    for arg in (a.strip() for a in model_args.split(",") if a.strip()):
        key, _, value = arg.partition("=")
        if key == "model" and model == "elitr-replay":
            continue  # the run name elitr-replay records: its system= is named already
        if key in ("pretrained", "model", "system", "base_url", "model_name"):
            parts.append(value.rstrip("/").rsplit("/", 1)[-1] if key == "pretrained" else value)
    parts.extend(f"{k}={v}" for k, v in sorted(settings.items()))
    return ",".join(parts)


def load_run_minutes(path: str | Path) -> RunMinutes:
    """Read the minutes one lm-eval run of a minutes task wrote.

    Args:
        path: The run's output folder (searched recursively for ``samples_*.jsonl``) or
            one samples file.

    Raises:
        DataError: No samples, a sample without ``doc.meeting_id`` or text, or several
            minutes of one meeting (two runs in one folder).
    """
    root = Path(path).expanduser()
    files = _samples_files(root)
    tasks: list[str] = []
    minutes: list[tuple[str, str, str, str]] = []  # task, meeting, text, source
    model = ""
    model_args = ""
    settings: dict[str, str] = {}
    seen: dict[str, str] = {}  # meeting -> where its minutes were read
    for samples_file in files:
        task = task_of(samples_file)
        results = run_results(samples_file)
        config = results.get("config")
        config = config if isinstance(config, Mapping) else {}
        model = model or str(config.get("model", ""))
        if not model_args:
            raw_args = config.get("model_args", "")
            model_args = (
                raw_args
                if isinstance(raw_args, str)
                else ",".join(f"{k}={v}" for k, v in dict(raw_args or {}).items())
            )
        task_cfg = (results.get("configs") or {}).get(task, {})
        metadata = task_cfg.get("metadata", {}) if isinstance(task_cfg, Mapping) else {}
        gen = task_cfg.get("generation_kwargs", {}) if isinstance(task_cfg, Mapping) else {}
        for key in RUN_SETTING_KEYS:
            value = (metadata or {}).get(key, (gen or {}).get(key))
            if value not in (None, "") and str(value) != RUN_SETTING_DEFAULTS.get(key):
                settings[key] = str(value)
        tasks.append(task)
        for lineno, sample in read_json_lines(
            samples_file, "pass the samples file of a finished lm-eval run"
        ):
            where = f"{samples_file}:{lineno}"
            doc = sample.get("doc") if isinstance(sample, Mapping) else None
            meeting_id = doc.get("meeting_id") if isinstance(doc, Mapping) else None
            text = minutes_text_of(sample)
            if not isinstance(meeting_id, str) or text is None:
                raise DataError(
                    f"{where}: not a minutes-task sample (no doc.meeting_id or response); "
                    "pass the output of an automin23_en / elitr_minutes_* run"
                )
            if meeting_id in seen:
                raise DataError(
                    f"{where}: minutes of {meeting_id} were already read from "
                    f"{seen[meeting_id]}; pass one run's output folder or samples file"
                )
            seen[meeting_id] = where
            minutes.append((task, meeting_id, text, where))
    name = run_name(model or "unknown-model", model_args, settings)
    return RunMinutes(
        name=name,
        tasks=tuple(dict.fromkeys(tasks)),
        model=model,
        settings=settings,
        minutes=tuple(Minutes(m, name, text, src) for _task, m, text, src in minutes),
        path=str(root),
    )


__all__ = [
    "AUTOMIN_MEETINGS",
    "AUTOMIN_SYSTEMS",
    "CRITERIA",
    "EVALUATION_COLUMNS",
    "MISSING_DOCUMENT_SCORES",
    "holds_minutes",
    "load_automin_human_scores",
    "load_automin_meetings",
    "load_automin_minutes",
    "load_automin_overall_scores",
    "load_elitr_minutes_meetings",
    "load_run_minutes",
    "minutes_candidates",
    "require_lines",
    "run_results",
    "select_meetings",
]


def _model_args(config: Mapping[str, Any]) -> dict[str, str]:
    raw = config.get("model_args", "")
    if isinstance(raw, Mapping):
        return {str(k): str(v) for k, v in raw.items()}
    pairs = (part.partition("=") for part in str(raw or "").split(",") if "=" in part)
    return {k.strip(): v.strip() for k, _, v in pairs}


def run_system_name(results: Mapping[str, Any], fallback: str) -> str:
    """The system a run's minutes belong to: the replayed system, else a run name."""
    config = results.get("config") if isinstance(results.get("config"), Mapping) else {}
    assert isinstance(config, Mapping)
    model = str(config.get("model", ""))
    args = _model_args(config)
    if model == "elitr-replay" and args.get("system"):
        wanted = args["system"].strip().lower()
        return wanted if wanted in AUTOMIN_SYSTEMS else args["system"]
    return run_name(model or fallback, ",".join(f"{k}={v}" for k, v in args.items()), {})
