"""What a judge cache file holds, read from outside the process writing it."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def cached_rows(path: Path) -> int:
    """How many completions the judge cache at ``path`` holds (0 before it exists or has a table).

    A judging child may be writing it: the read waits up to five seconds for its lock.
    """
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
