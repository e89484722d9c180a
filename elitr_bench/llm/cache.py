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

Only our own file is ever written: it carries a marker (SQLite's ``application_id``,
:data:`APPLICATION_ID`, set when we create the file; a cache of ours written before the
marker is recognised by its tables and columns and stamped). Anything else named as the
cache (another tool's SQLite file, which may well have a ``completions`` table, a JSON
file, a mistyped path) is refused in one line before a byte of it changes
(:func:`inspect_cache_file`).

Upkeep: ``elitr-bench cache info|prune|clear`` reads and trims the file
(:meth:`SQLiteCache.stats`, :meth:`SQLiteCache.prune`, :meth:`SQLiteCache.clear`), and
``ELITR_JUDGE_CACHE_MAX_MB`` caps its size: past it the least recently used entries go
(each hit's time is recorded, in batches with the next write). The judge client calls
every method here from a worker thread, never the event loop's (SQLite waits up to its
busy time-out for another process's write).
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
from typing import Any, Literal, Protocol

from elitr_bench.llm.env import env_number
from elitr_bench.llm.errors import JudgeCacheError, JudgeConfigError

CACHE_SCHEMA_VERSION = 1

#: SQLite ``application_id`` of our cache files (``ELJC``), written when we create one.
APPLICATION_ID = 0x454C4A43

#: How every SQLite file begins (its header is 100 bytes; ``application_id`` at 68).
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: The columns of ``completions`` since the first release, those added since, and
#: ``pending``'s: a file without the marker is ours only if its tables are exactly these.
_BASE_COLUMNS = frozenset(
    {"key", "backend", "model", "params", "text", "prompt_tokens", "completion_tokens", "created"}
)
_LATER_COLUMNS = frozenset({"finish_reason", "used"})
_PENDING_COLUMNS = frozenset({"key", "host", "pid", "since"})

log = logging.getLogger(__name__)

#: Seconds a "being sent" mark holds before another process may send the same request.
PENDING_TTL_S = 300.0

#: Environment variable capping the cache file's size in MB (least recently used go first).
ENV_MAX_MB = "ELITR_JUDGE_CACHE_MAX_MB"

#: Writes between two size checks when a size limit is set (a check reads two pragmas).
_SIZE_CHECK_EVERY = 32

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
class CacheFile:
    """What is at a cache path, found without writing to it (:func:`inspect_cache_file`).

    Attributes:
        kind: ``missing``; ``folder``; ``empty`` (no bytes, or an SQLite file with no
            table and no marker: a new cache may be made in it); ``ours`` (the marker);
            ``unmarked`` (a cache of ours written before the marker: our tables and
            columns, nothing else); ``foreign`` (any other file: never written);
            ``damaged`` (an SQLite file whose tables cannot be read).
        detail: For ``foreign`` and ``damaged``, what was found, for the one-line message.
    """

    kind: Literal["missing", "folder", "empty", "ours", "unmarked", "foreign", "damaged"]
    detail: str = ""


def inspect_cache_file(path: Path) -> CacheFile:
    """Whether ``path`` is our cache, read-only: nothing in or beside the file is written.

    The header is read as bytes: our marker makes the file ours; another ``application_id``
    or a ``user_version`` (which our files never set) makes it another program's. Only
    an SQLite file with neither is opened, read-only and as immutable, so that SQLite
    writes nothing, not even a ``-shm`` file beside it (a plain read-only open makes one
    when a ``-wal`` file lies there). Immutable reads the main file alone: a file whose
    tables are still only in its ``-wal`` (another program writing it now) is refused as
    not ours, since we mark a file in its main file before making a table.
    """
    if not path.exists():
        return CacheFile("missing")
    if path.is_dir():
        return CacheFile("folder")
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        return CacheFile("damaged", f"cannot read it: {exc.strerror or exc}")
    if not header:
        return CacheFile("empty")
    if not header.startswith(_SQLITE_MAGIC):
        return CacheFile("foreign", "not an SQLite file")
    user_version = int.from_bytes(header[60:64], "big")
    marker = int.from_bytes(header[68:72], "big")
    found = _by_marks(marker, user_version)
    if found is not None:
        return found
    uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            marker = conn.execute("PRAGMA application_id").fetchone()[0]
            user_version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = {
                name: frozenset(row[1] for row in conn.execute(f"PRAGMA table_info('{name}')"))
                for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                    " AND name NOT LIKE 'sqlite_%'"
                )
            }
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return CacheFile("damaged", str(exc))
    found = _by_marks(marker, user_version)
    if found is not None:
        return found
    if not tables:
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            return CacheFile(
                "foreign", f"an SQLite file another program is writing (its {wal.name} holds "
                "tables the file does not have yet)"
            )  # fmt: skip
        return CacheFile("empty")
    completions = tables.get("completions", frozenset())
    if (
        set(tables) <= {"completions", "pending"}
        and _BASE_COLUMNS <= completions <= _BASE_COLUMNS | _LATER_COLUMNS
        and tables.get("pending", _PENDING_COLUMNS) == _PENDING_COLUMNS
    ):
        return CacheFile("unmarked")
    return CacheFile(
        "foreign", f"an SQLite file of another program, with tables {', '.join(sorted(tables))}"
    )


