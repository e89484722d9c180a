"""Judge specs and payloads as they may be written: credentials masked, the real spec kept.

A judge spec travels through ``--metadata``, task configs, filter arguments and result
files; :mod:`elitr_bench.llm.redact` masks what a credential looks like. lm-eval
re-creates our filters from the (written) task config, so the filter must get a spec
without the secret and still reach the real endpoint. :func:`conceal_spec` therefore
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

from elitr_bench.llm.redact import MASK, USERINFO, redact_text

#: Judge-spec options that would hold a key; parsing refuses them, messages mask them.
_SECRET_OPTION = re.compile(
    r"(?P<name>(?:^|[,;])\s*(?:api[-_]?key|key|token)\s*=)(?P<value>[^,;|]*)", re.IGNORECASE
)

_VAULT: dict[str, str] = {}
_VAULT_LOCK = threading.Lock()


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


def has_concealed_userinfo(url: str) -> bool:
    """Whether a URL's user info is our mask (a concealed spec from a written file)."""
    match = USERINFO.search(url)
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
