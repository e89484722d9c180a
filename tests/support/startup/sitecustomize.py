"""Test sessions only: lm-eval's index of its built-in tasks is built once per session.

Every ``lm_eval`` process indexes the 14,000 YAML files of lm-eval's own task folder
before it reads a task (``TaskIndex.build``: about 6 CPU seconds). Some of the suite's
interpreters must be fresh (a plugin folder on ``PYTHONPATH``, a variable read at import,
a signal of their own, ``accelerate``'s processes), and each paid it again for the same
files. tests/conftest.py puts this
folder first on ``PYTHONPATH`` and names a folder of the session in
``ELITR_TEST_LM_EVAL_INDEX``: the first process to index a folder of lm-eval's built-in
tasks stores what lm-eval built there (pickled, one file per installation), and the
later ones read it back (under 1 CPU second). Only that folder: every other folder
(ours, a user's ``--include_path``) is indexed by lm-eval each time, and the folders are
merged as lm-eval merges them, later ones winning. Nothing else of lm-eval changes, and
nothing here runs unless a process imports ``lm_eval.tasks._index``.

Self-contained (the standard library only): the interpreters that read it need not have
this checkout on ``sys.path``. ``ELITR_TEST_FRESH_LM_EVAL=1`` turns it off with the rest.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import os
import pickle
import runpy
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ENV = "ELITR_TEST_LM_EVAL_INDEX"
_MODULE = "lm_eval.tasks._index"


def share_index(module: ModuleType, folder: Path | None, *, keep: bool = False) -> None:
    """Make ``module.TaskIndex.build`` index lm-eval's own task folder once.

    Args:
        module: ``lm_eval.tasks._index``, just run.
        folder: Where the index is stored for the session's other processes (None: not
            stored; built by this process).
        keep: Keep it in this process too and give each call a copy of its mapping (the
            fork server, whose launches are forks that each get their own copy of the
            entries); otherwise each call reads the stored file again, so no two
            ``TaskManager``s of one process share an entry.
    """
    index_cls = getattr(module, "TaskIndex", None)
    build = getattr(getattr(index_cls, "build", None), "__wrapped__", None) or getattr(
        index_cls, "build", None
    )
    if index_cls is None or build is None:
        return  # another lm-eval layout: leave it alone
    own_tasks = Path(module.__file__ or "").resolve().parent
    kept: dict[str, dict[str, Any]] = {}

    def built_in(options: dict[str, Any]) -> dict[str, Any]:
        said = repr(sorted(options.items()))  # e.g. lm-eval 0.4's resolve_includes
        if said in kept:
            return dict(kept[said])
        key = hashlib.sha1(f"{own_tasks}|{said}".encode()).hexdigest()[:16]
        path = folder / f"lm-eval-index-{key}.pickle" if folder is not None else None
        index: dict[str, Any] | None = None
        if path is not None:
            try:
                with path.open("rb") as handle:
                    index = dict(pickle.load(handle))
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
                index = None
        if index is None:
            index = dict(build([own_tasks], **options))
            if path is not None and path.parent.is_dir():
                with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
                    pickle.dump(index, handle, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(handle.name, path)  # whole or absent for a reader meanwhile
        if keep:
            kept[said] = index
            return dict(index)
        return index

    def shared(paths: Sequence[Path], **options: Any) -> dict[str, Any]:
        paths = [Path(p) for p in paths]
        if not paths or paths[0].resolve() != own_tasks:
            return dict(build(paths, **options))
        index = built_in(options)
        # later folders win, with lm-eval's own warning, as in TaskIndex.build
        for name, entry in build(paths[1:], **options).items():
            if name in index:
                module.log.warning(
                    "Task '%s' from %s overrides existing task from %s",
                    name,
                    entry.yaml_path,
                    index[name].yaml_path,
                )
            index[name] = entry
        return index

    shared.__wrapped__ = build  # type: ignore[attr-defined]
    index_cls.build = staticmethod(shared)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds ``lm_eval.tasks._index`` as usual and patches it once it has run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module
        folder = self.folder

        def exec_module(module: ModuleType) -> None:
            run(module)
            share_index(module, folder)

        loader.exec_module = exec_module  # this module's loader instance only
        return spec


def _install() -> None:
    folder = os.environ.get(ENV)
    if folder and os.environ.get("ELITR_TEST_FRESH_LM_EVAL", "") in ("", "0"):
        sys.meta_path.insert(0, _PatchOnImport(Path(folder)))


def _chain() -> None:
    """Run the ``sitecustomize`` this one shadows (one later on ``sys.path``), if any."""
    here = Path(__file__).resolve().parent
    folders = [Path(entry).resolve() if entry else None for entry in sys.path]
    if here not in folders:
        return  # run by another sitecustomize (tests/support/stop_marker.py), which chains
    for folder in folders[folders.index(here) + 1 :]:
        other = folder / "sitecustomize.py" if folder is not None else None
        if other is not None and other.is_file():
            runpy.run_path(str(other), run_name="sitecustomize")
            return


if __name__ == "sitecustomize":  # not when a test loads this file to check it
    _install()
    _chain()
