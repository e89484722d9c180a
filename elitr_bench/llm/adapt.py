"""The adapt layer: what is sent, decided in one loop over the optional extras of a request.

A request may carry extras a server need not take: a structured-output format
(:class:`~elitr_bench.llm.structured.FormatAdapter`) and a reasoning model's parameters
(:class:`~elitr_bench.llm.reasoning.ReasoningAdapter`). Each is one :class:`Adapter`: what
it leaves out of a request where the endpoint is known to refuse it, which refusal
teaches it, what it learns. :class:`Adaptation` applies them all, hands the request to the
layer below (cache, then sending), and when the server refuses it
(:class:`~elitr_bench.llm.base.RequestRefused`) lets the adapters learn and asks again,
in a loop: every verdict is learnt once per process and endpoint, so each extra costs at
most one refused request. A refusal no adapter learns from fails the item with the
server's words.

While nobody knows whether an endpoint takes an extra, the first request carrying it is
sent alone (the probe) and the others wait for its outcome, so a refusing server refuses
once per process, not once per request in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from elitr_bench.llm.base import CompletionRequest, RequestRefused
from elitr_bench.llm.cache import Completion
from elitr_bench.llm.errors import JudgeRequestRefused
from elitr_bench.llm.memory import Scope
from elitr_bench.llm.reasoning import ReasoningAdapter
from elitr_bench.llm.structured import FormatAdapter
from elitr_bench.llm.usage import Usage


class Adapter(Protocol):
    """One optional extra of a request: what it leaves out, what teaches it."""

    #: Names the extra in counts and messages.
    name: str

    def apply(self, request: CompletionRequest, scope: Scope) -> CompletionRequest:
        """The request as what is known of ``scope`` says (the extra left out if refused)."""
        ...

    def unknown(self, request: CompletionRequest, scope: Scope) -> str | None:
        """The verdict a request would probe (it carries the extra, its answer unknown)."""
        ...

    def learn(self, request: CompletionRequest, refusal: RequestRefused, scope: Scope) -> bool:
        """Whether the refusal teaches this adapter (then the verdict is remembered)."""
        ...

    def answered(self, request: CompletionRequest, scope: Scope) -> None:
        """A request as sent was answered: what that says of the extra."""
        ...


#: The adapters in the order a refusal is offered to them: the reasoning parameters learn
#: from an explicit "unsupported" answer only, the format from any refusal that is left.
ADAPTERS: tuple[Adapter, ...] = (ReasoningAdapter(), FormatAdapter())

#: What the adapt layer hands a request to: the cache, then the sending layer.
Next = Callable[[CompletionRequest], Awaitable[Completion]]


class Adaptation:
    """The adapt layer of one client and event loop (its probes are loop-bound).

    Args:
        scope: The endpoint the verdicts are kept for.
        usage: Where the fallbacks are counted.
        name: The judge as named in an error (``judge openai:gpt-4o``).
        adapters: The extras, in the order a refusal is offered to them.
    """

    def __init__(
        self, scope: Scope, usage: Usage, name: str, adapters: Sequence[Adapter] = ADAPTERS
    ) -> None:
        self.scope = scope
        self.usage = usage
        self.name = name
        self.adapters = tuple(adapters)
        self._probes: dict[str, asyncio.Future[None]] = {}

    def apply(self, request: CompletionRequest) -> CompletionRequest:
        """The request as every adapter says the endpoint takes it."""
        for adapter in self.adapters:
            request = adapter.apply(request, self.scope)
        return request

    async def complete(self, request: CompletionRequest, send: Next) -> Completion:
        """Send ``request`` as the endpoint takes it; learn from refusals and ask again.

        Raises:
            JudgeRequestRefused: The server refused a request no adapter could change.
        """
        tried: set[CompletionRequest] = set()
        while True:
            sent, probe = await self._prepared(request)
            if sent in tried:  # no adapter changed it: never the same refusal twice
                raise JudgeRequestRefused(f"{self.name}: refused again as adapted")
            tried.add(sent)
            try:
                completion = await send(sent)
            except RequestRefused as refusal:
                if not self._learn(sent, refusal):
                    raise JudgeRequestRefused(f"{self.name}: {refusal}") from None
                continue
            finally:
                if probe is not None:  # answered, refused or failed: the waiters decide again
                    self._settle(probe)
            for adapter in self.adapters:
                adapter.answered(sent, self.scope)
            if request.response_format is not None and sent.response_format is None:
                self.usage.unstructured += 1
            return completion

    async def _prepared(self, request: CompletionRequest) -> tuple[CompletionRequest, str | None]:
        """The adapted request, and the probe it holds when it is the first to carry an extra."""
        while True:
            sent = self.apply(request)
            keys = [k for a in self.adapters if (k := a.unknown(sent, self.scope)) is not None]
            waiting = [self._probes[k] for k in keys if k in self._probes]
            if waiting:
                await asyncio.shield(waiting[0])
                continue
            if not keys:
                return sent, None
            self._probes[keys[0]] = asyncio.get_running_loop().create_future()
            return sent, keys[0]

    def _learn(self, sent: CompletionRequest, refusal: RequestRefused) -> bool:
        """Offer the refusal to the adapters (once: every waiter of one request sees it)."""
        if refusal.taught_by:
            return True
        for adapter in self.adapters:
            if adapter.learn(sent, refusal, self.scope):
                refusal.taught_by = adapter.name
                if adapter.name == "response_format":
                    self.usage.structured_refused += 1
                return True
        return False

    def _settle(self, probe: str) -> None:
        future = self._probes.pop(probe, None)
        if future is not None and not future.done():
            future.set_result(None)
