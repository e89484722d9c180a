"""Per-sample metrics of the ELITR tasks and how lm-eval aggregates them.

Reference metrics (token F1, ROUGE-L) need no judge and no network, so every run reports
them; the paper's judge scores are added by ``elitr_bench.judges``.

**Every metric a task lists is in every sample.** lm-eval's W&B logger and its
``scripts/zeno_visualize.py`` look each listed metric up in every logged sample, so a
task lists only what the run produces (:func:`qa_metric_list`: ``effective_wer`` only for
noisy transcripts, ``prompt_tokens`` only when the model's tokenizer counted them,
``transcript_tokens`` only under ``context_budget``, the
judge's metrics only when a judge runs) and a sample without a value (an unscored judge
answer, a skipped over-long prompt) carries ``None``. A listed mean keeps lm-eval's own
name, ``aggregation: mean``, because clients read the name (``zeno_visualize.py`` makes a
Zeno metric of exactly the ``mean`` entries); the task computes it with :func:`mean`,
which skips ``None`` where lm-eval's would fail on it (the task's ``aggregation()``).
Counters are summed by :data:`TOTAL`, which skips ``None`` too.

**Standard errors are meeting-clustered.** Questions about one meeting are not
independent (they share its transcript), so the ``<metric>_stderr`` lm-eval writes for a
score must be the cluster-robust one (:func:`elitr_bench.clustered.clustered_mean`, the
one the report uses). lm-eval computes ``<metric>_stderr,<filter>`` in
``evaluator_utils._compute_task_aggregations`` from ``stderr_for_metric(aggregation)``,
which knows only its own functions (a custom aggregation gets "N/A"), and from the
values alone (no meeting ids). But the same loop stores the aggregate of every
per-sample key under ``<key>,<filter>`` in the order the keys first appeared. So each
sample also carries ``<metric>_stderr = {"cluster": meeting_id, "value": v}``, aggregated
by :data:`CLUSTER_STDERR`; :func:`complete_sample` always puts these keys after the
metrics themselves, so the clustered value overwrites lm-eval's "N/A" in the results
file. These carrier keys are not listed in ``metric_list`` (their aggregation is added
by the task's ``aggregation()``), so loggers do not look for them and ``higher_is_better``
does not rank them. lm-eval's group aggregation then reads the clustered values: with
``weight_by_size: false`` (our groups) its ``unweighted_mean_stderr`` is
``sqrt(se_dev^2 + se_test^2) / 2``, the clustered SE of the mean of two independent
splits. One side effect: lm-eval also writes ``<metric>_stderr_stderr`` = "N/A", which
:mod:`elitr_bench.tasks.tidy` drops from the results of our tasks.

**Descriptive statistics are not ranked.** Token counts, WER, section and skip counts and
the minutes' length statistics get ``higher_is_better: null``: lm-eval's own value for a
metric without a direction (it writes it when subtasks disagree), shown without an arrow
by ``make_table``. Only scores get true/false.
"""

from __future__ import annotations

import logging
import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)

#: lm-eval's name for the mean, as listed in ``metric_list``; our tasks compute it with
#: :func:`mean`, the mean of the samples that have a value.
MEAN = "mean"
#: Aggregation names registered with lm-eval (see :func:`register_aggregations`).
TOTAL = "elitr_total"
RATIO = "elitr_ratio_of_sums"
CLUSTER_STDERR = "elitr_cluster_stderr"
#: Suffix lm-eval gives a metric's standard error (``<metric>_stderr,<filter>``).
STDERR = "_stderr"

MetricEntry = dict[str, Any]
_WARNED: set[str] = set()


def normalize_answer(text: str) -> str:
    """SQuAD-style normalisation: lower case, no punctuation, articles or extra spaces.

    ``[PERSON4]`` and ``PERSON4`` normalise alike, which matters because models often
    drop the brackets of de-identified names.
    """
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall after normalisation."""
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)


@lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    from elitr_bench.tasks.rouge import rouge_scorer

    return rouge_scorer(["rougeL"])


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure (the ``rouge_score`` package, Porter stemming on)."""
    return float(_rouge_scorer().score(reference, prediction)["rougeL"].fmeasure)


# --- aggregations -----------------------------------------------------------------------
def _present(items: Iterable[Any]) -> list[Any]:
    return [item for item in items if item is not None]


def mean(items: Sequence[float | None]) -> float:
    """Mean of the samples that have a value (NaN when none has: no number is invented)."""
    values = [float(v) for v in _present(items)]
    return sum(values) / len(values) if values else math.nan


def total(items: Sequence[float | None]) -> float:
    """Sum of per-sample counts (skipped or truncated prompts); ``None`` counts nothing."""
    return float(sum(float(v) for v in _present(items)))


def ratio_of_sums(items: Sequence[Sequence[float] | None]) -> float:
    """Aggregate (numerator, denominator) pairs as sum/sum (NaN when the denominator is 0)."""
    pairs = _present(items)
    num = sum(float(i[0]) for i in pairs)
    den = sum(float(i[1]) for i in pairs)
    return num / den if den else math.nan


