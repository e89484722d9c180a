r"""Judge prompts, score rubrics and where their scores are written (pure functions).

Kept apart from backends, caching and rate limiting so that the same client layer can
serve later judges (AutoMin, CREAM, MESA) that only need new prompts and parsers.

Line-wrap decision (applies to every prompt and rubric below): the paper's Figures 6-9
are wrapped to fit a printed column. We JOIN the wrapped lines back into paragraphs and
keep a line break only where the figure starts a new logical line (a section header, a
numbered instruction, the bracketed rubric question, a ``Score N:`` line) and keep the
blank lines the figures print between sections. Print wraps carry no meaning for the
judge, and the ELITR-Bench authors' released prompt code likewise sends one paragraph per
logical line. The prompt ends right after ``### Feedback:`` (no trailing newline), as
printed. Where the extracted paper text shows ``\boxed{ }`` (Fig. 6) we send
``\boxed{}``: the gap is a typesetting artefact of the verbatim box (other renderings of
the paper and the authors' code print ``\boxed{}``).
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.plugins import Registry
from elitr_bench.judges.reading import SCORE_WORDS, Field, NumericGrammar, Stated

PLACEHOLDERS = ("question", "response", "reference", "rubric")

# Figure 6 (ELITR-Bench paper, App. F): evaluation prompt for the GPT-4 evaluator.
GPT4_PROMPT = (
    "### Task description:\n"
    "You are provided below with a question, a response to evaluate, a reference answer "
    "that gets the maximum score of 10, and a score rubric representing evaluation criteria.\n"
    "1. Write a detailed feedback that assess the quality of the response strictly based on "
    "the given score rubric, not evaluating in general.\n"
    "2. After writing a feedback, write a score that is an integer between 1 and 10. You "
    "should refer to the score rubric.\n"
    "3. The output format should first include the feedback and then indicate the integer "
    "score in \\boxed{}.\n"
    "4. Please do not generate any other opening, closing, and explanations.\n"
    "\n"
    "### Question:\n"
    "{question}\n"
    "\n"
    "### Response to evaluate:\n"
    "{response}\n"
    "\n"
    "### Reference answer (score 10):\n"
    "{reference}\n"
    "\n"
    "### Score rubric:\n"
    "{rubric}\n"
    "\n"
    "### Feedback:"
)

# Figure 7 (ELITR-Bench paper, App. F): 10-point score rubric for the GPT-4 evaluator
# (the figure's boldface is not part of the prompt).
GPT4_RUBRIC = (
    "[Does the response to evaluate correctly address the given question based on the "
    "elements provided by the reference answer? The response should include the elements "
    "of the reference answer and should also avoid adding unnecessary elements or being "
    "too verbose.]\n"
    "Score 1: The response to evaluate is incorrect and misses all the elements of the "
    "reference answer.\n"
    "Score 2: The response to evaluate indicates insufficient knowledge to answer the "
    "question even though the reference answer states otherwise.\n"
    "Score 3-4: The response to evaluate contains some elements vaguely related to the "
    "reference answer.\n"
    "Score 5-6: The response to evaluate is partially correct and/or covers only a part of "
    "the reference answer.\n"
    "Score 7-8: The response to evaluate contains most of the reference answer but "
    "delivers it in an indirect and/or overly verbose way.\n"
    "Score 9: The response to evaluate includes the reference answer but it is more verbose "
    "and adds unnecessary elements.\n"
    "Score 10: The response to evaluate is essentially equivalent to the reference answer."
)

# Figure 8 (ELITR-Bench paper, App. F): evaluation prompt for the Prometheus evaluator.
# Reproduced as printed, including "assesses" (Fig. 6 prints "assess").
PROMETHEUS_PROMPT = (
    "### Task description:\n"
    "You are provided below with a question, a response to evaluate, a reference answer "
    "that gets the maximum score of 5, and a score rubric representing evaluation criteria.\n"
    "1. Write a detailed feedback that assesses the quality of the response strictly based on "
    "the given score rubric, not evaluating in general.\n"
    "2. After writing a feedback, write a score that is an integer between 1 and 5. You "
    "should refer to the score rubric.\n"
    '3. The output format should look as follows: "Feedback: (write the quality assessment '
    'feedback) [RESULT] (an integer number between 1 and 5)".\n'
    "4. Please do not generate any other opening, closing, and explanations.\n"
    "\n"
    "### Question:\n"
    "{question}\n"
    "\n"
    "### Response to evaluate:\n"
    "{response}\n"
    "\n"
    "### Reference answer (score 5):\n"
    "{reference}\n"
    "\n"
    "### Score rubric:\n"
    "{rubric}\n"
    "\n"
    "### Feedback:"
)

# Figure 9 (ELITR-Bench paper, App. F): 5-point score rubric for the Prometheus evaluator.
PROMETHEUS_RUBRIC = (
    "[Does the response to evaluate correctly address the given question based on the "
    "elements provided by the reference answer? The response should include the elements "
    "of the reference answer and should also avoid adding unnecessary elements or being "
    "too verbose.]\n"
    "Score 1: The response to evaluate is incorrect and misses all the elements of the "
    "reference answer.\n"
    "Score 2: The response to evaluate contains some elements vaguely related to the "
    "reference answer.\n"
    "Score 3: The response to evaluate is partially correct and/or covers only a part of the "
    "reference answer.\n"
    "Score 4: The response to evaluate contains most of the reference answer but delivers "
    "it in an indirect and/or overly verbose way.\n"
    "Score 5: The response to evaluate is essentially equivalent to the reference answer."
)


# The asked formats: exactly one \boxed{integer} (Fig. 6), or one [RESULT] integer ending
# its line (Fig. 8). Any other box, result or score statement can only veto.
_BOXED = re.compile(r"\\boxed\s*\{[ \t]*(\d+)[ \t]*\}")
_RESULT = re.compile(r"\[RESULT\][ \t]*(\d+)(?=[ \t]*(?:</s>)?[ \t]*\.?[ \t]*$)", re.M)


def rubric_grammar(marker: str, low: int, high: int, given: tuple[str, ...] = ()) -> NumericGrammar:
    r"""The asked format of a QA rubric: ``\boxed{N}`` (``boxed``) or ``[RESULT] N``.

    ``given``: the prompt and rubric the judge is sent, whose own lines and number phrases
    a reply repeats without stating a score ("Score 10: essentially equivalent").
    """
    pattern = _BOXED if marker == "boxed" else _RESULT

    def find(text: str) -> list[Stated]:
        return [
            Stated("score", float(m.group(1)), m.start(), m.end()) for m in pattern.finditer(text)
        ]

    shape = "one \\boxed{N}" if marker == "boxed" else "one [RESULT] N"
    spec = Field("score", low, high, integer=True)
    labels = {"score": SCORE_WORDS}
    return NumericGrammar((spec,), find, labels, SCORE_WORDS, shape, "score", given)


@dataclass(frozen=True)
class Rubric:
    r"""A judge prompt, its score rubric, and how to read and rescale the score.

    Attributes:
        name: Spec name (``gpt4-rubric``, ``prometheus-rubric``).
        template: Prompt with the ``{question}``, ``{response}``, ``{reference}`` and
            ``{rubric}`` placeholders.
        rubric: Score rubric text substituted for ``{rubric}``.
        low: Lowest valid score on the rubric's own scale.
        high: Highest valid score on the rubric's own scale.
        to_ten: Factor that puts a score on the paper's 10-point scale (Sec. 6.1 doubles
            Prometheus's 1-5 scores).
        marker: Where the score is written: ``boxed`` (``\\boxed{N}``, Fig. 6) or
            ``result`` (``[RESULT] N``, Fig. 8); see :func:`rubric_grammar`.
        replay_key: Key of the released score this rubric reproduces (``gpt4`` or
            ``prometheus``) for the replay backend; ``""`` for a rubric of a plugin, which
            has no released scores.
    """

    name: str
    template: str
    rubric: str
    low: int
    high: int
    to_ten: float
    marker: str
    replay_key: str = ""

    def build_prompt(self, question: str, response: str, reference: str) -> str:
        """Fill the placeholders in one pass so that braces in a response stay literal."""
        return fill_template(
            self.template,
            {
                "question": question,
                "response": response,
                "reference": reference,
                "rubric": self.rubric,
            },
        )

    @property
    def grammar(self) -> NumericGrammar:
        """How this rubric's score is read from a reply (and restated)."""
        return rubric_grammar(self.marker, self.low, self.high, (self.template, self.rubric))

    def to_ten_point(self, score: float) -> float:
        """Rescale a native score to the paper's 10-point scale."""
        return float(score) * self.to_ten

    @property
    def prompt_hash(self) -> str:
        """Short sha256 of the template with the rubric filled in (identifies the prompt)."""
        text = fill_template(self.template, {"rubric": self.rubric})
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


