"""The AutoMin 2023 GPT judges ``gpt-art`` and ``gpt-afgr`` (Sec. 6.3, Figs. 17-19).

One prompt per minutes asks for every criterion on 0-10; each criterion is parsed on its
own, so an answer that forgets one leaves only that metric unscored. Before judging, the
transcript is filler-compressed (Sec. 6.3; ``filler=false`` in the judge spec sends the
transcript unchanged). Compression is shared by every system's minutes of a meeting: it is
computed once per transcript per run and its per-turn classifications are cached by the
client like any paid completion. ``filler_model=`` classifies with another model through
a second client on the same backend options and cache; its calls are planned, counted and
priced on their own. Scores judged on a transcript with unclassified turns are kept and
flagged (``details.filler.flagged`` and the ``filler_unclassified_turns`` metric).

The paper gives no sampling for these judges, so their spec family (``minutes``)
defaults to greedy decoding; ``temperature=``/``top_p=`` in the spec still apply.

Scores are read conservatively (:mod:`.score_parsing`): a criterion whose answer is
missing, conflicting (different values) or off the 0-10 scale is unscored, its reason is
logged per metric (``details.unscored``) and the answer is asked again like a missing one.

Sampling: ``samples=k`` asks k times (draws 0..k-1) and averages each criterion over the
samples that scored it; an answer missing a criterion is asked again up to ``reask``
times (further draws) and the most complete answer of a sample is kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from elitr_bench.judges.asking import Asked, ask, draws, policy_of, request_for
from elitr_bench.judges.minutes.family import (
    FILLER_FLAGGED,
    FILLER_UNCLASSIFIED,
    TOKENS_SAVED,
    filler_metric_entries,
    minutes_options,
)
from elitr_bench.judges.minutes.filler import (
    FILLER_MAX_TOKENS,
    Compression,
    classification_calls,
    classification_chars,
    cleaned_turns,
    compress,
    compress_transcript,
    filler_flag,
)
from elitr_bench.judges.minutes.prompts import AFGR, ART, SCALE_LOW, MinutesPrompt
from elitr_bench.judges.overlength import CONTEXT_DETAIL, Overlong
from elitr_bench.judges.reading import shows_format
from elitr_bench.judges.summary.base import (
    MinutesAssessment,
    MinutesItem,
    MinutesMethod,
    SideCalls,
    status_for,
)
from elitr_bench.judges.summary.registry import register_method
from elitr_bench.judges.summary.run import make_client, usage_of
from elitr_bench.llm.client import gather_settled
from elitr_bench.llm.context_window import judge_window

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig
    from elitr_bench.llm.client import JudgeClient


class GPTMinutesJudge(MinutesMethod):
    """A :class:`~elitr_bench.judges.summary.base.MinutesMethod` for one AutoMin prompt.

    Args:
        prompt: :data:`ART` or :data:`AFGR`.
        config: The judge config (sampling, ``samples``, ``reask``, ``filler``).
    """

    flag_key = FILLER_FLAGGED  # the meetings judged with unclassified turns, in the usage

    def __init__(self, prompt: MinutesPrompt, config: JudgeConfig) -> None:
        self.prompt = prompt
        self.config = config
        self.name = prompt.name
        self.metrics = prompt.metrics
        self.prompt_hash = prompt.prompt_hash
        self.filler = minutes_options(config).filler
        self.filler_config = self._filler_config(config)
        self._compressions: dict[str, asyncio.Task[Compression]] = {}
        self._classifiers: dict[int, JudgeClient] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def _filler_config(config: JudgeConfig) -> JudgeConfig | None:
        """The separate classifier's config (``filler_model=``), None for the judge's own."""
        options = minutes_options(config)
        model = options.filler_model
        if not options.filler or not model or model == config.model:
            return None
        return replace(config, model=model, spec=f"{config.spec} (filler_model {model})")

    def _classifier_calls(self, item: MinutesItem) -> tuple[int, int, int]:
        """Calls, prompt characters and output tokens of the classifier at most."""
        if not self.filler:
            return 0, 0, 0
        reask = self.config.reask
        calls = classification_calls(item.transcript, reask)
        return calls, classification_chars(item.transcript, reask), FILLER_MAX_TOKENS * calls

    def planned_restatements(self, item: MinutesItem) -> int:
        """At most one restatement turn per sample."""
        return self.config.samples

    def planned_calls(self, item: MinutesItem) -> int:
        """``samples * (reask + 2)`` judge calls (a restatement each), plus classifications."""
        calls = self.config.samples * (self.config.reask + 2)
        if self.filler_config is None:
            calls += self._classifier_calls(item)[0]
        return calls

    def planned_prompt_chars(self, item: MinutesItem) -> int:
        """Characters the judge's model is sent at most (uncompressed transcript)."""
        judge = len(self.prompt.build(item.transcript, item.minutes))
        chars = judge * self.config.samples * (self.config.reask + 2)
        if self.filler_config is None:
            chars += self._classifier_calls(item)[1]
        return chars

    def planned_completion_tokens(self, item: MinutesItem) -> int:
        """Output tokens at most: judge calls at ``max_tokens``, classifications at 8."""
        tokens = self.config.samples * (self.config.reask + 2) * self.config.max_tokens
        if self.filler_config is None:
            tokens += self._classifier_calls(item)[2]
        return tokens

    def planned_side_calls(self, item: MinutesItem) -> Sequence[SideCalls]:
        """The ``filler_model`` classifier's calls, priced at that model (none by default)."""
        if self.filler_config is None:
            return ()
        calls, chars, tokens = self._classifier_calls(item)
        return (SideCalls("filler_classifier", self.filler_config, calls, chars, tokens),)

    def _classifier(self, client: JudgeClient) -> JudgeClient:
        """The judge's client, or one for ``filler_model`` sharing the judge's cache."""
        if self.filler_config is None:
            return client
        found = self._classifiers.get(id(client))
        if found is None:
            found = make_client(self.filler_config, cache=client.cache)
            self._classifiers[id(client)] = found
        return found

    async def finish_run(self) -> dict[str, dict[str, Any]]:
        """Close the classifier clients this method opened; their usage by label."""
        usage: dict[str, dict[str, Any]] = {}
        for classifier in self._classifiers.values():
            assert self.filler_config is not None
            usage["filler_classifier"] = usage_of(self.filler_config, classifier)
            await classifier.aclose()  # the cache is the judge's: not closed here
        self._classifiers.clear()
        return usage

    # --- context window -----------------------------------------------------------------
    def _bounds(self, item: MinutesItem) -> tuple[str, str]:
        """The shortest and longest transcript the judge prompt can carry.

        Without compression both are the transcript. With it, the classifier's answers
        are not known before it is paid, but every turn keeps at least its speaker label
        and at most its cleaned text ("eh" and tags removed), so the prompt lies between.
        """
        if not self.filler:
            return item.transcript, item.transcript
        turns = cleaned_turns(item.transcript)
        shortest = compress(item.transcript, turns, ["filler"] * len(turns)).text
        longest = compress(item.transcript, turns, ["content"] * len(turns)).text
        return shortest, longest

    def _over(self, items: Sequence[MinutesItem], longest: bool) -> list[Overlong | None]:
        """Per item: its prompt's tokens if the (shortest or longest) prompt does not fit."""
        window = judge_window(self.config)
        if not window.checked:
            return [None] * len(items)
        bounds: dict[str, tuple[str, str]] = {}
        out: list[Overlong | None] = []
        for item in items:
            if item.transcript not in bounds:
                bounds[item.transcript] = self._bounds(item)
            transcript = bounds[item.transcript][1 if longest else 0]
            request = request_for(self.config, self.prompt.build(transcript, item.minutes), 0)
            tokens = window.over(request)
            out.append(
                None if tokens is None else Overlong(item.meeting_id, tokens, request.max_tokens)
            )
        return out

    def context_over(self, items: Sequence[MinutesItem]) -> list[Overlong | None]:
        """Per item: the judge prompt when it cannot fit, even with every turn compressed."""
        return self._over(items, longest=False)

    def context_unsure(self, items: Sequence[MinutesItem]) -> list[Overlong | None]:
        """Per item: the longest prompt when it fits only if compression removes enough.

        Known only after the classifier is paid, so such items are judged and checked
        again before their judge call.
        """
        if not self.filler:
            return [None] * len(items)
        pairs = zip(self._over(items, False), self._over(items, True), strict=True)
        return [longest if shortest is None else None for shortest, longest in pairs]

    @property
    def context_basis(self) -> str:
        """What :meth:`context_over` counts (said in the stop line)."""
        if self.filler:
            return "shortest prompt filler compression can give: every turn reduced to its label"
        return ""

    def extra_metric_entries(self) -> list[dict[str, Any]]:
        """The filler compression's fields, when it compresses (``filler=true``)."""
        return filler_metric_entries() if self.filler else []

    def sample_fields(self, assessment: MinutesAssessment) -> dict[str, float]:
        """The filler compression's fields of one meeting, when it ran.

        ``filler_tokens_saved`` (mean over meetings), ``filler_unclassified_turns`` (turns
        the classifier could not read even when asked again, kept whole; summed) and
        ``filler_flagged`` (the meeting had any; counted).
        """
        filler = assessment.details.get("filler")
        if not isinstance(filler, Mapping) or not isinstance(
            filler.get("tokens_saved"), (int, float)
        ):
            return {}
        unclassified = filler.get("unclassified_turns")
        count = float(unclassified) if isinstance(unclassified, (int, float)) else 0.0
        return {
            TOKENS_SAVED: float(filler["tokens_saved"]),
            FILLER_UNCLASSIFIED: count,
            FILLER_FLAGGED: 1.0 if count > 0 else 0.0,
        }

    def flag(self, assessment: MinutesAssessment) -> str:
        """Scores judged on a transcript with unclassified filler turns (kept whole)."""
        filler = assessment.details.get("filler")
        return filler_flag(filler) if isinstance(filler, Mapping) else ""

    def context_way_out(self) -> tuple[str, ...]:
        """AutoMin's own way to shorten the prompt, when it is not on."""
        if self.filler:
            return ()
        return ("filler=true in the judge spec (AutoMin's filler compression, Sec. 6.3)",)

    async def _compression(self, transcript: str, client: JudgeClient) -> Compression:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._compressions, self._loop = {}, loop
        key = hashlib.sha256(transcript.encode("utf-8")).hexdigest()
        task = self._compressions.get(key)
        if task is None:
            task = asyncio.ensure_future(
                compress_transcript(
                    transcript, self._classifier(client), self.config.seed, self.config.reask
                )
            )
            self._compressions[key] = task
        return await task

    async def _sample(self, prompt: str, index: int, client: JudgeClient, minutes: str) -> Asked:
        asked = await ask(
            client,
            draws(self.config, prompt, index=index, samples=self.config.samples),
            self.prompt.grammar,
            self.config.reask + 1,
            evaluated=(minutes,),
            policy=policy_of(self.config),
        )
        return asked

    async def assess(self, item: MinutesItem, client: JudgeClient) -> MinutesAssessment:
        """Compress the transcript (if enabled), ask ``samples`` times, parse each criterion."""
        details: dict[str, Any] = {"prompt": self.prompt.figure, "prompt_hash": self.prompt_hash}
        transcript = item.transcript
        if self.filler:
            compression = await self._compression(item.transcript, client)
            transcript = compression.text
            details["filler"] = compression.to_dict()  # "flagged" when a turn stayed unread
        prompt = self.prompt.build(transcript, item.minutes)
        window = client.window
        tokens = window.over(request_for(self.config, prompt, 0)) if window is not None else None
        if (
            window is not None and tokens is not None
        ):  # checked again here: compression was only known now
            compressed = " after filler compression" if self.filler else ""
            return MinutesAssessment(
                meeting_id=item.meeting_id,
                system=item.system,
                method=self.name,
                scores=dict.fromkeys(self.metrics),
                status="error",
                reason=(
                    f"the judge prompt has {tokens:,} tokens{compressed} and exceeds "
                    f"{window.describe(self.config.max_tokens)}; it was not sent"
                ),
                details={**details, CONTEXT_DETAIL: {"prompt_tokens": tokens}},
            )
        results = await gather_settled(
            *(self._sample(prompt, i, client, item.minutes) for i in range(self.config.samples))
        )
        scores: dict[str, float | None] = {}
        unscored: dict[str, str] = {}
        per_sample: dict[str, list[float | None]] = {}
        for criterion, metric in self.prompt.criteria.items():
            values = [asked.reading.values[criterion] for asked in results]
            per_sample[metric] = values
            scored = [v for v in values if v is not None]
            scores[metric] = statistics.fmean(scored) if scored else None
            if not scored:
                unscored[metric] = next(
                    a.reading.reasons[criterion] for a in results if criterion in a.reading.reasons
                )
        if shows_format(self.prompt.grammar, item.minutes):
            # Minutes written in the judge's own format ("Adequacy: 10"): counted, and a
            # criterion they left unscored scores the scale's minimum (flagged), so that
            # minutes never leave a mean by confusing their judge.
            details["format_in_answer"] = True
            lowest = [m for m in unscored if scores.get(m) is None]
            for metric in lowest:
                scores[metric] = SCALE_LOW
            if lowest:
                details["minimum"] = lowest
                unscored = {m: r for m, r in unscored.items() if m not in lowest}
        details["raw"] = [list(asked.raws) for asked in results]
        restated = [asked.restated for asked in results]
        if any(restated):  # per sample: its values come from a restatement turn
            details["restated"] = restated
            # the judge's words apart from the values restated from them, per sample
            details["reply"] = [asked.reply for asked in results]
            details["restatement"] = [asked.restatement for asked in results]
        details["samples"] = per_sample
        if unscored:  # per metric, e.g. "conflicting adequacy: given as 7 and 8"
            details["unscored"] = unscored
        reasons = list(unscored.values())
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
