"""Reference metrics of meeting minutes, as AutoMin 2023 reports them (Sec. 6.2, Tables 5 and 7).

* ROUGE-1/2/L F1 with the ``rouge-score`` package and Porter stemming (the AutoMin
  organisers' evaluation used ``rouge-score`` with stemming). ``rougeL`` is the
  sentence-level LCS over the whole text (``rougeL``, not the newline-split ``rougeLsum``).
* Several references per meeting (ELITR dev/test2 meetings have 1-5): the score is the
  **mean over references**. AutoMin 2023's English test set has exactly one reference per
  meeting, so Table 7 does not decide this; the mean keeps a meeting's score independent of
  how many annotators wrote minutes for it (the max, ``rouge-score``'s ``score_multi``,
  rises with every extra reference, so dev_010 with 5 references would be favoured).
* BERTScore F1 (``bert-score``, optional extra ``minutes-bertscore``), rescaled with the
  package's baseline; BARTScore F (Yuan et al. 2021: mean of precision ``ref -> hyp`` and
  recall ``hyp -> ref`` mean token log-likelihoods) on transformers' BART. Both are
  opt-in because they load large models.
* Output statistics of Table 5: ``lines`` (every line, blank ones included, as the table
  counts them), ``words`` (whitespace-separated) and ``words_per_line``, aggregated like
  the paper's text (Sec. 6.4: Zoom-long 615.0 words / 8.4 lines = 73.2): the ratio of the
  summed words to the summed lines, not a mean of per-minutes ratios.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.tasks.metrics import (
    OVERLENGTH,
    RATIO,
    score,
    statistic,
)
from elitr_bench.tasks.metrics import ratio_of_sums as ratio_of_sums

ROUGE_TYPES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL")
DEFAULT_BERTSCORE_MODEL = "roberta-large"  # bert-score's default for lang="en"
DEFAULT_BARTSCORE_MODEL = "facebook/bart-large-cnn"  # BARTScore's default checkpoint


class MetricUnavailableError(ElitrBenchError):
    """An optional metric's package or model is missing."""


@lru_cache(maxsize=len(ROUGE_TYPES))
def _rouge(rouge_type: str) -> Any:
    from elitr_bench.tasks.rouge import rouge_scorer

    return rouge_scorer([rouge_type])


def rouge_scores(
    minutes: str, references: Sequence[str], types: Sequence[str] = ROUGE_TYPES
) -> dict[str, float]:
    """ROUGE F1 of ``minutes``, averaged over ``references`` (see module docstring).

    Args:
        minutes: The minutes to score.
        references: One or more reference minutes.
        types: A subset of :data:`ROUGE_TYPES` (ROUGE-L is ~5x slower than the others).

    Raises:
        ValueError: No references, or an unknown ROUGE type.
    """
    if not references:
        raise ValueError("rouge_scores needs at least one reference")
    unknown = set(types) - set(ROUGE_TYPES)
    if unknown:
        raise ValueError(f"unknown ROUGE types {sorted(unknown)}; use {ROUGE_TYPES}")
    sums = dict.fromkeys(types, 0.0)
    for reference in references:
        for key in types:
            sums[key] += _rouge_f1(minutes, reference, key)
    return {key: value / len(references) for key, value in sums.items()}


@lru_cache(maxsize=8192)
def _rouge_f1(minutes: str, reference: str, rouge_type: str) -> float:
    # Cached: meta-evaluation and tests score the same released minutes many times.
    return float(_rouge(rouge_type).score(reference, minutes)[rouge_type].fmeasure)


def count_lines(text: str) -> int:
    """Lines as Table 5 counts them: blank lines included.

    The table's numbers are ``wc -l`` counts (newline characters); here a last line without
    a newline counts too, since generated minutes rarely end with one. On the released
    minutes that is the table's count for 7 of 9 systems and one more line per file for
    Darbarer and Team Iterate, whose files end without a newline.
    """
    return len(text.splitlines())


def count_words(text: str) -> int:
    """Whitespace-separated words (``wc -w``), as in Table 5."""
    return len(text.split())


def output_stats(text: str) -> dict[str, Any]:
    """Table 5 statistics of one minutes text; ``words_per_line`` is a (words, lines) pair.

    The pair is aggregated by :func:`~elitr_bench.tasks.metrics.ratio_of_sums` into the
    paper's words per line.
    """
    lines = count_lines(text)
    words = count_words(text)
    return {"lines": float(lines), "words": float(words), "words_per_line": (words, lines)}


