"""Persistent cache of judge completions.

Paid API calls are the expensive part of judging, so every completion is written to the
cache *before* it is used: a killed run resumes and pays for nothing twice, and two
processes judging overlapping items share results (SQLite in WAL mode). Only successful
completions are stored; errors are never cached, so a transient fault cannot freeze a
wrong result. Keys and rows hold no credentials: the key is built from the backend kind,
model, full prompt and sampling parameters only, plus the endpoint (normalised, without
user info or query) when it is not the default OpenAI API.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from elitr_bench.llm.errors import JudgeConfigError

CACHE_SCHEMA_VERSION = 1


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
        except (sqlite3.Error, OSError) as exc:
            raise JudgeConfigError(
                f"judge cache {self.path}: cannot open ({exc}); set ELITR_JUDGE_CACHE or cache= "
                "to a "
                "writable path, or cache=off"
            ) from None
        self._lock = threading.Lock()

    def get(self, key: str) -> Completion | None:
        """Return the stored completion, or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT text, prompt_tokens, completion_tokens, finish_reason FROM completions"
                " WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return Completion(row[0], int(row[1] or 0), int(row[2] or 0), True, row[3])

    def put(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        """Insert (or keep the first of racing writers) and commit at once."""
        with self._lock:
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

    def count(self) -> int:
        """Number of stored completions."""
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0])

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


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
