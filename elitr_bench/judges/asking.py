"""Ask -> read -> restate or re-ask: the one loop every judge family runs its prompts through.

A family hands in the request of each attempt, built here (:func:`request_for`, and
:func:`draws` for the draw and seed of each sample and re-ask, which the cache keys
depend on), and its grammar (:mod:`.reading`: fields, asked format, restatement). A
reply in the asked format is read with no further call. A reply that is not, or is
conflicting, gets exactly one restatement turn in the same chat: the prompt, the reply
as the assistant's turn, then the grammar's fixed message asking for the final values as
one JSON object (with OpenAI's ``response_format`` when ``structured``). Only a cut-off,
empty or refused reply is asked again with the same prompt, and never by a greedy judge,
which would return the same text. Every completion, the restatement's too, goes through
the one client, so each is cached before it is read (keyed on the full messages) and a
killed run resumes. A restatement turn that fails (the transport gives up) never costs
the item: the first reading stays, its open fields unscored with ``restatement not
answered: <why>``, and no error reaches the caller (nor its breaker).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.reading import (
    Grammar,
    Reading,
    Restatement,
    explained,
    not_answered,
    read_reply,
    read_restatement,
)
from elitr_bench.llm.base import CompletionBackend, CompletionRequest, ResponseFormat
from elitr_bench.llm.batch import BatchPending
from elitr_bench.llm.cache import JudgeCache, open_cache
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.constrained import available as structured_available
from elitr_bench.llm.context_window import ContextWindowError, judge_window
from elitr_bench.llm.errors import JudgeRequestError
from elitr_bench.llm.factory import make_backend
from elitr_bench.llm.ratelimit import RateLimiter


@dataclass(frozen=True)
class Turn:
    """One completion of an ask: what was sent, what came back, what was read of it.

    Attributes:
        request: The request sent (a restatement turn's holds the reply it restates).
        text: The completion's text.
        finish_reason: The backend's finish reason.
        reading: The reading of this turn alone (a restatement's: its strict object).
        restatement: This turn answers the restatement message.
    """

    request: CompletionRequest
    text: str
    finish_reason: str | None
    reading: Reading
    restatement: bool = False


@dataclass(frozen=True)
class Asked:
    """The outcome of asking one prompt: its turns, in order, and the reading they give.

    Every view a family takes is derived here from the one record of the turns:

    * :attr:`reply`: the judge's own words the reading comes from, or that a restatement
      restated (a record's feedback, a debate's reasoning);
    * :attr:`restatement`: the restatement turn's text ("" without one);
    * :attr:`kept`: what a record keeps: :attr:`reply` when read or restated, else the
      last attempt (what the judge said when it was last asked);
    * :attr:`answer`: what a later step reads: :attr:`kept`, then the restated values;
    * :attr:`raws`, :attr:`finish_reasons`, :attr:`attempts`: every turn's text, finish
      reason, and how many completions were asked.

    Attributes:
        reading: The outcome: the most complete reading of the attempts (the first
            complete one), or the restatement's reading of the reply.
        turns: Every completion asked, re-asks and the restatement turn included.
        best: Index of the turn whose reply the reading comes from (or restated).
    """

    reading: Reading
    turns: tuple[Turn, ...]
    best: int = 0

    @property
    def raws(self) -> tuple[str, ...]:
        """The text of every turn, in order."""
        return tuple(turn.text for turn in self.turns)

    @property
    def finish_reasons(self) -> tuple[str | None, ...]:
        """The backend's finish reason of every turn."""
        return tuple(turn.finish_reason for turn in self.turns)

    @property
    def attempts(self) -> int:
        """Completions asked (a restatement turn is one)."""
        return len(self.turns)

    @property
    def restated(self) -> bool:
        """The reading comes from a restatement turn."""
        return bool(self.turns) and self.turns[-1].restatement

    @property
    def reply(self) -> str:
        """The judge's own reply the reading comes from, or that a restatement restated."""
        return self.turns[self.best].text if self.turns else ""

    @property
    def restatement(self) -> str:
        """The restatement turn's text (``""`` when there was none)."""
        return self.turns[-1].text if self.restated else ""

    @property
    def kept(self) -> str:
        """The reply a record keeps: :attr:`reply` when read or restated, else the last.

        An ask that read nothing shows its last attempt (what the judge said when it was
        last asked), not the one that came closest.
        """
        if self.restated or self.reading.complete or not self.turns:
            return self.reply
        return self.turns[-1].text

    @property
    def answer(self) -> str:
        """What a later step reads of this ask: :attr:`kept`, then the restated values.

        A debate's challengers and its synthesis argue over the judge's reasoning, which
        a restatement (values only) does not hold.
        """
        return with_restatement(self.kept, self.restatement)


def with_restatement(reply: str, restatement: str) -> str:
    """A reply followed by the values restated from it (the reply alone without any)."""
    if not restatement:
        return reply
    return f"{reply}\n\nFinal values (restated): {restatement.strip()}"


class _Sampling(Protocol):
    """What :func:`request_for` reads of a judge config (or of a :class:`Sampling`)."""

    @property
    def seed(self) -> int | None: ...
    @property
    def temperature(self) -> float: ...
    @property
    def top_p(self) -> float: ...
    @property
    def max_tokens(self) -> int: ...


def request_for(
    spec: _Sampling,
    prompt: str,
    draw: int,
    messages: tuple[tuple[str, str], ...] = (),
    *,
    max_tokens: int | None = None,
) -> CompletionRequest:
    """The request of one draw: the judge's sampling, seed ``seed + draw``.

    Every family builds its requests here, so seeds and sampling mean the same in all of
    them (and the cache keys, which hash the request, stay as they were).
    """
    seed = None if spec.seed is None else spec.seed + draw
    return CompletionRequest(
        prompt,
        spec.temperature,
        spec.top_p,
        spec.max_tokens if max_tokens is None else max_tokens,
        seed,
        messages,
    )


@dataclass(frozen=True)
class Sampling:
    """Sampling fixed by a step rather than by the judge spec (the filler classifier's).

    Attributes:
        temperature: Sampling temperature (0 = greedy).
        top_p: Nucleus mass.
        max_tokens: Output token limit.
        seed: Seed of draw 0, or None.
    """

    temperature: float
    top_p: float
    max_tokens: int
    seed: int | None


def draws(
    spec: _Sampling,
    prompt: str,
    messages: tuple[tuple[str, str], ...] = (),
    *,
    index: int = 0,
    samples: int = 1,
) -> Callable[[int], tuple[CompletionRequest, int]]:
    """The ``attempt_request`` of :func:`ask` for sample ``index`` of ``samples``.

    Attempt ``a`` is draw ``index + samples * a``, so the samples and re-asks of one
    prompt are distinct draws (seeds, cache keys) and no two of them share one.
    """

    def attempt_request(attempt: int) -> tuple[CompletionRequest, int]:
        draw = index + samples * attempt
        return request_for(spec, prompt, draw, messages), draw

    return attempt_request


@dataclass(frozen=True)
class Policy:
    """How a judge is asked again.

    Attributes:
        greedy: Temperature 0: asking the same prompt again returns the same text, so a
            cut-off, empty or refused reply is not asked again.
        structured: Send the restatement's JSON schema as ``response_format``.
    """

    greedy: bool = False
    structured: bool = False


def policy_of(config: JudgeConfig) -> Policy:
    """The config's policy: ``structured=auto`` sends schemas to openai-compatible backends.

    An hf judge decodes under the schema itself where xgrammar imports (``llm/constrained.py``).
    """
    structured = config.structured == "on" or (
        config.structured == "auto"
        and (config.backend == "openai" or (config.backend == "hf" and structured_available()))
    )
    return Policy(greedy=config.temperature == 0, structured=structured)


def restatement_request(
    request: CompletionRequest, reply: str, restatement: Restatement, structured: bool
) -> CompletionRequest:
    """The restatement turn: the chat so far, the reply as the assistant's, the message."""
    return CompletionRequest(
        restatement.message,
        request.temperature,
        request.top_p,
        request.max_tokens,
        request.seed,
        (*request.messages, ("user", request.prompt), ("assistant", reply)),
        response_format(restatement) if structured else None,
    )


def response_format(restatement: Restatement) -> ResponseFormat:
    """OpenAI's structured-output ``response_format`` of a restatement (strict schema)."""
    return ResponseFormat.json_schema("final_values", restatement.schema)


async def ask(
    client: JudgeClient,
    attempt_request: Callable[[int], tuple[CompletionRequest, int]],
    grammar: Grammar,
    attempts: int,
    *,
    evaluated: Sequence[str] = (),
    policy: Policy = Policy(),
) -> Asked:
    """Ask, read, and restate once or ask again (see the module docstring).

    Args:
        client: The judge's client (cache, de-duplication, rate limits, retries).
        attempt_request: Attempt index -> ``(request, draw)``; the draw is part of the
            cache key, so every attempt is its own cached completion.
        grammar: The family's grammar.
        attempts: At most this many prompts asked (``reask + 1``); a restatement turn
            is one more completion.
        evaluated: The texts the judge evaluated (their quoted lines never count).
        policy: Greedy or not, structured output or not.
    """
    turns: list[Turn] = []
    best: Reading | None = None
    best_at = 0
    restatement = grammar.restatement
    for attempt in range(max(1, attempts)):
        request, draw = attempt_request(attempt)
        completion = await client.complete(request, draw)
        reading = read_reply(
            grammar, completion.text, completion.finish_reason, evaluated, completion.reasoned_out
        )
        turns.append(Turn(request, completion.text or "", completion.finish_reason, reading))
        if restatement is not None and reading.restate and not reading.complete:
            follow = restatement_request(request, turns[-1].text, restatement, policy.structured)
            at = len(turns) - 1
            try:
                second = await client.complete(follow, draw)
            except ContextWindowError as exc:  # the chat grew past the window: not sent
                why = f"{reading.reason}; the restatement was not sent ({exc})"
                kept = Reading(reading.values, dict.fromkeys(reading.reasons, why))
                return Asked(explained(kept, len(turns)), tuple(turns), at)
            except BatchPending:  # queued for a batch: the item is asked again in a later pass
                raise
            except JudgeRequestError as exc:  # the reply was received and cached: keep it
                kept = explained(not_answered(reading, str(exc)), len(turns))
                return Asked(kept, tuple(turns), at)
            client.usage.restated += 1
            restated = read_restatement(
                grammar, reading, second.text, second.finish_reason, second.reasoned_out
            )
            text = second.text or ""
            turns.append(Turn(follow, text, second.finish_reason, restated, restatement=True))
            return Asked(explained(restated, len(turns)), tuple(turns), at)
        if best is None or reading.n_scored > best.n_scored:
            best, best_at = reading, len(turns) - 1
        if reading.complete or policy.greedy:
            break
        if restatement is not None and not reading.reask:
            break
    assert best is not None
    return Asked(explained(best, len(turns)), tuple(turns), best_at)


def make_client(
    config: JudgeConfig,
    cache: JudgeCache | None = None,
    backend: CompletionBackend | None = None,
) -> JudgeClient:
    """The one way a judge of any family gets its client (backend, cache, limits, retries).

    Args:
        config: The LLM judge config (backend, limits, retries, cache setting, window).
        cache: A cache owned by someone else (a second client of the same run, MESA's
            debate pool, the filler classifier); None opens ``config.cache`` and the
            client owns (closes) it.
        backend: A backend to use instead of the config's (tests, reuse).
    """
    return JudgeClient(
        backend or make_backend(config),
        cache if cache is not None else open_cache(config.cache),
        RateLimiter(config.rpm, config.tpm),
        concurrency=config.concurrency,
        retries=config.retries,
        backoff=config.backoff,
        owns_cache=cache is None,
        window=judge_window(config),
    )
