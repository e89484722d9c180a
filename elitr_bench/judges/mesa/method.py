"""MESA as a minutes method: per error type three steps (optionally debated), then Eq. 1-2.

For every error type, concurrently with the other types: identification (Fig. 3) ->
verification of the candidates (Fig. 4) -> scoring (Fig. 5). Each step's reply is validated
(``parsing.py``); a type any of whose steps never validates is *unscored* and named in the
assessment's reason, and quality is computed from the scored types only (status
``partial``). Registered as the minutes method ``mesa``, so ``openai:<m>,method=mesa`` works
in the lm-eval minutes tasks, ``elitr-bench score`` and ``elitr-bench mesa``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from elitr_bench.judges.asking import request_for
from elitr_bench.judges.identity import JudgeConfig, judge_endpoint
from elitr_bench.judges.mesa.aggregate import overall
from elitr_bench.judges.mesa.debate import Agent, run_step
from elitr_bench.judges.mesa.error_types import ErrorType
from elitr_bench.judges.mesa.fit import (
    MESA_WAY_OUT,
    Budget,
    Fitted,
    fit,
    overlong_pairs,
    window_budget,
)
from elitr_bench.judges.mesa.options import CHALLENGERS, MesaOptions, mesa_options
from elitr_bench.judges.mesa.parsing import (
    IDENTIFICATION,
    SCORING,
    VERIFICATION,
    type_score,
)
from elitr_bench.judges.mesa.prompts import (
    CHALLENGE,
    CONSOLIDATION,
    FEEDBACK,
    GUIDANCE_BLOCK,
    PERSPECTIVES,
    PREFIX_HEAD,
    SYNTHESIS,
    TEMPLATES,
    Step,
    step_prompt,
)
from elitr_bench.judges.overlength import Overlong
from elitr_bench.judges.reading import Grammar
from elitr_bench.judges.summary.base import (
    MinutesAssessment,
    MinutesItem,
    MinutesMethod,
    status_for,
)
from elitr_bench.judges.summary.registry import register_method
from elitr_bench.judges.usage import priced_usage
from elitr_bench.llm.client import JudgeClient, gather_settled
from elitr_bench.llm.context_window import JudgeWindow, judge_window

METHOD = "mesa"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@dataclass
class TypeResult:
    """One error type's outcome for one summary.

    Attributes:
        code: Type code.
        rating: Step 3 rating 0-5 (None = unscored).
        confidence: Step 3 confidence 0-10 (None = unscored).
        reasoning: Step 3 reasoning.
        candidates: Instances found in step 1 (None if step 1 never validated).
        instances: Instances step 2 confirmed (``error_exists``), None if not reached.
        reason: Why the type is unscored ("" when scored).
        verified: Step 2 instances as shown to step 3.
        steps: Per step, the trace of every call (role, agent, raw reply, validity).
    """

    code: str
    rating: float | None = None
    confidence: float | None = None
    reasoning: str = ""
    candidates: int | None = None
    instances: int | None = None
    reason: str = ""
    verified: list[dict[str, Any]] = field(default_factory=list)
    steps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (raw traces under ``steps``)."""
        return {
            "rating": self.rating,
            "confidence": self.confidence,
            "instances": self.instances,
            "candidates": self.candidates,
            "reasoning": self.reasoning,
            "status": "scored" if self.rating is not None else "unscored",
            "reason": self.reason,
            "verified": self.verified,
            "steps": self.steps,
        }


