"""Completion backends for LLM judges (``openai``, ``hf``) behind one protocol."""

from elitr_bench.judges.backends.base import (
    AuthenticationRejected,
    CompletionBackend,
    CompletionRequest,
    FatalBackendError,
    RetryableError,
)

__all__ = [
    "AuthenticationRejected",
    "CompletionBackend",
    "CompletionRequest",
    "FatalBackendError",
    "RetryableError",
]
