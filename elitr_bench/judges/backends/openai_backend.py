"""OpenAI-compatible chat-completions backend (OpenAI, Azure OpenAI, vLLM, TGI, ...).

Uses the async ``openai`` SDK with its own retries disabled: retries and back-off are
done by :mod:`elitr_bench.judges.client` so that a ``Retry-After`` pauses every request
and retry counts are reported. The API key is read from the environment at start-up and
is never written anywhere; error messages are scrubbed of it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from elitr_bench.judges.backends.base import CompletionRequest, FatalBackendError, RetryableError
from elitr_bench.judges.cache import Completion
from elitr_bench.judges.config import JudgeConfig, effective_base_url
from elitr_bench.judges.ratelimit import parse_retry_after

_RETRYABLE_STATUS = {408, 409, 425, 429}


def redact(text: str, secret: str | None) -> str:
    """Remove a secret (and its long prefix) from text meant for logs or errors."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
        if len(secret) > 12:
            text = text.replace(secret[:12], "***")
    return text


class OpenAIBackend:
    """Chat completions through ``openai.AsyncOpenAI`` / ``AsyncAzureOpenAI``."""

    kind = "openai"

    def __init__(self, config: JudgeConfig, env: Mapping[str, str] | None = None) -> None:
        environ = os.environ if env is None else env
        self.model = config.model
        self._config = config
        key = environ.get(config.api_key_env) or ""
        if config.azure:
            key = key or environ.get("AZURE_OPENAI_API_KEY", "")
            self.base_url = "azure"
            self._kwargs: dict[str, Any] = {
                "azure_endpoint": environ.get("AZURE_OPENAI_ENDPOINT", ""),
                "api_version": config.api_version,
            }
        else:
            base = effective_base_url(config, environ) or None
            self.base_url = base or "https://api.openai.com/v1"
            self._kwargs = {"base_url": base}
        # Local OpenAI-compatible servers often need no key; the SDK insists on one.
        self._secret = key
        self._kwargs.update(api_key=key or "EMPTY", timeout=config.timeout, max_retries=0)
        self._client: Any = None
        self._loop: Any = None

    def _get_client(self) -> Any:
        """The SDK client of the running event loop (its connection pool is loop-bound)."""
        import asyncio

        import openai

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            factory = openai.AsyncAzureOpenAI if self._config.azure else openai.AsyncOpenAI
            self._client, self._loop = factory(**self._kwargs), loop
        return self._client

    async def complete(self, request: CompletionRequest) -> Completion:
        """One chat completion: ``request.messages`` then the prompt as the last user turn."""
        import openai

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": request.chat(),
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        try:
            response = await self._get_client().chat.completions.create(**kwargs)
        except openai.APITimeoutError as exc:
            raise RetryableError(f"timeout: {self._msg(exc)}") from None
        except openai.APIConnectionError as exc:
            raise RetryableError(f"connection error: {self._msg(exc)}") from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            headers = dict(exc.response.headers) if exc.response is not None else {}
            message = f"HTTP {status} from {self.base_url}: {self._msg(exc)}"
            if status in _RETRYABLE_STATUS or status >= 500:
                raise RetryableError(message, parse_retry_after(headers), status) from None
            raise FatalBackendError(message) from None
        except openai.OpenAIError as exc:
            raise FatalBackendError(f"{type(exc).__name__}: {self._msg(exc)}") from None
        except ValueError as exc:  # a 200 whose body is not JSON: a broken proxy or server hiccup
            raise RetryableError(
                f"malformed response from {self.base_url}: {self._msg(exc)}"
            ) from None
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise RetryableError(f"empty choices from {self.base_url}")
        text = choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )

    def _msg(self, exc: BaseException) -> str:
        return redact(str(exc), self._secret)[:300]

    async def aclose(self) -> None:
        """Close the HTTP connection pool of the current loop's client."""
        import asyncio

        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = self._loop = None