class MesaMethod(MinutesMethod):
    """The ``mesa`` minutes method (see the module docstring).

    Args:
        config: The judge config (sampling, ``reask``, MESA options).
        options: Pre-parsed options (parsed from ``config`` when omitted).
    """

    name = METHOD

    def __init__(self, config: JudgeConfig, options: MesaOptions | None = None) -> None:
        self.config = config
        self.options = options or mesa_options(config)
        self.types = self.options.error_types
        self.metrics: tuple[str, ...] = (
            "mesa_quality",
            *(f"mesa_{code}" for code in self.types.codes),
        )
        self.prompt_hash = self._prompt_hash()
        self._pool: dict[int, tuple[Agent, ...]] = {}

    # --- identity and planning ---------------------------------------------------------
    def _prompt_hash(self) -> str:
        guidance = self.options.guidance
        blob = _dumps(
            {
                "templates": dict(TEMPLATES),
                "layout": self.options.layout,
                "prefix_head": PREFIX_HEAD if self.options.layout == "prefix" else "",
                "debate": [CHALLENGE, SYNTHESIS, list(PERSPECTIVES)]
                if self.options.debate != "none"
                else [],
                "types": [[t.code, t.criteria, t.weight] for t in self.types],
                "guidance": [GUIDANCE_BLOCK, dict(guidance.texts)] if guidance else [],
                "selftrain": [FEEDBACK, CONSOLIDATION],
            }
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def debating(self) -> bool:
        """Whether steps are debated (MADP-S or MADP-M)."""
        return self.options.debate != "none"

    def calls_per_step(self, *, upper: bool = False) -> int:
        """Completions per step: 1 (single) or draft + 3 challengers + synthesis = 5.

        With ``upper``, every validated reply is assumed to need all ``reask`` re-asks.
        """
        tries = self.config.reask + 1 if upper else 1
        return tries + (CHALLENGERS + tries if self.debating else 0)

    def planned_restatements(self, item: MinutesItem) -> int:
        """One restatement turn at most per scoring-step ask (step 3 of every type)."""
        return len(self.types) * self.calls_per_step()

    def planned_calls(self, item: MinutesItem) -> int:
        """Upper bound of completions for one summary (all re-asks and restatements used)."""
        return len(self.types) * 3 * self.calls_per_step(upper=True) + self.planned_restatements(
            item
        )

    def planned_prompt_chars(self, item: MinutesItem) -> int:
        """Rough characters sent for one summary (expected calls; instances ~1,500 chars)."""
        return sum(self.type_prompt_chars(item, etype) for etype in self.types)

    def type_prompt_chars(self, item: MinutesItem, etype: ErrorType) -> int:
        """Rough characters the three steps of one type send (expected calls)."""
        guidance = self.options.guidance
        extra = len(etype.criteria) + (len(guidance.for_type(etype.code)) if guidance else 0)
        base = len(item.transcript) + len(item.minutes) + 1600 + extra
        chars = 3 * base + 2 * 1500
        if self.debating:
            # draft + 3 challengers (prompt + draft) + synthesis (prompt + 4 answers)
            chars = 5 * chars + 3 * (3 * 1500) + 3 * (4 * 1500)
        return chars

    def cached_types(self, item: MinutesItem, client: JudgeClient) -> list[str]:
        """Types whose first call for this item is in the cache (a finished or resumed run).

        Only the first prompt of a type can be known before calling (later ones quote
        replies), so a type counts as cached when its identification (or debate draft)
        completion is; the plan then leaves its calls out of the cost preview.
        """
        transcript = self.fitted(item).transcript
        guidance = self.options.guidance
        out = []
        for etype in self.types:
            prompt = step_prompt(
                "identification",
                etype,
                summary=item.minutes,
                transcript=transcript,
                guidance=guidance.for_type(etype.code) if guidance else "",
                layout=self.options.layout,
            )
            if client.cache.get(client.key_for(request_for(self.config, prompt, 0), 0)):
                out.append(etype.code)
        return out

    def identity(self) -> dict[str, Any]:
        """What MESA's scores depend on besides the judge model and sampling."""
        opts = self.options
        return {
            "method": METHOD,
            "prompt_hash": self.prompt_hash,
            "debate": opts.debate,
            "pool": [_member(c) for c in opts.pool],
            "layout": opts.layout,
            "error_types": {t.code: t.weight for t in self.types},
            "error_types_file": opts.error_types.source,
            "guidance_file": opts.guidance.source if opts.guidance else "",
        }

    # --- agents --------------------------------------------------------------------------
    def _challengers(self, client: JudgeClient) -> tuple[Agent, ...]:
        if not self.debating:
            return ()
        if self.options.debate == "same":
            me = Agent(self.config, client)
            return (me,) * CHALLENGERS
        cached = self._pool.get(id(client))
        if cached is None:
            from elitr_bench.judges.summary.run import make_client

            # One cache for the whole debate: the members share the caller's.
            members = [
                Agent(member, make_client(member, cache=client.cache))
                for member in self.options.pool
            ]
            cached = tuple(members[i % len(members)] for i in range(CHALLENGERS))
            self._pool[id(client)] = cached
        return cached

    async def aclose(self) -> None:
        """Close the pool members' backends (the main client belongs to the caller)."""
        seen: set[int] = set()
        for agents in self._pool.values():
            for agent in agents:
                if id(agent.client) not in seen:
                    seen.add(id(agent.client))
                    await agent.client.backend.aclose()
        self._pool.clear()

    def pool_usage(self) -> dict[str, dict[str, Any]]:
        """Usage of each pool member's client (MADP-M)."""
        out: dict[str, dict[str, Any]] = {}
        for agents in self._pool.values():
            for agent in agents:
                out[agent.label] = priced_usage(agent.client.usage)
        return out

    # --- assessment ----------------------------------------------------------------------
    def budget(self) -> Budget:
        """Prompt budget for the overlength check."""
        guidance = self.options.guidance
        extra = max(
            len(t.criteria) + (len(guidance.for_type(t.code)) if guidance else 0)
            for t in self.types
        )
        return window_budget(self.window, self.config.max_tokens, self.debating, extra)

    @property
    def window(self) -> JudgeWindow:
        """The judge's context window (``context=``, the model table or the hf config)."""
        return judge_window(self.config)

    def context_over(self, items: Sequence[MinutesItem]) -> list[Overlong | None]:
        """Per item: its longest prompt when it cannot fit (``overlength=error`` only)."""
        budget = self.budget()
        return [
            next(
                iter(
                    overlong_pairs(
                        [(i.meeting_id, i.transcript, i.minutes)], budget, self.options.overlength
                    )
                ),
                None,
            )
            for i in items
        ]

    def context_way_out(self) -> tuple[str, ...]:
        """MESA's own ways out of an over-long prompt."""
        return (MESA_WAY_OUT,)

    def fitted(self, item: MinutesItem) -> Fitted:
        """The transcript this item is assessed with (overlength policy applied)."""
        return fit(
            item.transcript, item.minutes, self.budget(), self.options.overlength, item.meeting_id
        )

    async def assess_type(
        self,
        etype: ErrorType,
        item: MinutesItem,
        transcript: str,
        moderator: Agent,
        challengers: tuple[Agent, ...],
    ) -> TypeResult:
        """The three steps for one error type (each debated when configured)."""
        guidance = self.options.guidance.for_type(etype.code) if self.options.guidance else ""
        common: dict[str, Any] = {
            "summary": item.minutes,
            "transcript": transcript,
            "guidance": guidance,
            "layout": self.options.layout,
        }
        result = TypeResult(etype.code)
        reask = self.config.reask

        async def listing_step(name: Step, parse: Grammar, **fields: Any) -> Any:
            """Steps 1-2: their instances, or None with the reason recorded in ``result``."""
            prompt = step_prompt(name, etype, **fields, **common)
            reading, result.steps[name] = await run_step(
                prompt, parse, moderator, challengers, reask=reask
            )
            instances = reading.value("instances")
            if instances is None:
                result.reason = reading.reason
            return instances

        candidates = await listing_step("identification", IDENTIFICATION)
        if candidates is None:
            return result
        result.candidates = len(candidates)

        listing = _dumps([c.to_dict() for c in candidates])
        verified = await listing_step("verification", VERIFICATION, list_of_instances=listing)
        if verified is None:
            return result
        result.verified = [v.to_dict() for v in verified]
        result.instances = sum(v.error_exists for v in verified)

        # Steps 1-2 quote the summary by design (their instances); in step 3 a quoted
        # summary line (one that says "rating: 4") must not lend the judge a value.
        prompt = step_prompt("scoring", etype, list_of_instances=_dumps(result.verified), **common)
        scored, result.steps["scoring"] = await run_step(
            prompt, SCORING, moderator, challengers, reask=reask, evaluated=(item.minutes,)
        )
        final = result.steps["scoring"][-1]["raw"]
        verdict = type_score(scored, final)
        if verdict is None:
            result.reason = scored.reason
            return result
        result.rating = verdict.rating
        result.confidence = verdict.confidence
        result.reasoning = verdict.reasoning
        return result

    async def assess(self, item: MinutesItem, client: JudgeClient) -> MinutesAssessment:
        """Assess one summary: all types concurrently, then Eq. 1-2.

        Raises:
            GuidanceError: The guidance in use was trained on this item's meeting.
        """
        return await self.assess_item(item, client)

    async def assess_item(
        self, item: MinutesItem, client: JudgeClient, *, feedback_run: bool = False
    ) -> MinutesAssessment:
        """:meth:`assess`; ``feedback_run`` (self-training) may use the guidance's meetings."""
        if self.options.guidance is not None and not feedback_run:
            self.options.guidance.check_disjoint([item.meeting_id])
        fitted = self.fitted(item)
        transcript_info = {
            "action": fitted.action,
            "estimated_tokens": fitted.required,
            "removed_tokens": fitted.removed_tokens,
        }
        if fitted.action == "skipped":
            return MinutesAssessment(
                meeting_id=item.meeting_id,
                system=item.system,
                method=METHOD,
                scores=dict.fromkeys(self.metrics),
                status="skipped",
                reason=(
                    f"overlength=skip: {fitted.required:,} tokens exceed the judge's context "
                    f"of {self.budget().context:,}"
                ),
                details={"transcript": transcript_info},
            )
        moderator = Agent(self.config, client)
        challengers = self._challengers(client)
        results = await gather_settled(
            *(
                self.assess_type(etype, item, fitted.transcript, moderator, challengers)
                for etype in self.types
            )
        )
        by_code = {r.code: r for r in results}
        ratings = {
            r.code: (r.rating, r.confidence)
            if r.rating is not None and r.confidence is not None
            else None
            for r in results
        }
        total = overall(ratings, self.types.weights())
        scores: dict[str, float | None] = {"mesa_quality": total.quality}
        scores.update({f"mesa_{code}": by_code[code].rating for code in self.types.codes})
        unscored = [r.code for r in results if r.rating is None]
        reasons = [f"{r.code}: {r.reason}" for r in results if r.rating is None]
        if total.quality is None and not unscored:
            reasons.append("every scored type has confidence 0, so Eq. 1 is undefined")
        return MinutesAssessment(
            meeting_id=item.meeting_id,
            system=item.system,
            method=METHOD,
            scores=scores,
            status=status_for(scores),
            reason=("unscored types: " + "; ".join(reasons)) if reasons else "",
            details={
                "impact": total.impact,
                "quality": total.quality,
                "used_types": list(total.used),
                "unscored_types": unscored,
                "types": {code: by_code[code].to_dict() for code in self.types.codes},
                "transcript": transcript_info,
                "mesa": self.identity(),
            },
        )


def _member(config: JudgeConfig) -> str:
    """A pool member in the identity: ``backend:model``, ``@endpoint`` when non-default."""
    endpoint = judge_endpoint(config)
    return f"{config.backend}:{config.model}" + (f"@{endpoint}" if endpoint else "")


def _factory(config: JudgeConfig) -> MesaMethod:
    return MesaMethod(config)


register_method(METHOD, _factory, replace=True)
