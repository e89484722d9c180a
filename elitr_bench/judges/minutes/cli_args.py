"""Command-line values shared by the minutes judges' commands (``mesa``, ``arena``)."""

from __future__ import annotations


def comma_list(text: str | None) -> list[str] | None:
    """The non-empty, stripped parts of a comma-separated flag value (None when not given).

    ``--systems a, b,`` gives ``["a", "b"]``; the caller decides what an absent flag means
    (all systems, for both commands).
    """
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]
