"""The request parameters of OpenAI's reasoning models (o1, o3, o4-mini, the gpt-5 family).

They refuse ``max_tokens`` (HTTP 400 ``unsupported_parameter``: "Use
'max_completion_tokens' instead") and any ``temperature`` or ``top_p`` other than their
default 1 (HTTP 400 ``unsupported_value``). At OpenAI's own API and Azure, the models of
:data:`REASONING_MODELS` get ``max_completion_tokens`` and no sampling parameters from the
first request. Any endpoint that refuses one of them teaches it: the request is sent once
more as the endpoint takes it, and the endpoint and model are remembered for the process
(:mod:`elitr_bench.llm.memory`). Only an explicit "unsupported parameter/value" answer
teaches it: ``max_tokens is too large`` is the user's setting, never an adaptation.

``max_completion_tokens`` counts the hidden reasoning as well as the reply, so it is sent as
the judge's ``max_tokens`` plus :data:`~elitr_bench.llm.base.REASONING_HEADROOM`. Such a
model samples at temperature 1 whatever the judge asked (one stderr line says so), and the
cache key records what was sent (:meth:`~elitr_bench.llm.base.CompletionRequest.sent_params`).
This module knows no judge.
"""

from __future__ import annotations

import re
from dataclasses import replace

from elitr_bench.llm import memory
from elitr_bench.llm.base import REASONING_HEADROOM, CompletionRequest, RequestRefused
from elitr_bench.llm.memory import Scope, Verdict

#: OpenAI's reasoning models (dated snapshots included; platform.openai.com/docs/guides/reasoning).
REASONING_MODELS = re.compile(r"o1.*|o3.*|o4.*|gpt-5.*")

#: The verdict keys of the two refusals: the ``max_tokens`` name, and sampling (either of
#: ``temperature``/``top_p``: a model that takes only 1 for one takes only 1 for both).
LIMIT = "max_tokens"
SAMPLING = "sampling"

#: The parameter an HTTP 400 names, to the verdict it teaches.
TAUGHT_BY = {"max_tokens": LIMIT, "temperature": SAMPLING, "top_p": SAMPLING}


def known(scope: Scope) -> bool:
    """Whether OpenAI's API (or Azure) serves ``scope.model`` as a reasoning model (our table)."""
    name = scope.openai_name
    return name is not None and REASONING_MODELS.fullmatch(name) is not None


def verdict(scope: Scope, what: str) -> Verdict | None:
    """What this process knows of ``what`` (:data:`LIMIT`, :data:`SAMPLING`) at ``scope``."""
    learnt = memory.verdict(scope, what)
    if learnt is not None:
        return learnt
    return "refused" if known(scope) else None


def adapt(request: CompletionRequest, scope: Scope) -> CompletionRequest:
    """The request as the endpoint takes it: limit and sampling as known or learnt.

    The first adapted request of a scope the table names says so once on stderr.
    """
    limit = request.completion_limit or verdict(scope, LIMIT) == "refused"
    sampling = request.sampling and verdict(scope, SAMPLING) != "refused"
    if (limit, sampling) == (request.completion_limit, request.sampling):
        return request
    if known(scope):
        memory.say_once(
            scope,
            SAMPLING,
            f"note: judge {scope.label} is a reasoning model: it is sent max_completion_tokens "
            f"(max_tokens + {REASONING_HEADROOM} for its hidden reasoning) and no "
            "temperature/top_p, so it samples at temperature 1 and its scores vary from run "
            "to run",
        )
    return replace(request, completion_limit=limit, sampling=sampling)


def taught(request: CompletionRequest, param: str) -> str | None:
    """The verdict a refusal of ``param`` teaches, if the request sent it (else None)."""
    what = TAUGHT_BY.get(param)
    if what == LIMIT and not request.completion_limit:
        return LIMIT
    if what == SAMPLING and request.sampling:
        return SAMPLING
    return None


def learn_refusal(scope: Scope, what: str, request: CompletionRequest, why: str = "") -> None:
    """Remember that ``scope`` refuses ``what``; said once per process on stderr (one line)."""
    if what == LIMIT:
        line = (
            f"note: judge {scope.label} refuses max_tokens{why}; its requests carry "
            f"max_completion_tokens (max_tokens + {REASONING_HEADROOM} for hidden reasoning) "
            "from now on"
        )
    else:
        line = (
            f"note: judge {scope.label} refuses temperature={request.temperature:g}/top_p="
            f"{request.top_p:g}{why}; its requests are sent without them from now on: it "
            "samples at temperature 1, so its scores vary from run to run"
        )
    memory.learn(scope, what, "refused", line)


class ReasoningAdapter:
    """``max_tokens`` and sampling as a reasoning model takes them (known, else learnt)."""

    name = "reasoning"

    def apply(self, request: CompletionRequest, scope: Scope) -> CompletionRequest:
        """The request with the limit and sampling the endpoint is known to take."""
        return adapt(request, scope)

    def unknown(self, request: CompletionRequest, scope: Scope) -> str | None:
        """No probe: a refusal is rare and the preflight usually learns it first."""
        return None

    def learn(self, request: CompletionRequest, refusal: RequestRefused, scope: Scope) -> bool:
        """Only an explicit "unsupported" answer naming a parameter the request sent."""
        what = TAUGHT_BY.get(refusal.param or "") if refusal.unsupported else None
        if what is None or taught(request, refusal.param or "") is None:
            return False
        learn_refusal(scope, what, request, f" (HTTP {refusal.status})" if refusal.status else "")
        return True

    def answered(self, request: CompletionRequest, scope: Scope) -> None:
        """Nothing to learn from a reply: the parameters are the server's default."""
