"""Where and how a model is reached: the endpoint of a judge, without the judge.

The transport needs a handful of settings (backend kind, model, base URL, key variable,
Azure, timeout, local batch size and device, a known context window, the sampling of a
preflight request). :class:`EndpointSpec` names exactly those, so the judges' own config
record satisfies it without the transport importing it; :class:`Endpoint` is the plain
record for callers that have no judge (benchmarks, tests, another tool).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit


class EndpointSpec(Protocol):
    """The settings the transport reads (read-only; a frozen dataclass satisfies it)."""

    @property
    def backend(self) -> str:
        """``openai`` or ``hf`` (others do not complete prompts)."""
        ...

    @property
    def model(self) -> str:
        """Model name (openai), path or hub id (hf)."""
        ...

    @property
    def spec(self) -> str:
        """The user's spec string, for messages and suggestions (may be ``""``)."""
        ...

    @property
    def base_url(self) -> str:
        """OpenAI-compatible endpoint (else ``OPENAI_BASE_URL`` / the SDK default)."""
        ...

    @property
    def api_key_env(self) -> str:
        """Name of the environment variable holding the key (never the key)."""
        ...

    @property
    def azure(self) -> bool:
        """Azure OpenAI (``AZURE_OPENAI_ENDPOINT``/``AZURE_OPENAI_API_KEY``)."""
        ...

    @property
    def api_version(self) -> str:
        """Azure API version."""
        ...

    @property
    def timeout(self) -> float:
        """Per-request timeout in seconds."""
        ...

    @property
    def temperature(self) -> float:
        """Sampling temperature of the preflight request."""
        ...

    @property
    def top_p(self) -> float:
        """Nucleus mass of the preflight request."""
        ...

    @property
    def batch_size(self) -> int:
        """Prompts per generation batch (hf)."""
        ...

    @property
    def device(self) -> str:
        """Torch device for hf (``""`` = auto)."""
        ...

    @property
    def context(self) -> int:
        """Context window in tokens if given (0: look it up)."""
        ...

    @property
    def max_tokens(self) -> int:
        """Output token limit of the requests (checked against a window a server names)."""
        ...


@dataclass(frozen=True)
class Endpoint:
    """A model endpoint on its own (satisfies :class:`EndpointSpec`).

    Its defaults are the one table of endpoint defaults: a judge's config takes its own
    from :data:`DEFAULTS`, so the two can never disagree.
    """

    backend: str
    model: str = ""
    spec: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    azure: bool = False
    api_version: str = "2024-06-01"
    timeout: float = 120.0
    temperature: float = 0.0
    top_p: float = 1.0
    batch_size: int = 8
    device: str = ""
    context: int = 0
    max_tokens: int = 0


#: The endpoint defaults every record of endpoint settings starts from.
DEFAULTS = Endpoint("")


def effective_base_url(endpoint: EndpointSpec, env: Mapping[str, str] | None = None) -> str:
    """Endpoint the openai backend will call ("" = the SDK's default)."""
    environ = os.environ if env is None else env
    return endpoint.base_url or environ.get("OPENAI_BASE_URL", "")


#: The OpenAI API the SDK calls when no base URL is set (normalised).
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_endpoint(url: str) -> str:
    """Canonical form of an endpoint URL for cache keys and judge identities.

    Scheme and host are lower-cased, a default port and trailing slashes dropped, so
    ``HTTP://LocalHost:80/v1/`` and ``http://localhost/v1`` name one endpoint. User info,
    query and fragment are dropped because they may carry credentials (``user:key@``,
    ``?api-key=``), which must never reach a cache key, a cache row or a results file.
    """
    text = url.strip()
    parts = urlsplit(text)
    if not parts.scheme or not parts.netloc:
        return text.rstrip("/")
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    return f"{scheme}://{host}{parts.path.rstrip('/')}"


def endpoint_key(endpoint: EndpointSpec, env: Mapping[str, str] | None = None) -> str:
    """The endpoint called when it is not the default OpenAI API, else ``""``.

    Part of the cache key and the judge identity: a local or scripted OpenAI-compatible
    server serving a model under the name ``gpt-4o`` must neither be answered from the
    cache of the real ``gpt-4o`` nor fill it. ``""`` for the default endpoint keeps the
    keys of existing caches valid. Azure is ``azure+<AZURE_OPENAI_ENDPOINT>`` (the
    deployment is the model name, already in the key). Never holds a secret.
    """
    if endpoint.backend != "openai":
        return ""
    environ = os.environ if env is None else env
    if endpoint.azure:
        return "azure+" + normalize_endpoint(environ.get("AZURE_OPENAI_ENDPOINT", ""))
    base = effective_base_url(endpoint, environ)
    if not base:
        return ""
    key = normalize_endpoint(base)
    return "" if key == DEFAULT_OPENAI_BASE_URL else key
