"""The G-Eval minutes method: evaluation steps in the prompt, one 1-5 score read back."""

import hashlib
from collections.abc import Sequence
from typing import Any

from elitr_bench.judges.asking import ask, reader_of, request_for
from elitr_bench.judges.reading import Field, Reading, Reply, decide, labelled, read_reply
from elitr_bench.judges.summary.base import (
    MinutesAssessment,
    MinutesItem,
    MinutesMethod,
    status_for,
)
from elitr_bench.llm.client import JudgeClient

METHOD = "geval"
METRIC = "geval_score"
SCORE = Field(METRIC, 1, 5, integer=True)

#: G-Eval's evaluation steps for coherence, adapted to minutes; ``steps=N`` keeps N.
STEPS: tuple[str, ...] = (
    "Read the meeting transcript carefully and identify its main topics and decisions.",
    "Read the minutes and compare them to the transcript.",
    "Check whether the minutes cover the main topics and decisions of the meeting.",
    "Check whether the minutes are well structured and free of unsupported content.",
    "Assign a score for overall quality on a scale of 1 to 5.",
)

TEMPLATE = """You will be given the transcript of a meeting and minutes written for it.
Your task is to rate the minutes on one metric: overall quality (1-5).

Evaluation Steps:
{steps}

Transcript:
{transcript}

Minutes:
{minutes}

Evaluation Form (scores ONLY):
Score:"""


def build_prompt(transcript: str, minutes: str, steps: int) -> str:
    """The judge prompt listing the first ``steps`` evaluation steps."""
    listed = "\n".join(f"{i}. {text}" for i, text in enumerate(STEPS[:steps], 1))
    return TEMPLATE.format(steps=listed, transcript=transcript, minutes=minutes)


class _Grammar:
    """``Score: N`` (N on 1-5) written in the reply's prose."""

    fields: tuple[str, ...] = (METRIC,)

    def read(self, reply: Reply) -> Reading:
        found = labelled(reply.prose, "score", SCORE)
        return Reading.of({METRIC: decide(METRIC, found, SCORE)})


GRAMMAR = _Grammar()


def read_score(text: str) -> Reading:
    """The reading of one reply under the core's reading policy."""
    return read_reply(GRAMMAR, text)


class GEvalMethod(MinutesMethod):
    """One prompt per minutes, re-asked until the score form is filled in.

    Args:
        config: The parsed judge config (sampling, ``reask``).
        steps: How many evaluation steps the prompt lists.
    """

    name = METHOD
    metrics: tuple[str, ...] = (METRIC,)

    def __init__(self, config: Any, steps: int) -> None:
        self.config = config
        self.steps = steps
        self.prompt_hash = hashlib.sha256(
            build_prompt("{transcript}", "{minutes}", steps).encode()
        ).hexdigest()[:16]

    def planned_calls(self, item: MinutesItem) -> int:
        """One call and its re-asks."""
        return int(self.config.reask) + 1

    async def assess(self, item: MinutesItem, client: JudgeClient) -> MinutesAssessment:
        """Ask the prompt through the shared client and read ``Score: N``."""
        prompt = build_prompt(item.transcript, item.minutes, self.steps)
        asked = await ask(
            client,
            lambda attempt: (request_for(self.config, prompt, attempt), attempt),
            reader_of(GRAMMAR, evaluated=(item.minutes,)),
            self.planned_calls(item),
        )
        scores: dict[str, float | None] = {METRIC: asked.reading.value(METRIC)}
        return MinutesAssessment(
            meeting_id=item.meeting_id,
            system=item.system,
            method=METHOD,
            scores=scores,
            status=status_for(scores),
            reason=asked.reading.reason,
            details={"raw": asked.raw, "attempts": asked.attempts},
        )


__all__: Sequence[str] = ("GEvalMethod", "build_prompt", "read_score")
