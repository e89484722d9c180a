"""The session's one index of lm-eval's built-in tasks (tests/support/startup/sitecustomize.py).

It may change how long a launch takes, never what lm-eval indexes: later folders win with
lm-eval's warning, a folder other than lm-eval's own is indexed each time, a damaged copy
is rebuilt, and every fresh interpreter of the session has it (``PYTHONPATH``).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import ROOT, fresh_launches

STARTUP = ROOT / "tests" / "support" / "startup" / "sitecustomize.py"


def _startup() -> Any:
    spec = importlib.util.spec_from_file_location("startup_under_test", STARTUP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class _Entry:
    name: str
    yaml_path: Path


def _fake_lm_eval(tmp_path: Path, calls: list[list[Path]]) -> ModuleType:
    """An ``lm_eval.tasks._index`` whose folder is ``tmp_path/tasks``: one task per file."""
    own = tmp_path / "tasks"
    own.mkdir(exist_ok=True)

    class TaskIndex:
        @staticmethod
        def build(paths: list[Path], *, resolve_includes: bool = True) -> dict[str, Any]:
            calls.append(list(paths))
            index: dict[str, Any] = {}
            for root in paths:
                for yaml in sorted(Path(root).glob("*.yaml")):
                    index[yaml.stem] = _Entry(yaml.stem, yaml)
            return index

    module = ModuleType("lm_eval.tasks._index")
    module.__file__ = str(own / "_index.py")
    module.TaskIndex = TaskIndex  # type: ignore[attr-defined]
    module.log = logging.getLogger("lm_eval.tasks._index")  # type: ignore[attr-defined]
    return module


def test_lm_evals_own_folder_is_indexed_once_and_later_folders_win(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    startup, store = _startup(), tmp_path / "store"
    store.mkdir()
    first: list[list[Path]] = []
    module = _fake_lm_eval(tmp_path, first)
    own, ours = tmp_path / "tasks", tmp_path / "ours"
    ours.mkdir()
    for path in (own / "arc.yaml", own / "clash.yaml", ours / "elitr.yaml", ours / "clash.yaml"):
        path.write_text("task: x\n")
    startup.share_index(module, store)

    built = module.TaskIndex.build([own, ours])
    assert first == [[own.resolve()], [ours]]
    assert sorted(built) == ["arc", "clash", "elitr"]
    assert built["clash"].yaml_path == ours / "clash.yaml"  # the later folder wins
    assert "overrides existing task" in caplog.text
    assert len(list(store.glob("*.pickle"))) == 1
    # another option of lm-eval's build is another index
    assert sorted(module.TaskIndex.build([own], resolve_includes=False)) == ["arc", "clash"]
    assert [c for c in first if c][-1] == [own.resolve()]
    assert len(list(store.glob("*.pickle"))) == 2

    # another process of the session reads the stored index and indexes only the rest
    second: list[list[Path]] = []
    again = _fake_lm_eval(tmp_path, second)
    startup.share_index(again, store)
    assert again.TaskIndex.build([own, ours]) == built
    assert second == [[ours]]
    # a folder other than lm-eval's own first: lm-eval's build, untouched
    assert again.TaskIndex.build([ours]) == {"elitr": built["elitr"], "clash": built["clash"]}
    assert second[-1] == [ours]


def test_a_damaged_copy_is_rebuilt_and_a_kept_index_is_copied_per_call(tmp_path: Path) -> None:
    startup, store = _startup(), tmp_path / "store"
    store.mkdir()
    calls: list[list[Path]] = []
    module = _fake_lm_eval(tmp_path, calls)
    own = (tmp_path / "tasks").resolve()
    (own / "arc.yaml").write_text("task: arc\n")
    startup.share_index(module, store)
    module.TaskIndex.build([tmp_path / "tasks"])
    (stored,) = store.glob("*.pickle")
    stored.write_bytes(b"\x80\x05truncated")

    startup.share_index(module, store, keep=True)  # re-wraps lm-eval's build, not ours
    assert sorted(module.TaskIndex.build([tmp_path / "tasks"])) == ["arc"]
    assert [c for c in calls if c] == [[own], [own]]  # rebuilt from the files
    stored.unlink()
    kept = module.TaskIndex.build([tmp_path / "tasks"])
    kept.clear()  # a launch's changes stay its own
    assert sorted(module.TaskIndex.build([tmp_path / "tasks"])) == ["arc"]
    assert [c for c in calls if c] == [[own], [own]]  # kept: not read or built again


def test_every_interpreter_of_the_session_has_it_and_fresh_mode_turns_it_off() -> None:
    if fresh_launches():
        pytest.skip("ELITR_TEST_FRESH_LM_EVAL is set: every launch is fresh")
    probe = "import lm_eval.tasks._index as m; print(hasattr(m.TaskIndex.build, '__wrapped__'))"
    on = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert on.stdout.strip() == "True", on.stderr[-2000:]
    off = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "ELITR_TEST_FRESH_LM_EVAL": "1"},
    )
    assert off.stdout.strip() == "False", off.stderr[-2000:]
