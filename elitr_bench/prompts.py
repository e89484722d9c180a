"""Answer prompts of ELITR-Bench, reproduced from the paper, and pure builders for them.

Every prompt the papers print lives in this package so that a reader can diff it
against the paper in one place: the answer prompt here, the judge prompts in
``elitr_bench.judges.rubrics``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PromptRole = Literal["user", "system"]

# ELITR-Bench paper (Thonet et al.), Figure 5: answer prompt. ``{transcript}`` is the
# meeting-specific span; the questions are appended as described in Sec. 4.
ANSWER_PROMPT = (
    "The following is the transcript of a meeting with multiple participants, where "
    "utterances start with the speaker's anonymized name (for instance (PERSON4)) and "
    "may span over several lines.\n"
    "\n"
    "{transcript}\n"
    "\n"
    "As a professional conversational assistant, your task is to answer questions about "
    "the meeting by making inferences from the provided transcript."
)

# App. B.2: optional question-answer markers, 'QUESTION:' before a question and
# 'ANSWER:' before an answer.
QUESTION_MARKER = "QUESTION: "
ANSWER_MARKER = " ANSWER:"

#: Separator between the Fig. 5 text and the first question when both share one turn.
TURN_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn; ``role`` is ``system``, ``user`` or ``assistant``."""

    role: str
    content: str

    def as_dict(self) -> dict[str, str]:
        """The OpenAI/Hugging Face chat-message form."""
        return {"role": self.role, "content": self.content}


def answer_preamble(transcript: str) -> str:
    """Fig. 5 with the meeting's transcript filled in."""
    return ANSWER_PROMPT.format(transcript=transcript)


def question_turn(question: str, *, qa_markers: bool = False) -> str:
    """The user-turn text of one question, with App. B.2 markers when asked for."""
    return f"{QUESTION_MARKER}{question}{ANSWER_MARKER}" if qa_markers else question


def conversation(
    transcript: str,
    questions: list[str],
    answers: list[str],
    *,
    prompt_role: PromptRole = "user",
    qa_markers: bool = False,
) -> list[ChatMessage]:
    """Messages asking ``questions[-1]`` after the earlier questions and their answers.

    Single-turn prompts are the case ``len(questions) == 1``. With ``prompt_role="user"``
    the Fig. 5 text and the first question share the first user turn (works with every
    chat template); with ``"system"`` Fig. 5 is the system message, as the authors did
    for OpenAI models.

    Args:
        transcript: Meeting transcript.
        questions: Questions asked so far, the last one being answered now.
        answers: Answers to all but the last question (the history).
        prompt_role: Where the Fig. 5 text goes.
        qa_markers: Whether to wrap questions in App. B.2's markers.

    Raises:
        ValueError: ``answers`` is not one shorter than ``questions``.
    """
    if len(answers) != len(questions) - 1 or not questions:
        raise ValueError("conversation() needs one answer for every question but the last")
    preamble = answer_preamble(transcript)
    turns = [question_turn(q, qa_markers=qa_markers) for q in questions]
    messages: list[ChatMessage] = []
    if prompt_role == "system":
        messages.append(ChatMessage("system", preamble))
        messages.append(ChatMessage("user", turns[0]))
    else:
        messages.append(ChatMessage("user", preamble + TURN_SEPARATOR + turns[0]))
    for answer, turn in zip(answers, turns[1:], strict=True):
        messages.append(ChatMessage("assistant", answer))
        messages.append(ChatMessage("user", turn))
    return messages


def render_plain(messages: list[ChatMessage]) -> str:
    """Render messages as one plain-text prompt for models run without a chat template.

    Turns are separated by a blank line; the model continues after the last question.
    """
    return TURN_SEPARATOR.join(m.content for m in messages)
