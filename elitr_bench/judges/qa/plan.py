"""Calls, tokens and cost of judging QA answers, known before the first request.

The developers' guide asks every paid command to say what it will spend before it
spends it; the minutes judges, MESA and the arena do (their ``plan``), and this is the
QA answer judge's. Each answer is asked ``samples`` times (the first calls). A sample
may cost more: re-asks of the same prompt (only for a cut-off, empty or refused reply,
and never by a greedy judge, which would return the same text) and one restatement
turn (:mod:`elitr_bench.judges.asking`), so the plan gives the first calls and the most
calls. Prompts are the real rubric prompts, counted with the model's own tokenizer where
the judge's window has one (OpenAI models in the table) and as characters / 4 otherwise,
as the minutes plan counts them; every reply is counted at ``max_tokens``, so the costs
are upper bounds of their calls. Cache hits are not subtracted: they are free, and a
rerun of a finished run costs nothing whatever the plan says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from elitr_bench.judges.asking import policy_of, request_for, restatement_request
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.overlength import judge_label
from elitr_bench.judges.pricing import estimate_cost
from elitr_bench.judges.qa.engine import JudgeItem
from elitr_bench.judges.usage import judge_prices
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.context_window import judge_window
from elitr_bench.tokens import CHARS_PER_TOKEN


@dataclass(frozen=True)
class QAPlan:
    """What judging some answers will ask for.

    Attributes:
        judge: The judge as ``backend:model``.
        rubric: Its rubric.
        answers: Answers to judge.
        samples: Samples per answer (``samples=``).
        calls: First calls: answers x samples (0 for replay and lexical).
        calls_max: Calls if every sample needs all its re-asks and a restatement.
        reasks_max: Re-asks among ``calls_max`` (0 for a greedy judge).
        restated_max: Restatement turns among ``calls_max`` (one per sample at most).
        prompt_tokens: Prompt tokens of the first calls.
        prompt_tokens_max: Prompt tokens of ``calls_max`` (a restatement resends the
            prompt with a reply of up to ``max_tokens``).
        completion_tokens_max: ``calls`` x ``max_tokens``.
        completion_tokens_all_max: ``calls_max`` x ``max_tokens``.
        cost_usd: Cost of the first calls (None: the model has no known price).
        cost_max_usd: Cost of ``calls_max`` (None: no known price).
        counted: How prompt tokens were counted (the tokenizer, or the estimate).
        local: An ``hf`` judge: it runs here, so its calls cost no money.
        batch: Sent as batches (``batch=on``): priced at the batch price.
    """

    judge: str
    rubric: str
    answers: int
    samples: int
    calls: int
    calls_max: int
    reasks_max: int
    restated_max: int
    prompt_tokens: int
    prompt_tokens_max: int
    completion_tokens_max: int
    completion_tokens_all_max: int
    cost_usd: float | None
    cost_max_usd: float | None
    counted: str
    local: bool = False
    batch: bool = False

    @property
    def priced(self) -> bool:
        """Whether the cost is known (a local judge's is: nothing)."""
        return self.cost_usd is not None

    def line(self) -> str:
        """The one line printed before the first judge call."""
        if self.local:
            cost = "no API cost (a local model)"
        elif self.cost_usd is None or self.cost_max_usd is None:
            cost = (
                "estimated cost unknown (unpriced: add price=IN:OUT to the judge spec; "
                "cache hits are free)"
            )
        else:
            price = " at the batch price" if self.batch else ""
            cost = (
                f"estimated cost {usd(self.cost_usd)}, at most {usd(self.cost_max_usd)}{price} "
                "(cache hits are free)"
            )
        sample = "sample" if self.samples == 1 else "samples"
        return (
            f"elitr judge {self.judge} ({self.rubric}): {self.calls:,} calls "
            f"({self.answers:,} answers x {self.samples} {sample}), up to {self.calls_max:,} "
            f"with {self.restated_max:,} restatements and {self.reasks_max:,} re-asks; "
            f"~{self.prompt_tokens:,} prompt tokens, <= {self.completion_tokens_max:,} "
            f"completion tokens; {cost}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for results files (``judge_usage``'s ``plan``)."""
        return {**asdict(self), "priced": self.priced}


def usd(amount: float) -> str:
    """Dollars with cents, or four decimals below a cent (a plan of a few calls)."""
    return f"${amount:,.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"


def plan_items(items: Sequence[JudgeItem], config: JudgeConfig) -> QAPlan:
    """The plan of judging ``items`` with ``config`` (pure: nothing is sent or opened).

    Replay and lexical judges make no call: their plan is all zeros, at no cost.
    """
    rubric = config.rubric_obj
    label = judge_label(config)
    if not config.is_llm:
        return QAPlan(label, rubric.name, len(items), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, "")
    samples = max(1, config.samples)
    asks = 1 if policy_of(config).greedy else max(1, config.reask + 1)
    restatement = rubric.grammar.restatement
    restates = 1 if restatement is not None else 0
    count, counted = _counter(config)
    prompt = prompt_max = 0
    for item in items:
        text = rubric.build_prompt(item.question, item.response, item.reference)
        request = request_for(config, text, 0)
        tokens = count(request)
        prompt += tokens
        prompt_max += asks * tokens
        if restatement is not None:
            # The restatement resends the prompt and the reply (at most max_tokens).
            turn = restatement_request(request, "", restatement, structured=False)
            prompt_max += count(turn) + config.max_tokens
    calls = len(items) * samples
    calls_max = calls * (asks + restates)
    plan = QAPlan(
        judge=label,
        rubric=rubric.name,
        answers=len(items),
        samples=samples,
        calls=calls,
        calls_max=calls_max,
        reasks_max=calls * (asks - 1),
        restated_max=calls * restates,
        prompt_tokens=prompt * samples,
        prompt_tokens_max=prompt_max * samples,
        completion_tokens_max=calls * config.max_tokens,
        completion_tokens_all_max=calls_max * config.max_tokens,
        cost_usd=None,
        cost_max_usd=None,
        counted=counted,
        local=config.backend == "hf",
        batch=config.batch,
    )
    if plan.local:  # priced as the usage is: only API judges cost money
        return _with_cost(plan, (0.0, 0.0))
    return _with_cost(plan, judge_prices(config))


def _with_cost(plan: QAPlan, prices: tuple[float, float] | None) -> QAPlan:
    if prices is None:
        return plan
    first = estimate_cost(plan.prompt_tokens, plan.completion_tokens_max, prices)
    most = estimate_cost(plan.prompt_tokens_max, plan.completion_tokens_all_max, prices)
    return replace(plan, cost_usd=round(first, 6), cost_max_usd=round(most, 6))


def _counter(config: JudgeConfig) -> tuple[Callable[[CompletionRequest], int], str]:
    """Tokens of a request: the judge's own tokenizer when its window has one, else chars/4."""
    window = judge_window(config)
    if window.exact:
        return window.prompt_tokens, str(window.counter.name if window.counter else "")

    def estimate(request: CompletionRequest) -> int:
        turns = [content for _, content in request.messages] + [request.prompt]
        return sum(len(t) for t in turns) // CHARS_PER_TOKEN

    return estimate, f"characters / {CHARS_PER_TOKEN}"
