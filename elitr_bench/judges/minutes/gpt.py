"""The AutoMin 2023 GPT judges ``gpt-art`` and ``gpt-afgr`` (Sec. 6.3, Figs. 17-19).

One prompt per minutes asks for every criterion on 0-10; each criterion is parsed on its
own, so an answer that forgets one leaves only that metric unscored. Before judging, the
transcript is filler-compressed (Sec. 6.3; ``filler=false`` in the judge spec sends the
transcript unchanged). Compression is shared by every system's minutes of a meeting: it is
computed once per transcript per run and its per-turn classifications are cached by the
client like any paid completion.

Sampling: ``samples=k`` asks k times (draws 0..k-1) and averages each criterion over the
samples that scored it; an answer missing a criterion is asked again up to ``reask``
times (further draws) and the most complete answer of a sample is kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import statistics
from typing import TYPE_CHECKING, Any

from elitr_bench.judges.backends.base import CompletionRequest
from elitr_bench.judges.client import gather_settled
from elitr_bench.judges.minutes.base import MinutesAssessment, MinutesItem, status_for
from elitr_bench.judges.minutes.filler import (
    FILLER_MAX_TOKENS,
    Compression,
    classification_calls,
    classification_chars,
    compress_transcript,
)
from elitr_bench.judges.minutes.prompts import (
    AFGR,
    ART,
    MinutesPrompt,
    ParsedScores,
    parse_scores,
)
from elitr_bench.judges.minutes.registry import register_method

if TYPE_CHECKING:
    from elitr_bench.judges.client import JudgeClient
    from elitr_bench.judges.config import JudgeConfig


class GPTMinutesJudge:
    """A :class:`~elitr_bench.judges.minutes.base.MinutesMethod` for one AutoMin prompt.

    Args:
        prompt: :data:`ART` or :data:`AFGR`.
        config: The judge config (sampling, ``samples``, ``reask``, ``filler``).
    """

    def __init__(self, prompt: MinutesPrompt, config: JudgeConfig) -> None:
        self.prompt = prompt
        self.config = config
        self.name = prompt.name
        self.metrics = prompt.metrics
        self.prompt_hash = prompt.prompt_hash
        self._compressions: dict[str, asyncio.Task[Compression]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def planned_calls(self, item: MinutesItem) -> int:
        """Classifier calls (if compressing) plus ``samples * (reask + 1)`` judge calls."""
        calls = self.config.samples * (self.config.reask + 1)
        if self.config.filler:
            calls += classification_calls(item.transcript)
        return calls

    def planned_prompt_chars(self, item: MinutesItem) -> int:
        """Characters sent at most (uncompressed transcript as the upper bound)."""
        judge = len(self.prompt.build(item.transcript, item.minutes))
        chars = judge * self.config.samples * (self.config.reask + 1)
        if self.config.filler:
            chars += classification_chars(item.transcript)
        return chars

    def planned_completion_tokens(self, item: MinutesItem) -> int:
        """Output tokens at most: judge calls at ``max_tokens``, classifications at 8."""
        tokens = self.config.samples * (self.config.reask + 1) * self.config.max_tokens
        if self.config.filler:
            tokens += FILLER_MAX_TOKENS * classification_calls(item.transcript)
        return tokens

    async def _compression(self, transcript: str, client: JudgeClient) -> Compression:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._compressions, self._loop = {}, loop
        key = hashlib.sha256(transcript.encode("utf-8")).hexdigest()
        task = self._compressions.get(key)
        if task is None:
            task = asyncio.ensure_future(compress_transcript(transcript, client, self.config.seed))
            self._compressions[key] = task
        return await task

    def _request(self, prompt: str, draw: int) -> CompletionRequest:
        seed = None if self.config.seed is None else self.config.seed + draw
        return CompletionRequest(
            prompt, self.config.temperature, self.config.top_p, self.config.max_tokens, seed
        )

    async def _sample(
        self, prompt: str, index: int, client: JudgeClient
    ) -> tuple[ParsedScores, list[str]]:
        best: ParsedScores | None = None
        raws: list[str] = []
        for attempt in range(self.config.reask + 1):
            draw = index + self.config.samples * attempt
            completion = await client.complete(self._request(prompt, draw), draw)
            raws.append(completion.text)
            parsed = parse_scores(completion.text, self.prompt)
            if best is None or parsed.n_scored > best.n_scored:
                best = parsed
            if parsed.complete:
                break
        assert best is not None
        return best, raws

    async def assess(self, item: MinutesItem, client: JudgeClient) -> MinutesAssessment:
        """Compress the transcript (if enabled), ask ``samples`` times, parse each criterion."""
        details: dict[str, Any] = {"prompt": self.prompt.figure, "prompt_hash": self.prompt_hash}
        transcript = item.transcript
        if self.config.filler:
            compression = await self._compression(item.transcript, client)
            transcript = compression.text
            details["filler"] = compression.to_dict()
        prompt = self.prompt.build(transcript, item.minutes)
        results = await gather_settled(
            *(self._sample(prompt, i, client) for i in range(self.config.samples))
        )
        scores: dict[str, float | None] = {}
        reasons: list[str] = []
        per_sample: dict[str, list[float | None]] = {}
        for criterion, metric in self.prompt.criteria.items():
            values = [parsed.values[criterion] for parsed, _ in results]
            per_sample[metric] = values
            scored = [v for v in values if v is not None]
            scores[metric] = statistics.fmean(scored) if scored else None
            if not scored:
                reasons.append(next(p.reasons[criterion] for p, _ in results))
        details["raw"] = [raws for _, raws in results]
        details["samples"] = per_sample
        return MinutesAssessment(
            meeting_id=item.meeting_id,
            system=item.system,
            method=self.name,
            scores=scores,
            status=status_for(scores),
            reason="; ".join(reasons),
            details=details,
        )


def make_art(config: JudgeConfig) -> GPTMinutesJudge:
    """GPT-ART (Fig. 17): adequacy, relevance, topicality."""
    return GPTMinutesJudge(ART, config)


def make_afgr(config: JudgeConfig) -> GPTMinutesJudge:
    """GPT-AFGR (Fig. 18): adequacy, fluency, grammaticality, relevance."""
    return GPTMinutesJudge(AFGR, config)


register_method(ART.name, make_art)
register_method(AFGR.name, make_afgr)
