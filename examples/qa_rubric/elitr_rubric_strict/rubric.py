"""The strict 4-point rubric: its prompt, scale, reply format and ten-point mapping.

Imported through the ``elitr_bench.judge_families`` entry point the first time a rubric
is looked up; importing it registers the rubric, which ``rubric=strict4-rubric`` then
selects in any QA judge spec (``lm_eval``'s ``--metadata``, ``elitr-bench score`` and
``judge-check``). The reply format is one of the built-in ones (``marker="result"``: the
judge ends with ``[RESULT] N``), so elitr_bench reads it with its own grammar.
"""

from elitr_bench.judges.rubrics import Rubric, register_rubric

NAME = "strict4-rubric"

TEMPLATE = (
    "You grade an answer to a question about a meeting against a reference answer.\n"
    "Use only the grading scale below; do not reward style or length.\n"
    "Explain your grade in two or three sentences, then end with a line of the form "
    '"[RESULT] N", where N is an integer from 1 to 4.\n'
    "\n"
    "Question:\n"
    "{question}\n"
    "\n"
    "Answer to grade:\n"
    "{response}\n"
    "\n"
    "Reference answer (grade 4):\n"
    "{reference}\n"
    "\n"
    "Grading scale:\n"
    "{rubric}\n"
    "\n"
    "Explanation:"
)

SCALE = (
    "4: every fact of the reference answer is there and nothing contradicts it.\n"
    "3: the main fact is there, a secondary one is missing or vague.\n"
    "2: some related facts, but the main one is missing or wrong.\n"
    "1: wrong, unrelated, or says the meeting does not tell."
)

RUBRIC = Rubric(
    name=NAME,
    template=TEMPLATE,
    rubric=SCALE,
    low=1,
    high=4,
    to_ten=2.5,  # 4 -> 10 on ELITR-Bench's 10-point scale
    marker="result",
)

register_rubric(RUBRIC)
