"""Task classes of the Czech ELITR-Bench questions (``elitr_qa_cs_*``, ``elitr_conv_cs_*``).

The authors' ``czech.zip`` translates every question and reference answer into Czech and
keeps everything else: meetings, question ids, types, answer positions and order. So
the Czech tasks are the English ones with the two texts swapped after the English
documents are built; transcripts (English), prompts (the paper's Fig. 5), judges (the
paper's Fig. 6-7 prompt, in English, with Czech question and reference), multi-turn
driving, noise and overlength handling are shared, not copied.
"""

from __future__ import annotations

from typing import Any

import datasets

from elitr_bench.data import load_questions
from elitr_bench.data.records import Setting, Split
from elitr_bench.tasks.conversation import ConversationTask
from elitr_bench.tasks.task import ElitrQATask

LANGUAGE = "cs"


def czech_docs(docs: list[dict[str, Any]], setting: Setting, split: Split) -> list[dict[str, Any]]:
    """English documents with the Czech question and reference answer of the same item.

    ``differs_in_conv`` is recomputed from the Czech QA and Conv wordings, and every
    document records ``language: cs`` (``elitr-replay`` refuses such documents: no
    responses to the Czech questions were released).
    """
    czech = {(q.meeting_id, q.question_id): q for q in load_questions(setting, split, LANGUAGE)}
    other: Setting = "conv" if setting == "qa" else "qa"
    other_text = {
        (q.meeting_id, q.question_id): q.question for q in load_questions(other, split, LANGUAGE)
    }
    out: list[dict[str, Any]] = []
    for doc in docs:
        key = (str(doc["meeting_id"]), str(doc["question_id"]))
        item = czech[key]
        out.append(
            {
                **doc,
                "question": item.question,
                "answer": item.answer,
                "differs_in_conv": other_text[key] != item.question,
                "language": LANGUAGE,
            }
        )
    return out


class _CzechQuestions:
    """Mixin: after the English documents are built, swap in the Czech texts."""

    setting: Setting
    split: Split
    dataset: Any

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Build the English documents (transcripts, noise), then translate their texts."""
        super().download(dataset_kwargs, **kwargs)  # type: ignore[misc]
        docs = czech_docs(list(self.dataset[self.split]), self.setting, self.split)
        self.dataset = datasets.DatasetDict({self.split: datasets.Dataset.from_list(docs)})


class ElitrQACzechTask(_CzechQuestions, ElitrQATask):
    """Single-turn QA with the Czech questions (``elitr_qa_cs_dev``/``_test``)."""


class ElitrConvCzechTask(_CzechQuestions, ConversationTask):
    """Multi-turn Conv with the Czech questions (``elitr_conv_cs_dev``/``_test``)."""
