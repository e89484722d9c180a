"""OpenAI-compatible chat-completions backend (OpenAI, Azure OpenAI, vLLM, TGI, ...).

Uses the async ``openai`` SDK with its own retries disabled: retries and back-off are
done by :mod:`elitr_bench.llm.client` so that a ``Retry-After`` pauses every request
and retry counts are reported. The API key is read from the environment at start-up and
is never written anywhere; error messages are scrubbed of it. User info in the base URL
(``http://user:password@host/v1``) is sent as the HTTP Basic ``Authorization`` header it
always was (httpx's behaviour) but taken out of the URL, so no log line or message holds it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Mapping
from typing import Any

from elitr_bench.llm import reasoning
from elitr_bench.llm.base import (
    AuthenticationRejected,
    CompletionRequest,
    FatalBackendError,
    PromptTooLong,
    RequestRefused,
    RetryableError,
    SettingOutOfRange,
)
from elitr_bench.llm.cache import Completion
from elitr_bench.llm.context_window import note_served_window
from elitr_bench.llm.endpoint import EndpointSpec, effective_base_url, endpoint_key
from elitr_bench.llm.memory import Scope
from elitr_bench.llm.ratelimit import parse_retry_after
from elitr_bench.llm.redact import redact_text, split_userinfo

_REASONING = reasoning.ReasoningAdapter()

_RETRYABLE_STATUS = {408, 409, 425, 429}
_AUTH_STATUS = {401, 403}
#: The settings a user gives a judge that a server may find out of range.
_SETTINGS = ("max_completion_tokens", "max_tokens", "temperature", "top_p", "seed")
#: "max_tokens is too large: 10000. This model supports at most 4096 completion tokens"
#: (OpenAI), "'max_tokens' or 'max_completion_tokens' is too large: 10000. ..." (vLLM).
_TOO_LARGE = re.compile(
    r"'?(?P<setting>[a-z_]+)'?(?: or '?[a-z_]+'?)? (?:is too large|must be (?:at most|less than"
    r"(?: or equal to)?|<=?))[: ]+(?P<value>[\d.]+)?"
)
_AT_MOST = re.compile(
    r"(?:at most|maximum(?: value| context length)? (?:is|of)|<=?|less than(?: or equal to)?) "
    r"(\d[\d.,]*)"
)
#: A prompt beyond the window: OpenAI's code, vLLM's and llama.cpp's words.
_TOO_LONG = re.compile(
    r"context_length_exceeded|maximum context length|exceed(?:s|ed)? the (?:available )?context"
    r"|longer than the maximum model length|exceed_context_size",
    re.I,
)
#: An explicit "this parameter is not supported" (OpenAI's codes and words).
_UNSUPPORTED = re.compile(r"unsupported (?:parameter|value): '(\w+)'", re.I)


def _field(obj: Any, name: str) -> Any:
    """An attribute of an SDK object, or a key of a dict the SDK left unparsed."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def reply_text(response: Any) -> str:
    """The assistant text of a chat-completion response.

    OpenAI-compatible servers under load sometimes answer 200 with no ``choices``, a
    choice without ``message``, or ``content: null``; the SDK does not validate
    responses, so each shape is checked here.

    Raises:
        RetryableError: The reply holds no text (``status`` None: nothing was refused).
    """
    choices = _field(response, "choices")
    if not isinstance(choices, (list, tuple)) or not choices:
        raise RetryableError("200 without choices")
    message = _field(choices[0], "message")
    if message is None:
        raise RetryableError("200 whose choice has no message")
    content = _field(message, "content")
    if content is None:
        refusal = _field(message, "refusal")
        detail = f" (refusal: {' '.join(str(refusal).split())[:120]})" if refusal else ""
        raise RetryableError(f"200 whose message content is null{detail}")
    if not isinstance(content, str):
        raise RetryableError(f"200 whose message content is a {type(content).__name__}, not text")
    return content


