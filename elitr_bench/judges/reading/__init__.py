r"""A judge reply's values come only from the asked format; anything else may veto.

**A restatement confirms what the reply stated or fills what it left out; it never
chooses.** Free-text pattern reading cannot be made safe (each widening misreads another
shape), so a reply not in the family's format is restated once as JSON
(:class:`Restatement`, run by :mod:`elitr_bench.judges.asking`); one that states two
values for a field is unscored with both named; cut-off, empty and refused replies are
asked again. The full policy is in docs/judge-replies.md; the package, by concept:

* :mod:`.reply`: preparing a reply (reasoning, quotes, the evaluated text's lines and the
  prompt's own phrases blanked);
* :mod:`.cues` and :mod:`.vetoes`: which numbers outside the asked format are score
  statements, as tables with one precedence order;
* :mod:`.numeric`: numeric fields (the QA rubrics, GPT-ART/AFGR, MESA's scoring);
* :mod:`.policy`: the reading, the outcome rules and the restatement's reader;
* :mod:`.json_text`: JSON inside a reply and the restatement's one object.
"""

from elitr_bench.judges.reading.json_text import json_values, object_schema, one_object
from elitr_bench.judges.reading.numeric import SCORE_WORDS, NumericGrammar, Span, Stated
from elitr_bench.judges.reading.numeric_field import Field
from elitr_bench.judges.reading.policy import (
    Grammar,
    Reading,
    Restatement,
    Statement,
    explained,
    not_answered,
    read_reply,
    read_restatement,
    shows_format,
    two_values,
)
from elitr_bench.judges.reading.reply import (
    EMPTY,
    REASK,
    REASONED_OUT,
    REFUSED,
    TRUNCATED,
    Reply,
    echoed,
    repeated,
    unquote,
    without_reasoning,
)
from elitr_bench.judges.reading.vetoes import NUMBER, Mention, number, vetoes

__all__ = [
    "EMPTY",
    "NUMBER",
    "REASK",
    "REASONED_OUT",
    "REFUSED",
    "SCORE_WORDS",
    "TRUNCATED",
    "Field",
    "Grammar",
    "Mention",
    "NumericGrammar",
    "Reading",
    "Reply",
    "Restatement",
    "Span",
    "Stated",
    "Statement",
    "echoed",
    "explained",
    "json_values",
    "not_answered",
    "number",
    "object_schema",
    "one_object",
    "read_reply",
    "read_restatement",
    "repeated",
    "shows_format",
    "two_values",
    "unquote",
    "vetoes",
    "without_reasoning",
]
