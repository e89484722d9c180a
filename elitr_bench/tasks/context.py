"""Fitting prompts into the model's context window, checked before any generation.

lm-eval's ``hf`` and ``vllm`` back ends silently cut prompts from the left to fit
``max_length - max_gen_toks``: for ELITR that removes the start of the meeting and
with it the answers to "Beginning" questions, while the run still reports a score.
We count every prompt's tokens with the model's own tokenizer first and apply the
user's explicit ``overlength`` policy instead.
"""

from __future__ import annotations

import itertools
import logging
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from elitr_bench.data.errors import ElitrBenchError

log = logging.getLogger(__name__)

#: Marker inserted where ``truncate_middle`` removed part of a transcript.
ELISION = "\n[...]\n"
#: A line that starts a speaker turn: the anonymized speaker label, ``(PERSON4)``.
SPEAKER_TURN = re.compile(r"^\([A-Z][A-Za-z]*\d+\)", re.MULTILINE)


class ContextLengthError(ElitrBenchError):
    """Prompts longer than the model's context, with ``overlength=error``."""


@dataclass(frozen=True)
class TokenCounter:
    """The model's tokenizer and limit, as far as lm-eval exposes them.

    Attributes:
        encode: Text to token ids, as the model's ``generate_until`` tokenizes prompts.
        decode: Token ids back to text (for ``truncate_middle``).
        max_length: The model's context length in tokens.
        default_max_gen_toks: Generation budget when a request does not set one.
        positions: Positions the model was trained on (its config's
            ``max_position_embeddings`` or kin), when known: only a model with more
            positions than ``max_length`` gains from a larger ``max_length``.
    """

    encode: Callable[[str], list[int]]
    decode: Callable[[list[int]], str]
    max_length: int
    default_max_gen_toks: int
    positions: int | None = None

    def budget(self, gen_kwargs: dict[str, Any]) -> int:
        """Prompt tokens that fit once the generation budget is reserved."""
        max_gen = int(gen_kwargs.get("max_gen_toks", self.default_max_gen_toks))
        return self.max_length - max_gen


