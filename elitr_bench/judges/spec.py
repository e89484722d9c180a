"""Judge specs: parsing ``openai:gpt-4-0613,rubric=...`` strings, and the run's setting.

A judge is named by one string so that it travels unchanged through ``--metadata``,
environment variables and result files. Parsing is strict (unknown backends and options
fail with one line) because a typo in a judge option would otherwise silently change
what a reported score means.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Any

from elitr_bench.judges.conceal import conceal_spec, reveal_spec
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import (
    get_family,
)
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.options import (
    _OPTION_ALIASES,
    _OPTION_TYPES,
    _convert,
    _family_values,
    _max_cost,
    _option_name,
    _validate,
    judge_family,
)

DEFAULT_JUDGE_SPEC = "openai:gpt-4-0613"
"""The paper's judge (Sec. 4, footnote 9) with the Fig. 6/7 rubric."""

ENV_JUDGE = "ELITR_JUDGE"
ENV_CACHE = "ELITR_JUDGE_CACHE"

BACKENDS = ("openai", "hf", "replay", "lexical")
_NEEDS_TARGET = {"openai": "a model name, e.g. openai:gpt-4-0613", "hf": "a path or hub id"}


# Long: one pass over the string whose checks, in order, decide which one line a bad spec gets.
def parse_judge_spec(spec: str, *, family: str | None = None) -> JudgeConfig:
    """Parse ``<backend>[:<model>][,option=value...]`` into a :class:`JudgeConfig`.

    Examples: ``openai:gpt-4-0613``, ``hf:/models/judge-13b,rubric=NAME``,
    ``replay``, ``lexical``, ``openai:gpt-4o-mini,temperature=0,samples=3,rpm=500``.
    ``price=IN:OUT`` sets both per-1M-token prices. ``none`` is not a judge: use
    :func:`resolve_run_judge` for specs that may disable judging.

    The options are split as the families say: the shared ones (the
    :class:`JudgeConfig` fields) and the chosen family's own (its options record); an
    option of another family is refused with the way to select that family, an unknown
    one with the closest option this family takes.

    Args:
        spec: The judge spec.
        family: The judge family whose defaults apply (a command that implies one:
            the registered name); None asks the registered families
            (:func:`judge_family`). The defaults land in the config, so the judge
            identity shows what ran; options written in the spec win.

    Raises:
        JudgeConfigError: Unknown backend, family or option, bad value, or an API key in
            the spec.
    """
    # Messages and config.spec show the concealed spec; the real one is used (redact.py).
    text = reveal_spec(spec.strip())
    spec = conceal_spec(text)
    if not text:
        raise JudgeConfigError("empty judge spec; name a judge, e.g. openai:gpt-4-0613 or replay")
    head, *option_parts = text.split(",")
    backend, _, model = head.partition(":")
    backend = backend.strip().lower()
    model = model.strip()
    if backend in ("none", "off", "skip"):  # tasks turn judging off before parsing
        raise JudgeConfigError(
            f"judge spec {spec!r}: this command needs a judge, not {backend!r}; "
            "e.g. openai:gpt-4o (replay and lexical score answers to questions only)"
        )
    if backend not in BACKENDS:
        close = difflib.get_close_matches(backend, BACKENDS, n=1, cutoff=0.75)
        raise JudgeConfigError(
            f"judge spec {spec!r}: unknown backend {backend!r}; "
            + (f"did you mean {close[0]!r}? " if close else "")
            + f"use one of {', '.join(BACKENDS)} (or 'none' to skip judging)"
        )
    if backend in _NEEDS_TARGET and not model:
        raise JudgeConfigError(
            f"judge spec {spec!r}: backend {backend} needs {_NEEDS_TARGET[backend]}"
        )
    if backend not in _NEEDS_TARGET and model:
        raise JudgeConfigError(
            f"judge spec {spec!r}: backend {backend} takes no model; drop ':{model}'"
        )
    values: dict[str, Any] = {}
    others: dict[str, str] = {}  # options of a family, converted once it is known
    for part in option_parts:
        part = part.strip()
        if not part:
            continue
        key, eq, raw = part.partition("=")
        key = _option_name(key)
        raw = raw.strip()
        if not eq:
            raise JudgeConfigError(f"judge spec {spec!r}: option {part!r} must be key=value")
        if key in ("api_key", "key", "token"):
            raise JudgeConfigError(
                f"judge spec {spec!r}: never put API keys in a judge spec; export "
                "OPENAI_API_KEY (or name another variable with api_key_env=VAR)"
            )
        key = _OPTION_ALIASES.get(key, key)
        if key == "price":
            p_in, colon, p_out = raw.partition(":")
            if not colon:
                raise JudgeConfigError(
                    f"judge spec {spec!r}: price must be IN:OUT (USD per 1M tokens), "
                    "e.g. price=30:60"
                )
            values["price_in"] = _convert("price_in", p_in, spec)
            values["price_out"] = _convert("price_out", p_out, spec)
        elif key == "max_cost":
            values[key] = _max_cost(raw, spec)
        elif key in _OPTION_TYPES:
            values[key] = _convert(key, raw, spec)
        else:
            others[key] = raw
    try:
        fam = get_family(family or judge_family(values))
    except JudgeConfigError as exc:
        raise JudgeConfigError(f"judge spec {spec!r}: {exc}") from None
    own = _family_values(fam, others, spec, named=family is not None)
    if backend in _NEEDS_TARGET:  # sampling and methods mean nothing to replay/lexical
        values = {**fam.defaults, **values}
    config = JudgeConfig(
        backend=backend,
        model=model,
        spec=spec,
        family=fam.name,
        options=fam.options(**own),
        **values,
    )
    _validate(config, spec)
    return config


