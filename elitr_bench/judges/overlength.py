"""Judge prompts that do not fit the judge's window, named in one line with the way out.

The window and the count come from the transport
(:func:`elitr_bench.llm.context_window.judge_window`); this is what the commands and the
lm-eval filters say about the prompts that do not fit, before anything is paid: which
meetings, how many tokens each, the limit, and what to do (a larger judge, named when we
know one, then the method's own options).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.context_window import OPENAI_MODELS, JudgeWindow
from elitr_bench.llm.endpoint import EndpointSpec, endpoint_key

#: Key of an assessment's details that holds the prompt tokens of a prompt not sent because
#: it did not fit (so the run's exit line can name the way out).
CONTEXT_DETAIL = "context_window"

#: Larger OpenAI judges suggested when a prompt does not fit (smallest window first).
_SUGGESTED = ("gpt-4o", "gpt-4.1")


def judge_label(config: EndpointSpec) -> str:
    """``backend:model`` of a judge (the spec may hold paths and options)."""
    return f"{config.backend}:{config.model}" if config.model else config.backend


@dataclass(frozen=True)
class Overlong:
    """One prompt that does not fit.

    Attributes:
        label: What it judges (a meeting id, ``meeting/question``, a pair).
        tokens: Its prompt tokens.
        max_tokens: Output reserved for it.
    """

    label: str
    tokens: int
    max_tokens: int


def overlong(
    window: JudgeWindow, labelled: Iterable[tuple[str, CompletionRequest]]
) -> list[Overlong]:
    """The requests among ``(label, request)`` that do not fit (none when unchecked)."""
    if not window.checked:
        return []
    out = []
    for label, request in labelled:
        tokens = window.over(request)
        if tokens is not None:
            out.append(Overlong(label, tokens, request.max_tokens))
    return out


def worst_by_label(over: Iterable[Overlong]) -> list[Overlong]:
    """The longest prompt per label, sorted by label (each meeting is named once)."""
    worst: dict[str, Overlong] = {}
    for item in over:
        if item.label not in worst or item.tokens > worst[item.label].tokens:
            worst[item.label] = item
    return [worst[k] for k in sorted(worst)]


#: Labels listed in one line before "and N more".
_LISTED = 12


def overlength_line(what: str, over: Sequence[Overlong], window: JudgeWindow, way_out: str) -> str:
    """One line: who, how many prompts, each label with its tokens, the limit, the way out."""
    worst = worst_by_label(over)
    listing = ", ".join(f"{o.label} ({o.tokens:,} tokens)" for o in worst[:_LISTED])
    if len(worst) > _LISTED:
        listing += f" and {len(worst) - _LISTED} more"
    n = len(over)
    return (
        f"{what}: {n} judge prompt{'s exceed' if n != 1 else ' exceeds'} "
        f"{window.describe(max(o.max_tokens for o in over))}: {listing}; nothing was sent; "
        f"{way_out}"
    )


def larger_judge(config: EndpointSpec, needed: int) -> str | None:
    """A judge spec like ``config`` with an OpenAI model whose window holds ``needed`` tokens.

    Only for judges of OpenAI's own API (a model name means nothing to another server).
    ``context=`` is dropped from the suggestion, since it would override the window.
    """
    if config.backend != "openai" or config.azure or endpoint_key(config):
        return None
    for name in _SUGGESTED:
        if OPENAI_MODELS[name].context >= needed:
            options = [
                part.strip()
                for part in (config.spec or "").split(",")[1:]
                if part.strip() and not part.strip().lower().startswith("context=")
            ]
            return ",".join([f"openai:{name}", *options])
    return None


def way_out(config: EndpointSpec, over: Sequence[Overlong], *alternatives: str) -> str:
    """What to do: a larger judge (named when we know one), then method-specific options."""
    needed = max(o.tokens + o.max_tokens for o in over) if over else 0
    bigger = larger_judge(config, needed)
    first = (
        f"use a judge with a larger window, e.g. {bigger} ({_window_of(bigger):,} tokens)"
        if bigger
        else "use a judge model with a larger context window (context=N if it has one we "
        "do not know)"
    )
    return ", or ".join([first, *alternatives])


def _window_of(spec: str) -> int:
    model = spec.split(",")[0].partition(":")[2]
    return OPENAI_MODELS[model].context
