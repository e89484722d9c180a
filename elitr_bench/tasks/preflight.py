"""Judge readiness before lm-eval loads the model under test.

lm-eval 0.4.13's ``simple_evaluate`` builds the model first (minutes for a large
checkpoint) and only then the tasks, so a judge checked while our tasks are built fails
after that wait, and a judge checked before generation still costs it. The start-up hook
(:mod:`elitr_bench._hook`) therefore wraps ``lm_eval.evaluator.simple_evaluate`` and calls
:func:`check_run_judges` with its arguments: the task names, ``--metadata`` (merged with
``--model_args``, as lm-eval merges them for tasks), the model and ``--predict_only``. That
wrapper runs before line one of the original, for the ``lm_eval`` CLI and for Python
callers of ``simple_evaluate`` alike. Runs with none of our tasks return at once, without
importing our judges; our tasks still check their judge when they build requests (for
``evaluate()`` callers and runs without the hook), and the check is done once per process.

What is checked is :func:`~elitr_bench.judges.readiness.check_judge_ready` with ``network``:
the key (or a loopback ``base_url``), one preflight request of an API judge, an ``hf``
judge's config and tokenizer (never its weights), and that a ``replay`` judge has
something to replay. ``preflight=false`` in the spec skips the request and the hf lookup.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig

from elitr_bench.tasks.replay_fit import alternatives, check_replay_fits

log = logging.getLogger(__name__)

#: Our task folder (kept free of imports: this module loads in every ``lm_eval`` run).
_TASKS_DIR = Path(__file__).resolve().parent
#: What a task judges, declared by its class (``task_kind``): ``qa`` or ``minutes``.
_KINDS = ("qa", "minutes")


def _class_of(spec: Any) -> Any:
    """The class a task YAML's ``class:`` names, when it is one of this package's.

    lm-eval's index leaves ``!function`` unresolved, as the YAML's folder joined with the
    dotted name; only a dotted name in ``elitr_bench`` is imported (lm-eval imports it
    anyway to build the task), so a run without our classes imports nothing here.
    """
    if isinstance(spec, type):
        return spec
    if not isinstance(spec, str):
        return None
    dotted = spec.replace("\\", "/").rsplit("/", 1)[-1]
    module, _, name = dotted.rpartition(".")
    if not module.startswith("elitr_bench.") or not name:
        return None
    import importlib

    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None  # lm-eval names the missing module when it builds the task


def _kind_of(cfg: Mapping[str, Any] | None) -> str | None:
    """``minutes`` or ``qa`` for a task whose class is one of ours, None for anyone else's.

    The kind is the class's own ``task_kind``, so a task YAML from any folder (an
    ``--include_path`` one included) that names our class is checked like ours.
    """
    declared = getattr(_class_of((cfg or {}).get("class")), "task_kind", None)
    return declared if declared in _KINDS else None


def _config_of(entry: Any) -> Mapping[str, Any] | None:
    """A task entry's YAML config, its ``include:`` files merged in (functions unresolved)."""
    if entry.cfg is not None or entry.yaml_path is None:
        return cast("Mapping[str, Any] | None", entry.cfg)
    from lm_eval.tasks._yaml_loader import load_yaml

    try:
        return cast("Mapping[str, Any]", load_yaml(entry.yaml_path, resolve_func=False))
    except Exception:  # lm-eval reports an unreadable YAML itself
        return None


