"""One CREAM comparison through the shared judge client: extraction, then two alignments.

Calls per comparison: one extraction of key facts from the two summaries concatenated,
then one alignment per summary as a follow-up turn of that conversation (the key facts
are the judge's own previous answer). The two alignments run concurrently. A reply that
cannot be used is asked again with the next draw (``reask=`` of the judge spec, as for
every judge of the project); each draw is a separate cache entry, so nothing is paid twice.
A reply that is still unusable after the re-asks (or has no text at all) leaves the
comparison unscored with the reason; it is never turned into key facts or a score.

The extraction paragraph is the two summaries' lines, whatever the unit; only the
alignment prompt numbers sentences (``unit=sentence``, the paper's) or lines. The
extraction turn is therefore the same request, and the same cache entry, for both units.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elitr_bench.judges.asking import Asked, ask, draws, policy_of
from elitr_bench.judges.cream.parse import KEY_FACTS, AlignmentGrammar
from elitr_bench.judges.cream.prompts import (
    DEFAULT_MAX_KEY_FACTS,
    alignment_prompt,
    extraction_prompt,
    paragraph_of,
    prompt_hash,
)
from elitr_bench.judges.cream.scoring import (
    Comparison,
    SideScore,
    comparison_status,
    score_side,
    unscored_side,
)
from elitr_bench.judges.cream.segment import DEFAULT_UNIT, Summary, check_unit
from elitr_bench.judges.identity import JudgeConfig, judge_endpoint
from elitr_bench.llm.client import JudgeClient

CALLS_PER_COMPARISON = 3
"""Extraction + one alignment per summary (re-asks of unusable replies come on top)."""


@dataclass(frozen=True)
class Entrant:
    """One summary entering a comparison: its system and its text, divided both ways."""

    system: str
    summary: Summary

    @classmethod
    def of(cls, system: str, text: str) -> Entrant:
        """An entrant from a system's minutes text."""
        return cls(system, Summary.of(text))

    @property
    def lines(self) -> tuple[str, ...]:
        """The summary's non-empty lines."""
        return self.summary.lines


def cream_identity(
    config: JudgeConfig, max_key_facts: int, unit: str = DEFAULT_UNIT
) -> dict[str, Any]:
    """What a CREAM score depends on: judge model and endpoint, prompts, limit, unit, sampling.

    The unit is part of it because it changes what the alignment prompt numbers and what
    conciseness divides by: an arena folder judged by lines refuses sentences (and back).
    The endpoint is recorded only when it is not the default OpenAI API, so arena folders
    judged there keep their identity, and one folder refuses judges of another server.
    """
    ident: dict[str, Any] = {
        "method": "cream",
        "backend": config.backend,
        "model": config.model,
        "max_key_facts": max_key_facts,
        "unit": check_unit(unit),
        "prompt_hash": prompt_hash(max_key_facts),
        "temperature": config.temperature,
        "top_p": config.top_p,
        "seed": config.seed,
        "max_tokens": config.max_tokens,
    }
    endpoint = judge_endpoint(config)
    if endpoint:
        ident["endpoint"] = endpoint
    return ident


