"""Our ROUGE scorers (Porter stems remembered) give ``rouge_score``'s own scores.

On real minutes: the released GPT-4 minutes of AutoMin 2023 against their meetings'
reference minutes, every ROUGE type the tasks report, precision and recall as well.
"""

from __future__ import annotations

from rouge_score import rouge_scorer as stock

from elitr_bench.data import minutes as mn
from elitr_bench.tasks.minutes_metrics import ROUGE_TYPES
from elitr_bench.tasks.rouge import rouge_scorer


def test_scores_equal_rouge_scores_own_stemming_scorer() -> None:
    refs = {m.meeting_id: m.references[0].text for m in mn.load_automin_meetings()}
    released = sorted(mn.load_automin_minutes(["gpt4"]), key=lambda m: m.meeting_id)[:3]
    assert len(released) == 3
    ours = rouge_scorer(ROUGE_TYPES)
    theirs = stock.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    for minutes in released:
        reference = refs[minutes.meeting_id]
        assert ours.score(reference, minutes.text) == theirs.score(reference, minutes.text)
        # twice: the second call reads remembered stems
        assert ours.score(minutes.text, reference) == theirs.score(minutes.text, reference)
    # stemming is on: "meetings" and "meeting" are one token, as with use_stemmer=True
    assert ours.score("meetings planned", "meeting planning")["rouge1"].fmeasure == 1.0
