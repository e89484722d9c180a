"""MESA's prompts: the paper's three step templates (Figs. 3-5) and our own additions.

What is the paper's and what is ours:

* ``IDENTIFICATION``, ``VERIFICATION``, ``SCORING`` reproduce App. A, Figs. 3, 4 and 5 of
  Kirstein et al. exactly. Two typesetting artefacts of the PDF are normalised: the
  typographic apostrophes ’ (how LaTeX prints a straight ') are straight quotes again, and
  the placeholders the PDF prints without braces in Figs. 3 and 5 (``data['summary']``) are
  filled like the braced one of Fig. 4. The criteria slot (``self.criteria[criteria]``) is
  filled with ``"<name>: <definition>"`` of the type (see ``error_types.yaml``). Fig. 5's
  stray opening quote before ``{ "reasoning"`` is printed by the paper and kept.
* Everything else here is ours, because the paper does not print it: the ``prefix`` layout,
  the wording that appends self-training guidance, the multi-agent debate prompts (Sec. 2.4,
  Fig. 2 describe the protocol only) and the self-training prompts (Sec. 2.5 describes them
  in one paragraph).

All builders are pure functions of their inputs, so prompts are reproducible and every
distinct prompt is a distinct cache entry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from elitr_bench.judges.mesa.error_types import ErrorType

Step = Literal["identification", "verification", "scoring"]
STEPS: tuple[Step, ...] = ("identification", "verification", "scoring")
Layout = Literal["paper", "prefix"]
LAYOUTS: tuple[Layout, ...] = ("paper", "prefix")

# --- the paper's templates (exact) ----------------------------------------------------

# App. A, Figure 3: "The prompt template used to task an LLM instance to identify potential
# error instances."
IDENTIFICATION = (
    "Step 1 is to collect possible error instances.\n"
    "Read the following criteria carefully: *** criteria: {criteria} ***.\n"
    "Next, read the summary: ** {summary} **.\n"
    "Also, consider the original meeting transcript: * {transcript} *.\n"
    "\n"
    "Now, read the summary again and write down a list of instances where this error type "
    "could occur. This can contain instances that already show the error or instances that "
    "could potentially show the error. For every instance, write down a short reasoning "
    "thinking step-by-step why this instance could be an error. Also, for every instance, "
    "provide a score from 0 (totally unsure) to 100 (totally sure) to show how certain you "
    "are that this instance could be an error. Ensure that each instance is provided in "
    "strict JSON format, using double quotes for keys and values, and no additional text "
    "outside the JSON structure. Return your answer only in the following format:\n"
    "\n"
    "[ {'instance': '<text passage or sentence or words from summary>', 'reasoning' : "
    "'<chain-of-thought reasoning>', 'certainty': '<score from 0 meaning totally unsure to "
    "100 meaning totally sure>'}, {<same for instance 2>}, … {<same for instance n>}]\n"
    "\n"
    "Ensure that the format strictly follows valid JSON, with no extra preambles or "
    "additional information."
)

# App. A, Figure 4: "The prompt template used to task an LLM instance to rate detected error
# instance." The figure asks for a severity score (0-10) in its text but its format line has
# no severity field, and it gives certainty as 1-10 in the text but 0-100 in the format; the
# reply validation (parsing.py) follows the format line and takes severity when present.
VERIFICATION = (
    "Step 2 is to rate the severity of the potential error instances.\n"
    "Read the following criteria carefully: *** criteria: {criteria} ***.\n"
    "Next, read the already collected potential error instances: *** {list_of_instances} ***.\n"
    "Also, consider the original meeting transcript: * {transcript} * and the summary: "
    "* {summary} *.\n"
    "\n"
    "Now, for each instance, decide if it is an actual error instance or not according to "
    "the criteria. For each instance, write down a short reasoning explaining why you decided "
    "so. Provide a score on the severity of the error, ranging from 0 (no error) to 10 "
    "(severe error). Also, provide a score for your certainty, ranging from 1 (totally "
    "unsure) to 10 (totally sure). For each instance, indicate whether the error exists by "
    "setting the 'error_exists' field to true or false. Return the output strictly in JSON "
    "format, using double quotes around all keys and values, and return nothing else. Here "
    "is the required format for your response:\n"
    "\n"
    "[ {'instance': '<the instance>', 'reasoning' : '<chain-of-thought reasoning if there is "
    "an error according to the criteria or not>', 'certainty': '<score from 0 meaning "
    "totally unsure to 100 meaning totally sure>', 'error_exists' : <true or false depending "
    "on your decision>}, {<same for instance 2>}, … {<same for instance n>}]\n"
    "\n"
    "Make sure the output is strictly valid JSON, with no preamble, extra explanations, or "
    "text outside the JSON structure."
)

# App. A, Figure 5: "The prompt template used to task an LLM instance to perform the scoring."
SCORING = (
    "Step 3 is to rate the summary considering the actual error instances and their "
    "severity.\n"
    "Read the following criteria carefully: *** criteria: {criteria} ***.\n"
    "Consider the observed error instances and their severity scores (0 for no error to 10 "
    "meaning severe error): *** {list_of_instances} ***.\n"
    "You do not have to agree with these severity scores, so please critically evaluate them "
    "when rating the summary. Next, read the summary: ** {summary} **.\n"
    "Consider the original meeting transcript: * {transcript} *.\n"
    "\n"
    "Now, rate the summary with a single score from 0 to 5, where 0 means no impact at all "
    "(a really good summary) and 5 means a very high impact (a poor summary) regarding this "
    "error type. Also, provide a short reasoning explaining why you rated the summary as you "
    "did. Additionally, provide a certainty score indicating how confident you are in your "
    "rating, from 0 (not confident at all) to 10 (very confident). Return your answer "
    "strictly in **valid JSON format**, using **double quotes** around all keys and string "
    "values.\n"
    "The structure of your response should be exactly like this:\n"
    '\'{ "reasoning": "<your reasoning>", "confidence": <your certainty score>, '
    '"rating": <score from 0 to 5> }\n'
    "Make sure to return only the JSON response, without any preambles, explanations, or "
    "extra text outside the JSON format."
)

TEMPLATES: Mapping[Step, str] = {
    "identification": IDENTIFICATION,
    "verification": VERIFICATION,
    "scoring": SCORING,
}

# --- ours: the transcript-first layout ------------------------------------------------

# Ours (layout=prefix). The paper's prompts place the transcript after the criteria, the
# summary and (steps 2-3) the instances, so no two calls share more than a few hundred
# leading tokens. This layout moves transcript and summary to the front, in the same
# wording, and points the step text at them; every call on a meeting then starts with the
# same transcript, and every call on a summary with the same transcript + summary, which
# servers with prefix caching (vLLM, OpenAI) prefill once.
PREFIX_HEAD = (
    "Consider the original meeting transcript: * {transcript} *.\n"
    "Next, read the summary: ** {summary} **.\n"
    "\n"
)
_PREFIX_EDITS: Mapping[Step, tuple[str, str]] = {
    "identification": (
        "Next, read the summary: ** {summary} **.\n"
        "Also, consider the original meeting transcript: * {transcript} *.\n",
        "Also, consider the summary and the original meeting transcript given above.\n",
    ),
    "verification": (
        "Also, consider the original meeting transcript: * {transcript} * and the summary: "
        "* {summary} *.\n",
        "Also, consider the original meeting transcript and the summary given above.\n",
    ),
    "scoring": (
        "Next, read the summary: ** {summary} **.\nConsider the original meeting transcript: "
        "* {transcript} *.\n",
        "Next, read the summary given above.\nConsider the original meeting transcript given "
        "above.\n",
    ),
}

# Ours (Sec. 2.5 says the consolidated feedback report is "appended to the original task
# describing prompt"; the wording is not printed).
GUIDANCE_BLOCK = (
    "\n\nFeedback from comparing earlier assessments of this error type with human "
    "judgements; take it into account in this step:\n{guidance}"
)

_SLOT = re.compile(r"\{(criteria|summary|transcript|list_of_instances|guidance)\}")


def fill(template: str, values: Mapping[str, str]) -> str:
    """Fill ``{criteria}``-style slots in one pass (slot text inside values stays as is)."""
    return _SLOT.sub(lambda m: values[m.group(1)] if m.group(1) in values else m.group(0), template)


def step_template(step: Step, layout: Layout = "paper") -> str:
    """The template of one step in a layout (``paper`` = Figs. 3-5 verbatim)."""
    template = TEMPLATES[step]
    if layout == "paper":
        return template
    old, new = _PREFIX_EDITS[step]
    assert old in template, f"prefix edit of {step} no longer matches its template"
    return PREFIX_HEAD + template.replace(old, new)


def step_prompt(
    step: Step,
    etype: ErrorType,
    *,
    summary: str,
    transcript: str,
    list_of_instances: str = "",
    guidance: str = "",
    layout: Layout = "paper",
) -> str:
    """The full prompt of one step for one error type.

    Args:
        step: ``identification``, ``verification`` or ``scoring``.
        etype: The error type assessed (its name and definition fill the criteria slot).
        summary: The minutes being assessed.
        transcript: The meeting transcript.
        list_of_instances: Previous step's instances as JSON (steps 2 and 3).
        guidance: Self-training guidance for this type ("" = none); appended at the end.
        layout: ``paper`` (exact Figs. 3-5) or ``prefix`` (transcript first, ours).
    """
    prompt = fill(
        step_template(step, layout),
        {
            "criteria": etype.criteria,
            "summary": summary,
            "transcript": transcript,
            "list_of_instances": list_of_instances,
        },
    )
    if guidance.strip():
        prompt += fill(GUIDANCE_BLOCK, {"guidance": guidance.strip()})
    return prompt


# --- ours: multi-agent debate (Sec. 2.4, Fig. 2) -----------------------------------------

# Ours. Fig. 2 has a moderator draft a solution, three challengers question it "from
# different perspectives" in parallel, and the moderator synthesise; the paper prints no
# prompts. Each challenger gets one perspective (the errors MADP is said to catch: false
# positives, false negatives, inconsistent scores), which also keeps their prompts distinct
# so that a same-model pool (MADP-S) gives three different requests. Debate text is
# appended after the step prompt, so the step prompt stays a shared, cacheable prefix.
PERSPECTIVES: tuple[str, ...] = (
    "look for false positives: instances, severities or ratings in the draft that overstate "
    "the error or misread the summary or the transcript.",
    "look for false negatives: error instances of this type that the draft missed, or whose "
    "impact it understates.",
    "check consistency and calibration: whether the certainty, severity, rating and "
    "confidence values follow from the evidence and use the scales the task defines.",
)

CHALLENGE = (
    "{step_prompt}\n"
    "\n"
    "--- Multi-agent discussion: challenger {index} of {count} ---\n"
    "A moderator has drafted the following answer to the task above:\n"
    "<<<\n{draft}\n>>>\n"
    "Your role is to challenge this draft from one perspective: {perspective}\n"
    "Check the draft against the criteria, the summary and the transcript, then refine it. "
    "Return your refined answer to the task above in exactly the JSON format the task "
    "requires, and nothing else."
)

SYNTHESIS = (
    "{step_prompt}\n"
    "\n"
    "--- Multi-agent discussion: moderator ---\n"
    "You drafted this answer to the task above:\n"
    "<<<\n{draft}\n>>>\n"
    "{count} challengers examined the draft independently, each from its own perspective, "
    "and returned these refined answers:\n"
    "{challenges}\n"
    "As the moderator, weigh the draft against the challengers' answers: keep what the "
    "summary and the transcript support, drop what they do not, and resolve disagreements "
    "by the criteria. Return the final answer to the task above in exactly the JSON format "
    "the task requires, and nothing else."
)


def challenge_prompt(step_prompt: str, draft: str, index: int, count: int = 3) -> str:
    """Prompt of challenger ``index`` (0-based) for a drafted step answer."""
    return CHALLENGE.format(
        step_prompt=step_prompt,
        index=index + 1,
        count=count,
        draft=draft.strip(),
        perspective=PERSPECTIVES[index % len(PERSPECTIVES)],
    )


def synthesis_prompt(step_prompt: str, draft: str, challenges: Sequence[str]) -> str:
    """Prompt of the moderator's synthesis of the draft and the challengers' answers."""
    blocks = "\n".join(
        f"Challenger {i + 1} ({PERSPECTIVES[i % len(PERSPECTIVES)].split(':')[0]}):\n"
        f"<<<\n{text.strip()}\n>>>"
        for i, text in enumerate(challenges)
    )
    return SYNTHESIS.format(
        step_prompt=step_prompt, draft=draft.strip(), count=len(challenges), challenges=blocks
    )


# --- ours: self-training (Sec. 2.5) ------------------------------------------------------

# Ours. Sec. 2.5: a judge rates MESA's reasoning on "completeness, overlap with human
# reasoning, and logic" and labels score differences from "no difference" to "major
# difference", with "critical disagreement" for conflicting observations.
DIFFERENCE_LABELS: tuple[str, ...] = (
    "no difference",
    "minor difference",
    "moderate difference",
    "major difference",
    "critical disagreement",
)

FEEDBACK = (
    "You review an automatic evaluator of meeting summaries against human judgements.\n"
    "The evaluator assessed one summary for the error types below, one type at a time. For "
    "each type it gave a rating from 0 (no impact, a really good summary) to 5 (very high "
    "impact, a poor summary), a confidence from 0 to 10, and its reasoning.\n"
    "\n"
    "Error types:\n{definitions}\n"
    "\n"
    "Meeting transcript:\n* {transcript} *\n"
    "\n"
    "Summary:\n** {summary} **\n"
    "\n"
    "The evaluator's assessment:\n{assessment}\n"
    "\n"
    "Human annotations of this summary:\n{human}\n"
    "\n"
    "For every error type, compare the evaluator with the human annotations. Rate its "
    "reasoning for completeness, overlap with the human reasoning (null when the annotations "
    "hold no reasoning), and logic (each 1-5). "
    "Label the difference between its rating and the human judgement as one of: "
    '{labels} (use "critical disagreement" when the evaluator and the humans disagree on '
    "whether the error is there at all). Then say, in one or two sentences, what the "
    "evaluator should consider or treat differently for this type.\n"
    "Return only JSON, with double quotes, in this format:\n"
    '{{"<TYPE>": {{"completeness": <1-5>, "overlap": <1-5>, "logic": <1-5>, '
    '"difference": "<label>", "feedback": "<text>"}}, ...}}'
)

CONSOLIDATION = (
    "You improve an automatic evaluator of meeting summaries. It assesses one error type at a "
    "time:\n"
    "{name} ({code}): {definition}\n"
    "\n"
    "Below is per-summary feedback that compares its assessments of this error type with "
    "human judgements:\n{feedback}\n"
    "\n"
    "Detect the patterns in this feedback (for example ratings that are systematically too "
    "harsh or too lenient, instances it should or should not count, reasoning it neglects) "
    "and write a consolidated report: concrete guidance, as a short list of instructions, on "
    "what the evaluator should consider or treat differently when it identifies, verifies "
    "and scores {name} errors, to align better with human judgement in scoring and "
    "reasoning. Return only the guidance text."
)


def feedback_prompt(
    *,
    definitions: str,
    transcript: str,
    summary: str,
    assessment: str,
    human: str,
) -> str:
    """The per-sample feedback prompt (judge compares MESA with human annotations)."""
    return FEEDBACK.format(
        definitions=definitions,
        transcript=transcript,
        summary=summary,
        assessment=assessment,
        human=human,
        labels=", ".join(f'"{label}"' for label in DIFFERENCE_LABELS),
    )


def consolidation_prompt(etype: ErrorType, feedback: str) -> str:
    """The per-type consolidation prompt (patterns in feedback -> guidance)."""
    return CONSOLIDATION.format(
        name=etype.name, code=etype.code, definition=etype.definition, feedback=feedback
    )
