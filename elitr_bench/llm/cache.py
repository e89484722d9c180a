"""Persistent cache of judge completions.

Paid API calls are the expensive part of judging, so every completion is written to the
cache *before* it is used: a killed run resumes and pays for nothing twice, and two
processes judging overlapping items share results (SQLite in WAL mode). Only successful
completions are stored; errors are never cached, so a transient fault cannot freeze a
wrong result. Keys and rows hold no credentials: the key is built from the backend kind,
model, full prompt and sampling parameters only, plus the endpoint (normalised, without
user info or query) when it is not the default OpenAI API.

A cache file that stops taking writes (a full disk, a read-only file) never costs a paid
reply: the reply is kept in memory for the rest of the run and one warning names the file
and the fix. A damaged file is found when it is opened (``PRAGMA quick_check``, once per
process and file; the lm-eval start-up check opens it before the model loads) and
explained in one line that names the file and the way on, instead of failing every lookup
after hours of generation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from elitr_bench.llm.errors import JudgeCacheError, JudgeConfigError

CACHE_SCHEMA_VERSION = 1

log = logging.getLogger(__name__)

#: Seconds a "being sent" mark holds before another process may send the same request.
PENDING_TTL_S = 300.0

#: Cache files whose pages passed ``PRAGMA quick_check`` in this process.
_CHECKED: set[Path] = set()
_CHECKED_LOCK = threading.Lock()


def damaged_cache_fix(path: Path) -> str:
    """The way on from a damaged cache file, as one clause (never a command that fails alike)."""
    aside = f"{path}.damaged"
    return (
        f"move it aside (mv {path} {aside}) and re-run, which starts a new cache and pays "
        "again only for what the damaged pages held, or run without a cache with cache=off "
        "in the judge spec"
    )


@dataclass(frozen=True)
class Completion:
    """One judge model output with its token usage.

    Attributes:
        text: Generated text.
        prompt_tokens: Prompt tokens billed (0 if unknown).
        completion_tokens: Completion tokens billed (0 if unknown).
        cached: True when served from the cache (nothing paid in this run).
        finish_reason: Why generation stopped, as the backend said it: ``"stop"``,
            ``"length"`` (the token limit cut the reply off), another server value, or
            None when unknown (a row cached before this field existed). A reply cut off by
            the limit is never read as a score: see :mod:`elitr_bench.judges.reading`.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        """Whether the token limit cut the reply off."""
        return self.finish_reason == "length"


