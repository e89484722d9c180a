"""Twin Python environments that differ only in whether lm-eval-elitr is installed.

Used by ``bench/startup_hook.py`` (interpreter start-up with and without our ``.pth``)
and ``bench/lm_eval_suite.py`` (lm-eval's own tests with and without the plugin). Both
need a baseline in which *nothing* of ours runs: setting ``ELITR_BENCH_NO_HOOK`` is not
enough, because the ``.pth`` line still executes. Copying a site-packages directory
of several GB is too slow, so each twin is a small venv whose ``site-packages`` holds
one symlink per entry of the real one; the "without" twin leaves out every file of our
distribution (the ``.pth`` files and the ``dist-info``, hence also our entry points).

The out-of-tree examples' tests (``tests/judges/test_example_*.py``) use the other half:
an example installed with ``pip install --no-deps --target DIR`` from a copy, and
subprocesses that see it beside this checkout's ``elitr_bench``. Where pip (or the
setuptools it builds with) is absent, :func:`install_example` writes what pip would
have: the packages and a ``dist-info`` folder whose ``entry_points.txt`` is the one
``importlib.metadata`` reads, so the tests run the same plugin discovery instead of
skipping. :func:`write_distribution` installs a made-up plugin the same way (the
broken-plugin tests).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DIST = "lm-eval-elitr"
ROOT = Path(__file__).resolve().parents[2]
NEUTRAL_PTH = "_neutral_baseline.pth"


@dataclass(frozen=True)
class Twin:
    """One environment of a pair.

    Attributes:
        label: ``with plugin`` or ``without plugin``.
        python: The environment's interpreter.
        site_packages: Its site-packages folder (symlinks into the real one).
    """

    label: str
    python: Path
    site_packages: Path


def our_top_level_entries() -> set[str]:
    """Names in the real site-packages that belong to our distribution.

    Read from the installed distribution's RECORD, so an editable install (two ``.pth``
    files and a ``dist-info``) and a wheel install (the package folder too) both work.
    """
    files = importlib.metadata.distribution(DIST).files or []
    return {Path(str(f)).parts[0] for f in files if not str(f).startswith("..")}


def _site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def make_twin(
    root: Path, *, with_plugin: bool, keep_other_pth: bool = True, base: Path | None = None
) -> Twin:
    """Create (or reuse) one twin venv under ``root``.

    Args:
        root: Folder of the venv; reused when it already holds a matching venv.
        with_plugin: Whether our files are linked in.
        keep_other_pth: Link other distributions' ``.pth`` files too (as installed).
            ``False`` gives a quieter baseline when another ``.pth`` dominates start-up
            (both twins then get one code-free ``.pth`` file instead).
        base: Real site-packages to mirror (default: this interpreter's).

    Returns:
        The twin.
    """
    base = base or _site_packages()
    ours = our_top_level_entries()
    python = root / "bin" / "python"
    if not python.exists():
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(root)],
            check=True,
            capture_output=True,
        )
    rel = Path(sysconfig.get_paths()["purelib"]).relative_to(sysconfig.get_paths()["data"])
    site = root / rel
    site.mkdir(parents=True, exist_ok=True)
    for entry in site.iterdir():
        if entry.is_symlink() or entry.is_file():
            entry.unlink()
    for entry in base.iterdir():
        if entry.name in ours and not with_plugin:
            continue
        if entry.suffix == ".pth" and entry.name not in ours and not keep_other_pth:
            continue
        (site / entry.name).symlink_to(entry)
    if not keep_other_pth:
        # Every real environment has some .pth file (setuptools ships one); the first
        # one read costs site.py a one-off ~0.1 ms, which is not ours to count.
        (site / NEUTRAL_PTH).write_text("# neutral: no code\n")
    # Console scripts (lm_eval, elitr-bench, pytest) call the twin's own interpreter.
    bindir = Path(sysconfig.get_paths()["scripts"])
    for name, target in _SCRIPTS.items():
        script = root / "bin" / name
        if (bindir / name).exists() and not script.exists():
            module, func = target.split(":")
            script.write_text(
                f"#!{python}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n"
            )
            script.chmod(0o755)
    label = "with plugin" if with_plugin else "without plugin"
    return Twin(label=label, python=python, site_packages=site)


#: Console scripts the twins need, as ``module:function``.
_SCRIPTS = {"lm_eval": "lm_eval.__main__:cli_evaluate", "pytest": "pytest:console_main"}


def make_twins(root: Path, *, keep_other_pth: bool = True) -> tuple[Twin, Twin]:
    """The pair (with plugin, without plugin) under ``root``."""
    return (
        make_twin(root / "with", with_plugin=True, keep_other_pth=keep_other_pth),
        make_twin(root / "without", with_plugin=False, keep_other_pth=keep_other_pth),
    )


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment minus settings that would leak one twin into the other."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "ELITR_BENCH_NO_HOOK")
    }
    env.update(extra)
    return env


def pip_install_copy(project: Path, base: Path) -> subprocess.CompletedProcess[str]:
    """Copy ``project`` to ``base/src`` and pip-install the copy into ``base/site``.

    The copy keeps the example's own folder free of build output; ``--no-deps`` and
    ``--no-index`` keep the install offline and leave this environment untouched.
    """
    src, site = base / "src", base / "site"
    shutil.copytree(project, src, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--target", str(site), str(src)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def site_env(site: Path) -> dict[str, str]:
    """This environment with ``site`` and this checkout first on ``PYTHONPATH``."""
    paths = [str(site), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH", "")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def run_in_site(
    site: Path, *args: str, timeout: float, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` beside ``site`` (its parent as working folder), output captured."""
    return subprocess.run(
        [sys.executable, *args], cwd=site.parent, env=site_env(site), input=stdin,
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def run_own_tests(site: Path, src: Path) -> subprocess.CompletedProcess[str]:
    """The installed example's own tests (``src/tests``), run against the copy in ``site``."""
    return run_in_site(
        site, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
        str(src / "tests"), timeout=300,
    )  # fmt: skip


def missing_prerequisite(what: str) -> None:
    """Skip a test that lacks ``what``; in CI (``CI=true``) fail it, since nothing would run."""
    import pytest  # the bench scripts import this module without pytest

    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"test prerequisite missing in CI: {what}", pytrace=False)
    pytest.skip(f"{what} is not available")


def write_distribution(
    site: Path,
    name: str,
    version: str,
    entry_points: Mapping[str, Mapping[str, str]],
    files: Mapping[str, str] | None = None,
) -> None:
    """Install distribution ``name`` into ``site`` without pip: its files and its dist-info.

    Args:
        site: A folder the subprocesses put on ``PYTHONPATH`` (``importlib.metadata``
            finds the ``dist-info`` of every ``sys.path`` entry, as pip's ``--target``).
        name: The distribution's name (``METADATA``'s ``Name``).
        version: Its version.
        entry_points: group -> entry name -> value (``module`` or ``module:attr``).
        files: Path in ``site`` -> text (the plugin's modules).
    """
    for rel, text in (files or {}).items():
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    groups = [
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items())
        for group, entries in entry_points.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(groups), encoding="utf-8")
    (info / "INSTALLER").write_text("tests.support.plugin_env\n", encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")


def _read_toml(path: Path) -> dict[str, object]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            missing_prerequisite("tomllib or tomli (to read an example's pyproject.toml)")
    with path.open("rb") as handle:
        return tomllib.load(handle)


def install_without_pip(project: Path, site: Path) -> None:
    """What ``pip install --no-deps --target site project`` installs, written directly.

    Reads the example's ``pyproject.toml``: its name, version, entry points and the
    packages ``[tool.setuptools]`` lists, copied into ``site``.
    """
    meta = _read_toml(project / "pyproject.toml")
    proj: dict = meta["project"]  # type: ignore[assignment]
    packages: list[str] = meta["tool"]["setuptools"]["packages"]  # type: ignore[index]
    for package in packages:
        shutil.copytree(
            project / package.replace(".", "/"),
            site / package.replace(".", "/"),
            ignore=shutil.ignore_patterns("__pycache__"),
            dirs_exist_ok=True,
        )
    write_distribution(site, proj["name"], proj["version"], proj.get("entry-points", {}))


def install_example(project: Path, base: Path) -> tuple[Path, Path]:
    """(site, source copy): ``project`` installed from a copy, with pip where it can build.

    With pip and setuptools the install is a user's (:func:`pip_install_copy`); without
    either, :func:`install_without_pip` writes the same packages and entry points, so the
    tests run everywhere instead of skipping (``ELITR_TESTS_WITHOUT_PIP=1`` takes that
    path where pip is installed, to check it).
    """
    without = os.environ.get("ELITR_TESTS_WITHOUT_PIP", "") == "1"
    if not without and all(importlib.util.find_spec(m) is not None for m in ("pip", "setuptools")):
        proc = pip_install_copy(project, base)
        assert proc.returncode == 0, proc.stderr[-3000:]
    else:
        shutil.copytree(project, base / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
        install_without_pip(base / "src", base / "site")
    return base / "site", base / "src"
