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

from elitr_bench.judges.asking import Asked, ask, draws, policy_of
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.mesa.prompts import challenge_prompt, synthesis_prompt
from elitr_bench.judges.reading import Grammar, Reading
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

    async def respond(
        self, prompt: str, grammar: Grammar, reask: int = 0, evaluated: Sequence[str] = ()
    ) -> Asked:
        """The agent's reply to ``prompt``, asked through the one loop (:func:`.asking.ask`).

        Attempt ``a`` is draw ``a``; a reply that does not read completely is restated or
        asked again up to ``reask`` times, as in every family.
        """
        return await ask(
            self.client,
            draws(self.config, prompt),
            grammar,
            reask + 1,
            evaluated=evaluated,
            policy=policy_of(self.config),
        )


def _trace(role: str, agent: Agent, asked: Asked) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "role": role,
        "agent": agent.label,
        "raw": asked.kept,
        "valid": asked.reading.complete,
        "reason": asked.reading.reason,
        "attempts": asked.attempts,
    }
    if asked.restatement:  # the values restated from ``raw``, kept apart from its words
        trace["restatement"] = asked.restatement
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
        reply = await moderator.respond(prompt, parse, reask, evaluated)
        return reply.reading, [_trace("single", moderator, reply)]
    draft = await moderator.respond(prompt, parse, reask, evaluated)
    trace = [_trace("draft", moderator, draft)]
    answers = await gather_settled(
        *(
            agent.respond(
                challenge_prompt(prompt, draft.answer, i, len(challengers)), parse, 0, evaluated
            )
            for i, agent in enumerate(challengers)
        )
    )
    for i, (agent, answer) in enumerate(zip(challengers, answers, strict=True)):
        trace.append(_trace(f"challenger{i + 1}", agent, answer))
    synthesis = synthesis_prompt(prompt, draft.answer, [a.answer for a in answers])
    final = await moderator.respond(synthesis, parse, reask, evaluated)
    trace.append(_trace("synthesis", moderator, final))
    return final.reading, trace
