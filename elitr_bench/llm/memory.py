"""What this process knows of each endpoint: one memory, one scope, one reset.

An endpoint teaches a run things no table holds: that it refuses an optional extra of a
request (a ``response_format`` schema, ``max_tokens``, a temperature other than 1), the
window its server names, that its preflight passed, that it refused the credentials.
Each is kept here under one :class:`Scope` (backend kind, endpoint, model) and a topic,
so :func:`forget` is the one reset (a test, a notebook, a new run in the same process).
Nothing here is written to disk, and no key is ever held: credentials appear only as the
backend's in-memory hash.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any, Literal

#: What a scope is known to do with one optional extra of a request.
Verdict = Literal["accepted", "refused"]


@dataclass(frozen=True)
class Scope:
    """Where a fact holds: one backend kind, endpoint and model.

    Attributes:
        kind: The backend kind (``openai``, ``hf``).
        endpoint: The backend's endpoint key (``""``: OpenAI's own API, or a local model).
        model: The model (or Azure deployment) name.
    """

    kind: str
    endpoint: str
    model: str

    @property
    def label(self) -> str:
        """``kind:model`` and where, for the one stderr line (never holds a secret)."""
        where = f" at {self.endpoint}" if self.endpoint else ""
        return f"{self.kind}:{self.model}{where}"

    @property
    def openai_name(self) -> str | None:
        """The OpenAI model name when the scope is OpenAI's own API or Azure, else None.

        Another OpenAI-compatible server may serve any model under any name, so the tables
        of OpenAI's models hold only here (a ``ft:`` fine-tune is named by its base model).
        """
        if self.kind != "openai" or (self.endpoint and not self.endpoint.startswith("azure+")):
            return None
        name = self.model.strip().lower()
        return name.split(":")[1] if name.startswith("ft:") and ":" in name[3:] else name


_LOCK = threading.Lock()
_FACTS: dict[tuple[Scope, str], Any] = {}
_MARKED: set[tuple[Scope, str]] = set()


def recall(scope: Scope, topic: str) -> Any:
    """What this process keeps on ``topic`` at ``scope`` (None when nothing)."""
    with _LOCK:
        return _FACTS.get((scope, topic))


def remember(scope: Scope, topic: str, value: Any) -> Any:
    """Keep ``value`` unless something is kept already; what is kept now."""
    with _LOCK:
        return _FACTS.setdefault((scope, topic), value)


def replace_fact(scope: Scope, topic: str, value: Any) -> None:
    """Keep ``value``, replacing what was kept (a verdict learnt anew)."""
    with _LOCK:
        _FACTS[(scope, topic)] = value


def first_time(scope: Scope, topic: str) -> bool:
    """True once per process and ``(scope, topic)``: for things said or done once."""
    with _LOCK:
        first = (scope, topic) not in _MARKED
        _MARKED.add((scope, topic))
    return first


def verdict(scope: Scope, what: str) -> Verdict | None:
    """What this process learnt of an optional extra ``what`` at ``scope``."""
    found = recall(scope, f"verdict {what}")
    return found if found in ("accepted", "refused") else None


def learn(scope: Scope, what: str, outcome: Verdict, line: str = "") -> None:
    """Remember an answer to ``what``; a refusal's ``line`` is said once on stderr."""
    replace_fact(scope, f"verdict {what}", outcome)
    if outcome == "refused" and line:
        say_once(scope, what, line)


def say_once(scope: Scope, what: str, line: str) -> None:
    """Print ``line`` on stderr unless a line on ``what`` at ``scope`` was said already."""
    if first_time(scope, f"said {what}"):
        print(line, file=sys.stderr)


def forget() -> None:
    """Forget everything this process learnt of every endpoint (tests, notebooks)."""
    with _LOCK:
        _FACTS.clear()
        _MARKED.clear()
