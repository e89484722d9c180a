"""The minutes family as the judge core sees it: AutoMin 2023's GPT judges and filler.

``rubric=gpt-art`` / ``rubric=gpt-afgr`` select the AutoMin prompt judges (Figs. 17-18),
``method=NAME`` any other minutes method registered in
:mod:`elitr_bench.judges.summary.registry` except MESA, which is a family of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import JudgeFamily, Method, register_family
from elitr_bench.judges.metrics import (
    COUNT_AGGREGATION,
)
from elitr_bench.judges.minutes.prompts import AFGR, ART, FILLER
from elitr_bench.judges.options import GREEDY
from elitr_bench.judges.summary.registry import MINUTES_RUBRICS, method_name

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig

#: Fields of the filler compression (GPT judges with ``filler=true``), declared by the GPT
#: method (``extra_metric_entries``, ``sample_fields``, ``flag``).
TOKENS_SAVED = "filler_tokens_saved"
FILLER_UNCLASSIFIED = "filler_unclassified_turns"
FILLER_FLAGGED = "filler_flagged"


@dataclass(frozen=True)
class MinutesOptions:
    """The spec options only the AutoMin GPT judges read.

    Attributes:
        filler: Compress the transcript by dropping filler turns (AutoMin Sec. 6.3,
            Fig. 19) before judging.
        filler_model: Model that classifies the turns (``""`` = the judge's own model).
            AutoMin classified with text-davinci-003 and judged with GPT-4-32k; the
            classifier shares the judge's backend, endpoint options and cache.
    """

    filler: bool = True
    filler_model: str = ""


def minutes_options(config: JudgeConfig) -> MinutesOptions:
    """The minutes options of a config (the defaults for a config of another family)."""
    options = config.options
    return options if isinstance(options, MinutesOptions) else MinutesOptions()


def compresses(config: JudgeConfig) -> bool:
    """Whether this judge compresses filler: an AutoMin prompt method with ``filler`` on.

    The one test of it, for the identity, the metric list and the filter alike.
    """
    return minutes_options(config).filler and method_name(config) in MINUTES_RUBRICS


def _check(config: JudgeConfig, spec: str) -> None:
    options = minutes_options(config)
    if config.batch and _models(config):
        raise JudgeConfigError(
            f"judge spec {spec!r}: batch=on sends one model's requests per batch, and "
            f"filler_model={options.filler_model} classifies with another; drop filler_model "
            "(the judge's model classifies) or batch=on"
        )
    if not options.filler_model:
        return
    if config.rubric not in MINUTES_RUBRICS or config.method:
        raise JudgeConfigError(
            f"judge spec {spec!r}: filler_model= applies to the AutoMin GPT judges only "
            "(rubric=gpt-art or rubric=gpt-afgr); drop it"
        )
    if not options.filler:
        raise JudgeConfigError(
            f"judge spec {spec!r}: filler_model= names the filler classifier, but "
            "filler=false; drop one"
        )


def _identity(config: JudgeConfig) -> dict[str, Any]:
    if not compresses(config):
        return {}
    return {"filler_model": minutes_options(config).filler_model or config.model}


def _models(config: JudgeConfig) -> list[str]:
    options = minutes_options(config)
    if options.filler and options.filler_model and options.filler_model != config.model:
        return [options.filler_model]
    return []


def filler_metric_entries() -> list[dict[str, Any]]:
    """The metric entries of the filler compression (an AutoMin judge with ``filler=true``).

    Descriptions of the compression, not qualities: no ranking direction.
    """
    return [
        {"metric": TOKENS_SAVED, "aggregation": "mean", "higher_is_better": None},
        *(
            {"metric": name, "aggregation": COUNT_AGGREGATION, "higher_is_better": None}
            for name in (FILLER_UNCLASSIFIED, FILLER_FLAGGED)
        ),
    ]


def _scale(metric: str) -> tuple[float, float] | None:
    return (0.0, 10.0) if metric.startswith(("afgr_", "art_")) else None  # Figs. 17-18


register_family(
    JudgeFamily(
        "minutes",
        label="the AutoMin GPT judges",
        options=MinutesOptions,
        defaults=GREEDY,
        # Their factories are registered by minutes/gpt.py, imported on first use.
        methods=(
            Method(ART.name, grammar=ART.grammar, by_rubric=True),
            Method(AFGR.name, grammar=AFGR.grammar, by_rubric=True),
        ),
        check=_check,
        identity=_identity,
        models=_models,
        other_model="filler_model",
        scale=_scale,
        grammars={"automin-filler": FILLER},
        batches=True,
    )
)
