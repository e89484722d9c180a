"""The wheel a user installs holds the start-up file, the task YAMLs and the entry points.

The README's install paths (``pip install .`` from a clone, or a wheel built with
``pip wheel . --no-deps``) register the plugin only if the one-line ``.pth`` file lands at
the wheel's root, beside the package; a build-config change that drops it would leave
``lm_eval --tasks elitr_qa`` without our tasks while every in-tree test still passes.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_carries_the_startup_file_data_files_and_entry_points(tmp_path: Path) -> None:
    import hatchling  # noqa: F401  # the dev extra: a failure, never a skip

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",  # offline: the installed hatchling builds it
            "--no-cache-dir",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("lm_eval_elitr-*-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        startup = archive.read("lm_eval_elitr.pth")  # at the root: site.py reads it there
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        entries = archive.read(entry_points).decode()
    assert startup == (ROOT / "elitr_bench" / "_startup" / "lm_eval_elitr.pth").read_bytes()
    assert startup.startswith(b"import sys;") and startup.count(b"\n") <= 1
    data = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "elitr_bench").rglob("*")
        if p.is_file()
        and p.suffix in {".yaml", ".json", ".gz", ".md"}
        and "__pycache__" not in p.parts
    ]
    assert any(n.endswith("_elitr_qa.yaml") for n in data)
    assert sorted(set(data) - names) == []
    assert "elitr-bench = elitr_bench.cli:main" in entries
    assert "[lm_eval.tasks]" in entries and "elitr-replay = " in entries
