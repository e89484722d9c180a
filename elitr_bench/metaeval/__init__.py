"""Meta-evaluation: how well judges and metrics agree with human scores.

``qa`` is ``judge-check`` (a QA judge against ELITR-Bench's released human scores,
paper Sec. 6); ``minutes``, ``minutes_inputs``, ``minutes_tables`` and ``minutes_paper``
are ``minutes-check`` (metrics and GPT judges against AutoMin 2023's human scores, Tables
6-9, next to the values the paper prints). ``stats`` holds the statistics both share with
the report: correlations, pairwise accuracy and the meeting-clustered intervals. It sits
above the tasks and judges whose outputs it reads, below the report.
"""
