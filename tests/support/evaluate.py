"""lm-eval's ``simple_evaluate`` on our tasks only, in-process (fast task tests)."""

from __future__ import annotations

from typing import Any

from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager


def evaluate(model: Any, model_args: str, tasks: list[str], **kwargs: Any) -> dict[str, Any]:
    """Run ``tasks`` with lm-eval's defaults off and samples logged.

    ``metadata`` (the task options, as ``--metadata`` gives them) goes to the task
    manager; every other keyword goes to ``simple_evaluate``.
    """
    manager = TaskManager(include_defaults=False, metadata=kwargs.pop("metadata", None))
    result = simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=tasks,
        task_manager=manager,
        log_samples=True,
        **kwargs,
    )
    assert result is not None
    return result
