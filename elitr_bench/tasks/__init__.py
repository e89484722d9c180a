"""lm-eval task definitions of the ELITR benchmarks.

The YAML files below this package are lm-eval's user surface; the task class and
helpers they point to live next to them.
"""

from __future__ import annotations

from pathlib import Path

#: Folder lm-eval scans for our YAML files (the ``lm_eval.tasks`` entry point).
TASKS_DIR = str(Path(__file__).resolve().parent)