def resolve_judge_spec(
    spec: str | None, env: Mapping[str, str] | None = None, *, default: str = DEFAULT_JUDGE_SPEC
) -> str:
    """Pick the run's judge spec: explicit value, else ``ELITR_JUDGE``, else ``default``.

    ``default`` is ELITR-Bench's answer judge unless a command names its own paper's
    judge.
    """
    environ = os.environ if env is None else env
    if spec is not None and spec.strip():
        return spec.strip()
    from_env = environ.get(ENV_JUDGE, "").strip()
    return from_env or default


def resolve_run_judge(spec: str | None) -> JudgeConfig | None:
    """Like :func:`parse_judge_spec` but ``none`` (any case) means "do not judge"."""
    text = resolve_judge_spec(spec)
    if text.lower() in ("none", "off", "skip"):
        return None
    return parse_judge_spec(text)


# --- process-level run setting (read by the lm-eval filter) -----------------------------

_UNSET: Any = object()
_RUN_JUDGE: Any = _UNSET


def set_run_judge(spec: str | JudgeConfig | None) -> JudgeConfig | None:
    """Set the judge used by the ``elitr_judge`` filter in this process.

    ``None`` or ``"none"`` disables judging (items get status ``skipped``). Callers that
    want the env/default fallback pass the result of :func:`resolve_judge_spec`.

    Returns:
        The parsed config (None when judging is disabled).
    """
    global _RUN_JUDGE
    if spec is None or isinstance(spec, JudgeConfig):
        _RUN_JUDGE = spec
    elif spec.strip().lower() in ("none", "off", "skip", ""):
        _RUN_JUDGE = None
    else:
        _RUN_JUDGE = parse_judge_spec(spec)
    return _RUN_JUDGE


def get_run_judge() -> JudgeConfig | None:
    """The judge for this run; if never set, ``ELITR_JUDGE`` or the default judge."""
    if _RUN_JUDGE is _UNSET:
        return resolve_run_judge(None)
    return _RUN_JUDGE


def reset_run_judge() -> None:
    """Forget any judge set with :func:`set_run_judge` (tests, long-lived processes)."""
    global _RUN_JUDGE
    _RUN_JUDGE = _UNSET