class CreamJudge:
    """Runs CREAM comparisons for one judge config.

    Args:
        config: The parsed judge spec (model, sampling, seed, re-asks).
        client: The shared client (cache written before use, retries, rate limits).
        max_key_facts: "at most N" key facts in the extraction prompt.
        unit: What the alignment prompt numbers and conciseness divides by
            (``sentence``, the paper's, or ``line``).
    """

    def __init__(
        self,
        config: JudgeConfig,
        client: JudgeClient,
        max_key_facts: int = DEFAULT_MAX_KEY_FACTS,
        unit: str = DEFAULT_UNIT,
    ) -> None:
        self.config = config
        self.client = client
        self.max_key_facts = max_key_facts
        self.unit = check_unit(unit)

    def identity(self) -> dict[str, Any]:
        """What every CREAM score of this judge depends on (stored with each comparison)."""
        return cream_identity(self.config, self.max_key_facts, self.unit)

    def unscored(self, entrant: Entrant, reason: str, raw: str = "") -> SideScore:
        """A side of ``entrant`` left unscored with ``reason``."""
        return unscored_side(
            entrant.system,
            len(entrant.summary.lines),
            reason,
            raw,
            n_sentences=len(entrant.summary.sentences),
            unit=self.unit,
        )

    async def _extract(
        self, prompt: str, evaluated: Sequence[str]
    ) -> tuple[tuple[str, ...], Asked, str, tuple[tuple[str, str], ...]]:
        """Key facts, the ask, the reason if there are none, and the chat so far.

        The alignments follow that chat: the extraction turn, and its restatement turn if
        it had one (the alignment prompt refers to the key facts of the judge's reply,
        which the restatement lists).
        """
        asked = await ask(
            self.client,
            draws(self.config, prompt),
            KEY_FACTS,
            self.config.reask + 1,
            evaluated=evaluated,
            policy=policy_of(self.config),
        )
        facts = asked.reading.value("key_facts")
        history: tuple[tuple[str, str], ...] = (("user", prompt), ("assistant", asked.reply))
        if asked.restated:
            history = (
                *history,
                ("user", KEY_FACTS.restatement.message),
                ("assistant", asked.restatement),
            )
        if facts is not None:
            return tuple(facts), asked, "", history
        n = asked.attempts
        reason = f"{asked.reading.reason} (asked {n} time{'s' if n > 1 else ''})"
        return (), asked, reason, history

    async def _align(
        self,
        entrant: Entrant,
        key_facts: Sequence[str],
        history: tuple[tuple[str, str], ...],
    ) -> SideScore:
        summary = entrant.summary
        prompt = alignment_prompt(summary.units(self.unit))
        grammar = AlignmentGrammar(tuple(key_facts), len(summary.units(self.unit)))
        asked = await ask(
            self.client,
            draws(self.config, prompt, history),
            grammar,
            self.config.reask + 1,
            policy=policy_of(self.config),
        )
        return score_side(
            entrant.system,
            len(summary.lines),
            key_facts,
            asked.kept,
            attempts=asked.attempts,
            n_sentences=len(summary.sentences),
            unit=self.unit,
            finish_reason=asked.finish_reasons[asked.best if asked.reading.complete else -1],
            reading=asked.reading,
            restatement=asked.restatement,
        )

    async def compare(self, meeting_id: str, first: Entrant, second: Entrant) -> Comparison:
        """Compare two summaries of a meeting with ``first`` first in the paragraph."""
        if not first.lines or not second.lines:
            empty = first.system if not first.lines else second.system
            reason = f"summary of {empty} has no lines"
            return Comparison(
                meeting_id,
                first.system,
                second.system,
                (),
                (self.unscored(first, reason), self.unscored(second, reason)),
                "unscored",
                reason,
                judge=self.identity(),
            )
        prompt = extraction_prompt(paragraph_of(first.lines, second.lines), self.max_key_facts)
        key_facts, extracted, reason, history = await self._extract(
            prompt, (*first.lines, *second.lines)
        )
        raw = extracted.kept  # the reply read or restated, else the last attempt
        restatement = extracted.restatement
        if not key_facts:
            sides = (self.unscored(first, reason), self.unscored(second, reason))
            return Comparison(
                meeting_id,
                first.system,
                second.system,
                (),
                sides,
                "unscored",
                reason,
                raw,
                self.identity(),
                restatement,
            )
        # Both alignments finish (or fail) before the comparison does: no request is left
        # running behind a failed sibling, so call counts and the cache stay exact.
        done = await asyncio.gather(
            self._align(first, key_facts, history),
            self._align(second, key_facts, history),
            return_exceptions=True,
        )
        for outcome in done:
            if isinstance(outcome, BaseException):
                raise outcome
        one, two = (d for d in done if isinstance(d, SideScore))
        reasons = [f"{s.system}: {s.reason}" for s in (one, two) if s.reason]
        return Comparison(
            meeting_id,
            first.system,
            second.system,
            key_facts,
            (one, two),
            comparison_status((one, two)),
            "; ".join(reasons),
            raw,
            self.identity(),
            restatement,
        )
