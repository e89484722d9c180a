"""A G-Eval-style judge of meeting minutes, as an out-of-tree elitr_bench judge family."""
