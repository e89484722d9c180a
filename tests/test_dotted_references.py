"""Every ``elitr_bench.x.y`` written in the package names something that exists.

Docstrings and messages name modules and functions by dotted path (``:func:`` targets,
placeholder module lists, "see ..." notes). Nothing else checks them, so a moved function
left them pointing nowhere (issue 48: ``summary/registry.py`` listed a module that was never
written, ``scoring/minutes.py`` cited ``_cmd_score`` where it no longer lives). Each path is
resolved for real: the longest prefix that imports as a module, then attributes (or
submodules) down to the last name. A relative target (``:func:`.cache.noisy_transcript```)
is resolved as Sphinx does, from the module that writes it and then each package above it.
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

#: A Sphinx role's relative target (``:mod:`.reading```, ``:meth:`~.base.X.f```).
RELATIVE = re.compile(r":[a-z]+:`~?\.([A-Za-z_][\w.]*)`")

#: Dotted names that are not Python paths: the entry-point group plugins declare.
NOT_PYTHON = {ENTRY_POINT_GROUP}


def _module_of(source: Path) -> list[str]:
    parts = list(source.relative_to(PACKAGE.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _references() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each dotted path -> where it is written (``file:line``); the same for relative ones.

    A relative target is keyed by its candidates joined with ``|`` (the writing module,
    then each package above it).
    """
    found: dict[str, list[str]] = {}
    relative: dict[str, list[str]] = {}
    for source in sorted(PACKAGE.rglob("*.py")):
        module = _module_of(source)
        lines = source.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            where = f"{source.relative_to(PACKAGE.parent)}:{number}"
            for match in DOTTED.finditer(line):
                found.setdefault(match.group(0), []).append(where)
            for match in RELATIVE.finditer(line):
                bases = [module[:end] for end in range(len(module), 0, -1)]
                key = "|".join(".".join([*base, match.group(1)]) for base in bases)
                relative.setdefault(key, []).append(where)
    return found, relative


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


REFERENCES, RELATIVE_REFERENCES = _references()


def test_the_package_writes_dotted_paths_at_all() -> None:
    assert len(REFERENCES) > 20 and len(RELATIVE_REFERENCES) > 10  # the patterns still bite


@pytest.mark.parametrize(
    "path", sorted(p for p in REFERENCES if p not in NOT_PYTHON), ids=lambda p: p
)
def test_every_dotted_path_in_the_package_resolves(path: str) -> None:
    assert _resolves(path), f"{path} does not exist; written at {', '.join(REFERENCES[path])}"


@pytest.mark.parametrize("candidates", sorted(RELATIVE_REFERENCES), ids=lambda c: c.split("|")[0])
def test_every_relative_target_in_the_package_resolves(candidates: str) -> None:
    where = ", ".join(RELATIVE_REFERENCES[candidates])
    assert any(_resolves(path) for path in candidates.split("|")), f"nothing at {where}"