def minutes_metric_list(
    *,
    noisy: bool,
    chunked: bool,
    bertscore: bool,
    bartscore: bool,
    judge: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The metrics of a minutes task run: the one place they are chosen.

    ROUGE (and the opt-in BERTScore/BARTScore) are scores; Table 5's ``lines``, ``words``
    and ``words_per_line`` describe the minutes and are not ranked (longer minutes are not
    better), nor are the bookkeeping values. ``words_per_line`` is total words over total
    lines (:func:`~elitr_bench.tasks.metrics.ratio_of_sums`), as the paper's text computes
    it. ``judge`` is the minutes judge's own list; its means skip unscored samples.

    Args:
        noisy: Noisy transcripts (``--metadata wer=...``): ``effective_wer`` per meeting.
        chunked: ``overlength=chunked``: ``sections`` per meeting.
        bertscore: ``--metadata bertscore=true``.
        bartscore: ``--metadata bartscore=true``.
        judge: The minutes judge's ``metric_list`` entries (none without a judge).
    """
    entries = [score(name) for name in ROUGE_TYPES]
    if bertscore:
        entries.append(score("bertscore_f1"))
    if bartscore:
        entries.append(score("bartscore"))
    entries += [statistic("lines"), statistic("words"), statistic("words_per_line", RATIO)]
    if chunked:  # transcript sections the minutes were written from
        entries.append(statistic("sections"))
    if noisy:
        entries.append(statistic("effective_wer"))
    entries += [dict(e) for e in OVERLENGTH]
    return entries + [dict(e) for e in judge]


# --- BERTScore -------------------------------------------------------------------------


@lru_cache(maxsize=2)
def _bert_scorer(model: str) -> Any:
    try:
        from bert_score import BERTScorer
    except ImportError:
        raise MetricUnavailableError(
            "bertscore=true needs the bert-score package; "
            "pip install 'lm-eval-elitr[minutes-bertscore]'"
        ) from None
    try:
        return BERTScorer(model_type=model, lang="en", rescale_with_baseline=True)
    except (OSError, ValueError, KeyError) as exc:
        raise MetricUnavailableError(
            f"bertscore: model {model!r} is not available ({type(exc).__name__}); download it "
            "once with network access (HF_HUB_OFFLINE unset) or pass --metadata "
            "bertscore_model=<local folder of a model bert-score has a rescale baseline for>"
        ) from None


def bertscore_f1(
    minutes: str, references: Sequence[str], model: str = DEFAULT_BERTSCORE_MODEL
) -> float:
    """Rescaled BERTScore F1 of ``minutes`` against each reference, averaged."""
    scorer = _bert_scorer(model)
    _p, _r, f1 = scorer.score([minutes] * len(references), list(references))
    return float(f1.mean().item())


# --- BARTScore -------------------------------------------------------------------------


@lru_cache(maxsize=2)
def _bart(model: str) -> tuple[Any, Any]:
    try:
        from transformers import AutoTokenizer, BartForConditionalGeneration

        tokenizer = AutoTokenizer.from_pretrained(model)
        bart = BartForConditionalGeneration.from_pretrained(model)
    except (OSError, ValueError) as exc:
        raise MetricUnavailableError(
            f"bartscore: model {model!r} is not available ({type(exc).__name__}); download it "
            "once with network access (HF_HUB_OFFLINE unset) or pass --metadata "
            "bartscore_model=<local BART folder>"
        ) from None
    bart.eval()
    return tokenizer, bart


def bart_loglik(source: str, target: str, model: str = DEFAULT_BARTSCORE_MODEL) -> float:
    """Mean log-likelihood per target token of ``target`` given ``source`` (BARTScore's unit).

    Both sides are truncated to the model's 1024 positions, as in the BARTScore code.
    """
    import torch

    tokenizer, bart = _bart(model)
    limit = int(getattr(bart.config, "max_position_embeddings", 1024))
    src = tokenizer(source, max_length=limit, truncation=True, return_tensors="pt")
    tgt = tokenizer(target, max_length=limit, truncation=True, return_tensors="pt")
    with torch.no_grad():
        out = bart(
            input_ids=src["input_ids"],
            attention_mask=src["attention_mask"],
            labels=tgt["input_ids"],
        )
    return -float(out.loss.item())


def bartscore(
    minutes: str, references: Sequence[str], model: str = DEFAULT_BARTSCORE_MODEL
) -> float:
    """BARTScore F: mean of precision (ref -> minutes) and recall (minutes -> ref), over refs."""
    values = [
        (bart_loglik(ref, minutes, model) + bart_loglik(minutes, ref, model)) / 2
        for ref in references
    ]
    return sum(values) / len(values)
