"""Time ROUGE on AutoMin 2023's released minutes: ``rouge_score``'s scorer against ours.

Every released system's English minutes scored against their meeting's first reference
minutes with ROUGE-1, -2 and -L (the minutes task's metrics), first with
``rouge_score.rouge_scorer.RougeScorer(types, use_stemmer=True)`` and then with
:func:`elitr_bench.tasks.rouge.rouge_scorer` (the same tokenizer, Porter stems
remembered), in one run, each a fresh scorer. The scores must be equal (exit status 1
otherwise); the ratio is what remembering the stems saves.
Run: ``ELITR_BENCH_DATA_DIR=../shared/data python bench/rouge_speed.py``.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rouge_score import rouge_scorer as stock

from elitr_bench.data import minutes as mn
from elitr_bench.tasks.minutes_metrics import ROUGE_TYPES
from elitr_bench.tasks.rouge import rouge_scorer


def score_all(scorer: Any, pairs: list[tuple[str, str]]) -> tuple[float, list[Any]]:
    """Seconds to score every (reference, minutes) pair, and the scores."""
    start = time.perf_counter()
    scores = [scorer.score(reference, minutes) for reference, minutes in pairs]
    return time.perf_counter() - start, scores


def main() -> int:
    refs = {m.meeting_id: m.references[0].text for m in mn.load_automin_meetings()}
    released = mn.load_automin_minutes()
    pairs = [(refs[m.meeting_id], m.text) for m in released if m.meeting_id in refs]
    words = sum(len(a.split()) + len(b.split()) for a, b in pairs)
    print(
        f"{len(pairs)} released minutes against their references ({words:,} words), "
        f"{', '.join(ROUGE_TYPES)}"
    )
    theirs_s, theirs = score_all(stock.RougeScorer(list(ROUGE_TYPES), use_stemmer=True), pairs)
    ours_s, ours = score_all(rouge_scorer(ROUGE_TYPES), pairs)
    print(f"  rouge_score, use_stemmer=True: {theirs_s:.2f} s")
    print(f"  ours (stems remembered):       {ours_s:.2f} s")
    print(f"  stock / ours: {theirs_s / ours_s:.2f}x; scores equal: {ours == theirs}")
    return 0 if ours == theirs else 1


if __name__ == "__main__":
    sys.exit(main())
