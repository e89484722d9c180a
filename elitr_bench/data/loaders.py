"""Loaders turning the released files into typed records.

Field names, value sets and counts are validated here, once, so that tasks, judges
and reports can trust the records without re-checking them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from elitr_bench.data import store
from elitr_bench.data.archives import read_tar_in_zip, read_zip_json
from elitr_bench.data.errors import DataError
from elitr_bench.data.records import (
    ANSWER_POSITIONS,
    MODES,
    QUESTION_TYPES,
    SETTINGS,
    SPLITS,
    Meeting,
    Mode,
    Question,
    ReleasedResponse,
    Setting,
    Split,
)
from elitr_bench.data.sources import (
    CZECH,
    QUESTIONS,
    RESPONSES,
    TRANSCRIPTS_DEV,
    TRANSCRIPTS_TEST,
    Source,
)

_TRANSCRIPT_RE = re.compile(r"(?:^|/)(meeting_en_(?:dev|test2)_\d+)/(transcript_MAN[^/]*\.txt)$")
_SCORE_KEYS = {
    "gpt-4-eval_score": "gpt4",
    "prometheus-eval_score": "prometheus",
    "gold-human-eval_score": "gold_human",
    "silver-human-eval_score": "silver_human",
}
#: Released response files: (setting, split, mode, source) that exist upstream.
RELEASED_FILES: tuple[tuple[Setting, Split, Mode, str], ...] = (
    ("qa", "dev", "st", "gpt-4-eval"),
    ("qa", "test2", "st", "gpt-4-eval"),
    ("qa", "test2", "st", "all-eval"),
    ("qa", "dev", "mt", "gpt-4-eval"),
    ("qa", "test2", "mt", "gpt-4-eval"),
    ("conv", "dev", "mt", "gpt-4-eval"),
    ("conv", "test2", "mt", "gpt-4-eval"),
)


def _field(record: Mapping[str, Any], key: str, where: str) -> Any:
    try:
        return record[key]
    except (KeyError, TypeError):
        raise DataError(
            f"{where}: missing field {key!r}; the file is not the pinned release"
        ) from None


def _meetings_of(payload: Any, where: str) -> list[Mapping[str, Any]]:
    meetings = _field(payload, "meetings", where)
    if not isinstance(meetings, list):
        raise DataError(f"{where}: field 'meetings' must be a list")
    return meetings


def _check_choice(value: str, allowed: tuple[str, ...], field: str, where: str) -> str:
    if value not in allowed:
        raise DataError(f"{where}: field {field!r} is {value!r}, expected one of {allowed}")
    return value


def parse_questions(payload: Any, setting: Setting, split: Split, where: str) -> list[Question]:
    """Turn one released question file into records, in released order."""
    questions: list[Question] = []
    for meeting in _meetings_of(payload, where):
        meeting_id = str(_field(meeting, "id", where))
        for turn, item in enumerate(_field(meeting, "questions", f"{where}:{meeting_id}")):
            here = f"{where}:{meeting_id}:q{item.get('id', '?')}"
            questions.append(
                Question(
                    meeting_id=meeting_id,
                    question_id=str(_field(item, "id", here)),
                    question=str(_field(item, "question", here)),
                    answer=str(_field(item, "groundtruth-answer", here)),
                    question_type=cast(
                        Any,
                        _check_choice(
                            _field(item, "question-type", here),
                            QUESTION_TYPES,
                            "question-type",
                            here,
                        ),
                    ),
                    answer_position=cast(
                        Any,
                        _check_choice(
                            _field(item, "answer-position", here),
                            ANSWER_POSITIONS,
                            "answer-position",
                            here,
                        ),
                    ),
                    split=split,
                    setting=setting,
                    turn=turn,
                )
            )
    return questions


def parse_transcripts(files: Mapping[str, bytes], split: Split, where: str) -> dict[str, Meeting]:
    """Pick each meeting's ``transcript_MAN*`` file out of an extracted archive."""
    meetings: dict[str, Meeting] = {}
    for name in sorted(files):
        match = _TRANSCRIPT_RE.search(name)
        if match is None:
            continue
        meeting_id = match.group(1)
        if meeting_id in meetings:
            raise DataError(
                f"{where}: meeting {meeting_id} has two transcript_MAN files "
                f"({meetings[meeting_id].source_name}, {name}); the archive is not the pinned one"
            )
        try:
            text = files[name].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"{where}:{name}: not UTF-8 text ({exc})") from None
        meetings[meeting_id] = Meeting(meeting_id, split, text, source_name=name)
    return meetings


