"""Fitting MESA's prompts into the judge's context, with the QA tasks' ``overlength`` policy.

Every MESA prompt carries the whole transcript. When the judge spec names its context
(``context=N`` tokens), each summary's longest prompt is estimated before any call and
handled as the QA tasks handle over-long prompts (``elitr_bench/tasks/context.py``):
``error`` stops with one line listing the meetings, ``skip`` leaves the summary unscored
with the reason, ``truncate_middle`` cuts the middle of the transcript (marked ``[...]``).

The judge is an API model whose tokenizer we may not have, so tokens are estimated as
characters / 3.3. Measured with GPT-4o's tokenizer (o200k) on the 12 AutoMin 2023
transcripts, the ratio is 3.31-3.99 characters per token (3.72 overall), so the estimate
errs on the side of fitting. The cut is sized for a summary of at least
``SUMMARY_ALLOWANCE`` tokens, so all summaries of a meeting (almost all shorter) see the
same cut transcript and keep a shared, cacheable prefix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from elitr_bench.tasks.context import ELISION, ContextLengthError, worst_by_meeting

CHARS_PER_TOKEN = 3.3
SUMMARY_ALLOWANCE = 2048
OVERLENGTH_POLICIES = ("error", "skip", "truncate_middle")

#: Step prompts besides transcript, summary, criteria and instances (the longest, Fig. 4,
#: has about 1,500 characters); debate and guidance text are added on top.
_TEMPLATE_CHARS = 1600
_DEBATE_CHARS = 1500


def approx_tokens(text: str) -> int:
    """Estimated tokens of a text (characters / 3.3, rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Budget:
    """What besides the transcript a summary's longest MESA prompt holds, in tokens.

    Attributes:
        context: The judge's context length (0 = unchecked).
        max_tokens: Output limit per call (reserved for the answer, and per earlier answer
            that a prompt quotes: the step before's instances, the debate's draft and the
            three challengers' answers).
        debate: Whether prompts quote a debate.
        extra_chars: Longest criteria + guidance text of any type.
    """

    context: int
    max_tokens: int
    debate: bool
    extra_chars: int

    def others(self, summary: str) -> int:
        """Tokens of the longest prompt besides the transcript, plus the answer."""
        quoted = (5 if self.debate else 1) * self.max_tokens
        fixed_chars = _TEMPLATE_CHARS + self.extra_chars + (_DEBATE_CHARS if self.debate else 0)
        fixed = math.ceil(fixed_chars / CHARS_PER_TOKEN)
        return max(approx_tokens(summary), SUMMARY_ALLOWANCE) + quoted + fixed + self.max_tokens

    def required(self, transcript: str, summary: str) -> int:
        """Estimated tokens of the longest prompt of a summary plus its answer."""
        return approx_tokens(transcript) + self.others(summary)


@dataclass(frozen=True)
class Fitted:
    """The transcript a summary is assessed with.

    Attributes:
        transcript: Unchanged, or cut in the middle.
        action: ``fits``, ``unchecked``, ``truncated`` or ``skipped``.
        required: Estimated tokens before any cut (0 when unchecked).
        removed_tokens: Estimated tokens removed by the cut.
    """

    transcript: str
    action: str
    required: int = 0
    removed_tokens: int = 0


def middle_cut(transcript: str, keep_tokens: int) -> str:
    """Keep about ``keep_tokens`` of the transcript: its beginning and end, cut at lines."""
    keep_chars = max(int(keep_tokens * CHARS_PER_TOKEN), 0)
    if keep_chars >= len(transcript):
        return transcript
    head_end = keep_chars // 2
    tail_start = len(transcript) - (keep_chars - head_end)
    # Snap to line boundaries so no speaker turn is split mid-word.
    nl = transcript.rfind("\n", 0, head_end)
    head_end = nl + 1 if nl > 0 else head_end
    nl = transcript.find("\n", tail_start)
    tail_start = nl + 1 if 0 <= nl < len(transcript) - 1 else tail_start
    return transcript[:head_end].rstrip("\n") + ELISION + transcript[tail_start:]


def fit(
    transcript: str, summary: str, budget: Budget, policy: str, meeting_id: str = "?"
) -> Fitted:
    """Apply the overlength policy to one summary's transcript.

    Raises:
        ContextLengthError: Over the context with ``policy="error"`` (single item; use
            :func:`check_all` to name every offending meeting at once).
    """
    if budget.context <= 0:
        return Fitted(transcript, "unchecked")
    required = budget.required(transcript, summary)
    if required <= budget.context:
        return Fitted(transcript, "fits", required)
    if policy == "skip":
        return Fitted(transcript, "skipped", required)
    if policy == "truncate_middle":
        keep = budget.context - budget.others(summary)
        if keep <= 0:
            return Fitted(transcript, "skipped", required)
        cut = middle_cut(transcript, keep)
        return Fitted(cut, "truncated", required, approx_tokens(transcript) - approx_tokens(cut))
    raise ContextLengthError(overlength_line([(meeting_id, required)], budget.context))


def overlength_line(over: Sequence[tuple[str, int]], context: int) -> str:
    """One line naming the meetings (worst estimate each), the limit and the fixes."""
    listing = ", ".join(f"{m} (~{n} tokens)" for m, n in worst_by_meeting(over))
    return (
        f"MESA: {len(over)} summar{'y' if len(over) == 1 else 'ies'} need more than the judge's "
        f"context of {context} tokens (estimated at {CHARS_PER_TOKEN} characters per token, "
        f"with the output reserved): {listing}; use a longer-context judge (context=...), or "
        "add overlength=skip or overlength=truncate_middle to the judge spec"
    )


def check_all(pairs: Sequence[tuple[str, str, str]], budget: Budget, policy: str) -> None:
    """Fail before any call when ``policy="error"`` and some summary does not fit.

    Args:
        pairs: (meeting_id, transcript, summary) per summary.
        budget: The prompt budget.
        policy: The overlength policy.

    Raises:
        ContextLengthError: One line naming every offending meeting.
    """
    if budget.context <= 0 or policy != "error":
        return
    needed = [
        (meeting, budget.required(transcript, summary)) for meeting, transcript, summary in pairs
    ]
    over = [(meeting, tokens) for meeting, tokens in needed if tokens > budget.context]
    if over:
        raise ContextLengthError(overlength_line(over, budget.context))
