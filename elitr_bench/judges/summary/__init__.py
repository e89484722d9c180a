"""What every judge of meeting summaries shares: records, the method protocol, the registry.

The AutoMin GPT judges (:mod:`elitr_bench.judges.minutes`) and MESA
(:mod:`elitr_bench.judges.mesa`) both judge "a system's minutes of a meeting" and are
chosen by the judge spec's ``rubric=``/``method=``; they register here, and neither family
imports the other. ``base`` holds :class:`MinutesItem`, :class:`MinutesAssessment` and
the :class:`MinutesMethod` protocol; ``registry`` the methods by name; ``run`` one run
of a method (client, context checks, the item loop, usage, identity and plan);
``lm_eval_filter`` the ``elitr_minutes_judge`` filter and the per-sample metrics of every
method.
"""
