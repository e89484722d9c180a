"""What each judge endpoint is known to refuse, learnt as a run goes (one store, per process).

A server may refuse a parameter of an otherwise good request with HTTP 400 naming it: a
``response_format`` type (:mod:`elitr_bench.llm.structured`), or ``max_tokens`` and a
``temperature``/``top_p`` other than 1 (OpenAI's reasoning models,
:mod:`elitr_bench.llm.reasoning`). :class:`~elitr_bench.llm.client.JudgeClient` then sends
the request once more without it and remembers the answer here, per :class:`Scope` (backend
kind, endpoint, model), so no later request of the process is refused for it. Each module
keeps its own table of OpenAI's models known to refuse, so the first request is right
there; this store only holds what was learnt and which notes were said.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Literal

#: What a scope is known to do with one parameter (or one ``response_format`` type).
Verdict = Literal["accepted", "refused"]


@dataclass(frozen=True)
class Scope:
    """Where a verdict holds: one backend kind, endpoint and model.

    Attributes:
        kind: The backend kind (``openai``).
        endpoint: The backend's endpoint key (``""``: OpenAI's own API).
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
_VERDICTS: dict[tuple[Scope, str], Verdict] = {}
_SAID: set[tuple[Scope, str]] = set()


def learnt(scope: Scope, what: str) -> Verdict | None:
    """What this process learnt of ``what`` (a parameter or format type) at ``scope``."""
    with _LOCK:
        return _VERDICTS.get((scope, what))


def learn(scope: Scope, what: str, outcome: Verdict, line: str = "") -> None:
    """Remember an answer; a refusal's ``line`` is said once per process on stderr."""
    with _LOCK:
        _VERDICTS[(scope, what)] = outcome
    if outcome == "refused" and line:
        say_once(scope, what, line)


def say_once(scope: Scope, what: str, line: str) -> None:
    """Print ``line`` on stderr unless a line on ``what`` at ``scope`` was said already."""
    with _LOCK:
        say = (scope, what) not in _SAID
        _SAID.add((scope, what))
    if say:
        print(line, file=sys.stderr)


def forget() -> None:
    """Forget every verdict and note of this process (tests, notebooks)."""
    with _LOCK:
        _VERDICTS.clear()
        _SAID.clear()
