"""Every ``elitr_bench.x.y`` written in the package names something that exists.

Docstrings and messages name modules and functions by dotted path (``:func:`` targets,
placeholder module lists, "see ..." notes). Nothing else checks them, so a moved function
left them pointing nowhere (issue 48: ``summary/registry.py`` listed a module that was never
written, ``scoring/minutes.py`` cited ``_cmd_score`` where it no longer lives). Each path is
resolved for real: the longest prefix that imports as a module, then attributes (or
submodules) down to the last name.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

from elitr_bench.judges.family import ENTRY_POINT_GROUP

PACKAGE = Path(__file__).resolve().parents[1] / "elitr_bench"

#: A dotted path starting at our package, not part of a longer name or a file path.
DOTTED = re.compile(r"(?<![\w./-])elitr_bench(?:\.[A-Za-z_]\w*)+")

#: Dotted names that are not Python paths: the entry-point group plugins declare.
NOT_PYTHON = {ENTRY_POINT_GROUP}


def _references() -> dict[str, list[str]]:
    """Each dotted path -> where it is written (``file:line``)."""
    found: dict[str, list[str]] = {}
    for source in sorted(PACKAGE.rglob("*.py")):
        lines = source.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            for match in DOTTED.finditer(line):
                where = f"{source.relative_to(PACKAGE.parent)}:{number}"
                found.setdefault(match.group(0), []).append(where)
    return found


def _resolves(path: str) -> bool:
    parts = path.split(".")
    module: ModuleType | None = None
    for end in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        break
    if module is None:
        return False
    value: object = module
    for name in parts[end:]:
        if hasattr(value, name):
            value = getattr(value, name)
            continue
        if not isinstance(value, ModuleType):
            return False
        try:
            value = importlib.import_module(f"{value.__name__}.{name}")
        except ImportError:
            return False
    return True


REFERENCES = _references()


def test_the_package_writes_dotted_paths_at_all() -> None:
    assert len(REFERENCES) > 20  # the pattern still finds them


@pytest.mark.parametrize(
    "path", sorted(p for p in REFERENCES if p not in NOT_PYTHON), ids=lambda p: p
)
def test_every_dotted_path_in_the_package_resolves(path: str) -> None:
    assert _resolves(path), f"{path} does not exist; written at {', '.join(REFERENCES[path])}"
