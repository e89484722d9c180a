"""Fitting MESA's prompts into the judge's context, with the QA tasks' ``overlength`` policy.

Every MESA prompt carries the whole transcript. The judge's window comes from
:mod:`elitr_bench.llm.context_window` (``context=N``, the OpenAI model table, or an hf
judge's config); each summary's longest prompt is measured before any call and handled
as the QA tasks handle over-long prompts: ``error`` stops with one line listing the
meetings, ``skip`` leaves the summary unscored with the reason, ``truncate_middle`` cuts
the middle of the transcript (marked ``[...]``).

Transcript and summary are counted with the judge's tokenizer (an estimate where there
is none, and the messages say so). What the longest prompt holds besides them is not known
before the calls (the step template, the earlier steps' replies it quotes, the debate
text), so it is an allowance: the template and debate text at the package's one ratio,
:data:`elitr_bench.tokens.CHARS_PER_TOKEN` characters per token, over sizes already
rounded up (the longest template has about 1,500 characters, 1,600 are counted), and
``max_tokens`` per quoted reply. The cut is sized for a summary of at least
``SUMMARY_ALLOWANCE`` tokens, so all summaries of a meeting (almost all shorter) see the
same cut transcript and keep a shared, cacheable prefix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from elitr_bench.judges.overlength import Overlong, overlength_line, way_out
from elitr_bench.llm.context_window import ContextWindowError, JudgeWindow, token_bound
from elitr_bench.middle_cut import CUT_SLACK, join_cut, largest_fitting_cut
from elitr_bench.tokens import CHARS_PER_TOKEN

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig

SUMMARY_ALLOWANCE = 2048
OVERLENGTH_POLICIES = ("error", "skip", "truncate_middle")
#: The ways out of an over-long MESA prompt besides a larger judge.
MESA_WAY_OUT = "add overlength=skip or overlength=truncate_middle to the judge spec"

#: Step prompts besides transcript, summary, criteria and instances (the longest, Fig. 4,
#: has about 1,500 characters); debate and guidance text are added on top.
_TEMPLATE_CHARS = 1600
_DEBATE_CHARS = 1500


def approx_tokens(text: str) -> int:
    """Allowance tokens of fixed prompt text (characters / ``CHARS_PER_TOKEN``, rounded up)."""
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
        count: Tokens of transcript and summary text (the judge's tokenizer).
    """

    context: int
    max_tokens: int
    debate: bool
    extra_chars: int
    count: Callable[[str], int] = field(default=token_bound, compare=False)

    def others(self, summary: str) -> int:
        """Tokens of the longest prompt besides the transcript, plus the answer."""
        quoted = (5 if self.debate else 1) * self.max_tokens
        fixed_chars = _TEMPLATE_CHARS + self.extra_chars + (_DEBATE_CHARS if self.debate else 0)
        fixed = math.ceil(fixed_chars / CHARS_PER_TOKEN)
        return max(self.count(summary), SUMMARY_ALLOWANCE) + quoted + fixed + self.max_tokens

    def required(self, transcript: str, summary: str) -> int:
        """Tokens of the longest prompt of a summary plus its answer."""
        return self.count(transcript) + self.others(summary)


def window_budget(window: JudgeWindow, max_tokens: int, debate: bool, extra_chars: int) -> Budget:
    """The budget of a judge window (context 0 when the window is not checked)."""
    if not window.checked:
        return Budget(0, max_tokens, debate, extra_chars)
    return Budget(window.limit, max_tokens, debate, extra_chars, window.count)


@dataclass(frozen=True)
class Fitted:
    """The transcript a summary is assessed with.

    Attributes:
        transcript: Unchanged, or cut in the middle.
        action: ``fits``, ``unchecked``, ``truncated`` or ``skipped``.
        required: Tokens before any cut (0 when unchecked).
        removed_tokens: Tokens removed by the cut.
    """

    transcript: str
    action: str
    required: int = 0
    removed_tokens: int = 0


def middle_cut(transcript: str, keep_tokens: int, count: Callable[[str], int]) -> str:
    """Keep at most ``keep_tokens`` of the transcript: its beginning and end, cut as the tasks cut.

    The judge's tokens are counted, not decoded (an OpenAI judge has no tokenizer here), so
    the cut is sized in characters, at the transcript's own characters per token; how many
    to keep is the package's one search (:func:`elitr_bench.middle_cut.largest_fitting_cut`)
    and where the cut falls and how it is marked its one middle cut
    (:func:`elitr_bench.middle_cut.join_cut`). When not even the elision marker fits, that
    marker alone is returned.
    """
    total = count(transcript)
    if keep_tokens >= total:
        return transcript
    chars_per_token = len(transcript) / max(total, 1)

    def cut(keep_chars: int) -> str:
        head_len = keep_chars // 2
        tail_at = len(transcript) - (keep_chars - head_len)
        return join_cut(transcript, head_len, tail_at, int(CUT_SLACK * keep_chars))

    found = largest_fitting_cut(
        cut,
        lambda text: count(text) - keep_tokens,
        max(int(keep_tokens * chars_per_token), 0),
        chars_per_token,
    )
    return cut(0) if found is None else found


def fit(
    transcript: str, summary: str, budget: Budget, policy: str, meeting_id: str = "?"
) -> Fitted:
    """Apply the overlength policy to one summary's transcript.

    Raises:
        ContextWindowError: Over the context with ``policy="error"`` (single item; use
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
        cut = middle_cut(transcript, keep, budget.count)
        removed = budget.count(transcript) - budget.count(cut)
        return Fitted(cut, "truncated", required, removed)
    raise ContextWindowError(
        f"MESA: the longest prompt for {meeting_id} needs {required:,} tokens with its output "
        f"and quoted replies, over the judge's context of {budget.context:,}; nothing was "
        f"sent; use a judge with a larger window, or {MESA_WAY_OUT}"
    )


def check_all(
    pairs: Sequence[tuple[str, str, str]],
    budget: Budget,
    policy: str,
    window: JudgeWindow,
    config: JudgeConfig,
) -> None:
    """Fail before any call when ``policy="error"`` and some summary does not fit.

    Args:
        pairs: (meeting_id, transcript, summary) per summary.
        budget: The prompt budget.
        policy: The overlength policy.
        window: The judge's window (named in the message).
        config: The judge (for the suggested way out).

    Raises:
        ContextWindowError: One line naming every offending meeting.
    """
    over = overlong_pairs(pairs, budget, policy)
    if over:
        raise ContextWindowError(
            overlength_line(
                "MESA (longest prompt of each summary, with room for the replies it quotes)",
                over,
                window,
                way_out(config, over, MESA_WAY_OUT),
            )
        )


def overlong_pairs(
    pairs: Sequence[tuple[str, str, str]], budget: Budget, policy: str
) -> list[Overlong]:
    """The summaries whose longest prompt does not fit, with ``policy="error"`` only."""
    if budget.context <= 0 or policy != "error":
        return []
    out = []
    for meeting, transcript, summary in pairs:
        required = budget.required(transcript, summary)
        if required > budget.context:
            out.append(Overlong(meeting, required - budget.max_tokens, budget.max_tokens))
    return out