def cache_key(backend: str, model: str, prompt: str, params: Mapping[str, Any]) -> str:
    """Stable sha256 key of everything that determines a completion.

    ``params`` holds the sampling parameters (temperature, top_p, max_tokens, the seed
    actually sent, and the draw index so that k samples are k distinct entries), and the
    endpoint of a server other than the default OpenAI API (so a local server answering
    as ``gpt-4o`` never shares entries with the real one).
    """
    payload = json.dumps(
        {
            "v": CACHE_SCHEMA_VERSION,
            "backend": backend,
            "model": model,
            "prompt": prompt,
            "params": dict(params),
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeCache(Protocol):
    """Storage for completions, keyed by :func:`cache_key`."""

    def get(self, key: str) -> Completion | None:
        """Return the stored completion, or None."""
        ...

    def put(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        """Store a completion durably before the caller uses it."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


class NullCache:
    """A cache that stores nothing (``cache=off``)."""

    def get(self, key: str) -> Completion | None:
        """Never hits."""
        return None

    def put(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        """Drop the completion."""

    def close(self) -> None:
        """Nothing to release."""


class MemoryCache:
    """In-process cache (``cache=memory``), e.g. for tests and one-off scripts."""

    def __init__(self) -> None:
        self._rows: dict[str, Completion] = {}

    def get(self, key: str) -> Completion | None:
        """Return the stored completion, or None."""
        hit = self._rows.get(key)
        return None if hit is None else replace(hit, cached=True)

    def put(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        """Store a completion."""
        self._rows[key] = completion

    def close(self) -> None:
        """Nothing to release."""

    def __len__(self) -> int:
        return len(self._rows)


class SQLiteCache:
    """SQLite (WAL) cache shared safely by threads and processes.

    Each ``put`` commits before returning (``synchronous=NORMAL`` in WAL mode survives a
    killed process; only an OS crash could lose the last commits).
    """

    def __init__(self, path: str | os.PathLike[str], busy_timeout_s: float = 60.0) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                str(self.path),
                timeout=busy_timeout_s,
                check_same_thread=False,
                isolation_level=None,
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS completions ("
                " key TEXT PRIMARY KEY, backend TEXT, model TEXT, params TEXT,"
                " text TEXT NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER,"
                " created REAL, finish_reason TEXT)"
            )
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(completions)")}
            if "finish_reason" not in columns:  # a cache written before finish reasons
                self._conn.execute("ALTER TABLE completions ADD COLUMN finish_reason TEXT")
            # Requests some process is sending now (see claim()); rows live for seconds.
            # A file that takes no writes still serves lookups, without these marks.
            try:
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS pending ("
                    " key TEXT PRIMARY KEY, host TEXT, pid INTEGER, since REAL)"
                )
                self._marks = True
            except sqlite3.OperationalError:
                self._marks = False
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):  # permissions, locks, no such dir
                raise JudgeConfigError(
                    f"judge cache {self.path}: cannot open ({exc}); set ELITR_JUDGE_CACHE or "
                    "cache= to a writable path, or cache=off"
                ) from None
            raise JudgeCacheError(
                f"judge cache {self.path} is not a readable cache ({exc}); "
                f"{damaged_cache_fix(self.path)}"
            ) from None
        except OSError as exc:
            raise JudgeConfigError(
                f"judge cache {self.path}: cannot open ({exc}); set ELITR_JUDGE_CACHE or cache= "
                "to a writable path, or cache=off"
            ) from None
        self._lock = threading.Lock()
        #: Paid replies the file refused to store: served from here for the rest of the run.
        self._unsaved: dict[str, tuple[Completion, Mapping[str, Any]]] = {}
        self._check_pages()

    def _check_pages(self) -> None:
        """Read every page once per process (``quick_check``): a damaged file fails here.

        Without it a damaged page fails lookups only once judging starts, after the model
        under test has generated for hours.
        """
        resolved = self.path.resolve()
        with _CHECKED_LOCK:
            if resolved in _CHECKED:
                return
        try:
            rows = self._conn.execute("PRAGMA quick_check").fetchall()
        except sqlite3.DatabaseError as exc:
            problem = str(exc)
        else:
            problem = "" if rows == [("ok",)] else "; ".join(str(r[0]) for r in rows[:2])
        if problem:
            self._conn.close()
            raise JudgeCacheError(
                f"judge cache {self.path} is damaged ({problem}); {damaged_cache_fix(self.path)}"
            )
        with _CHECKED_LOCK:
            _CHECKED.add(resolved)

    def get(self, key: str) -> Completion | None:
        """Return the stored completion (or one the file refused to store), or None.

        Raises:
            JudgeCacheError: The file cannot be read (damaged since it was opened); one
                line naming the file and the way on.
        """
        with self._lock:
            unsaved = self._unsaved.get(key)
            if unsaved is not None:
                return replace(unsaved[0], cached=True)
            try:
                row = self._conn.execute(
                    "SELECT text, prompt_tokens, completion_tokens, finish_reason"
                    " FROM completions WHERE key = ?",
                    (key,),
                ).fetchone()
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "malformed" not in str(exc):
                    raise JudgeCacheError(
                        f"judge cache {self.path}: cannot read ({exc}); nothing was sent for "
                        "this request. Re-run when the file is free, or run with cache=off"
                    ) from None
                raise JudgeCacheError(
                    f"judge cache {self.path} is damaged ({exc}); {damaged_cache_fix(self.path)}"
                ) from None
        if row is None:
            return None
        return Completion(row[0], int(row[1] or 0), int(row[2] or 0), True, row[3])

    @property
    def unsaved(self) -> int:
        """Paid replies this run keeps in memory because the file would not store them."""
        with self._lock:
            return len(self._unsaved)

    def put(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        """Insert (or keep the first of racing writers) and commit at once.

        A file that refuses the write (disk full, read-only, damaged) costs nothing paid:
        the reply is kept in memory for the rest of this run and one warning names the
        file and the fix.
        """
        with self._lock:
            try:
                self._insert(key, completion, meta)
            except sqlite3.Error as exc:
                first = not self._unsaved
                self._unsaved[key] = (completion, dict(meta))
                if first:
                    log.warning(
                        "judge cache %s: cannot store replies (%s); this run keeps them in "
                        "memory and finishes, but a later run pays for them again unless the "
                        "file can be written (free disk space, make it writable) or cache= "
                        "names another file",
                        self.path,
                        " ".join(str(exc).split()),
                    )

    def _insert(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        """One committed row (autocommit); the caller holds the lock."""
        self._conn.execute(
            "INSERT OR IGNORE INTO completions (key, backend, model, params, text,"
            " prompt_tokens, completion_tokens, created, finish_reason)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                str(meta.get("backend", "")),
                str(meta.get("model", "")),
                json.dumps(meta.get("params", {}), sort_keys=True),
                completion.text,
                completion.prompt_tokens,
                completion.completion_tokens,
                time.time(),
                completion.finish_reason,
            ),
        )

    def claim(self, key: str, ttl_s: float = PENDING_TTL_S) -> bool:
        """Mark a request as being sent by this process; False while another one sends it.

        Two processes sharing the cache then pay once for an identical request: the second
        waits for the first one's row instead of sending. A mark whose process is gone (same
        host, PID not running) or older than ``ttl_s`` is taken over, so a killed run never
        blocks the next. Any database trouble answers True: sending twice is the old
        behaviour, never a lost reply.
        """
        if not self._marks:
            return True
        me = (socket.gethostname(), os.getpid())
        now = time.time()
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    row = self._conn.execute(
                        "SELECT host, pid, since FROM pending WHERE key = ?", (key,)
                    ).fetchone()
                    if row is not None and (row[0], row[1]) != me and _alive(row, now, ttl_s):
                        return False
                    self._conn.execute(
                        "INSERT OR REPLACE INTO pending (key, host, pid, since)"
                        " VALUES (?, ?, ?, ?)",
                        (key, me[0], me[1], now),
                    )
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.Error:
                return True
        return True

    def release(self, key: str) -> None:
        """Drop this process's mark of a request (sent and stored, or given up)."""
        if not self._marks:
            return
        with self._lock, contextlib.suppress(sqlite3.Error):  # a mark left expires by itself
            self._conn.execute(
                "DELETE FROM pending WHERE key = ? AND host = ? AND pid = ?",
                (key, socket.gethostname(), os.getpid()),
            )

    def count(self) -> int:
        """Number of stored completions."""
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0])

    def close(self) -> None:
        """Close the connection, storing first what the file refused before, if it now can.

        Space freed (or permissions fixed) while the run went on saves those replies for
        later runs; otherwise they are lost with this process, as the warning said.
        """
        with self._lock:
            for key, (completion, meta) in list(self._unsaved.items()):
                try:
                    self._insert(key, completion, meta)
                except sqlite3.Error:
                    break
                del self._unsaved[key]
            self._conn.close()