@dataclass(frozen=True)
class Benchmark:
    """The ELITR-Bench questions with the meetings they are about.

    Attributes:
        meetings: Every meeting by id, with its transcript.
        question_sets: Questions by ``(setting, split)``, in released order.
    """

    meetings: Mapping[str, Meeting]
    question_sets: Mapping[tuple[Setting, Split], tuple[Question, ...]]

    def questions(self, setting: Setting = "qa", split: Split = "dev") -> tuple[Question, ...]:
        """Questions of one setting and split, in released (conversation) order."""
        try:
            return self.question_sets[(setting, split)]
        except KeyError:
            raise DataError(
                f"unknown question set setting={setting!r} split={split!r}; "
                f"settings are {SETTINGS}, splits are {SPLITS}"
            ) from None

    def meetings_of(self, split: Split) -> list[Meeting]:
        """Meetings of one split, sorted by id."""
        return [m for _, m in sorted(self.meetings.items()) if m.split == split]

    def iter_questions(self) -> Iterator[Question]:
        """Every question of every set."""
        for items in self.question_sets.values():
            yield from items


def _load_benchmark_uncached() -> Benchmark:
    questions_zip = store.resolve(QUESTIONS)
    sets: dict[tuple[Setting, Split], tuple[Question, ...]] = {}
    for setting in SETTINGS:
        for split in SPLITS:
            member = f"data/elitr-bench-{setting}_{split}.json"
            payload = read_zip_json(questions_zip, member)
            sets[(setting, split)] = tuple(
                parse_questions(payload, setting, split, f"{questions_zip.name}:{member}")
            )
    meetings: dict[str, Meeting] = {}
    archives: tuple[tuple[Source, Split], ...] = (
        (TRANSCRIPTS_DEV, "dev"),
        (TRANSCRIPTS_TEST, "test2"),
    )
    for source, archive_split in archives:
        path = store.resolve(source)
        member = source.filename.removesuffix(".zip")
        files = read_tar_in_zip(path, member)
        meetings.update(parse_transcripts(files, archive_split, f"{path.name}:{member}"))
    for (setting, split), items in sets.items():
        for question in items:
            meeting = meetings.get(question.meeting_id)
            if meeting is None:
                raise DataError(
                    f"{QUESTIONS.relpath}: {setting}_{split} question {question.question_id} is "
                    f"about {question.meeting_id}, which has no transcript_MAN file in "
                    f"{TRANSCRIPTS_DEV.relpath} or {TRANSCRIPTS_TEST.relpath}; "
                    "replace the archives with the pinned ones"
                )
    return Benchmark(meetings=meetings, question_sets=sets)


@lru_cache(maxsize=4)
def _load_benchmark_for(_location: str) -> Benchmark:
    return _load_benchmark_uncached()


def _location_key() -> str:
    """What decides the loaded content: where files are, the password, verification."""
    import os

    from elitr_bench.data.archives import PASSWORD_ENV

    root = store.data_dir()
    where = f"dir:{root}" if root is not None else f"cache:{store.cache_root()}"
    return "|".join(
        (where, os.environ.get(PASSWORD_ENV, ""), os.environ.get(store.SKIP_VERIFY_ENV, ""))
    )


def load_benchmark() -> Benchmark:
    """Load (once per data location and process) every question set and transcript."""
    return _load_benchmark_for(_location_key())


#: Languages of the question sets: the released English one and the Czech translation.
LANGUAGES: tuple[str, ...] = ("en", "cs")


def _load_czech_uncached() -> dict[tuple[Setting, Split], tuple[Question, ...]]:
    """The Czech question sets, checked item by item against the English ones.

    ``czech.zip`` mirrors ``data.zip`` (``czech/elitr-bench-czech-{setting}_{split}.json``):
    only the question and reference-answer texts are translated, so each Czech set must
    list the same meetings, question ids, types and answer positions in the same order.
    """
    path = store.resolve(CZECH)
    english = load_benchmark()
    sets: dict[tuple[Setting, Split], tuple[Question, ...]] = {}
    for setting in SETTINGS:
        for split in SPLITS:
            member = f"czech/elitr-bench-czech-{setting}_{split}.json"
            where = f"{path.name}:{member}"
            items = tuple(parse_questions(read_zip_json(path, member), setting, split, where))
            reference = english.questions(setting, split)
            shape = [
                (q.meeting_id, q.question_id, q.question_type, q.answer_position) for q in items
            ]
            expected = [
                (q.meeting_id, q.question_id, q.question_type, q.answer_position) for q in reference
            ]
            if shape != expected:
                first = next(
                    (i for i, (a, b) in enumerate(zip(shape, expected, strict=False)) if a != b),
                    min(len(shape), len(expected)),
                )
                raise DataError(
                    f"{where}: does not match the English set {setting}_{split} "
                    f"({len(shape)} vs {len(expected)} questions, first difference at item "
                    f"{first}); the archive is not the pinned release, replace it"
                )
            sets[(setting, split)] = items
    return sets


