"""A strict 4-point QA rubric, as an out-of-tree elitr_bench rubric plugin."""