def _alive(row: tuple[Any, ...], now: float, ttl_s: float) -> bool:
    """Whether a pending mark still stands: recent, and its process running (same host)."""
    host, pid, since = row
    if now - float(since or 0) > ttl_s:
        return False
    if host != socket.gethostname():
        return True  # another machine: trust the time-out alone
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError):
        return True  # running under another user, or unreadable: assume it is there
    return True


def default_cache_path() -> Path:
    """``$ELITR_JUDGE_CACHE`` or ``<user cache dir>/lm-eval-elitr/judge-cache.sqlite``."""
    env = os.environ.get("ELITR_JUDGE_CACHE", "").strip()
    if env and env.lower() not in ("off", "none", "memory"):
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("lm-eval-elitr")) / "judge-cache.sqlite"


def open_cache(setting: str = "") -> JudgeCache:
    """Open the cache named by a judge's ``cache=`` option (or the env/default location).

    ``off``/``none`` disables caching, ``memory`` keeps it in-process, anything else is a
    SQLite file path.
    """
    value = setting.strip() or os.environ.get("ELITR_JUDGE_CACHE", "").strip()
    if value.lower() in ("off", "none"):
        return NullCache()
    if value.lower() == "memory":
        return MemoryCache()
    return SQLiteCache(Path(value).expanduser() if value else default_cache_path())


def check_cache(setting: str = "") -> None:
    """Open the cache a judge will use and read its pages, so a damaged file fails now.

    Meant for start-up checks (before the model under test loads); costs a read of the
    file once per process. ``off`` and ``memory`` have nothing to check.

    Raises:
        JudgeCacheError: The file is damaged or not a cache (one line: file and fix).
        JudgeConfigError: The file cannot be opened at all.
    """
    cache = open_cache(setting)
    cache.close()
