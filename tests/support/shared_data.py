"""The real data mirror the tests read, wherever the run says it is.

``ELITR_BENCH_DATA_DIR`` names it (``.ci/run`` and the README set it; ``tests/conftest.py``
defaults it to ``../shared/data`` beside the checkout). A test that copies, hashes or serves
the released files reads them through :func:`shared_data_dir`, so a clone anywhere runs
the same tests as a clone beside ``shared/``.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def shared_data_dir() -> Path:
    """``$ELITR_BENCH_DATA_DIR``, else ``../shared/data`` beside the checkout."""
    env = os.environ.get("ELITR_BENCH_DATA_DIR")
    return Path(env) if env else ROOT.parent / "shared" / "data"
