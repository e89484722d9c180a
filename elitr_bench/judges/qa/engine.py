"""Judge many items concurrently and summarise the scores.

Every backend sits behind one :class:`Judge` protocol: the two LLM backends (``openai``,
``hf``) share :class:`LLMJudge` (prompt building, strict parsing, re-asking, k samples);
``replay`` returns the released scores of released responses; ``lexical`` is a clearly
named non-LLM fallback. An item whose outputs never hold a valid score is *unscored*:
it keeps its raw text and is counted, and never enters a mean. An item the judge could
not be asked about at all (server down, quota, no released score) is an *error*: with
``on_error="record"`` it keeps the reason, so the generated answers around it are never
discarded and ``elitr-bench score`` can judge exactly those items later.
"""

from __future__ import annotations

import asyncio
import math
import re
import statistics
import string
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol, TypeVar, cast

from elitr_bench.data.records import ReleasedResponse
from elitr_bench.judges.aio import run_coroutine
from elitr_bench.judges.asking import ask, draws, make_client, policy_of, request_for
from elitr_bench.judges.errors import JudgeError, ReplayMatchError
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.overlength import Overlong, overlength_line, way_out
from elitr_bench.judges.qa.family import qa_options
from elitr_bench.judges.reading import shows_format
from elitr_bench.judges.rubrics import RUBRICS, Rubric
from elitr_bench.judges.usage import usage_with_cost
from elitr_bench.llm.base import CompletionBackend
from elitr_bench.llm.batch import BatchPending
from elitr_bench.llm.cache import JudgeCache
from elitr_bench.llm.client import JudgeClient, gather_settled
from elitr_bench.llm.context_window import ContextWindowError, judge_window

Status = Literal["scored", "unscored", "skipped", "error"]
OnError = Literal["raise", "record"]
T = TypeVar("T")


@dataclass(frozen=True)
class JudgeItem:
    """One (question, response, reference) triple to judge, with its identifiers.

    The identifiers let the replay backend find released scores; LLM judges only read the
    three texts.
    """

    question: str
    response: str
    reference: str
    meeting_id: str = ""
    question_id: str = ""
    split: str = ""
    setting: str = ""
    mode: str = ""
    system: str = ""

    @classmethod
    def from_released(cls, released: ReleasedResponse) -> JudgeItem:
        """Build an item from a response the ELITR-Bench authors released."""
        return cls(
            question=released.question,
            response=released.response,
            reference=released.reference,
            meeting_id=released.meeting_id,
            question_id=released.question_id,
            split=released.split,
            setting=released.setting,
            mode=released.mode,
            system=released.system,
        )

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any], response: str) -> JudgeItem:
        """Build an item from an lm-eval doc (keys as the ELITR task docs carry them)."""
        return cls(
            question=str(doc.get("question", "")),
            response=response,
            reference=str(doc.get("answer", doc.get("reference", ""))),
            meeting_id=str(doc.get("meeting_id", "")),
            question_id=str(doc.get("question_id", "")),
            split=str(doc.get("split", "")),
            setting=str(doc.get("setting", "")),
            mode=str(doc.get("mode", "")),
            system=str(doc.get("system", "") or ""),
        )


