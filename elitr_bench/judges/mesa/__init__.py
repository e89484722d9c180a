"""MESA (Kirstein et al.): error-type, three-step, multi-agent assessment of meeting minutes.

One module per concern: ``error_types`` (the eight types and weights as an editable YAML
file), ``prompts`` (Figs. 3-5 verbatim, plus our debate, layout and self-training prompts),
``parsing`` (strict validation of the JSON replies), ``aggregate`` (Eq. 1-2), ``debate``
(one step, alone or as MADP), ``fit`` (transcripts longer than the judge's context),
``method`` (the ``mesa`` minutes method, registered on import), ``selftrain`` (feedback and
guidance, Sec. 2.5), ``guidance`` (the guidance file), ``plan`` (calls, tokens and cost
before spending). The ``elitr-bench mesa`` and ``mesa-train`` commands live above, in
:mod:`elitr_bench.cli.mesa`. The package import stays light: the judge spec parser reads
``options`` without loading the method.
"""
