"""Which judges can score a run, decided from the model under test alone.

The replay judge holds scores only for the released systems' answers, so what a run may
be told to use instead (the keyless ways out) depends on whether it replays them. Both
the start-up preflight (:mod:`elitr_bench.tasks.preflight`) and the tasks themselves ask
this; it lives apart from both so that neither imports the other.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig

#: The model whose answers the ``replay`` judge has scores for.
REPLAY_MODEL = "elitr-replay"


def is_replay_model(model: Any) -> bool:
    """Whether the model under test replays the released answers (``--model elitr-replay``)."""
    if isinstance(model, str):
        return model == REPLAY_MODEL
    while type(model).__name__ == "CachingLM":  # --use_cache wraps the model
        model = getattr(model, "lm", None)
    replay = sys.modules.get("elitr_bench.models.replay")  # loaded if the model is one
    return replay is not None and isinstance(model, replay.ReplayLM)


def alternatives(kind: str, model: Any) -> str:
    """The keyless ways out for this run, as ``lm_eval`` flags (replay only for replays)."""
    from elitr_bench.judges.readiness import keyless_alternatives

    return keyless_alternatives(
        kind == "qa", "lm_eval", replay=kind == "qa" and is_replay_model(model)
    )


def check_replay_fits(config: JudgeConfig | None, model: Any, kind: str = "qa") -> None:
    """Refuse ``judge: replay`` for a model whose answers it has no scores for.

    The replay judge scores only the released systems' answers; on any other model's
    answers every item would end as ``error`` and the run would then suggest
    ``elitr-bench score --judge replay``, which fails the same way.

    Raises:
        JudgeNotReadyError: One line naming the model and what works instead.
    """
    from elitr_bench.judges.errors import JudgeNotReadyError

    if config is None or config.backend != "replay" or model is None or is_replay_model(model):
        return
    name = model if isinstance(model, str) else type(model).__name__
    raise JudgeNotReadyError(
        f"judge replay scores only the released systems' answers (--model {REPLAY_MODEL}); "
        f"--model {name} writes new ones. Use an LLM judge, or {alternatives(kind, model)}"
    )
