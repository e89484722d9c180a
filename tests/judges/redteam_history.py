"""Each red-team batch's first-contact tally, from git history.

A batch proves something about the reader only if the reader had not seen it: its
first-contact tally is what the reader made of it before any fix it drove. For each
batch, the commit that added it (``git log --diff-filter=A``) is found; the tree of
that commit's parent is extracted to a temporary folder, every other batch is removed
from it, the batch as it was added is put in, and that tree's own
``python -m tests.judges.redteam`` tallies it with ``PYTHONPATH`` pointing there (so
its reader, its tally code and its accepted list are the ones of that time).

When the parent has no reader to run (batches A and B came in the commit that added
the reader) the tally at the adding commit itself is printed instead and labelled as
not a first contact: it includes the fixes made in that commit. The same holds for any
batch committed together with a reader change (batch C), whose parent tally is its
true first contact. A batch not yet committed has no first contact to show.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BATCHES = "tests/judges/data/redteam"
TALLY_MODULE = "tests/judges/redteam.py"


@dataclass(frozen=True)
class FirstContact:
    """What the reader made of one batch when it met it.

    Attributes:
        batch: The batch folder name (``batch_d``).
        added_in: Short hash of the commit that added it ("" when not committed).
        reader_at: Short hash of the commit whose reader produced ``tally`` ("" if none).
        first: Whether ``reader_at`` is the parent of ``added_in`` (a true first contact).
        tally: The lines that commit's ``tests.judges.redteam`` printed for the batch.
    """

    batch: str
    added_in: str
    reader_at: str
    first: bool
    tally: str

    def describe(self) -> str:
        """A heading line and the tally, indented."""
        if not self.added_in:
            return f"{self.batch}: not committed yet; commit it on its own, before any reader fix"
        if self.first:
            head = f"{self.batch}: added in {self.added_in}; first contact, the reader of its "
            head += f"parent {self.reader_at}:"
        else:
            head = f"{self.batch}: added in {self.added_in} together with the reader (no "
            head += "earlier reader to run); tally at that commit, NOT a first contact:"
        body = "\n".join(f"    {line}" for line in self.tally.rstrip().splitlines())
        return f"{head}\n{body}"


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
    )


def _short(commit: str) -> str:
    return _git("rev-parse", "--short", commit).stdout.strip()


def batch_names() -> list[str]:
    """The batch folders of this checkout, in order."""
    return sorted(p.name for p in (REPO / BATCHES).glob("batch_*") if p.is_dir())


def adding_commit(batch: str) -> str:
    """The oldest commit that added a file of ``batch`` ("" when it is not committed)."""
    log = _git("log", "--diff-filter=A", "--reverse", "--format=%H", "--", f"{BATCHES}/{batch}")
    commits = log.stdout.split()
    return commits[0] if commits else ""


def _has_tally(commit: str) -> bool:
    return _git("cat-file", "-e", f"{commit}:{TALLY_MODULE}").returncode == 0


def _extract(commit: str, dest: Path, *paths: str) -> None:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit, *paths],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")


def tally_at(reader_commit: str, batch: str, batch_commit: str) -> str:
    """``reader_commit``'s own red-team tally of ``batch`` as ``batch_commit`` added it."""
    with tempfile.TemporaryDirectory(prefix="redteam-first-contact-") as tmp:
        tree = Path(tmp)
        _extract(reader_commit, tree)
        for other in (tree / BATCHES).glob("batch_*"):
            shutil.rmtree(other)
        _extract(batch_commit, tree, f"{BATCHES}/{batch}")
        env = {**os.environ, "PYTHONPATH": str(tree)}
        proc = subprocess.run(
            [sys.executable, "-m", "tests.judges.redteam"],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    if proc.stdout.strip():
        return proc.stdout
    tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
    return f"the tally failed (exit {proc.returncode}): {tail[0]}"


def first_contact(batch: str) -> FirstContact:
    """The first-contact tally of one batch (or the closest one git can give)."""
    added = adding_commit(batch)
    if not added:
        return FirstContact(batch, "", "", False, "")
    parent = f"{added}^"
    if _git("rev-parse", "--verify", "--quiet", parent).returncode == 0 and _has_tally(parent):
        return FirstContact(
            batch, _short(added), _short(parent), True, tally_at(parent, batch, added)
        )
    return FirstContact(batch, _short(added), _short(added), False, tally_at(added, batch, added))


def main() -> int:
    """Print every batch's first-contact tally; 1 when git history is not available."""
    if _git("rev-parse", "--is-shallow-repository").stdout.strip() != "false":
        print("redteam --first-contact needs the full git history (git fetch --unshallow)")
        return 1
    for batch in batch_names():
        print(first_contact(batch).describe())
    return 0
