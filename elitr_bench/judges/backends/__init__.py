"""Completion backends for LLM judges (``openai``, ``hf``) behind one protocol."""

from elitr_bench.judges.backends.base import (
    CompletionBackend,
    CompletionRequest,
    FatalBackendError,
    RetryableError,
)

__all__ = ["CompletionBackend", "CompletionRequest", "FatalBackendError", "RetryableError"]
