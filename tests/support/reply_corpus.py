"""The corpora of judge replies in ``tests/judges/data``: one parse test per entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().parents[1] / "judges" / "data"


def reply_corpus(name: str) -> list[dict[str, Any]]:
    """The entries of ``tests/judges/data/<name>.yaml`` (each a reply and what it must give)."""
    entries = yaml.safe_load((DATA / f"{name}.yaml").read_text("utf-8"))
    assert isinstance(entries, list)
    return entries


def entry_id(entry: dict[str, Any]) -> str:
    """The test id of a corpus entry."""
    return str(entry["id"])
