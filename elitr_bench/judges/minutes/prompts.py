r"""AutoMin 2023 GPT judge prompts and their parsers (pure functions, no I/O).

Scores are read by :mod:`.score_parsing`: only ``Criterion: N`` lines give a value; any
other reply is asked to restate its scores as JSON (:mod:`elitr_bench.judges.reading`).

Line-wrap decision: Figures 17-19 of the AutoMin 2023 overview (App. F) are printed in a
verbatim box whose lines are wrapped to the page. Fig. 17's wrapped lines end either with
a space or right after an opening parenthesis; we join them back (without adding a space)
and keep the blank lines the figure prints between sections. Figs. 18 and 19 are printed
one paragraph per line and are taken as printed. Typos (``transcipt``, ``it's``), the
unbalanced parenthesis of Fig. 18 and ``i. e.`` are part of the prompts and kept. The
placeholder ``{system\\_generated\\_minutes}`` is the figure's LaTeX escape of
``{system_generated_minutes}``; placeholders are filled by plain replacement, so braces in
a transcript are never interpreted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from elitr_bench.judges.minutes.score_parsing import SCALE_HIGH, SCALE_LOW, criteria_grammar
from elitr_bench.judges.reading import NumericGrammar, Reading, Reply

TRANSCRIPT = "{transcript}"
MINUTES = "{system_generated_minutes}"
TURN = "{turn}"
#: The transcript and the minutes as both AutoMin prompts (Figs. 17 and 18) present them.
_INPUTS = f"\nTranscript:\n{TRANSCRIPT}\n\nMinutes:\n{MINUTES}\n\n"

# Figure 17 (AutoMin 2023 overview, App. F): the "GPT-ART" prompt (adequacy, relevance,
# topicality). Wrapped print lines joined as described in the module docstring.
ART_PROMPT = (
    "Given the following meeting transcipt and minutes, evaluate the minutes of the meeting "
    "for it's adequacy (the judgment if summary sentences represent conclusions clearly "
    "visible in the transcripts of the discussions), relevance (how well the summary sums up "
    "the main idea of the meeting), and topicality (whether summary sentences cover topics "
    "that are discussed in the transcript).\n"
    + _INPUTS
    + "Evaluate minutes for it's adequacy (the judgment if summary sentences represent "
    "conclusions clearly visible in the transcripts of the discussions), relevance (how well "
    "the summary sums up the main idea of the meeting), and topicality (whether summary "
    "sentences cover topics that are discussed in the transcript). Give each score "
    "separately on a scale 0 to 10, where 10 is the best:"
)

# Figure 18 (AutoMin 2023 overview, App. F): the "GPT-AFGR" prompt (adequacy, fluency,
# grammatical correctness, relevance), mimicking the annotators' instructions (App. E).
AFGR_PROMPT = (
    "Given the following meeting transcript and minutes, evaluate the minutes for their "
    "adequacy (to what extent the minutes adequately capture the major topics discussed in "
    "the meeting, also considering coverage, i. e. all such topics covered), fluency (if the "
    "minutes consist of fluent, coherent texts and are readable to the evaluator), "
    "grammatical correctness (the level to which the minutes are grammatically correct) and "
    "relevance (the extent to which the minutes overall capture the important content from "
    "the source transcript (as opposed to summarizing useless parts).\n"
    + _INPUTS
    + "Now evaluate the minutes for their adequacy, fluency, grammatical correctness and "
    "relevance. Give each score separately on a scale 0 to 10, where 10 is the best:"
)

# Figure 19 (AutoMin 2023 overview, App. F): the turn classifier of the filler compression
# (Sec. 6.3). The figure prints the instruction, an empty line, and the answer cue (the
# extracted text shows a stray "| " before the cue, a rendering artefact of the box). The
# figure has no placeholder for the turn; we put the turn where the empty line is, as its
# own paragraph, because that is the only place that keeps both printed lines intact.
FILLER_PROMPT = (
    "The following conversational turn is from a meeting transcript. Classify the turn into "
    "'Filler' (not relevant outside of the meeting) or 'Content' (contains relevant "
    "information).\n"
    "\n"
    "{turn}\n"
    "\n"
    "Classification of the turn as 'Filler' or 'Content':"
)


@dataclass(frozen=True)
class MinutesPrompt:
    """One AutoMin judge prompt and the criteria its answer must score.

    Attributes:
        name: Method name (``gpt-art`` / ``gpt-afgr``).
        template: Prompt with ``{transcript}`` and ``{system_generated_minutes}``.
        criteria: Criterion -> metric name, in the order the prompt asks for them.
        figure: Where the prompt is printed.
    """

    name: str
    template: str
    criteria: Mapping[str, str]
    figure: str

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metric names, in the prompt's order."""
        return tuple(self.criteria.values())

    @property
    def prompt_hash(self) -> str:
        """Short sha256 of the template (identifies the prompt in result files)."""
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()[:16]

    @property
    def grammar(self) -> NumericGrammar:
        """How this prompt's scores are read and restated (fields: the criterion keys)."""
        return criteria_grammar(tuple(self.criteria), (self.template,))

    def build(self, transcript: str, minutes: str) -> str:
        """Fill the template (plain replacement, braces in the texts stay as they are)."""
        head, _, tail = self.template.partition(TRANSCRIPT)
        return head + transcript + tail.replace(MINUTES, minutes, 1)


ART = MinutesPrompt(
    name="gpt-art",
    template=ART_PROMPT,
    criteria={
        "adequacy": "art_adequacy",
        "relevance": "art_relevance",
        "topicality": "art_topicality",
    },
    figure="AutoMin 2023 Fig. 17",
)
AFGR = MinutesPrompt(
    name="gpt-afgr",
    template=AFGR_PROMPT,
    criteria={
        "adequacy": "afgr_adequacy",
        "fluency": "afgr_fluency",
        "grammaticality": "afgr_grammaticality",
        "relevance": "afgr_relevance",
    },
    figure="AutoMin 2023 Fig. 18",
)
PROMPTS: dict[str, MinutesPrompt] = {ART.name: ART, AFGR.name: AFGR}

SCALE = (SCALE_LOW, SCALE_HIGH)
"""Both prompts ask for "a scale 0 to 10" (Figs. 17-18)."""


def build_filler_prompt(turn: str) -> str:
    """The Fig. 19 prompt for one (cleaned) turn, speaker label included."""
    head, _, tail = FILLER_PROMPT.partition(TURN)
    return head + turn + tail


@dataclass(frozen=True)
class FillerGrammar:
    """Fig. 19's answer: the label ``filler`` or ``content`` (field ``label``)."""

    fields: tuple[str, ...] = ("label",)
    restatement: None = None  # a label, not a number: an unreadable answer is asked again

    def read(self, reply: Reply) -> Reading:
        """The label when the answer names exactly one (or starts with one of the two)."""
        label = _filler_label(reply.text)
        reason = "" if label else "the answer names neither or both labels (filler, content)"
        return Reading({"label": label}, {"label": reason} if reason else {})


FILLER = FillerGrammar()


def _filler_label(text: str) -> str | None:
    low = text.lower()
    has_filler = re.search(r"\bfiller\b", low) is not None
    has_content = re.search(r"\bcontent\b", low) is not None
    if has_filler and not has_content:
        return "filler"
    if has_content and not has_filler:
        return "content"
    if has_filler and has_content:
        # "Classification: Filler" after restating both options: the first word of the
        # answer decides when it is one of the two labels.
        first = re.match(r"\W*(filler|content)\b", low)
        return first.group(1) if first else None
    return None
