"""Typed records for the ELITR-Bench data.

Records are frozen so that a loaded benchmark can be shared freely between tasks,
judges and reports in one process without defensive copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Split = Literal["dev", "test2"]
Setting = Literal["qa", "conv"]
Mode = Literal["st", "mt"]
QuestionType = Literal["who", "what", "when", "howmany"]
AnswerPosition = Literal["B", "M", "E", "S"]

SPLITS: tuple[Split, ...] = ("dev", "test2")
SETTINGS: tuple[Setting, ...] = ("qa", "conv")
MODES: tuple[Mode, ...] = ("st", "mt")
QUESTION_TYPES: tuple[QuestionType, ...] = ("who", "what", "when", "howmany")
ANSWER_POSITIONS: tuple[AnswerPosition, ...] = ("B", "M", "E", "S")


@dataclass(frozen=True)
class Meeting:
    """One ELITR meeting and the manual transcript the benchmark was written on.

    Attributes:
        meeting_id: e.g. ``meeting_en_dev_001``.
        split: ``dev`` or ``test2``.
        transcript: Text of the meeting's ``transcript_MAN*`` file, unchanged.
        source_name: Archive member the transcript came from (for provenance).
    """

    meeting_id: str
    split: Split
    transcript: str
    source_name: str = ""


@dataclass(frozen=True)
class Question:
    """One benchmark question with its ground-truth answer.

    Attributes:
        meeting_id: Meeting the question is about.
        question_id: Identifier within the meeting, as released (a string such as ``"3"``).
        question: Question text.
        answer: Ground-truth answer.
        question_type: ``who``, ``what``, ``when`` or ``howmany``.
        answer_position: Where in the transcript the answer lies: ``B``egin, ``M``iddle,
            ``E``nd or ``S``everal places.
        split: ``dev`` or ``test2``.
        setting: ``qa`` (stand-alone questions) or ``conv`` (conversational wording).
        turn: 0-based position of the question in its meeting's released order, which is
            the order of the multi-turn conversation.
    """

    meeting_id: str
    question_id: str
    question: str
    answer: str
    question_type: QuestionType
    answer_position: AnswerPosition
    split: Split
    setting: Setting
    turn: int = 0


@dataclass(frozen=True)
class ReleasedResponse:
    """A response published by the ELITR-Bench authors, with its scores.

    Attributes:
        system: System name as released, e.g. ``GPT-4`` or ``Vicuna-13B-v1.5``.
        meeting_id: Meeting of the question.
        question_id: Question identifier.
        split: ``dev`` or ``test2``.
        setting: ``qa`` or ``conv``.
        mode: ``st`` (single-turn) or ``mt`` (multi-turn).
        question: Question text.
        reference: Ground-truth answer.
        response: The system's answer.
        scores: Scores on the 10-point scale, keyed ``gpt4``, ``prometheus`` (already
            doubled), ``gold_human`` and ``silver_human`` where released.
    """

    system: str
    meeting_id: str
    question_id: str
    split: Split
    setting: Setting
    mode: Mode
    question: str
    reference: str
    response: str
    scores: Mapping[str, float] = field(default_factory=dict)


# --- Meeting minutes (AutoMin Task A on the ELITR meetings) -------------------------------

Criterion = Literal["adequacy", "fluency", "grammaticality", "relevance"]
ScoreLevel = Literal["document", "hunk"]

#: AutoMin 2023's four manual criteria (Sec. 6.1), alphabetical as in the paper's tables.
#: The released files use other column orders, see
#: :data:`elitr_bench.data.minutes.EVALUATION_COLUMNS`.
CRITERIA: tuple[Criterion, ...] = ("adequacy", "fluency", "grammaticality", "relevance")
SCORE_LEVELS: tuple[ScoreLevel, ...] = ("document", "hunk")


@dataclass(frozen=True)
class Minutes:
    """A system's minutes of a meeting, the unit every minutes metric and judge scores.

    Attributes:
        meeting_id: e.g. ``meeting_en_test2023_002`` or ``meeting_en_dev_001``.
        system: AutoMin system (``gpt4``, ``ntr``, ...; ``annot`` is the human reference in
            AutoMin's own tables, ``annotNN`` a named reference), or the run name of one of
            our lm-eval runs.
        text: The minutes exactly as released or generated.
        source: Provenance: released file, archive member or samples file.
    """

    meeting_id: str
    system: str
    text: str
    source: str = ""

    @property
    def lines(self) -> tuple[str, ...]:
        """Non-empty, stripped lines in order: the minutes' items (bullets, headers).

        AutoMin's Table 5 line counts include blank lines (``wc -l``); the ``lines`` metric
        of the minutes tasks follows the table, not this property.
        """
        return tuple(line.strip() for line in self.text.splitlines() if line.strip())


@dataclass(frozen=True)
class HumanScores:
    """One released human value for one (meeting, system, level, criterion).

    Attributes:
        meeting_id: Meeting the minutes are about.
        system: System as in :data:`elitr_bench.data.minutes.AUTOMIN_SYSTEMS`.
        level: ``document`` (one judgement of the whole minutes) or ``hunk`` (the mean of
            the per-hunk judgements of these minutes, as in the ``+aggreg-hunks`` file).
        criterion: ``adequacy``, ``fluency``, ``grammaticality`` or ``relevance``.
        value: 1-5 as released.
        count: How many judgements ``value`` averages: 1 at document level, the number of
            scored hunks at hunk level (AutoMin's overall hunk-level means pool hunks, so a
            system mean weighted by ``count`` reproduces the released TSV).
    """

    meeting_id: str
    system: str
    level: ScoreLevel
    criterion: Criterion
    value: float
    count: int = 1


@dataclass(frozen=True)
class SystemHumanScore:
    """One row/column cell of AutoMin's overall score TSVs (system-level mean and stdev).

    Attributes:
        system: System as in :data:`elitr_bench.data.minutes.AUTOMIN_SYSTEMS`.
        level: ``document`` or ``hunk``.
        criterion: One of :data:`CRITERIA`.
        mean: Released mean.
        stdev: Released standard deviation.
    """

    system: str
    level: ScoreLevel
    criterion: Criterion
    mean: float
    stdev: float


@dataclass(frozen=True)
class MinutesMeeting:
    """A meeting to write minutes for, with its human reference minutes.

    Attributes:
        meeting_id: e.g. ``meeting_en_test2023_002``.
        split: ``dev`` or ``test2`` (ELITR-Bench meetings) or ``test2023`` (AutoMin 2023).
        transcript: The transcript text, unchanged.
        references: Human reference minutes (system ``annotNN``), sorted by system.
        source: Provenance of the transcript.
    """

    meeting_id: str
    split: str
    transcript: str
    references: tuple[Minutes, ...]
    source: str = ""


@dataclass(frozen=True)
class RunMinutes:
    """The minutes one lm-eval run of a minutes task wrote.

    Attributes:
        name: Run name: model plus the model_args and task settings that tell runs apart.
        tasks: Tasks the minutes came from (``automin23_en``, ``elitr_minutes_dev``, ...).
        model: lm-eval model type and pretrained name as in the results file.
        settings: Task options and generation settings that shaped the minutes.
        minutes: One record per meeting, ``system`` = ``name``.
        path: Folder or file the run was read from.
    """

    name: str
    tasks: tuple[str, ...]
    model: str
    settings: Mapping[str, str]
    minutes: tuple[Minutes, ...]
    path: str = ""
