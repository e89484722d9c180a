"""The one place that keeps credentials out of everything we write or print.

A judge spec travels through ``--metadata``, task configs, filter arguments, result
files, log lines and error messages. Credentials can hide in it in two ways: user info
in an endpoint URL (``http://user:KEY@host/v1``, also via ``OPENAI_BASE_URL``) and
secret-looking query parameters (``?api-key=KEY``). Every spec or URL that is written goes
through :func:`redact_text` (or :func:`conceal_spec`), which replaces them by ``***``.

lm-eval re-creates our filters from the (written) task config, so the filter must get a
spec without the secret and still reach the real endpoint. :func:`conceal_spec` therefore
remembers, in this process's memory only, which concealed spec stands for which real one,
and :func:`reveal_spec` maps it back when the spec is parsed again. Nothing of that map is
ever written; a concealed spec copied into another process is refused with a line saying
how to give the credentials (see :func:`has_concealed_userinfo`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"

#: ``scheme://userinfo@``: the user info ends at the last ``@`` before the host's end
#: (``/``, ``?``, ``#``, whitespace, a quote, or a judge-spec separator ``,`` ``;`` ``|``).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#\s,;|\"'<>]*)@")

#: Query parameters whose values are credentials (Azure's ``api-key``, signed URLs, ...).
_SECRET_QUERY = re.compile(
    r"(?P<name>[?&](?:api[-_]?key|key|token|access[-_]?token|secret|password|passwd|sig|"
    r"signature|auth|authorization)=)(?P<value>[^&#\s,;|\"'<>]*)",
    re.IGNORECASE,
)

#: Judge-spec options that would hold a key; parsing refuses them, messages mask them.
_SECRET_OPTION = re.compile(
    r"(?P<name>(?:^|[,;])\s*(?:api[-_]?key|key|token)\s*=)(?P<value>[^,;|]*)", re.IGNORECASE
)

_VAULT: dict[str, str] = {}
_VAULT_LOCK = threading.Lock()


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with URL user info, secret query values and the given secrets masked.

    Args:
        text: Anything about to be written or printed (a URL, a spec, an error message).
        secrets: Literal secrets to mask as well (an API key read from the environment);
            one of at least 4 characters is masked, and for a long one its first 12
            characters too, which is how keys get quoted in provider error messages.
    """
    out = _USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    out = _SECRET_QUERY.sub(lambda m: f"{m.group('name')}{MASK}", out)
    for secret in secrets:
        if secret and len(secret) >= 4:
            out = out.replace(secret, MASK)
            if len(secret) > 12:
                out = out.replace(secret[:12], MASK)
    return out


def conceal_spec(spec: str) -> str:
    """The spec as it may be written: credentials masked, the real one remembered in memory.

    Values of ``api_key=``/``key=``/``token=`` options are masked too (parsing refuses
    them, and the refusal must not print them).
    """
    shown = _SECRET_OPTION.sub(lambda m: f"{m.group('name')}{MASK}", redact_text(spec))
    if shown != spec:
        with _VAULT_LOCK:
            _VAULT[shown] = spec
    return shown


def reveal_spec(spec: str) -> str:
    """The real spec behind a spec concealed by this process (else ``spec`` itself)."""
    with _VAULT_LOCK:
        return _VAULT.get(spec, spec)


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """The URL without its user info, and the percent-decoded ``(user, password)`` if any.

    The HTTP client under the ``openai`` SDK (httpx) turns user info into HTTP Basic auth
    and writes the whole URL into its request log lines; taking the user info out and
    sending the same Basic header ourselves keeps the credentials working and unlogged.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=hostport)), (unquote(user), unquote(password))


def has_concealed_userinfo(url: str) -> bool:
    """Whether a URL's user info is our mask (a concealed spec from a written file)."""
    match = _USERINFO.search(url)
    return match is not None and match.group("userinfo") == MASK


def scrub(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """A JSON-like value with :func:`redact_text` applied to every string (keys included).

    For payloads copied from files we did not write ourselves (an earlier version's
    results file, re-written by ``elitr-bench score``).
    """
    keep = tuple(secrets)
    if isinstance(value, str):
        return redact_text(value, keep)
    if isinstance(value, dict):
        return {
            (redact_text(k, keep) if isinstance(k, str) else k): scrub(v, keep)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub(v, keep) for v in value]
    if isinstance(value, tuple):
        return tuple(scrub(v, keep) for v in value)
    return value
