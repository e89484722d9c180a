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
subprocesses that see it beside this checkout's ``elitr_bench``.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
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