def our_task_kinds(tasks: Any, task_manager: Any = None) -> dict[str, str]:
    """The run's tasks that are ours: name -> ``qa`` or ``minutes``.

    Names, groups, tags and YAML paths are resolved through the run's task index (or an
    index of our folder alone when the caller passed no task manager); task objects and
    inline configs are left to the task-time check.
    """
    from lm_eval.tasks._index import Kind, TaskIndex

    index: Mapping[str, Any]
    if task_manager is not None and hasattr(task_manager, "task_index"):
        index = task_manager.task_index
    else:
        index = TaskIndex.build([_TASKS_DIR])
    found: dict[str, str] = {}
    seen: set[str] = set()

    def visit(spec: Any, depth: int = 0) -> None:
        if not isinstance(spec, str) or spec in seen or depth > 8:
            return
        seen.add(spec)
        entry = index.get(spec)
        if entry is None and spec.endswith((".yaml", ".yml")) and os.path.isfile(spec):
            entry = TaskIndex.entry_from_path(Path(spec))
        if entry is None:
            return
        if entry.kind == Kind.TAG:
            for member in sorted(entry.tags):
                visit(member, depth + 1)
            return
        kind = _kind_of(_config_of(entry)) if entry.kind == Kind.PY_TASK else None
        if kind is not None:
            found[entry.name] = kind
        if entry.kind == Kind.GROUP:
            members = (entry.cfg or {}).get("task") or []
            for member in members if isinstance(members, list) else [members]:
                visit(member.get("task") if isinstance(member, dict) else member, depth + 1)

    for spec in tasks if isinstance(tasks, (list, tuple)) else [tasks]:
        visit(spec)
    return found


def task_metadata(
    model_args: Any, metadata: Mapping[str, Any] | None, task_manager: Any
) -> dict[str, Any]:
    """The metadata our tasks will see: the task manager's, else ``model_args | metadata``."""
    from_manager = getattr(task_manager, "metadata", None)
    if isinstance(from_manager, Mapping):
        return dict(from_manager)
    merged: dict[str, Any] = {}
    if isinstance(model_args, Mapping):
        merged.update(model_args)
    elif isinstance(model_args, str) and model_args.strip():
        from lm_eval.utils import simple_parse_args_string

        merged.update(simple_parse_args_string(model_args))
    return merged | dict(metadata or {})


def check_run_judges(
    *,
    tasks: Any,
    model: Any,
    model_args: Any = None,
    metadata: Mapping[str, Any] | None = None,
    predict_only: bool = False,
    task_manager: Any = None,
) -> list[JudgeConfig]:
    """Check every judge the run's tasks of ours will use, before the model is built.

    Args:
        tasks: ``simple_evaluate``'s task list (names, groups, tags, paths).
        model: The model name (``hf``, ``elitr-replay``, ...) or an LM instance.
        model_args: ``--model_args`` (lm-eval merges them into task metadata).
        metadata: ``--metadata``.
        predict_only: ``--predict_only``: nothing is judged, nothing checked.
        task_manager: The run's task manager, when the caller built one (the CLI does).

    Returns:
        The judge configs checked (empty when the run has none of our tasks).

    Raises:
        elitr_bench.data.errors.ElitrBenchError: A judge cannot run (one line with the
            fix), or a judge spec or option is invalid.
    """
    if predict_only:
        return []
    kinds = set(our_task_kinds(tasks, task_manager).values())
    if not kinds:
        return []
    from elitr_bench.cli_errors import install_excepthook
    from elitr_bench.judges.readiness import check_judge_ready

    install_excepthook()  # our one-line errors, as when our task modules load
    meta = task_metadata(model_args, metadata, task_manager)
    checked: list[JudgeConfig] = []
    for kind in sorted(kinds):
        config = _judge_of(kind, meta)
        if config is None:
            continue
        check_replay_fits(config, model, kind)
        check_judge_ready(config, network=True, alternative=alternatives(kind, model))
        checked.append(config)
    return checked


def _judge_of(kind: str, metadata: Mapping[str, Any]) -> JudgeConfig | None:
    """The judge a task of this kind will build from the metadata (same functions).

    The task's options are read first, as the task reads them: a misspelt key (``judg``)
    must be named as such, not reported as a problem of the default judge it left.
    """
    if kind == "minutes":
        from elitr_bench.tasks.minutes import MinutesTaskOptions, judge_for_minutes

        MinutesTaskOptions.from_metadata(metadata)
        return judge_for_minutes(metadata)[1]
    from elitr_bench.tasks.options import TaskOptions
    from elitr_bench.tasks.task import judge_for

    TaskOptions.from_metadata(metadata)
    return judge_for(dict(metadata))[1]
