"""Writing an output folder safely: one writer at a time, whole files or none.

Two commands writing one folder each read its state once and wrote it back from memory,
so the last writer silently dropped the other's systems; a full disk or a kill left a
file cut in the middle, or fixed temp names (``arena.json.tmp``) that the next run
tripped over. Two tools fix that:

* :class:`FolderLock`: an advisory ``flock`` on ``.elitr-bench.lock`` in the folder, whose
  text names the holder (PID, host, command, start). The kernel drops the lock when its
  process dies, even by ``kill -9``, so a stale lock is never waited for: the next run
  takes it over and says whose it was. A waiter may hold an open descriptor of the file,
  so it is deleted only by the holder, while holding the lock (a run that created the
  folder and wrote nothing removes it); every run re-checks after ``flock`` that the file
  it locked is still the one at the path (same inode) and otherwise starts over, so a
  waiter never ends up holding a lock on a deleted file that nobody else sees.
* :func:`write_atomic`: the new content goes to a uniquely named temp file in the same
  folder (``.NAME.<random>.tmp``), is flushed to disk, and replaces ``NAME`` in one
  ``rename``; on any failure the temp file is removed and ``NAME`` is as it was.
  :func:`leftover_temp_files` finds the temp files of a writer that was killed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shlex
import socket
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import TextIO

from elitr_bench.data.errors import ElitrBenchError

LOCK_FILE = ".elitr-bench.lock"


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


#: Files are created as ``open()`` would (``mkstemp`` alone makes them private).
_FILE_MODE = 0o666 & ~_umask()
#: Suffix of our temp files (their names start with a dot and the target's name).
TEMP_SUFFIX = ".tmp"


class FolderBusyError(ElitrBenchError):
    """Another live run holds the folder's lock (the message names it)."""


class FolderWriteError(ElitrBenchError):
    """A file of the folder could not be written (full disk, permissions); it is unchanged."""


def _holder_text(command: str) -> str:
    return json.dumps(
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": command,
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        }
    )


def describe_holder(text: str) -> str:
    """``PID 123 on host, since ..., running `cmd``` from a lock file's text."""
    try:
        info = json.loads(text)
        return (
            f"PID {info['pid']} on {info['host']}, since {info['started']}, "
            f"running `{info['command']}`"
        )
    except (ValueError, KeyError, TypeError):
        return "another process (its lock file names no holder)"


class FolderLock:
    """One writer per output folder (``with FolderLock(out, wait=False): ...``).

    Args:
        folder: The output folder (created if missing).
        command: What the holder runs, named to a second run (default: this command line).
        wait: Wait for the holder to finish instead of refusing at once.
        note: Where lines about waiting and stale locks go (default: stderr).
    """

    def __init__(
        self,
        folder: Path,
        command: str | None = None,
        *,
        wait: bool = False,
        note: TextIO | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_FILE
        self.command = command or shlex.join(
            [Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]]
        )
        self.wait = wait
        self._note = note
        self._fd: int | None = None
        self._created = False

    def _say(self, line: str) -> None:
        stream = self._note if self._note is not None else sys.stderr
        print(line, file=stream)

    def _open(self) -> int:
        for _ in range(100):  # the folder may vanish between mkdir and open (a holder's rmdir)
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise FolderWriteError(
                    f"{self.folder}: cannot create the lock file {LOCK_FILE} "
                    f"({exc.strerror or exc}); pick a writable --out folder"
                ) from None
        raise FolderWriteError(
            f"{self.folder}: its lock file {LOCK_FILE} keeps vanishing (another program is "
            "deleting it?); pick another --out folder"
        )

    def _lock(self, fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            holder = describe_holder(_read(fd))
            if not self.wait:
                raise FolderBusyError(
                    f"{self.folder} is in use by another run ({holder}); wait for it to "
                    "finish, add --wait to start when it does, or pass another --out folder"
                ) from None
            self._say(f"elitr-bench: waiting for {self.folder}: in use by {holder}")
            fcntl.flock(fd, fcntl.LOCK_EX)

    def acquire(self) -> None:
        """Take the lock, or wait for it (``wait``), or refuse in one line.

        Raises:
            FolderBusyError: Another live process holds it and ``wait`` is off.
            FolderWriteError: The folder or its lock file cannot be created.
        """
        if self._fd is not None:  # held already (a second flock here would wait on itself)
            return
        self._created = not self.folder.exists()
        while True:
            fd = self._open()
            try:
                self._lock(fd)
            except BaseException:
                os.close(fd)
                raise
            if _same_file(fd, self.path):
                break
            # The holder removed the file (and its empty folder) while we waited for it:
            # our lock is on a file nobody else sees. Start over on the path's file.
            os.close(fd)
            self._created = self._created or not self.folder.exists()
        previous = _read(fd)
        if previous.strip():  # the last holder died holding it (its text was not cleared)
            self._say(
                f"elitr-bench: note: {self.folder}: took over the lock of a run that is no "
                f"longer running ({describe_holder(previous)}); resuming from what it wrote"
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, _holder_text(self.command).encode("utf-8"), 0)
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        """Clear the holder's text and unlock; a folder this run created and left empty goes.

        The empty folder and its lock file are removed while the lock is still held, so a
        waiter wakes up holding a lock on a deleted file, sees that (inode check in
        :meth:`acquire`) and starts over on a new file, which every later run shares.
        """
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            if self._created:  # a run that wrote nothing leaves no folder behind
                with contextlib.suppress(OSError):
                    if [p.name for p in self.folder.iterdir()] == [LOCK_FILE]:
                        self.path.unlink()
                        self.folder.rmdir()
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(
        self,
        etype: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _same_file(fd: int, path: Path) -> bool:
    """Whether the open ``fd`` is still the file at ``path`` (not deleted or replaced)."""
    try:
        here = os.stat(path)
    except OSError:
        return False
    mine = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)


def _read(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode("utf-8", errors="replace")
    except OSError:
        return ""


def stage_text(path: Path, text: str | bytes) -> Path:
    """Write ``text`` whole to a new temp file beside ``path``; returns the temp file.

    The caller renames it over ``path`` (``os.replace``), alone or with others, so that a
    set of files appears together. ``str`` is written as UTF-8 exactly.

    Raises:
        FolderWriteError: The disk is full or the folder not writable; one line naming the
            file. No temp file is left behind.
    """
    path = Path(path)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise FolderWriteError(
            f"{path}: cannot write ({exc.strerror or exc}); the file is unchanged. Free disk "
            "space (or fix permissions) and re-run the same command"
        ) from None
    return Path(tmp)


def write_atomic(path: Path, text: str | bytes) -> None:
    """Replace ``path`` by ``text`` in one step: the old file or the new one, never a cut one.

    Raises:
        FolderWriteError: The disk is full or the folder not writable; one line naming the
            file, and ``path`` is unchanged (no temp file is left behind).
    """
    temp = stage_text(path, text)
    try:
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise FolderWriteError(
            f"{path}: cannot write ({exc.strerror or exc}); the file is unchanged. Fix the "
            "folder's permissions and re-run the same command"
        ) from None


def leftover_temp_files(folder: Path) -> list[Path]:
    """Temp files of :func:`write_atomic` that a killed writer left in ``folder``."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f".*{TEMP_SUFFIX}") if p.is_file())


def remove_leftovers(folder: Path) -> list[Path]:
    """Delete leftover temp files (only call while holding the folder's lock).

    Returns:
        The files deleted (a list, so they are deleted whether or not it is read).
    """
    removed = []
    for path in leftover_temp_files(folder):
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed
