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
History = Literal["own", "gold"]
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


def _int(name: str, value: Any) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise OptionError(f"--metadata {name}={value!r}: expected an integer") from None


def _wer(value: Any) -> float | None:
    if value is None or str(value).strip().lower() in ("", "none", "0", "0.0"):
        return None
    try:
        wer = float(str(value).strip())
    except ValueError:
        raise OptionError(f"--metadata wer={value!r}: expected a number such as 0.35") from None
    if not 0 < wer <= 1:
        raise OptionError(f"--metadata wer={value!r}: expected a word error rate in (0, 1]")
    return wer


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
    wer: float | None = None
    noise_seed: int = 2023
    noise_rules: str | None = None
    history: History = "own"
    differing_only: bool = False

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
            wer=_wer(meta.get("wer")),
            noise_seed=_int("noise_seed", meta.get("noise_seed", 2023)),
            noise_rules=str(meta["noise_rules"]) if meta.get("noise_rules") else None,
            history=cast(History, _choice("history", meta.get("history", "own"), ("own", "gold"))),
            differing_only=_as_bool("differing_only", meta.get("differing_only", False)),
        )
