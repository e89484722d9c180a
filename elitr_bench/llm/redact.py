"""The one place that keeps credentials out of everything we write or print.

A judge spec travels through ``--metadata``, task configs, filter arguments, result
files, log lines and error messages. Credentials can hide in it in two ways: user info
in an endpoint URL (``http://user:KEY@host/v1``, also via ``OPENAI_BASE_URL``) and
secret-looking query parameters (``?api-key=KEY``). Every spec or URL that is written goes
through :func:`redact_text` (the judges conceal a whole spec with it), which replaces
them by ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"

#: ``scheme://userinfo@``: the user info ends at the last ``@`` before the host's end
#: (``/``, ``?``, ``#``, whitespace, a quote, or a judge-spec separator ``,`` ``;`` ``|``).
USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#\s,;|\"'<>]*)@")

#: Query parameters whose values are credentials (Azure's ``api-key``, signed URLs, ...).
_SECRET_QUERY = re.compile(
    r"(?P<name>[?&](?:api[-_]?key|key|token|access[-_]?token|secret|password|passwd|sig|"
    r"signature|auth|authorization)=)(?P<value>[^&#\s,;|\"'<>]*)",
    re.IGNORECASE,
)


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with URL user info, secret query values and the given secrets masked.

    Args:
        text: Anything about to be written or printed (a URL, a spec, an error message).
        secrets: Literal secrets to mask as well (an API key read from the environment);
            one of at least 4 characters is masked, and for a long one its first 12
            characters too, which is how keys get quoted in provider error messages.
    """
    out = USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    out = _SECRET_QUERY.sub(lambda m: f"{m.group('name')}{MASK}", out)
    for secret in secrets:
        if secret and len(secret) >= 4:
            out = out.replace(secret, MASK)
            if len(secret) > 12:
                out = out.replace(secret[:12], MASK)
    return out


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
