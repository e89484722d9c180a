"""The QA family as the judge core sees it: ELITR-Bench's rubric judges, replay, lexical.

Its rubrics are not listed here: they are a registry of their own
(:data:`~elitr_bench.judges.rubrics.RUBRICS`, built-in and installed ones alike), which the
spec's ``rubric=`` check and ``read-reply`` ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from elitr_bench.judges.errors import JudgeConfigError, JudgeNotReadyError
from elitr_bench.judges.family import JudgeFamily, register_family
from elitr_bench.judges.rubrics import RUBRICS, Rubric

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig


@dataclass(frozen=True)
class QAOptions:
    """The spec options only the QA judges read.

    Attributes:
        system: ``replay`` only: the released system whose judge scores are replayed.
            A few released answer texts belong to two systems, and only the system
            tells which score to replay; the task sets it from ``--model_args system=``.
    """

    system: str = ""


def qa_options(config: JudgeConfig) -> QAOptions:
    """The QA options of a config (the defaults for a config of another family)."""
    options = config.options
    return options if isinstance(options, QAOptions) else QAOptions()


def _check(config: JudgeConfig, spec: str) -> None:
    if qa_options(config).system and config.backend != "replay":
        raise JudgeConfigError(f"judge spec {spec!r}: system= applies to the replay backend only")
    rubric: Rubric | None = RUBRICS.get(config.rubric)
    if config.backend == "replay" and rubric is not None and not rubric.replay_key:
        released = ", ".join(n for n in RUBRICS if RUBRICS[n].replay_key)
        raise JudgeConfigError(
            f"judge spec {spec!r}: rubric={config.rubric} has no released scores to replay; "
            f"replay one of {released}, or judge with an LLM (openai:MODEL,rubric=...)"
        )


def _ready(config: JudgeConfig, environ: Mapping[str, str]) -> None:
    """``replay`` reads the released judge scores: check they are there before generating."""
    if config.backend != "replay":
        return
    from elitr_bench.data import load_released_responses

    try:
        load_released_responses("qa", "test2", "st", "all-eval")
    except Exception as exc:  # the data layer's message already names the fix
        raise JudgeNotReadyError(f"judge replay: released responses unavailable: {exc}") from None


register_family(
    JudgeFamily(
        "qa",
        label="the QA judges",
        short="QA",
        options=QAOptions,
        default=True,
        check=_check,
        ready=_ready,
        batches=True,
    )
)
