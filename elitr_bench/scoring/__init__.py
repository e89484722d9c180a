"""Re-judging logged samples into complete lm-eval results (``elitr-bench score``).

``qa`` scores QA runs, ``minutes`` minutes runs, and ``rescore`` rebuilds each run's
results through lm-eval's own tasks and aggregation, so the rescored file reads like one
lm-eval wrote. It sits above the tasks it loads and the judges it calls.
"""
