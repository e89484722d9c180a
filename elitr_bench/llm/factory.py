"""The completion backend for an endpoint (``openai`` or ``hf``)."""

from __future__ import annotations

from elitr_bench.llm.base import CompletionBackend
from elitr_bench.llm.endpoint import EndpointSpec
from elitr_bench.llm.errors import JudgeConfigError


def make_backend(endpoint: EndpointSpec) -> CompletionBackend:
    """The completion backend of an endpoint; the SDK or transformers load on first use."""
    if endpoint.backend == "openai":
        from elitr_bench.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(endpoint)
    if endpoint.backend == "hf":
        from elitr_bench.llm.hf_backend import HFBackend

        return HFBackend(endpoint)
    raise JudgeConfigError(f"judge backend {endpoint.backend!r} does not complete prompts")
