"""Fitting prompts into the model's context window, checked before any generation.

lm-eval's ``hf`` and ``vllm`` back ends silently cut prompts from the left to fit
``max_length - max_gen_toks``: for ELITR that removes the start of the meeting and
with it the answers to "Beginning" questions, while the run still reports a score.
We count every prompt's tokens with the model's own tokenizer first and apply the
user's explicit ``overlength`` policy instead.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.middle_cut import CUT_SLACK, join_cut, largest_fitting_cut

log = logging.getLogger(__name__)


class ContextLengthError(ElitrBenchError):
    """Prompts longer than the model's context, with ``overlength=error``."""


@dataclass(frozen=True)
class ModelTokenizer:
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

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        return len(self.encode(text))

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


def token_counter(lm: Any) -> ModelTokenizer | None:
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
    return ModelTokenizer(
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


def fit_middle(
    counter: ModelTokenizer, transcript: str, excess: Callable[[str], int]
) -> str | None:
    """The transcript with as little of its middle cut as makes ``excess`` of it <= 0.

    The tasks' middle cut: ``context_budget`` (:func:`budget_cut`) and
    ``overlength=truncate_middle`` (QA, multi-turn and minutes tasks) all call it, each
    with its own ``excess``: the tokens by which the transcript, or the prompt built
    from it, overruns its limit (<= 0: it fits). How many of the model's tokens to keep
    is the package's one search (:func:`elitr_bench.middle_cut.largest_fitting_cut`),
    starting from the transcript's tokens less the excess.

    Returns:
        The transcript unchanged when it fits, its cut when one fits, None when even an
        empty transcript (the elision marker alone) does not.
    """
    over = excess(transcript)
    if over <= 0:
        return transcript
    ids = counter.encode(transcript)
    return largest_fitting_cut(
        lambda keep: cut_middle(counter, transcript, keep, ids), excess, len(ids) - over
    )


def cut_middle(
    counter: ModelTokenizer, transcript: str, keep: int, ids: list[int] | None = None
) -> str:
    """Keep about ``keep`` tokens of a transcript, its beginning and its end, and mark the cut.

    Beginning and end are kept because answers lie there as often as in the middle
    (Table 1); the cut is marked with :data:`~elitr_bench.middle_cut.ELISION` so a reader
    of the samples sees it. Each side ends on a boundary (:func:`join_cut`) found within
    :data:`CUT_SLACK` of the kept tokens, so a long turn that straddles the cut costs no
    more than that.
    """
    ids = counter.encode(transcript) if ids is None else ids
    keep = min(max(keep, 0), len(ids))
    head_ids = keep // 2
    tail_ids = keep - head_ids
    head = counter.decode(ids[:head_ids]) if head_ids else ""
    tail = counter.decode(ids[-tail_ids:]) if tail_ids else ""
    head_len = min(len(head.rstrip("\ufffd")), len(transcript))
    tail_at = max(len(transcript) - len(tail.lstrip("\ufffd")), head_len)
    chars_per_token = len(transcript) / max(len(ids), 1)
    slack = int(CUT_SLACK * keep * chars_per_token)
    return join_cut(transcript, head_len, tail_at, slack)


def budget_cut(counter: ModelTokenizer, transcript: str, budget: int) -> str:
    """The transcript cut in its middle to at most ``budget`` tokens.

    ``--metadata context_budget``: the same cut as ``truncate_middle``, sized by the
    user's budget instead of the model's window, so scores at several budgets draw how a
    model degrades as less of the meeting fits. A transcript within the budget is kept.

    Raises:
        ContextLengthError: The budget cannot hold even the elision marker.
    """
    cut = fit_middle(counter, transcript, lambda text: counter.count(text) - budget)
    if cut is None:
        raise ContextLengthError(
            f"--metadata context_budget={budget}: too small to hold any of the transcript; "
            "use a budget of at least a few hundred tokens"
        )
    return cut


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
