"""Meta-evaluation: how well judges and metrics agree with human scores.

``qa`` is ``judge-check`` (a QA judge against ELITR-Bench's released human scores,
paper Sec. 6); ``minutes``, ``minutes_inputs`` and ``minutes_tables`` are
``minutes-check`` (metrics and GPT judges against AutoMin 2023's human scores, Tables
6-9). It sits above the tasks and judges whose outputs it reads, below the report.
"""