def finish_reason(response: Any) -> str | None:
    """Why the server stopped generating (``"stop"``, ``"length"``, ...), None if unsaid.

    ``"length"`` means the reply was cut off at ``max_tokens``: the judge reader never
    scores such a reply, however complete its first part looks.
    """
    choices = _field(response, "choices")
    if not isinstance(choices, (list, tuple)) or not choices:
        return None
    reason = _field(choices[0], "finish_reason")
    return str(reason) if reason is not None else None


def classify(
    status: int, words: str, param: Any, code: Any, retry_after: float | None
) -> Exception:
    """The one typed outcome of an HTTP error answer (see :mod:`elitr_bench.llm.base`).

    Args:
        status: The HTTP status.
        words: The server's message (scrubbed of secrets), as the error line shows it.
        param: The ``param`` the error body names, if any.
        code: The ``code`` the error body names, if any.
        retry_after: Seconds the server asked us to wait, if it said.
    """
    if status in _RETRYABLE_STATUS or status >= 500:
        return RetryableError(words, retry_after, status)
    if status in _AUTH_STATUS:
        return AuthenticationRejected(words, status)
    if not 400 <= status < 500 or code == "content_filter":  # 4xx: the request's fault
        return FatalBackendError(words, status)
    named = str(param) if isinstance(param, str) and param else None
    too_large = _TOO_LARGE.search(words)
    setting = too_large.group("setting") if too_large else None
    if setting in _SETTINGS:
        limit = _AT_MOST.search(words, too_large.end() if too_large else 0)
        return SettingOutOfRange(words, status, str(setting), limit.group(1) if limit else None)
    if _TOO_LONG.search(words) or code == "context_length_exceeded" or status == 413:
        return PromptTooLong(words, status)
    unsupported = _UNSUPPORTED.search(words)
    if code in ("unsupported_parameter", "unsupported_value") or unsupported:
        said = unsupported.group(1) if unsupported else None
        return RequestRefused(words, status, named or said, True)
    if named in _SETTINGS and "response_format" not in words:
        return SettingOutOfRange(words, status, named, None)
    return RequestRefused(words, status, named)


def chat_body(model: str, request: CompletionRequest) -> dict[str, Any]:
    """The JSON body of a chat-completions request, as sent one by one and in a batch.

    One function for both, so that a batch line asks exactly what the one-by-one path
    would have asked and its reply may be filed under the same cache key.
    """
    body: dict[str, Any] = {"model": model, "messages": request.chat(), **request.sent_params()}
    if request.seed is not None:
        body["seed"] = request.seed
    if request.response_format is not None:
        body["response_format"] = request.response_format.payload()
    return body


