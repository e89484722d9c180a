"""``.ci/share-site-files``: one copy of what two environments hold byte for byte.

Two real venvs (no pip: a distribution is its files and a RECORD, as pip leaves them) and
the script run as ``make install-vllm`` runs it. A file becomes a link only where linking
cannot change what either environment runs.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

from tests.conftest import ROOT

SCRIPT = ROOT / ".ci" / "share-site-files"


def _site(env: Path) -> Path:
    (site,) = env.glob("lib/python*/site-packages")
    return site


def _install(env: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """What pip leaves of a wheel: the files, and a dist-info whose RECORD hashes them."""
    site = _site(env)
    record = []
    for rel, data in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(data)}")
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record.append(f"{name}-{version}.dist-info/METADATA,,")
    (info / "RECORD").write_text("\n".join(record) + "\n")


def _inode(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino


def test_identical_files_of_one_version_become_links_and_nothing_else(tmp_path: Path) -> None:
    project, vllm = tmp_path / "project", tmp_path / "vllm"
    for env in (project, vllm):
        venv.create(env, with_pip=False)
    lib = os.urandom(4096)
    _install(project, "torchlike", "2.13.0", {"torchlike/lib.so": lib, "torchlike/a.py": b"x=1\n"})
    _install(vllm, "torchlike", "2.13.0", {"torchlike/lib.so": lib, "torchlike/a.py": b"x=1\n"})
    # the same version, one file edited after install: its bytes decide, not RECORD
    _install(project, "edited", "1.0", {"edited/data.bin": b"same"})
    _install(vllm, "edited", "1.0", {"edited/data.bin": b"same"})
    (_site(vllm) / "edited" / "data.bin").write_bytes(b"SAME")
    # equal bytes under another version: another distribution, never linked
    _install(project, "pinned", "5.24.0", {"pinned/table.bin": b"t" * 100})
    _install(vllm, "pinned", "5.19.0", {"pinned/table.bin": b"t" * 100})

    def run() -> str:
        pythons = [str(env / "bin" / "python") for env in (project, vllm)]
        proc = subprocess.run(
            [sys.executable, str(SCRIPT), *pythons], capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert run().startswith("share-site-files: 1 files (0 MB) of torchlike now hard links")
    mine, theirs = _site(project), _site(vllm)
    assert _inode(theirs / "torchlike/lib.so") == _inode(mine / "torchlike/lib.so")
    assert (theirs / "torchlike/lib.so").read_bytes() == lib
    # a source keeps its own file: its .pyc is tied to its own modification time
    assert _inode(theirs / "torchlike/a.py") != _inode(mine / "torchlike/a.py")
    assert (theirs / "edited/data.bin").read_bytes() == b"SAME"
    assert _inode(theirs / "edited/data.bin") != _inode(mine / "edited/data.bin")
    assert _inode(theirs / "pinned/table.bin") != _inode(mine / "pinned/table.bin")
    # a second run finds nothing more to do, and no temporary file is left behind
    assert run() == "share-site-files: nothing to share (no identical files, or already linked)"
    assert not list(theirs.rglob("*.share-tmp"))


def test_an_interpreter_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-venv" / "bin" / "python"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), sys.executable, str(missing)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"share-site-files: cannot list the distributions of {missing}: "
        f"[Errno 2] No such file or directory: '{missing}'"
    ]
