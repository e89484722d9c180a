"""The papers (the specification), found beside the checkout, for the paper-fidelity tests.

The papers live in ``<checkout>/../shared/papers`` (its README maps the files), the same
place ``.ci/run`` checks before the suite. A fidelity test reads its paper through
:func:`paper_text`, which fails the test, never skips it, when the file is missing: a
check that turns into a skip on another checkout proves nothing there.
``ELITR_BENCH_PAPERS_DIR`` points elsewhere (used to show that the tests fail without it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def papers_dir() -> Path:
    """``$ELITR_BENCH_PAPERS_DIR``, else ``../shared/papers`` beside the checkout."""
    env = os.environ.get("ELITR_BENCH_PAPERS_DIR")
    return Path(env) if env else ROOT.parent / "shared" / "papers"


def paper_path(number: str) -> Path:
    """The text of paper ``number`` (``"000"`` .. ``"004"``); fails the test when missing."""
    found = sorted(papers_dir().glob(f"{number}_*.txt"))
    if not found:
        pytest.fail(
            f"paper {number}_*.txt not found in {papers_dir()}: put the papers in "
            "../shared/papers beside the checkout (or set ELITR_BENCH_PAPERS_DIR)",
            pytrace=False,
        )
    return found[0]


def paper_text(number: str) -> str:
    """The text of paper ``number``, read as UTF-8; fails the test when missing."""
    return paper_path(number).read_text(encoding="utf-8")
