"""Running one MESA step: a single call, or the multi-agent debate protocol (MADP).

Sec. 2.4 / Fig. 2: a moderator drafts the step's answer, three challengers question the draft
in parallel (each from its own perspective) and return refined answers, and the moderator
synthesises them into the final answer. MADP-S uses the judge's own model for every agent;
MADP-M draws the challengers from a pool of judge specs. Every call goes through a shared
:class:`JudgeClient` (cache written before use, retries, rate limits), so a re-run of a
finished debate sends no request.

A reply that fails validation is asked again (``reask`` times, each a distinct cached draw);
a challenger's answer is passed on as text even when it does not validate, since the
moderator reads it, but the step's outcome is only ever a validated synthesis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from elitr_bench.judges.config import JudgeConfig
from elitr_bench.judges.mesa.parsing import Parsed
from elitr_bench.judges.mesa.prompts import challenge_prompt, synthesis_prompt
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.client import JudgeClient, gather_settled

T = TypeVar("T")
Parser = Callable[[str], Parsed[T]]


@dataclass(frozen=True)
class Agent:
    """One debating model: its config (sampling) and client (backend + shared cache)."""

    config: JudgeConfig
    client: JudgeClient

    @property
    def label(self) -> str:
        """``backend:model`` for logs (never a key)."""
        return f"{self.config.backend}:{self.config.model}"


@dataclass
class Reply:
    """The outcome of asking one agent (after re-asks).

    Attributes:
        raw: Text of the last attempt.
        parsed: Validation result of the last attempt.
        attempts: Completions asked.
    """

    raw: str
    parsed: Parsed[Any]
    attempts: int


def request_for(config: JudgeConfig, prompt: str, draw: int) -> CompletionRequest:
    """The completion request of one draw (seed + draw, as the QA judges do)."""
    seed = None if config.seed is None else config.seed + draw
    return CompletionRequest(prompt, config.temperature, config.top_p, config.max_tokens, seed)


async def ask(agent: Agent, prompt: str, parse: Parser[Any], reask: int) -> Reply:
    """Ask until the reply validates or ``reask`` extra attempts are used up."""
    raw, parsed = "", Parsed[Any](None, "not asked")
    for attempt in range(reask + 1):
        completion = await agent.client.complete(
            request_for(agent.config, prompt, attempt), attempt
        )
        raw = completion.text
        parsed = parse(raw)
        if parsed.ok:
            return Reply(raw, parsed, attempt + 1)
    return Reply(raw, parsed, reask + 1)


def _trace(role: str, agent: Agent, reply: Reply) -> dict[str, Any]:
    return {
        "role": role,
        "agent": agent.label,
        "raw": reply.raw,
        "valid": reply.parsed.ok,
        "reason": reply.parsed.reason,
        "attempts": reply.attempts,
    }


async def run_step(
    prompt: str,
    parse: Parser[T],
    moderator: Agent,
    challengers: Sequence[Agent] = (),
    *,
    reask: int = 1,
) -> tuple[Parsed[T], list[dict[str, Any]]]:
    """One step, alone or debated; returns the validated outcome and a trace of all calls.

    Args:
        prompt: The step prompt (Fig. 3, 4 or 5, filled).
        parse: The step's validator.
        moderator: The judge itself (drafts and synthesises).
        challengers: The challenging agents; empty = no debate (a single call).
        reask: Extra attempts for replies that fail validation (draft and synthesis).
    """
    if not challengers:
        reply = await ask(moderator, prompt, parse, reask)
        return reply.parsed, [_trace("single", moderator, reply)]
    draft = await ask(moderator, prompt, parse, reask)
    trace = [_trace("draft", moderator, draft)]
    answers = await gather_settled(
        *(
            ask(agent, challenge_prompt(prompt, draft.raw, i, len(challengers)), parse, 0)
            for i, agent in enumerate(challengers)
        )
    )
    for i, (agent, answer) in enumerate(zip(challengers, answers, strict=True)):
        trace.append(_trace(f"challenger{i + 1}", agent, answer))
    synthesis = synthesis_prompt(prompt, draft.raw, [a.raw for a in answers])
    final = await ask(moderator, synthesis, parse, reask)
    trace.append(_trace("synthesis", moderator, final))
    return final.parsed, trace