@dataclass(frozen=True)
class SampleJudgement:
    """One sample (of ``samples=k``) after re-asks.

    Attributes:
        score: Score on the 10-point scale, or None if every attempt was unparseable.
        native: Score on the rubric's own scale (1-10 or 1-5), or None.
        raw: The judge's reply: the one the score was read from or restated from (its
            feedback stays logged), else the last attempt's text.
        attempts: Number of completions asked for this sample.
        reason: Why the last attempt did not parse ("" when scored).
        restated: The score comes from (or was sought in) a restatement turn.
        restatement: The restatement turn's reply (``""`` when there was none).
    """

    score: float | None
    native: float | None
    raw: str
    attempts: int
    reason: str = ""
    restated: bool = False
    restatement: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (no NaN: an unscored sample's score is None)."""
        return asdict(self)


@dataclass(frozen=True)
class Judgement:
    r"""The judge's verdict on one item.

    Attributes:
        score: Mean over scored samples on the 10-point scale; None unless ``scored``.
        status: ``scored``, ``unscored`` (no valid score after re-asks), ``skipped``
            (judging off) or ``error`` (the judge failed; never a number).
        raw: Raw judge output (last sample) or a description for non-LLM judges.
        samples: Per-sample results.
        spread: Sample standard deviation of the scored samples (None if fewer than 2).
        reason: Why an ``error`` item was not judged (one line); why an ``unscored`` one
            has no score (its samples' reasons); why the minimum was given (``minimum``);
            ``""`` otherwise.
        format_in_answer: The answer is written in the judge's own reply format
            (``\boxed{10}``, ``[RESULT] 5``, ``Score: 10``): counted as
            ``judge_format_in_answer``.
        minimum: The judge's replies stayed unscored and the answer holds the judge's
            format, so the item scores the rubric's minimum instead of leaving the mean
            (an answer must not gain by confusing its judge).
    """

    score: float | None
    status: Status
    raw: str
    samples: tuple[SampleJudgement, ...] = ()
    spread: float | None = None
    reason: str = ""
    format_in_answer: bool = False
    minimum: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The ``judge`` dict placed in lm-eval filtered responses (JSON-safe, no NaN)."""
        return {
            "score": self.score,
            "raw": self.raw,
            "status": self.status,
            "samples": [s.to_dict() for s in self.samples],
            "spread": self.spread,
            "n_scored_samples": sum(s.score is not None for s in self.samples),
            "reason": self.reason,
            "format_in_answer": self.format_in_answer,
            "minimum": self.minimum,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Judgement:
        """Rebuild a judgement from its :meth:`to_dict` form (as logged in sample files)."""
        status = str(data.get("status", ""))
        if status not in ("scored", "unscored", "skipped", "error"):
            status = "error"
        samples = tuple(
            SampleJudgement(
                score=s.get("score"),
                native=s.get("native"),
                raw=str(s.get("raw", "")),
                attempts=int(s.get("attempts", 0) or 0),
                reason=str(s.get("reason", "")),
                restated=bool(s.get("restated", False)),
                restatement=str(s.get("restatement", "")),
            )
            for s in data.get("samples") or ()
            if isinstance(s, Mapping)
        )
        score = data.get("score")
        return cls(
            score=float(score) if status == "scored" and score is not None else None,
            status=cast(Status, status),
            raw=str(data.get("raw", "")),
            samples=samples,
            spread=data.get("spread"),
            reason=str(data.get("reason", "")),
            format_in_answer=bool(data.get("format_in_answer", False)),
            minimum=bool(data.get("minimum", False)),
        )


SKIPPED = Judgement(score=None, status="skipped", raw="")

#: Why an item scored the minimum (logged as its reason).
MINIMUM_REASON = (
    "scored the rubric's minimum: the judge's replies stayed unscored and the answer holds "
    "the judge's own reply format"
)


def minimum_judgement(unscored: Judgement, rubric: Rubric) -> Judgement:
    r"""The rubric's minimum for an unscored item whose answer holds the judge's format.

    Without this rule an answer could remove itself from ``judge_score`` by writing
    ``\boxed{10}`` (or "Score: 10"): the judge quoting it gives conflicting values, the
    item is unscored, and the mean skips it. Such an item scores the lowest score of the
    scale instead, flagged (``minimum``), so confusing the judge never pays.
    """
    return replace(
        unscored,
        score=rubric.to_ten_point(rubric.low),
        status="scored",
        reason=MINIMUM_REASON,
        format_in_answer=True,
        minimum=True,
    )


def error_judgement(reason: str) -> Judgement:
    """An item the judge could not score, with a one-line reason (never a number)."""
    return Judgement(score=None, status="error", raw="", reason=" ".join(reason.split()))


class Judge(Protocol):
    """Anything that can judge an item (all four backends implement this)."""

    config: JudgeConfig

    async def judge(self, item: JudgeItem) -> Judgement:
        """Judge one item."""
        ...

    async def aclose(self) -> None:
        """Release resources."""
        ...

    def usage(self) -> dict[str, Any]:
        """Token usage and cost so far."""
        ...


def _aggregate(samples: Sequence[SampleJudgement]) -> Judgement:
    scored = [s.score for s in samples if s.score is not None]
    raw = samples[-1].raw if samples else ""
    if not scored:  # every unscored item says why (each sample's reason, once)
        reason = "; ".join(dict.fromkeys(s.reason for s in samples if s.reason))
        return Judgement(None, "unscored", raw, tuple(samples), reason=reason)
    spread = statistics.stdev(scored) if len(scored) > 1 else None
    return Judgement(
        score=statistics.fmean(scored),
        status="scored",
        raw=raw,
        samples=tuple(samples),
        spread=spread,
    )


class LLMJudge:
    """Rubric prompt -> completion(s) -> strict parse, with re-asks and k samples.

    Draw ``d = sample + samples * attempt`` is sent with seed ``seed + d`` (the configured
    seed itself for the first draw) and is part of the cache key, so samples and re-asks
    are distinct requests and each is cached on its own.
    """

    def __init__(self, config: JudgeConfig, client: JudgeClient) -> None:
        self.config = config
        self.client = client
        self.rubric: Rubric = config.rubric_obj

    async def _sample(self, prompt: str, index: int, evaluated: Sequence[str]) -> SampleJudgement:
        asked = await ask(
            self.client,
            draws(self.config, prompt, index=index, samples=self.config.samples),
            self.rubric.grammar,
            self.config.reask + 1,
            evaluated=evaluated,
            policy=policy_of(self.config),
        )
        score = asked.reading.value("score")
        if score is not None:
            return SampleJudgement(
                self.rubric.to_ten_point(score),
                float(score),
                asked.reply,
                asked.attempts,
                restated=asked.restated,
                restatement=asked.restatement,
            )
        reason = asked.reading.reason
        raw = asked.kept  # the reply restated, else the last attempt
        return SampleJudgement(
            None, None, raw, asked.attempts, reason, asked.restated, asked.restatement
        )

    async def judge(self, item: JudgeItem) -> Judgement:
        """Ask ``samples`` times (concurrently) and average the scored ones.

        The answer and the reference are the texts the judge evaluates: lines of them
        that the judge quotes never supply its score.
        """
        prompt = self.rubric.build_prompt(item.question, item.response, item.reference)
        evaluated = (item.response, item.reference)
        samples = await gather_settled(
            *(self._sample(prompt, i, evaluated) for i in range(self.config.samples))
        )
        judgement = _aggregate(samples)
        if judgement.status == "unscored" and shows_format(self.rubric.grammar, item.response):
            return minimum_judgement(judgement, self.rubric)
        return judgement

    async def aclose(self) -> None:
        """Close the backend."""
        await self.client.aclose()

    def usage(self) -> dict[str, Any]:
        """Usage counters with the cost estimate."""
        return usage_with_cost(self.config, self.client)


_ReplayKey = tuple[str, str, str, str, str]


class ReplayJudge:
    """Released GPT-4-judge / Prometheus scores for released responses.

    Matching is by (setting, split, mode, meeting_id, question_id) and exact response
    text. No match is an error, never a guess. When two released systems gave the same
    text different scores, the item's ``system`` (or ``system=`` in the spec) decides;
    otherwise that is an error too.
    """

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.rubric = config.rubric_obj
        self._index: dict[_ReplayKey, list[tuple[str, str, Mapping[str, float]]]] = {}
        self._loaded: set[tuple[str, str, str]] = set()

    def _load(self, setting: str, split: str, mode: str) -> None:
        if (setting, split, mode) in self._loaded:
            return
        from elitr_bench.data import RELEASED_FILES, load_released_responses

        self._loaded.add((setting, split, mode))
        seen: dict[tuple[_ReplayKey, str, str], dict[str, float]] = {}
        for f_setting, f_split, f_mode, source in RELEASED_FILES:
            if (f_setting, f_split, f_mode) != (setting, split, mode):
                continue
            for r in load_released_responses(f_setting, f_split, f_mode, source):
                key: _ReplayKey = (r.setting, r.split, r.mode, r.meeting_id, r.question_id)
                merged = seen.setdefault((key, r.system, r.response), {})
                merged.update(r.scores)
        for (key, system, response), scores in seen.items():
            self._index.setdefault(key, []).append((system, response, scores))

    def lookup(self, item: JudgeItem) -> tuple[float, str]:
        """Released score (10-point scale) and the matched system.

        Raises:
            ReplayMatchError: No released response matches, or the match is ambiguous.
        """
        where = (
            f"setting={item.setting} split={item.split} mode={item.mode} "
            f"meeting={item.meeting_id} question={item.question_id}"
        )
        if not all((item.setting, item.split, item.mode, item.meeting_id, item.question_id)):
            raise ReplayMatchError(
                f"judge replay: item lacks identifiers ({where}); replay needs all five"
            )
        self._load(item.setting, item.split, item.mode)
        wanted_key: _ReplayKey = (
            item.setting,
            item.split,
            item.mode,
            item.meeting_id,
            item.question_id,
        )
        matches = [m for m in self._index.get(wanted_key, []) if m[1] == item.response]
        wanted = item.system or qa_options(self.config).system
        if wanted:
            matches = [m for m in matches if m[0] == wanted]
        if not matches:
            raise ReplayMatchError(
                f"judge replay: no released response with this exact text ({where}"
                f"{', system=' + wanted if wanted else ''}); replay only scores released "
                "responses, "
                "use an LLM judge for new ones"
            )
        rkey = self.rubric.replay_key
        values = {m[2][rkey] for m in matches if rkey in m[2]}
        if not values:
            raise ReplayMatchError(
                f"judge replay: no released {rkey} score for {where}; released Prometheus scores "
                "exist only for qa/test2/st (all-eval)"
            )
        if len(values) > 1:
            systems = ", ".join(sorted(m[0] for m in matches))
            raise ReplayMatchError(
                f"judge replay: response text at {where} was released by {systems} with different "
                "scores; name the system with replay,system=NAME"
            )
        return values.pop(), ",".join(sorted({m[0] for m in matches}))

    async def judge(self, item: JudgeItem) -> Judgement:
        """Look the released score up (raises on no/ambiguous match)."""
        score, system = self.lookup(item)
        native = score / self.rubric.to_ten
        raw = f"released {self.rubric.replay_key} score {native:g} (system {system})"
        sample = SampleJudgement(score, native, raw, 0)
        return Judgement(score=score, status="scored", raw=raw, samples=(sample,))

    async def aclose(self) -> None:
        """Nothing to release."""

    def usage(self) -> dict[str, Any]:
        """Replay costs nothing."""
        return {"requests": 0, "estimated_cost_usd": 0.0, "priced": False}


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def _tokens(text: str) -> list[str]:
    return _ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split()


def token_f1(response: str, reference: str) -> float:
    """SQuAD-style bag-of-tokens F1 (lower-cased, punctuation and articles removed)."""
    pred, gold = _tokens(response), _tokens(reference)
    if not pred or not gold:
        return float(pred == gold)
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


class LexicalJudge:
    """NON-LLM fallback: token-F1 against the reference mapped linearly onto the rubric scale.

    Useful offline and in CI; it is not the paper's metric and is labelled as such in the
    judge identity.
    """

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.rubric = config.rubric_obj

    async def judge(self, item: JudgeItem) -> Judgement:
        """Score = low + (high - low) * F1 on the rubric scale, then put on the 10-point scale."""
        f1 = token_f1(item.response, item.reference)
        native = self.rubric.low + (self.rubric.high - self.rubric.low) * f1
        score = self.rubric.to_ten_point(native)
        raw = f"lexical token-F1={f1:.4f} (non-LLM fallback)"
        return Judgement(
            score=score, status="scored", raw=raw, samples=(SampleJudgement(score, native, raw, 0),)
        )

    async def aclose(self) -> None:
        """Nothing to release."""

    def usage(self) -> dict[str, Any]:
        """Lexical scoring costs nothing."""
        return {"requests": 0, "estimated_cost_usd": 0.0, "priced": False}


def make_judge(
    config: JudgeConfig,
    cache: JudgeCache | None = None,
    backend: CompletionBackend | None = None,
) -> Judge:
    """Build the judge for a config (``cache``/``backend`` injectable for reuse and tests)."""
    if config.backend == "replay":
        return ReplayJudge(config)
    if config.backend == "lexical":
        return LexicalJudge(config)
    return LLMJudge(config, make_client(config, cache, backend))


def answer_shows_format(config: JudgeConfig, item: JudgeItem) -> bool:
    """Whether the item's answer holds the reply format of the config's rubric."""
    rubric = RUBRICS.get(config.rubric)
    return rubric is not None and shows_format(rubric.grammar, item.response)


def item_label(item: JudgeItem, index: int) -> str:
    """How an item is named in messages: ``meeting/question``, else its position."""
    if item.meeting_id and item.question_id:
        return f"{item.meeting_id}/{item.question_id}"
    return item.meeting_id or f"item {index + 1}"


def overlong_items(items: Sequence[JudgeItem], config: JudgeConfig) -> list[Overlong | None]:
    """Per item: its QA judge prompt when it does not fit the judge's window, else None."""
    window = judge_window(config) if config.is_llm else None
    if window is None or not window.checked:
        return [None] * len(items)
    rubric = config.rubric_obj
    out: list[Overlong | None] = []
    for i, item in enumerate(items):
        prompt = rubric.build_prompt(item.question, item.response, item.reference)
        request = request_for(config, prompt, 0)
        tokens = window.over(request)
        out.append(
            None if tokens is None else Overlong(item_label(item, i), tokens, request.max_tokens)
        )
    return out


def check_items_fit(items: Sequence[JudgeItem], config: JudgeConfig, what: str) -> None:
    """Stop before any request when a QA judge prompt does not fit the judge's window.

    QA prompts hold question, answer and reference only, so this fails only for a small
    window or a runaway answer; it costs no request and names every such item.

    Raises:
        ContextWindowError: One line naming the items, their tokens, the limit, the fix.
    """
    over = [o for o in overlong_items(items, config) if o is not None]
    if over:
        line = overlength_line(what, over, judge_window(config), way_out(config, over))
        raise ContextWindowError(line)


def overlong_judgement(over: Overlong, config: JudgeConfig) -> Judgement:
    """The ``error`` of an item whose prompt was not sent because it does not fit."""
    return error_judgement(
        f"{over.label}: the judge prompt has {over.tokens:,} tokens and exceeds "
        f"{judge_window(config).describe(over.max_tokens)}; it was not sent"
    )


@dataclass
class JudgeRun:
    """Judgements of one run, in input order, with identity and usage."""

    judgements: list[Judgement]
    identity: dict[str, Any]
    usage: dict[str, Any]
    elapsed_s: float
    summary: dict[str, Any] = field(default_factory=dict)


def summarize(judgements: Iterable[Judgement]) -> dict[str, Any]:
    """``judge_score`` (mean over scored) with its stderr, and the unscored/skipped counts.

    The stderr is the sample standard deviation over sqrt(n), the closed form lm-eval
    uses for ``mean`` aggregations, so CLI and lm-eval numbers agree.
    """
    items = list(judgements)
    scores = [j.score for j in items if j.status == "scored" and j.score is not None]
    mean = statistics.fmean(scores) if scores else None
    stderr = statistics.stdev(scores) / math.sqrt(len(scores)) if len(scores) > 1 else None
    return {
        "judge_score": mean,
        "judge_score_stderr": stderr,
        "judge_scored": len(scores),
        "judge_unscored": sum(j.status == "unscored" for j in items),
        "judge_skipped": sum(j.status == "skipped" for j in items),
        "judge_errors": sum(j.status == "error" for j in items),
        "judge_format_in_answer": sum(j.format_in_answer for j in items),
        "judge_minimum": sum(j.minimum for j in items),
        "judge_restated": sum(any(s.restated for s in j.samples) for j in items),
        "n": len(items),
    }


#: Consecutive failed items after which the remaining items are not sent any more.
BREAKER_FAILURES = 3


class _Breaker:
    """Stops sending items after repeated failures, so a dead judge costs seconds, not hours.

    Only failures that say something about the judge itself count (a released score that
    is missing for one item, or one prompt too long for the window, does not); any
    success resets the count.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.consecutive = 0
        self.first = ""

    @property
    def open(self) -> bool:
        return self.consecutive >= self.limit

    def failed(self, exc: BaseException, reason: str) -> None:
        if isinstance(exc, (ReplayMatchError, ContextWindowError)):  # the item's, not the judge's
            return
        if isinstance(exc, BatchPending):  # waits for a batch: nothing failed
            return
        self.consecutive += 1
        self.first = self.first or reason

    def succeeded(self) -> None:
        self.consecutive = 0


def failure_reason(exc: BaseException) -> str:
    """One line describing why an item was not judged (our messages already are one line)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, JudgeError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def judge_items_async(
    items: Sequence[JudgeItem],
    config: JudgeConfig,
    *,
    judge: Judge | None = None,
    progress: bool | None = None,
    desc: str = "judging",
    on_error: OnError = "raise",
) -> JudgeRun:
    """Judge all items concurrently (at most ``config.concurrency`` at once) in input order.

    Args:
        items: What to judge.
        config: The judge.
        judge: An existing judge to reuse (else one is built and closed here).
        progress: Show a progress bar (default: ``config.progress``).
        desc: Progress bar label.
        on_error: ``raise`` stops at the first failure; ``record`` gives each failed
            item status ``error`` with its reason, and after
            :data:`BREAKER_FAILURES` consecutive failures the items not yet sent get
            ``error`` too without a request. Completed judgements are cached either way.
    """
    start = time.perf_counter()
    own = judge is None
    active = judge if judge is not None else make_judge(config)
    show = config.progress if progress is None else progress
    bar: Any = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(items), desc=desc, unit="item", leave=False)
    gate = asyncio.Semaphore(max(1, config.concurrency))
    breaker = _Breaker(BREAKER_FAILURES)

    async def one(item: JudgeItem) -> Judgement:
        async with gate:
            if on_error == "record" and breaker.open:
                result = error_judgement(
                    f"not sent: the judge failed {breaker.limit} times in a row "
                    f"(first: {breaker.first})"
                )
            else:
                try:
                    result = await active.judge(item)
                except Exception as exc:
                    if on_error == "raise":
                        raise
                    reason = failure_reason(exc)
                    breaker.failed(exc, reason)
                    result = error_judgement(reason)
                else:
                    breaker.succeeded()
        if not result.format_in_answer and answer_shows_format(config, item):
            result = replace(result, format_in_answer=True)
        if bar is not None:
            bar.update(1)
        return result

    try:
        tasks = [asyncio.ensure_future(one(item)) for item in items]
        try:
            judgements = list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    finally:
        if bar is not None:
            bar.close()
        if own:
            await active.aclose()
    run = JudgeRun(judgements, config.identity(), active.usage(), time.perf_counter() - start)
    run.summary = summarize(judgements)
    return run


def judge_items(
    items: Sequence[JudgeItem],
    config: JudgeConfig,
    *,
    judge: Judge | None = None,
    progress: bool | None = None,
    desc: str = "judging",
    on_error: OnError = "raise",
) -> JudgeRun:
    """Synchronous :func:`judge_items_async`."""
    return run_coroutine(
        lambda: judge_items_async(
            items, config, judge=judge, progress=progress, desc=desc, on_error=on_error
        )
    )
