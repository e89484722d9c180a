"""CREAM: reference-free pairwise comparison of minutes with key facts, rated by Elo and BT.

Gong et al., "CREAM: Comparison-Based Reference-Free ELO-Ranked Automatic Evaluation for
Meeting Summarization" (papers 003 full, 001 short). Modules, one concern each:
``prompts`` (App. A.2), ``segment`` (summary sentences, the unit of App. A.1), ``parse``
(replies), ``scoring`` (App. A.1 metrics, comparison records), ``compare`` (one comparison
through the judge client), ``matches`` (both orders, draws, position bias, Table 3
layout), ``ratings`` (Elo of Sec. 4.1.1, Bradley-Terry, bootstrap), ``arena`` (persisted
arenas), ``report`` (output files), ``commands`` (``elitr-bench arena``).
"""