_PLACEHOLDER_RE = re.compile(r"\{(question|response|reference|rubric)\}")


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """Substitute ``{name}`` placeholders present in ``values``; leave others untouched."""

    def _sub(match: re.Match[str]) -> str:
        key = match.group(1)
        return values[key] if key in values else match.group(0)

    return _PLACEHOLDER_RE.sub(_sub, template)


GPT4 = Rubric(
    name="gpt4-rubric",
    template=GPT4_PROMPT,
    rubric=GPT4_RUBRIC,
    low=1,
    high=10,
    to_ten=1.0,
    marker="boxed",
    replay_key="gpt4",
)

PROMETHEUS = Rubric(
    name="prometheus-rubric",
    template=PROMETHEUS_PROMPT,
    rubric=PROMETHEUS_RUBRIC,
    low=1,
    high=5,
    to_ten=2.0,
    marker="result",
    replay_key="prometheus",
)

#: Where a rubric's score is written: the markers :func:`rubric_grammar` reads.
MARKERS: tuple[str, ...] = ("boxed", "result")

#: Every QA rubric, by name: the built-in ones and those of installed plugins, one registry
#: type and collision rule with the judge families and minutes methods. A plugin is a
#: module named by an entry point of the families' group (``elitr_bench.judge_families``)
#: that calls :func:`register_rubric` when imported.
RUBRIC_REGISTRY: Registry[Rubric] = Registry("QA rubric")


