"""One tolerant reader for JSON answers of LLM judges (CREAM, MESA, ...).

Judges asked for JSON often wrap it in prose or Markdown fences, leave trailing commas,
use single quotes or stop before the closing bracket. Repairing such *syntax* is the job
of the maintained ``json-repair`` library, not of hand-written regexes. This module only
decides what counts as "no JSON at all" (``None``), so that every caller can turn that into
an unscored judgement with a reason. Checking the *meaning* of the parsed value (keys,
ranges, line numbers) stays with each method, which knows what it asked for.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.S)


def _strict(text: str) -> Any | None:
    try:
        return json.loads(text)
    except ValueError:
        return None


def parse_json_reply(text: str) -> Any | None:
    """Parse the JSON value in a judge reply, repairing near-JSON; None when there is none.

    Order of attempts: the first fenced code block (```` ```json ... ``` ````) if the reply
    has one, else the whole reply; each is read strictly first and through
    ``json_repair`` only if that fails (so valid JSON is never "repaired"). Replies with no
    JSON value at all (plain prose, empty text) give ``None``.

    Args:
        text: The judge's reply as returned by the model.

    Returns:
        The parsed value (dict, list, number, ...) or None when the reply holds no JSON.
    """
    if not text or not text.strip():
        return None
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    for candidate in candidates:
        value = _strict(candidate.strip())
        if value is not None:
            return value
    from json_repair import repair_json

    for candidate in candidates:
        try:
            value = repair_json(candidate, return_objects=True)
        except Exception:  # the library's own failure is "no JSON", not a crash of the judge
            continue
        # json_repair returns "" when it found nothing JSON-like in the text.
        if value == "" or value is None:
            continue
        if isinstance(value, str) and not candidate.lstrip().startswith(('"', "'")):
            # A bare prose sentence is not a JSON string answer.
            continue
        return value
    return None
