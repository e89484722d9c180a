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