def _rubric_problem(rubric: Rubric) -> str:
    """What makes ``rubric`` unusable, or ``""``."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", rubric.name):
        return "its name must be lower case letters, digits, '.', '_' or '-'"
    needed = ("question", "response", "reference")
    missing = [p for p in needed if f"{{{p}}}" not in rubric.template]
    if missing:
        return "its template lacks " + ", ".join(f"{{{p}}}" for p in missing)
    if rubric.marker not in MARKERS:
        return f"marker={rubric.marker!r}; use one of {', '.join(MARKERS)} (its strict format)"
    if not rubric.low < rubric.high:
        return f"its scale {rubric.low}-{rubric.high} is empty; low must be below high"
    if not math.isclose(rubric.high * rubric.to_ten, 10.0):
        return (
            f"to_ten={rubric.to_ten} maps its top score {rubric.high} to "
            f"{rubric.high * rubric.to_ten:g}, not 10; use to_ten={10 / rubric.high:g}"
        )
    return ""


def register_rubric(rubric: Rubric, *, replace: bool = False) -> None:
    """Make ``rubric=NAME`` select ``rubric``; a rubric's module calls this when imported.

    Checked now, so a plugin's mistake fails when it loads, naming the rubric: its
    template's placeholders, its marker (one of :data:`MARKERS`), its scale and its
    ten-point mapping (``high * to_ten == 10``).

    Raises:
        JudgeConfigError: The rubric is malformed, or its name is taken by a rubric of
            another module (the message names both) and ``replace`` is False.
    """
    problem = _rubric_problem(rubric)
    if problem:
        raise JudgeConfigError(f"QA rubric {rubric.name!r} cannot be registered: {problem}")
    origin = str(sys._getframe(1).f_globals.get("__name__", "?"))
    RUBRIC_REGISTRY.register(rubric.name, rubric, origin, replace=replace)


def _load_plugins() -> None:
    """Import every installed plugin (the families' entry points), which may add rubrics."""
    from elitr_bench.judges.family import families

    families()


class _Installed(Mapping[str, Rubric]):
    """The installed QA rubrics by name, as a read-only mapping.

    A name not registered yet loads the installed plugins before it is called unknown;
    listing the names loads them too, so messages list every installed rubric.
    """

    def __getitem__(self, name: str) -> Rubric:
        found = RUBRIC_REGISTRY.resolve(name)
        if found is None:
            _load_plugins()
            found = RUBRIC_REGISTRY.resolve(name)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        _load_plugins()
        return iter(RUBRIC_REGISTRY.names())

    def __len__(self) -> int:
        return len(tuple(iter(self)))


#: The installed QA rubrics (``RUBRICS[name]``, ``name in RUBRICS``, ``list(RUBRICS)``).
RUBRICS: Mapping[str, Rubric] = _Installed()

register_rubric(GPT4)
register_rubric(PROMETHEUS)

#: The rubric of a judge spec that names none: the paper's (Figs. 6/7).
DEFAULT_RUBRIC = GPT4.name