def cluster_stderr(items: Sequence[Mapping[str, Any] | None]) -> float | str:
    """Meeting-clustered (CR1) standard error from ``{"cluster", "value"}`` carriers.

    Returns:
        The standard error, or lm-eval's "N/A" when fewer than two meetings have values.
    """
    from elitr_bench.clustered import clustered_mean

    pairs = [
        (str(item["cluster"]), float(item["value"]))
        for item in _present(items)
        if item.get("value") is not None
    ]
    if len(pairs) < 2:
        return "N/A"
    result = clustered_mean([v for _, v in pairs], [c for c, _ in pairs])
    return "N/A" if result.se is None else result.se


_AGGREGATIONS = {TOTAL: total, RATIO: ratio_of_sums, CLUSTER_STDERR: cluster_stderr}


def none_skipping(
    aggregations: Mapping[str, Any], entries: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """``aggregations`` with every listed ``mean`` computed by :func:`mean` (skips ``None``).

    Args:
        aggregations: lm-eval's aggregation functions of a task, by metric name.
        entries: The task's ``metric_list``.
    """
    means = {str(e["metric"]) for e in entries if e.get("aggregation") == MEAN}
    return {name: mean if name in means else fn for name, fn in aggregations.items()}


def register_aggregations() -> None:
    """Register our aggregations with lm-eval by name (idempotent).

    Names rather than ``!function`` callables keep the results file's ``metric_list``
    readable (lm-eval dumps a callable as its source code). ``lm_eval.api.metrics`` is
    imported first: lm-eval fills its built-ins only while the registry is empty.
    """
    import lm_eval.api.metrics  # noqa: F401  (populates the built-in aggregations)
    from lm_eval.api.registry import aggregation_registry

    for name, fn in _AGGREGATIONS.items():
        if name not in aggregation_registry:
            aggregation_registry.register(name)(fn)


# --- metric lists -----------------------------------------------------------------------
def score(name: str, higher_is_better: bool = True) -> MetricEntry:
    """A quality score: mean over valued samples, meeting-clustered stderr, ranked."""
    return {"metric": name, "aggregation": MEAN, "higher_is_better": higher_is_better}


def statistic(name: str, aggregation: str = MEAN) -> MetricEntry:
    """A descriptive statistic or counter: reported, never ranked (``higher_is_better: null``)."""
    return {"metric": name, "aggregation": aggregation, "higher_is_better": None}


#: Declared by a task once the model's tokenizer has counted its prompts.
PROMPT_TOKENS = statistic("prompt_tokens")
#: Declared by a task under ``context_budget``: the transcript tokens the cut kept.
TRANSCRIPT_TOKENS = statistic("transcript_tokens")
OVERLENGTH = (statistic("overlength_skipped", TOTAL), statistic("overlength_truncated", TOTAL))


def qa_metric_list(*, judged: bool, noisy: bool) -> list[MetricEntry]:
    """The metrics of a QA task run: the one place they are chosen.

    Args:
        judged: A judge scores the answers (``--metadata judge=...`` other than none).
        noisy: The transcripts carry simulated ASR noise (``effective_wer`` per meeting).
    """
    from elitr_bench.judges.metrics import (
        COUNT_AGGREGATION,
        JUDGE_ERRORS,
        JUDGE_FORMAT_IN_ANSWER,
        JUDGE_UNSCORED,
    )

    entries: list[MetricEntry] = []
    if judged:  # the paper's score on its 10-point scale
        entries += [
            score("judge_score"),
            statistic(JUDGE_UNSCORED, COUNT_AGGREGATION),
            statistic(JUDGE_ERRORS, COUNT_AGGREGATION),
            statistic(JUDGE_FORMAT_IN_ANSWER, COUNT_AGGREGATION),
        ]
    entries += [score("f1"), score("rouge_l")]
    if noisy:
        entries.append(statistic("effective_wer"))
    entries += [dict(e) for e in OVERLENGTH]
    return entries


def clustered(entries: Iterable[MetricEntry]) -> tuple[str, ...]:
    """The ranked means among ``entries``: the metrics that get a clustered stderr."""
    return tuple(
        str(e["metric"])
        for e in entries
        if e.get("aggregation") == MEAN and e.get("higher_is_better") is not None
    )


def complete_sample(
    values: Mapping[str, Any], listed: Sequence[str], stderr_of: Sequence[str], cluster: str
) -> dict[str, Any]:
    """What ``process_results`` returns: every listed metric, then the stderr carriers.

    Args:
        values: The metrics computed for the sample (missing ones become ``None``;
            unlisted ones with a value are left out with a warning).
        listed: The task's metric names, in ``metric_list`` order.
        stderr_of: Metrics with a clustered stderr (:func:`clustered`).
        cluster: The sample's meeting.

    The order is part of the contract: every carrier comes after every metric, so lm-eval
    writes the clustered stderr last (see the module docstring).
    """
    extra = sorted(k for k, v in values.items() if v is not None and k not in listed)
    extra = [k for k in extra if k not in _WARNED]
    if extra:
        _WARNED.update(extra)
        log.warning("metrics %s are computed but not listed; left out", ", ".join(extra))
    out = {name: values.get(name) for name in listed}
    for name in stderr_of:
        out[name + STDERR] = {"cluster": cluster, "value": out.get(name)}
    return out


register_aggregations()