def active_model() -> Any | None:
    """The model lm-eval's ``evaluate()`` is running, when called from inside it.

    lm-eval hands tasks no model handle (only the bound ``apply_chat_template`` with
    ``--apply_chat_template``), so we read ``lm`` from the ``evaluate`` frame that is
    building requests. This relies on lm-eval 0.4.x's evaluator calling
    ``task.build_all_requests`` from ``lm_eval.evaluator.evaluate``; when that changes
    we return None and the check is skipped with a warning, never a wrong answer.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if (
            frame.f_code.co_name == "evaluate"
            and frame.f_globals.get("__name__") == "lm_eval.evaluator"
        ):
            return frame.f_locals.get("lm")
        frame = frame.f_back  # type: ignore[assignment]
    return None


def token_counter(lm: Any) -> TokenCounter | None:
    """Build a counter for local models that truncate prompts (hf, vllm and kin).

    API models (lm-eval's ``TemplateAPI`` family) return None: the server enforces its
    own limit and fails loudly, and their prompts are JSON message lists whose token
    count the client cannot know.
    """
    if lm is None:
        return None
    try:
        from lm_eval.models.api_models import TemplateAPI

        if isinstance(lm, TemplateAPI):
            return None
    except ImportError:  # pragma: no cover - optional extras missing
        pass
    encode = getattr(lm, "tok_encode", None)
    # lm-eval's vllm model has tok_encode but no tok_decode: use its tokenizer.
    decode = getattr(lm, "tok_decode", None) or getattr(
        getattr(lm, "tokenizer", None), "decode", None
    )
    try:
        max_length = int(lm.max_length)
    except (AttributeError, TypeError, ValueError):
        return None
    if encode is None or decode is None:
        return None
    return TokenCounter(
        encode=lambda text: list(encode(text)),
        decode=lambda ids: str(decode(ids)),
        max_length=max_length,
        default_max_gen_toks=int(getattr(lm, "max_gen_toks", 256)),
        positions=model_positions(lm),
    )


def model_positions(lm: Any) -> int | None:
    """Positions the model's config declares (None for models without such a config)."""
    config = getattr(getattr(lm, "_model", None) or getattr(lm, "model", None), "config", None)
    for attr in ("max_position_embeddings", "n_positions", "n_ctx"):
        value = getattr(config, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def middle_cut(counter: TokenCounter, transcript: str, remove: int) -> str:
    """Drop about ``remove`` tokens from the middle of a transcript, keeping both ends.

    Beginning and end are kept because answers lie there as often as in the middle
    (Table 1), and the cut is marked so a reader of the samples sees it. Both sides of
    the cut land on speaker turns (:func:`snap_to_turns`): an utterance may span several
    lines, and a kept part that began on a continuation line would hide who is speaking.
    The partial turns at the cut are dropped too, so the cut removes at least ``remove``.
    """
    ids = counter.encode(transcript)
    keep = max(len(ids) - remove, 0)
    head_ids = keep // 2
    tail_ids = keep - head_ids
    head = counter.decode(ids[:head_ids])
    tail = counter.decode(ids[-tail_ids:]) if tail_ids else ""
    return snap_to_turns(head, tail, transcript)


def budget_cut(counter: TokenCounter, transcript: str, budget: int) -> str:
    """The transcript cut in its middle at speaker turns to at most ``budget`` tokens.

    ``--metadata context_budget``: the same cut as ``truncate_middle``, sized by the
    user's budget instead of the model's window, so scores at several budgets draw how a
    model degrades as less of the meeting fits. A transcript within the budget is kept.

    Raises:
        ContextLengthError: The budget cannot hold even the elision marker.
    """
    total = len(counter.encode(transcript))
    remove = total - budget
    if remove <= 0:
        return transcript
    for _ in range(8):  # re-tokenising joined text can shift counts by a few tokens
        cut = middle_cut(counter, transcript, remove)
        over = len(counter.encode(cut)) - budget
        if over <= 0:
            return cut
        if remove >= total:
            break
        remove = min(total, remove + over)
    raise ContextLengthError(
        f"--metadata context_budget={budget}: too small to hold any of the transcript; "
        "use a budget of at least a few hundred tokens"
    )


def turn_starts(transcript: str) -> list[int]:
    """Character offsets of the lines that start a speaker turn (``(PERSON4) ...``)."""
    return [m.start() for m in SPEAKER_TURN.finditer(transcript)]


def speaker_turns(transcript: str) -> list[str]:
    """A transcript split into speaker turns: a labelled line and its continuation lines.

    Text before the first label (if any) is a turn of its own; joining the turns with
    line breaks gives the transcript back.
    """
    starts = [s for s in turn_starts(transcript) if s > 0]
    bounds = [0, *starts, len(transcript) + 1]
    return [transcript[a : b - 1] for a, b in itertools.pairwise(bounds)]


def _line_starts(transcript: str) -> list[int]:
    return [0] + [i + 1 for i, c in enumerate(transcript) if c == "\n"]


def snap_to_turns(head: str, tail: str, transcript: str) -> str:
    """Join a transcript's kept head and tail with :data:`ELISION`, at speaker turns.

    ``head`` (a prefix of ``transcript`` as decoded from tokens) is cut back to end
    before the last turn that starts in it, and ``tail`` (a suffix) forward to start at
    its first turn. Where no turn starts inside a side the side falls back to whole
    lines, and a side of one line only is cut where the tokens say rather than emptied.
    """
    head_len = len(head) if transcript.startswith(head) else min(len(head), len(transcript))
    tail_at = len(transcript) - len(tail)
    turns = turn_starts(transcript)
    lines = _line_starts(transcript)
    head_end = _snap_back(head_len, turns) or _snap_back(head_len, lines) or head_len
    tail_start = _snap_forward(tail_at, turns, len(transcript))
    if tail_start is None:
        tail_start = _snap_forward(tail_at, lines, len(transcript))
    if tail_start is None:
        tail_start = tail_at
    tail_start = max(tail_start, head_end)
    return transcript[:head_end].rstrip("\n") + ELISION + transcript[tail_start:].lstrip("\n")


def _snap_back(end: int, starts: list[int]) -> int | None:
    """The latest boundary in ``starts`` that keeps no partial line of a head ``end`` long.

    A head that stops just before a line break (``end + 1`` starts the next line) holds
    its last line whole. Offset 0 does not count: it would keep nothing.
    """
    best = None
    for start in starts:
        if start > end + 1:
            break
        if start > 0:
            best = start
    return best


def _snap_forward(start: int, starts: list[int], total: int) -> int | None:
    """The first boundary in ``starts`` at or after ``start`` (None when there is none)."""
    return next((b for b in starts if start <= b < total), None)


def worst_by_meeting(over: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The largest token count per meeting, sorted by meeting id.

    Shared by the tasks' and MESA's overlength errors, which name each meeting once.
    """
    worst: dict[str, int] = {}
    for meeting_id, tokens in over:
        worst[meeting_id] = max(tokens, worst.get(meeting_id, 0))
    return sorted(worst.items())


def overlength_message(
    task: str, over: list[tuple[str, int]], limit: int, positions: int | None = None
) -> str:
    """One-line error listing offending meetings, their token counts and the limit.

    ``--model_args max_length=`` is suggested only when the model was trained on more
    positions than ``limit`` (``positions``): past them a model writes garbage, so for
    a model already at its window the way out is ``overlength=`` or a longer-context model.
    """
    listing = ", ".join(f"{m} ({n} tokens)" for m, n in worst_by_meeting(over))
    if positions is not None and positions > limit:
        longer = f"--model_args max_length={positions} (the model's positions), "
    else:
        longer = ""
    return (
        f"{task}: {len(over)} prompt(s) exceed the model's context of {limit} tokens "
        f"(after reserving max_gen_toks): {listing}; use {longer}a longer-context model, "
        'or pass --metadata \'{"overlength": "skip"}\' (or "truncate_middle")'
    )
