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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elitr_bench.judges import asking
from elitr_bench.judges.config import JudgeConfig
from elitr_bench.judges.mesa.prompts import challenge_prompt, synthesis_prompt
from elitr_bench.judges.reading import Grammar, Reading
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.client import JudgeClient, gather_settled


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
        raw: The agent's reply the reading comes from (the one a restatement turn
            restated; the last attempt when none read).
        reading: The reading of that reply (or of its restatement).
        attempts: Completions asked.
        restatement: The restatement turn's reply (``""`` when there was none).
    """

    raw: str
    reading: Reading
    attempts: int
    restatement: str = ""

    @property
    def text(self) -> str:
        """What the other agents read: the reply, then its restated values if any."""
        return asking.with_restatement(self.raw, self.restatement)


def request_for(config: JudgeConfig, prompt: str, draw: int) -> CompletionRequest:
    """The completion request of one draw (seed + draw, as the QA judges do)."""
    return asking.request_for(config, prompt, draw)


async def ask(
    agent: Agent, prompt: str, grammar: Grammar, reask: int, evaluated: Sequence[str] = ()
) -> Reply:
    """Ask until the reply reads completely or ``reask`` extra attempts are used up."""
    asked = await asking.ask(
        agent.client,
        lambda attempt: (request_for(agent.config, prompt, attempt), attempt),
        grammar,
        reask + 1,
        evaluated=evaluated,
        policy=asking.policy_of(agent.config),
    )
    if asked.restated:
        return Reply(asked.reply, asked.reading, asked.attempts, asked.restatement)
    raw = asked.raw if asked.reading.complete else asked.last
    return Reply(raw, asked.reading, asked.attempts)


def _trace(role: str, agent: Agent, reply: Reply) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "role": role,
        "agent": agent.label,
        "raw": reply.raw,
        "valid": reply.reading.complete,
        "reason": reply.reading.reason,
        "attempts": reply.attempts,
    }
    if reply.restatement:  # the values restated from ``raw``, kept apart from its words
        trace["restatement"] = reply.restatement
    return trace


async def run_step(
    prompt: str,
    parse: Grammar,
    moderator: Agent,
    challengers: Sequence[Agent] = (),
    *,
    reask: int = 1,
    evaluated: Sequence[str] = (),
) -> tuple[Reading, list[dict[str, Any]]]:
    """One step, alone or debated; returns the validated outcome and a trace of all calls.

    Args:
        prompt: The step prompt (Fig. 3, 4 or 5, filled).
        parse: The step's grammar.
        moderator: The judge itself (drafts and synthesises).
        challengers: The challenging agents; empty = no debate (a single call).
        reask: Extra attempts for replies that fail validation (draft and synthesis).
        evaluated: The summary under assessment: its lines quoted in a reply never
            supply a value.
    """
    if not challengers:
        reply = await ask(moderator, prompt, parse, reask, evaluated)
        return reply.reading, [_trace("single", moderator, reply)]
    draft = await ask(moderator, prompt, parse, reask, evaluated)
    trace = [_trace("draft", moderator, draft)]
    answers = await gather_settled(
        *(
            ask(
                agent,
                challenge_prompt(prompt, draft.text, i, len(challengers)),
                parse,
                0,
                evaluated,
            )
            for i, agent in enumerate(challengers)
        )
    )
    for i, (agent, answer) in enumerate(zip(challengers, answers, strict=True)):
        trace.append(_trace(f"challenger{i + 1}", agent, answer))
    synthesis = synthesis_prompt(prompt, draft.text, [a.text for a in answers])
    final = await ask(moderator, synthesis, parse, reask, evaluated)
    trace.append(_trace("synthesis", moderator, final))
    return final.reading, trace