class OpenAIBackend:
    """Chat completions through ``openai.AsyncOpenAI`` / ``AsyncAzureOpenAI``."""

    kind = "openai"

    def __init__(self, config: EndpointSpec, env: Mapping[str, str] | None = None) -> None:
        environ = os.environ if env is None else env
        self.model = config.model
        #: Non-default endpoint (normalised, no secrets) for the cache key; "" = OpenAI's.
        self.endpoint = endpoint_key(config, environ)
        self._config = config
        key = environ.get(config.api_key_env) or ""
        secrets = [key]
        headers: dict[str, str] = {}
        if config.azure:
            key = key or environ.get("AZURE_OPENAI_API_KEY", "")
            secrets.append(key)
            self.base_url = "azure"
            self._kwargs: dict[str, Any] = {
                "azure_endpoint": environ.get("AZURE_OPENAI_ENDPOINT", ""),
                "api_version": config.api_version,
            }
            where = str(self._kwargs["azure_endpoint"])
        else:
            where = effective_base_url(config, environ)
            base, userinfo = split_userinfo(where) if where else ("", None)
            if userinfo is not None:
                user, password = userinfo
                secrets += [user, password]
                token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
                headers["Authorization"] = f"Basic {token}"
            #: For messages only: credentials masked.
            self.base_url = redact_text(where) if where else "https://api.openai.com/v1"
            self._kwargs = {"base_url": base or None}
        # Local OpenAI-compatible servers often need no key; the SDK insists on one.
        self._secrets = tuple(s for s in secrets if s)
        self._kwargs.update(api_key=key or "EMPTY", timeout=config.timeout, max_retries=0)
        if headers:
            self._kwargs["default_headers"] = headers
        #: In-memory id of these credentials at this endpoint (see JudgeClient): never written.
        self.auth_scope = hashlib.sha256(
            "\0".join((self.kind, where, key, self.model)).encode()
        ).hexdigest()
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

        try:
            response = await self._get_client().chat.completions.create(
                **chat_body(self.model, request)
            )
        except openai.APITimeoutError as exc:
            # The server is named: a judge server that died mid-run ends the run in one line
            # that says which server to look at.
            raise RetryableError(f"timeout at {self.base_url}: {self._msg(exc)}") from None
        except openai.APIConnectionError as exc:
            raise RetryableError(f"cannot reach {self.base_url}: {self._msg(exc)}") from None
        except openai.APIStatusError as exc:
            raise self._classified(exc, request) from None
        except openai.OpenAIError as exc:
            raise FatalBackendError(f"{type(exc).__name__}: {self._msg(exc)}") from None
        except ValueError as exc:  # a 200 whose body is not JSON: a broken proxy or server hiccup
            raise RetryableError(
                f"malformed response from {self.base_url}: {self._msg(exc)}"
            ) from None
        try:
            text = reply_text(response)
        except RetryableError as exc:
            raise RetryableError(f"malformed reply from {self.base_url}: {exc}") from None
        usage = _field(response, "usage")
        details = _field(usage, "completion_tokens_details") if usage is not None else None
        return Completion(
            text=text,
            prompt_tokens=_count(_field(usage, "prompt_tokens")),
            completion_tokens=_count(_field(usage, "completion_tokens")),
            finish_reason=finish_reason(response),
            reasoning_tokens=_count(_field(details, "reasoning_tokens")) if details else 0,
        )

    async def preflight(self) -> str | None:
        """Check key, endpoint and model with one minimal authenticated request.

        First the free model listing: when it names our model, that is enough (and the
        window it names for it, vLLM's ``max_model_len``, is kept for the judge's prompt
        checks: :func:`~elitr_bench.llm.context_window.judge_window`). Otherwise
        (model not listed, listing not served, Azure deployments) one completion of at
        most 1 token with the judge's own parameters decides, so whatever would reject
        the real calls (key, URL, model, unsupported parameter, exhausted quota) rejects
        it too. A transient 5xx or connection failure is asked once more. A reasoning
        model gets the parameters it takes (:mod:`elitr_bench.llm.reasoning`), known or
        learnt from the refusal, which the run's requests then use too.

        Returns:
            None when the judge can be called, else a one-line description of the problem.
        """
        import asyncio

        import openai

        client = self._get_client().with_options(timeout=min(self._config.timeout, 30.0))
        if not self._config.azure:
            try:
                page = await client.models.list()
                listed = [m for m in page.data if getattr(m, "id", None) == self.model]
                if listed:  # vLLM names the window it serves: the judge's prompts are checked
                    served = getattr(listed[0], "max_model_len", None)
                    note_served_window(self.endpoint, self.model, served)
                    return self._limit_beyond(served)
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                return self._rejected(exc)
            except openai.APIConnectionError as exc:  # includes timeouts
                return f"cannot reach {self.base_url} ({self._msg(exc)})"
            except (openai.OpenAIError, ValueError, TypeError, AttributeError):
                pass  # listing not served or not standard: let a completion decide
        problem: str | None = None
        scope = Scope(self.kind, self.endpoint, self.model)
        request = CompletionRequest(
            "Reply with OK.", self._config.temperature, self._config.top_p, 1, None
        )
        attempt = 0
        while attempt < 2:
            # The judge's own parameters, as this endpoint takes them (reasoning models).
            request = reasoning.adapt(request, scope)
            try:
                await client.chat.completions.create(
                    model=self.model, messages=request.chat(), **request.sent_params()
                )
                return None
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                return self._rejected(exc)
            except openai.NotFoundError as exc:
                return f"model {self.model!r} not found at {self.base_url} ({self._msg(exc)})"
            except openai.RateLimitError as exc:
                if "quota" in self._msg(exc).lower():
                    return f"quota exhausted at {self.base_url} ({self._msg(exc)})"
                return None  # the key and model work; the run's limiter handles the pace
            except openai.APIConnectionError as exc:
                problem = f"cannot reach {self.base_url} ({self._msg(exc)})"
            except openai.APIStatusError as exc:
                outcome = self._classified(exc, request)
                problem = str(outcome)
                if isinstance(outcome, RequestRefused) and _REASONING.learn(
                    request, outcome, scope
                ):
                    continue  # learnt for the run too; asked again as it takes it
                if not isinstance(outcome, RetryableError):
                    return problem
            except (openai.OpenAIError, ValueError) as exc:
                return f"unusable reply from {self.base_url} ({self._msg(exc)})"
            if attempt == 0:
                await asyncio.sleep(1.0)
            attempt += 1
        return problem

    def sdk_client(self) -> Any:
        """The SDK client of the running event loop (the batch layer's files and batches)."""
        return self._get_client()

    def scrub(self, exc: BaseException) -> str:
        """An SDK error's message without the credentials, cut to one short line."""
        return self._msg(exc)

    def _limit_beyond(self, served: Any) -> str | None:
        """The judge's ``max_tokens`` when the window the server names cannot hold it."""
        max_tokens = self._config.max_tokens
        if isinstance(served, int) and 0 < served <= max_tokens:
            return (
                f"max_tokens={max_tokens}: the model's window is {served} tokens, says the "
                f"server (max_model_len of {self.base_url}/models), which the output alone "
                "would fill; set max_tokens well below it in the judge spec"
            )
        return None

    def _classified(self, exc: Any, request: CompletionRequest) -> Exception:
        """The typed outcome of an error answer, its line naming the server (and a setting)."""
        status = exc.status_code
        headers = dict(exc.response.headers) if exc.response is not None else {}
        words = f"HTTP {status} from {self.base_url}: {self._msg(exc)}"
        outcome = classify(
            status,
            words,
            getattr(exc, "param", None),
            getattr(exc, "code", None),
            parse_retry_after(headers),
        )
        if isinstance(outcome, SettingOutOfRange):
            outcome = SettingOutOfRange(
                _setting_line(outcome, request, words), status, outcome.setting, outcome.limit
            )
        return outcome

    def _rejected(self, exc: Any) -> str:
        status = getattr(exc, "status_code", "?")
        return (
            f"the API key in {self._config.api_key_env} was rejected by {self.base_url} "
            f"(HTTP {status}: {self._msg(exc)})"
        )

    def _msg(self, exc: BaseException) -> str:
        return redact_text(str(exc), self._secrets)[:300]

    async def aclose(self) -> None:
        """Close the HTTP connection pool of the current loop's client."""
        import asyncio

        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = self._loop = None


def _setting_line(outcome: SettingOutOfRange, request: CompletionRequest, words: str) -> str:
    """One line: the user's setting, its value, the server's limit, and the fix."""
    setting = "max_tokens" if outcome.setting == "max_completion_tokens" else outcome.setting
    value: Any = getattr(request, setting, None)
    limit = f"the model allows at most {outcome.limit}" if outcome.limit else "out of range"
    sent = ""
    if setting == "max_tokens" and request.completion_limit:
        sent = f" (sent as max_completion_tokens={request.sent_limit} for a reasoning model)"
    return (
        f"{setting}={value}{sent}: {limit}, says the server ({words}); this is the judge "
        f"spec's setting, not the server's refusal of it: set {setting} within the limit"
    )


def _count(value: Any) -> int:
    """A token count from a usage object (0 when missing or not a number)."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
