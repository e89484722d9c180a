"""The G-Eval minutes method: evaluation steps in the prompt, one 1-5 score read back."""

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from elitr_bench.judges.asking import ask, draws, policy_of
from elitr_bench.judges.reading import Field, NumericGrammar, Reading, Stated, read_reply
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


# The asked format: the form's line, ``Score: N`` (or the bare ``N`` after the prompt's
# "Score:"), on a line of its own. Any other statement of a score only vetoes it, and a
# reply without the line is asked to restate it as ``{"geval_score": N}``.
_LINE = re.compile(r"^[ \t]*(?:score[ \t]*:[ \t]*)?(?P<n>\d+)[ \t]*\.?[ \t]*$", re.I | re.M)


def _stated(text: str) -> list[Stated]:
    return [Stated(METRIC, float(m.group("n")), m.start(), m.end()) for m in _LINE.finditer(text)]


GRAMMAR = NumericGrammar(
    (SCORE,),
    _stated,
    {METRIC: r"scor"},
    r"rat(?:e|ed|ing)\b|out\s+of|\d\s*/\s*\d",
    "one 'Score: N' line",
    "score",
)


def read_score(text: str) -> Reading:
    """The reading of one reply under the core's reading policy."""
    return read_reply(GRAMMAR, text)


class GEvalMethod(MinutesMethod):
    """One prompt per minutes; a reply without the score form is restated once.

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
        """One call, its re-asks and a restatement."""
        return int(self.config.reask) + 2

    def planned_restatements(self, item: MinutesItem) -> int:
        """At most one restatement turn."""
        return 1

    async def assess(self, item: MinutesItem, client: JudgeClient) -> MinutesAssessment:
        """Ask the prompt through the shared client and read ``Score: N``."""
        prompt = build_prompt(item.transcript, item.minutes, self.steps)
        asked = await ask(
            client,
            draws(self.config, prompt),
            GRAMMAR,
            int(self.config.reask) + 1,
            evaluated=(item.minutes,),
            policy=policy_of(self.config),
        )
        scores: dict[str, float | None] = {METRIC: asked.reading.value(METRIC)}
        return MinutesAssessment(
            meeting_id=item.meeting_id,
            system=item.system,
            method=METHOD,
            scores=scores,
            status=status_for(scores),
            reason=asked.reading.reason,
            details={"raw": asked.kept, "attempts": asked.attempts},
        )


__all__: Sequence[str] = ("GEvalMethod", "build_prompt", "read_score")
