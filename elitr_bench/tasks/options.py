"""Task options read from lm-eval's ``--metadata`` (and ``--model_args``, which lm-eval merges in).

Options are parsed once into a frozen record with one-line errors, so that a typo in
``--metadata`` fails while the task is built, before any generation starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.prompts import PromptRole

Overlength = Literal["error", "skip", "truncate_middle"]
_OVERLENGTH: tuple[str, ...] = ("error", "skip", "truncate_middle")
_ROLES: tuple[str, ...] = ("user", "system")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class OptionError(ElitrBenchError):
    """An invalid ``--metadata`` option."""


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise OptionError(f"--metadata {name}={value!r}: expected true or false")


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in allowed:
        raise OptionError(f"--metadata {name}={value!r}: expected one of {', '.join(allowed)}")
    return text


@dataclass(frozen=True)
class TaskOptions:
    """User-facing knobs of the ELITR tasks.

    Attributes:
        prompt_role: ``user`` puts Fig. 5 and the question in one user turn; ``system``
            makes Fig. 5 the system message.
        qa_markers: Wrap questions as ``QUESTION: ... ANSWER:`` (App. B.2).
        overlength: What to do with a prompt longer than the model's context: raise
            (``error``), drop it from scoring (``skip``) or cut the middle of the
            transcript (``truncate_middle``).
    """

    prompt_role: PromptRole = "user"
    qa_markers: bool = False
    overlength: Overlength = "error"

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None) -> TaskOptions:
        """Parse the options we own out of a task's merged metadata; others are ignored."""
        meta = dict(metadata or {})
        return cls(
            prompt_role=cast(
                PromptRole, _choice("prompt_role", meta.get("prompt_role", "user"), _ROLES)
            ),
            qa_markers=_as_bool("qa_markers", meta.get("qa_markers", False)),
            overlength=cast(
                Overlength, _choice("overlength", meta.get("overlength", "error"), _OVERLENGTH)
            ),
        )
