"""ELITR-Bench's QA judges: the LLM judge on the paper's rubrics, replay and lexical.

``engine`` holds the judges (an LLM scoring a response against the reference with a
rubric of :mod:`elitr_bench.judges.rubrics`, Figs. 6-9; the released scores replayed;
token F1 mapped to the scale) and the concurrent item loop; ``lm_eval_filter`` the
``elitr_judge`` filter that judges a task's responses in one call. The rubrics stay in
the judge core, whose spec parsing defaults to them.
"""
