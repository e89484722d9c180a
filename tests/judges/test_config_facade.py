"""``judges/config.py`` is the users' path only: nothing inside the package imports it.

Issue 48: the facade re-exports the spec grammar, options, identity and readiness, and 46
imports in the package went through it, so the import graph (and the layer contracts read
from it) showed every caller depending on all four modules. Each module now imports a
name from the module that defines it; plugins and users keep ``elitr_bench.judges.config``,
which still re-exports every name it always had.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import elitr_bench.judges.config as facade

PACKAGE = Path(__file__).resolve().parents[2] / "elitr_bench"
FACADE = "elitr_bench.judges.config"


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _facade_imports(source: str, module: str, is_package: bool) -> list[int]:
    """The line of each import of the facade in ``source`` (relative ones resolved).

    Args:
        source: A module's text.
        module: Its dotted name (for relative imports).
        is_package: Whether it is a package's ``__init__``.
    """
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            name = ".".join([*base, *([node.module] if node.module else [])])
            targets = [name, *(f"{name}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Constant):  # importlib.import_module("...config")
            targets = [node.value] if isinstance(node.value, str) else []
        if FACADE in targets:
            found.append(node.lineno)
    return found


def test_nothing_inside_the_package_imports_the_facade() -> None:
    sources = [p for p in sorted(PACKAGE.rglob("*.py")) if _module(p) != FACADE]
    assert len(sources) > 100
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sources
        for line in _facade_imports(
            path.read_text(encoding="utf-8"), _module(path), path.name == "__init__.py"
        )
    ]
    assert found == [], "import these names from their own modules, not the facade: " + str(found)


def test_the_check_sees_each_way_of_importing_it() -> None:
    probe = (
        "from ..config import JudgeConfig\n"
        "from elitr_bench.judges import config\n"
        "def f():\n"
        "    from elitr_bench.judges.config import (\n"
        "        GREEDY,\n"
        "    )\n"
        "    import elitr_bench.judges.config as c\n"
        "    importlib.import_module('elitr_bench.judges.config')\n"
        "from ..spec import parse_judge_spec\n"
        "from . import config\n"
    )
    lines = _facade_imports(probe, "elitr_bench.judges.summary.probe", is_package=False)
    assert lines == [1, 2, 4, 7, 8]
    lines = _facade_imports("from . import config\n", "elitr_bench.judges", is_package=True)
    assert lines == [1]


def test_the_facade_still_re_exports_every_name_from_its_module() -> None:
    tree = ast.parse(Path(facade.__file__ or "").read_text(encoding="utf-8"))
    source = {
        alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__"
        for alias in node.names
    }
    assert sorted(source) == sorted(facade.__all__)
    assert {"JudgeConfig", "parse_judge_spec", "check_judge_ready", "GREEDY"} <= set(source)
    for name, module in source.items():
        assert getattr(facade, name) is getattr(importlib.import_module(module), name), name