def _by_marks(marker: int, user_version: int) -> CacheFile | None:
    """What an SQLite file's ``application_id`` and ``user_version`` say (None: nothing)."""
    if marker == APPLICATION_ID:
        return CacheFile("ours")
    if marker:
        return CacheFile(
            "foreign", f"an SQLite file of another program, application_id {marker:#x}"
        )
    if user_version:
        return CacheFile(
            "foreign", f"an SQLite file of another program, user_version {user_version}"
        )
    return None


def not_our_cache(path: Path, found: CacheFile, setting: str) -> str:
    """The one line refusing a file that is not a judge cache (it stays untouched).

    Args:
        path: The file.
        found: What :func:`inspect_cache_file` found there.
        setting: Where the path came from (``cache=``, ``--cache``, ...), for the fix.
    """
    return (
        f"judge cache {path}: not a judge cache of lm-eval-elitr ({found.detail}); left "
        f"untouched: check the path in {setting}, or name a new file for the cache"
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
        reasoning_tokens: Completion tokens a reasoning model spent on hidden reasoning, as
            its usage says (``completion_tokens_details.reasoning_tokens``); 0 when unsaid
            or served from the cache (not stored: :attr:`reasoned_out` reads the rest).
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    finish_reason: str | None = None
    reasoning_tokens: int = 0

    @property
    def truncated(self) -> bool:
        """Whether the token limit cut the reply off."""
        return self.finish_reason == "length"

    @property
    def reasoned_out(self) -> bool:
        """Whether the limit cut the reply off before any text, spent on hidden reasoning.

        The usage says so: reasoning tokens counted, or (a cached row, which keeps no
        reasoning count) completion tokens paid with no text to show for them.
        """
        spent = self.reasoning_tokens > 0 or self.completion_tokens > 0
        return self.truncated and spent and not self.text.strip()


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

    def claim(self, key: str) -> bool:
        """Mark ``key`` as being sent by this process; False while another one sends it."""
        ...

    def release(self, key: str) -> None:
        """Drop this process's mark of ``key``."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


class _Unshared:
    """The claim/release of a cache no other process reads: nothing to mark."""

    def claim(self, key: str) -> bool:
        """Always this process's to send."""
        return True

    def release(self, key: str) -> None:
        """No mark was made."""


class NullCache(_Unshared):
    """A cache that stores nothing (``cache=off``)."""

    def get(self, key: str) -> Completion | None:
        """Never hits."""
        return None

    def put(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        """Drop the completion."""

    def close(self) -> None:
        """Nothing to release."""


class MemoryCache(_Unshared):
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


@dataclass(frozen=True)
class ModelEntries:
    """The entries of one judge model in a cache file (``elitr-bench cache info``).

    Attributes:
        backend: The backend kind (``openai``, ``hf``).
        model: The judge model.
        entries: How many completions are stored.
        oldest: When the oldest was written (Unix time).
        newest: When the newest was written (Unix time).
    """

    backend: str
    model: str
    entries: int
    oldest: float
    newest: float


@dataclass(frozen=True)
class CacheStats:
    """What a cache file holds.

    Attributes:
        path: The file.
        entries: Stored completions.
        file_bytes: The file's size on disk, its write-ahead log included.
        data_bytes: Bytes its pages in use take (what the size limit counts).
        models: Entries per judge model, most entries first.
    """

    path: Path
    entries: int
    file_bytes: int
    data_bytes: int
    models: tuple[ModelEntries, ...]


def max_cache_bytes(environ: Mapping[str, str] | None = None) -> int | None:
    """The size limit set by ``ELITR_JUDGE_CACHE_MAX_MB`` (None: unlimited).

    Raises:
        JudgeConfigError: The value is not a positive number of megabytes.
    """
    what = "a positive number of megabytes (e.g. 500)"
    mb = env_number(ENV_MAX_MB, what, environ, unset="for no limit")
    return None if mb is None else int(mb * 1024 * 1024)


#: A put waiting for its group commit: key, completion, meta, set once committed (or kept).
_Queued = tuple[str, Completion, Mapping[str, Any], threading.Event]


class SQLiteCache:
    """SQLite (WAL) cache shared safely by threads and processes.

    Each ``put`` commits before returning (``synchronous=NORMAL`` in WAL mode survives a
    killed process; only an OS crash could lose the last commits).

    Args:
        path: The cache file (created if missing).
        busy_timeout_s: How long a statement waits for another process's write.
        max_bytes: Size limit of the data in bytes (None: ``ELITR_JUDGE_CACHE_MAX_MB``;
            0: no limit).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        busy_timeout_s: float = 60.0,
        max_bytes: int | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        limit = max_cache_bytes() if max_bytes is None else max_bytes
        self.max_bytes = limit or None  # 0: no limit
        found = inspect_cache_file(self.path)  # before anything could write to the file
        if found.kind == "foreign":
            raise JudgeCacheError(not_our_cache(self.path, found, "cache= or ELITR_JUDGE_CACHE"))
        if found.kind == "damaged":
            raise JudgeCacheError(
                f"judge cache {self.path} is damaged ({found.detail}); "
                f"{damaged_cache_fix(self.path)}"
            )
        self._conn, self._marks = self._open_writer(found.kind, busy_timeout_s)
        #: Guards the writer connection (puts, marks, upkeep).
        self._lock = threading.Lock()
        #: Lookups use a connection of their own: in WAL mode a reader never waits for a
        #: writer, so a put queued behind another process's write delays no lookup.
        self._reader = self._connect_reader(busy_timeout_s)
        self._rlock = threading.Lock()
        #: Guards the two dicts below.
        self._mem = threading.RLock()
        #: Paid replies the file refused to store: served from here for the rest of the run.
        self._unsaved: dict[str, tuple[Completion, Mapping[str, Any]]] = {}
        #: Keys hit since the last write -> when: their ``used`` times, written in a batch.
        self._touched: dict[str, float] = {}
        #: Puts waiting for the writer connection (committed together by the next writer).
        self._queue: list[_Queued] = []
        self._since_check = 0
        self._check_pages()
        if self.max_bytes is not None:
            with self._lock, contextlib.suppress(sqlite3.Error):
                self._evict()

    def _open_writer(self, kind: str, busy_timeout_s: float) -> tuple[sqlite3.Connection, bool]:
        """The writer connection, its schema brought up to date; whether it takes marks.

        Args:
            kind: What :func:`inspect_cache_file` found (``ours``, or a file still to mark).
            busy_timeout_s: How long a statement waits for another process's write.

        Raises:
            JudgeConfigError: The file cannot be opened (permissions, locks, no folder).
            JudgeCacheError: The file is not a readable cache.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.path),
                timeout=busy_timeout_s,
                check_same_thread=False,
                isolation_level=None,
            )
            if kind != "ours":  # a new file, or one of ours from before the marker
                with contextlib.suppress(sqlite3.OperationalError):  # a read-only file
                    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS completions ("
                " key TEXT PRIMARY KEY, backend TEXT, model TEXT, params TEXT,"
                " text TEXT NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER,"
                " created REAL, finish_reason TEXT)"
            )
            columns = {row[1] for row in conn.execute("PRAGMA table_info(completions)")}
            if "finish_reason" not in columns:  # a cache written before finish reasons
                conn.execute("ALTER TABLE completions ADD COLUMN finish_reason TEXT")
            if "used" not in columns:  # a cache written before the size limit: last hit
                conn.execute("ALTER TABLE completions ADD COLUMN used REAL")
            # Requests some process is sending now (see claim()); rows live for seconds.
            # A file that takes no writes still serves lookups, without these marks.
            try:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS pending ("
                    " key TEXT PRIMARY KEY, host TEXT, pid INTEGER, since REAL)"
                )
                marks = True
            except sqlite3.OperationalError:
                marks = False
            return conn, marks
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

    def _connect_reader(self, busy_timeout_s: float) -> sqlite3.Connection:
        try:
            reader = sqlite3.connect(
                str(self.path),
                timeout=busy_timeout_s,
                check_same_thread=False,
                isolation_level=None,
            )
            reader.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        except sqlite3.Error as exc:
            self._conn.close()
            raise JudgeConfigError(
                f"judge cache {self.path}: cannot open ({exc}); set ELITR_JUDGE_CACHE or "
                "cache= to a writable path, or cache=off"
            ) from None
        return reader

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
            self._reader.close()
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
        with self._mem:
            unsaved = self._unsaved.get(key)
        if unsaved is not None:
            return replace(unsaved[0], cached=True)
        with self._rlock:
            try:
                row = self._reader.execute(
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
        with self._mem:
            self._touched[key] = time.time()
        return Completion(row[0], int(row[1] or 0), int(row[2] or 0), True, row[3])

    @property
    def unsaved(self) -> int:
        """Paid replies this run keeps in memory because the file would not store them."""
        with self._mem:
            return len(self._unsaved)

    def put(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        """Insert (or keep the first of racing writers) and commit before returning.

        Puts of several threads arriving while one writes are committed together by the
        next one to get the writer connection (one transaction: a group commit), so a
        write lock held by another process costs one wait for all of them, not one each.

        A file that refuses the write (disk full, read-only, damaged) costs nothing paid:
        the reply is kept in memory for the rest of this run and one warning names the
        file and the fix.
        """
        done = threading.Event()
        with self._mem:
            self._queue.append((key, completion, dict(meta), done))
        with self._lock:
            if done.is_set():  # another thread's group commit took it
                return
            with self._mem:
                batch, self._queue = self._queue, []
            try:
                self._write(batch)
            finally:
                for *_, flag in batch:
                    flag.set()

    def _write(self, batch: list[_Queued]) -> None:
        """Commit ``batch`` in one transaction (the caller holds the lock)."""
        try:
            if len(batch) == 1:
                self._insert(*batch[0][:3])  # autocommit
            else:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    for key, completion, meta, _ in batch:
                        self._insert(key, completion, meta)
                    self._conn.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:
            with self._mem:
                first = not self._unsaved
                for key, completion, meta, _ in batch:
                    self._unsaved[key] = (completion, meta)
            if first:
                log.warning(
                    "judge cache %s: cannot store replies (%s); this run keeps them in "
                    "memory and finishes, but a later run pays for them again unless the "
                    "file can be written (free disk space, make it writable) or cache= "
                    "names another file",
                    self.path,
                    " ".join(str(exc).split()),
                )
            return
        self._since_check += len(batch)
        with contextlib.suppress(sqlite3.Error):  # upkeep: never costs the stored reply
            self._flush_touched()
            if self.max_bytes is not None and self._since_check >= _SIZE_CHECK_EVERY:
                self._since_check = 0
                self._evict()

    def _flush_touched(self) -> None:
        """Write the hits' times (the caller holds the lock); lost hits only age an entry."""
        with self._mem:
            touched, self._touched = self._touched, {}
        if not touched:
            return
        self._conn.executemany(
            "UPDATE completions SET used = ? WHERE key = ?",
            [(when, key) for key, when in touched.items()],
        )

    def _data_bytes(self) -> int:
        pages = self._conn.execute("PRAGMA page_count").fetchone()[0]
        free = self._conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = self._conn.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * size)

    def _evict(self) -> int:
        """Delete least recently used entries until the data fits ``max_bytes`` (lock held).

        Deletes in rounds sized by the mean entry, down to 90% of the limit so that the
        next writes do not evict again at once. Returns how many entries went.
        """
        assert self.max_bytes is not None
        removed = 0
        for _ in range(20):
            used = self._data_bytes()
            if used <= self.max_bytes:
                break
            count = int(self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0])
            if count == 0:
                break
            mean = max(1, used // count)
            excess = used - int(self.max_bytes * 0.9)
            n = max(1, min(count, -(-excess // mean)))
            self._conn.execute(
                "DELETE FROM completions WHERE key IN (SELECT key FROM completions"
                " ORDER BY COALESCE(used, created) LIMIT ?)",
                (n,),
            )
            removed += n
        if removed:
            log.info("judge cache %s: evicted %d least recently used entries", self.path, removed)
        return removed

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

    def stats(self) -> CacheStats:
        """Entries, size, and the oldest and newest entry of each judge model."""
        with self._lock:
            self._flush_touched()
            rows = self._conn.execute(
                "SELECT backend, model, COUNT(*), MIN(created), MAX(created) FROM completions"
                " GROUP BY backend, model ORDER BY COUNT(*) DESC, model"
            ).fetchall()
            data = self._data_bytes()
        on_disk = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        models = tuple(
            ModelEntries(str(b or ""), str(m or ""), int(n), float(lo or 0), float(hi or 0))
            for b, m, n, lo, hi in rows
        )
        return CacheStats(self.path, sum(m.entries for m in models), on_disk, data, models)

    def prune(self, older_than_s: float | None = None, model: str | None = None) -> int:
        """Delete entries written more than ``older_than_s`` ago and/or of ``model``.

        Returns:
            How many entries were deleted.
        """
        where: list[str] = []
        args: list[Any] = []
        if older_than_s is not None:
            where.append("created < ?")
            args.append(time.time() - older_than_s)
        if model is not None:
            where.append("model = ?")
            args.append(model)
        if not where:
            raise ValueError("prune needs an age or a model")
        with self._lock:
            self._flush_touched()
            cursor = self._conn.execute(
                f"DELETE FROM completions WHERE {' AND '.join(where)}", args
            )
            return int(cursor.rowcount)

    def clear(self) -> int:
        """Delete every entry; returns how many there were."""
        with self._lock, self._mem:
            self._touched.clear()
            return int(self._conn.execute("DELETE FROM completions").rowcount)

    def compact(self) -> bool:
        """Give the space of deleted entries back to the disk (``VACUUM``).

        Returns:
            False when another process is using the file (the space is reused by later
            entries instead).
        """
        with self._lock:
            try:
                self._conn.execute("VACUUM")
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError:
                return False
        return True

    def close(self) -> None:
        """Close the connection, storing first what the file refused before, if it now can.

        Space freed (or permissions fixed) while the run went on saves those replies for
        later runs; otherwise they are lost with this process, as the warning said.
        """
        with self._lock, self._mem:
            for key, (completion, meta) in list(self._unsaved.items()):
                try:
                    self._insert(key, completion, meta)
                except sqlite3.Error:
                    break
                del self._unsaved[key]
            with contextlib.suppress(sqlite3.Error):
                self._flush_touched()
            self._conn.close()
        with self._rlock:
            self._reader.close()


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
    where = cache_location(setting)
    if where == "off":
        return NullCache()
    if where == "memory":
        return MemoryCache()
    return SQLiteCache(where)


def cache_location(setting: str = "") -> Path | Literal["off", "memory"]:
    """Where ``cache=`` (or ``ELITR_JUDGE_CACHE``, else the default file) puts replies."""
    value = setting.strip() or os.environ.get("ELITR_JUDGE_CACHE", "").strip()
    if value.lower() in ("off", "none"):
        return "off"
    if value.lower() == "memory":
        return "memory"
    return Path(value).expanduser() if value else default_cache_path()
