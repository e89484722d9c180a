"""Task options read from lm-eval's ``--metadata`` (and ``--model_args``, which lm-eval merges in).

Options are parsed once into a frozen record with one-line errors, so that a typo in
``--metadata`` fails while the task is built, before any generation starts.

lm-eval hands every task the union of ``--metadata`` and ``--model_args``, so unknown keys
cannot simply be refused: most belong to lm-eval or the model. A key that is a near miss
of one of ours (``judg``, ``prompt-role``, ``overlenght``) is refused instead, because
ignoring it would silently run something else (e.g. the paid default judge). The keys
are data (:data:`OPTION_KEYS`); new tasks add theirs with :func:`register_option_keys`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.prompts import PromptRole

Overlength = Literal["error", "skip", "truncate_middle"]
History = Literal["own", "gold"]
_OVERLENGTH: tuple[str, ...] = ("error", "skip", "truncate_middle")
#: The roles a prompt may be sent in (``--metadata prompt_role=...``).
PROMPT_ROLES: tuple[str, ...] = ("user", "system")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class OptionError(ElitrBenchError):
    """An invalid ``--metadata`` option."""


#: Every ``--metadata`` key the ELITR tasks read, with a few words on its values. Add a
#: new task's keys here or with :func:`register_option_keys`.
OPTION_KEYS: dict[str, str] = {
    "judge": "judge spec: openai:MODEL, hf:PATH, replay, lexical or none",
    "prompt_role": "user or system",
    "qa_markers": "true or false",
    "overlength": "error, skip or truncate_middle (minutes tasks: also chunked)",
    "wer": "target word error rate of the noisy transcript, e.g. 0.35",
    "noise_seed": "integer seed of the noise injection",
    "noise_rules": "confusion rules file of the noise injection",
    "history": "own or gold (multi-turn tasks)",
    "differing_only": "true or false (Conv vs QA wording)",
    "context_budget": "positive integer: transcript tokens the QA prompt keeps (cut at turns)",
    # retrieval tasks (elitr_qa_rag_*)
    "rag_budget": "positive integer: transcript tokens of the retrieved passages (2048)",
    "rag_chunk": "positive integer: tokens a passage of merged speaker turns holds (128)",
    # minuting tasks (elitr_bench.tasks.minutes)
    "chunk_tokens": "positive integer: transcript tokens per section (overlength=chunked)",
    "bertscore": "true or false",
    "bartscore": "true or false",
    "bertscore_model": "BERTScore model name",
    "bartscore_model": "BARTScore model name",
}

#: Keys that are never flagged although they may look like ours: lm-eval's and common
#: model arguments (``--model_args`` is merged into the metadata), and keys we write.
FOREIGN_KEYS: set[str] = {
    "version", "num_fewshot", "task", "tag", "group", "pretrained", "model", "dtype",
    "device", "revision", "tokenizer", "backend", "batch_size", "max_batch_size",
    "max_length", "max_gen_toks", "trust_remote_code", "parallelize", "base_url",
    "num_concurrent", "max_retries", "tokenized_requests", "seed", "system", "peft",
    "judge_identity", "judge_usage", "context_window", "retrieval",
}  # fmt: skip

#: Shortest key compared by similarity; shorter ones (``wr``) match too much by chance.
_MIN_FUZZY = 4
_CUTOFF = 0.8


def register_option_keys(keys: Mapping[str, str], foreign: tuple[str, ...] = ()) -> None:
    """Declare more task options (name -> values hint) and keys never to flag.

    For new tasks in this package: their options then get the same near-miss check.
    """
    OPTION_KEYS.update(keys)
    FOREIGN_KEYS.update(foreign)


def _normal(key: str) -> str:
    return key.strip().lower().replace("-", "_").replace(" ", "_")


def near_miss(key: str) -> str | None:
    """The option ``key`` was probably meant to be, or None if it is ours or not close."""
    if key in OPTION_KEYS or key in FOREIGN_KEYS:
        return None
    norm = _normal(key)
    if norm in OPTION_KEYS:
        return norm
    if norm in FOREIGN_KEYS or len(norm) < _MIN_FUZZY:
        return None
    close = difflib.get_close_matches(norm, list(OPTION_KEYS), n=1, cutoff=_CUTOFF)
    return close[0] if close else None


def check_option_keys(metadata: Mapping[str, Any]) -> None:
    """Refuse a key that is a near miss of one of ours, with the exact fix.

    Raises:
        OptionError: One line: the key, the option it resembles and the corrected flag.
    """
    for key, value in metadata.items():
        meant = near_miss(str(key))
        if meant is None:
            continue
        shown = json.dumps({meant: value}, default=str)
        raise OptionError(
            f"--metadata key {key!r} is not an option of the ELITR tasks; did you mean "
            f"{meant!r} ({OPTION_KEYS[meant]})? e.g. --metadata '{shown}'"
        )


def as_bool(name: str, value: Any) -> bool:
    """A true/false ``--metadata`` value (bools, or 1/0, true/false, yes/no, on/off, "").

    Raises:
        OptionError: Any other value.
    """
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise OptionError(f"--metadata {name}={value!r}: expected true or false")


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """A ``--metadata`` value that must be one of ``allowed`` (case-insensitive), lower-cased.

    Raises:
        OptionError: The value is not allowed.
    """
    text = str(value).strip().lower()
    if text not in allowed:
        raise OptionError(f"--metadata {name}={value!r}: expected one of {', '.join(allowed)}")
    return text


def _int(name: str, value: Any) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise OptionError(f"--metadata {name}={value!r}: expected an integer") from None


def positive_int(name: str, value: Any, default: int | None = None) -> int | None:
    """A ``--metadata`` count of tokens: a positive integer, or ``default`` when unset.

    Raises:
        OptionError: Zero, a negative number, a fraction, a boolean or text.
    """
    if value is None:
        return default
    text = str(value).strip()
    if isinstance(value, bool) or not text.lstrip("+").isdigit() or int(text) <= 0:
        example = json.dumps({name: default or 4096})
        raise OptionError(
            f"--metadata {name}={value!r}: expected a positive number of tokens, "
            f"e.g. --metadata '{example}'"
        )
    return int(text)


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
        context_budget: Transcript tokens (the model's tokenizer) a QA prompt keeps, the
            transcript cut in its middle at speaker turns; None keeps it whole.
        rag_budget: Transcript tokens of the passages a retrieval task puts in the prompt.
        rag_chunk: Tokens a retrieval passage (whole speaker turns merged) holds at most.
    """

    prompt_role: PromptRole = "user"
    qa_markers: bool = False
    overlength: Overlength = "error"
    wer: float | None = None
    noise_seed: int = 2023
    noise_rules: str | None = None
    history: History = "own"
    differing_only: bool = False
    context_budget: int | None = None
    rag_budget: int = 2048
    rag_chunk: int = 128

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None) -> TaskOptions:
        """Parse the options we own out of a task's merged metadata.

        Keys of lm-eval and the model are ignored; near misses of ours are refused.
        """
        meta = dict(metadata or {})
        check_option_keys(meta)
        return cls(
            prompt_role=cast(
                PromptRole, choice("prompt_role", meta.get("prompt_role", "user"), PROMPT_ROLES)
            ),
            qa_markers=as_bool("qa_markers", meta.get("qa_markers", False)),
            overlength=cast(
                Overlength, choice("overlength", meta.get("overlength", "error"), _OVERLENGTH)
            ),
            wer=_wer(meta.get("wer")),
            noise_seed=_int("noise_seed", meta.get("noise_seed", 2023)),
            noise_rules=str(meta["noise_rules"]) if meta.get("noise_rules") else None,
            history=cast(History, choice("history", meta.get("history", "own"), ("own", "gold"))),
            differing_only=as_bool("differing_only", meta.get("differing_only", False)),
            context_budget=positive_int("context_budget", meta.get("context_budget")),
            rag_budget=positive_int("rag_budget", meta.get("rag_budget"), 2048) or 2048,
            rag_chunk=positive_int("rag_chunk", meta.get("rag_chunk"), 128) or 128,
        )