@lru_cache(maxsize=4)
def _load_czech_for(_location: str) -> dict[tuple[Setting, Split], tuple[Question, ...]]:
    return _load_czech_uncached()


def load_questions(
    setting: Setting = "qa", split: Split = "dev", language: str = "en"
) -> tuple[Question, ...]:
    """Questions of one setting, split and language (``en`` or ``cs``), in released order.

    The Czech sets are read from ``czech.zip`` only when asked for, so English-only runs
    never need that file.

    Raises:
        DataError: Unknown language, setting or split, or a bad file.
    """
    if language == "en":
        return load_benchmark().questions(setting, split)
    if language != "cs":
        raise DataError(f"unknown question language {language!r}; expected one of {LANGUAGES}")
    sets = _load_czech_for(_location_key())
    try:
        return sets[(setting, split)]
    except KeyError:
        raise DataError(
            f"unknown question set setting={setting!r} split={split!r}; "
            f"settings are {SETTINGS}, splits are {SPLITS}"
        ) from None


def _validate_release(setting: str, split: str, mode: str, source: str) -> None:
    if (setting, split, mode, source) not in RELEASED_FILES:
        options = ", ".join("/".join(key) for key in RELEASED_FILES)
        raise DataError(
            f"no released responses for setting={setting} split={split} mode={mode} "
            f"source={source}; released files are: {options}"
        )


def parse_responses(
    payload: Any, setting: Setting, split: Split, mode: Mode, where: str
) -> list[ReleasedResponse]:
    """Flatten one released response file into one record per (system, question)."""
    out: list[ReleasedResponse] = []
    for meeting in _meetings_of(payload, where):
        meeting_id = str(_field(meeting, "id", where))
        for item in _field(meeting, "questions", f"{where}:{meeting_id}"):
            here = f"{where}:{meeting_id}:q{item.get('id', '?')}"
            for resp in _field(item, "generated-responses", here):
                scores: dict[str, float] = {}
                for raw_key, key in _SCORE_KEYS.items():
                    if raw_key in resp:
                        try:
                            scores[key] = float(resp[raw_key])
                        except (TypeError, ValueError):
                            raise DataError(
                                f"{here}: {raw_key}={resp[raw_key]!r} is not a number"
                            ) from None
                out.append(
                    ReleasedResponse(
                        system=str(_field(resp, "model", here)),
                        meeting_id=meeting_id,
                        question_id=str(_field(item, "id", here)),
                        split=split,
                        setting=setting,
                        mode=mode,
                        question=str(_field(item, "question", here)),
                        reference=str(_field(item, "groundtruth-answer", here)),
                        response=str(_field(resp, "generated-response", here)),
                        scores=scores,
                    )
                )
    return out


@lru_cache(maxsize=16)
def _load_responses_for(
    _location: str, setting: Setting, split: Split, mode: Mode, source: str
) -> tuple[ReleasedResponse, ...]:
    path = store.resolve(RESPONSES)
    member = f"generated-responses/elitr-bench-{setting}_{split}_{mode}_{source}.json"
    payload = read_zip_json(path, member)
    return tuple(parse_responses(payload, setting, split, mode, f"{path.name}:{member}"))


def load_released_responses(
    setting: Setting = "qa", split: Split = "dev", mode: Mode = "st", source: str = "gpt-4-eval"
) -> tuple[ReleasedResponse, ...]:
    """Load one released response file (``source`` is ``gpt-4-eval`` or ``all-eval``).

    Raises:
        DataError: The combination was never released, or the file is bad.
    """
    if mode not in MODES:
        raise DataError(f"mode={mode!r}: expected one of {MODES}")
    _validate_release(setting, split, mode, source)
    return _load_responses_for(_location_key(), setting, split, mode, source)


def released_systems() -> dict[tuple[str, str, str], tuple[str, ...]]:
    """System names per released ``(setting, split, mode)``, in released order."""
    systems: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for setting, split, mode, source in RELEASED_FILES:
        if source != "gpt-4-eval":
            continue
        names = dict.fromkeys(r.system for r in load_released_responses(setting, split, mode))
        systems[(setting, split, mode)] = tuple(names)
    return systems
