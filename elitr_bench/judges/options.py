"""The options of a judge spec: their types, aliases, the family's own, and their checks.

Shared options are the fields of :class:`~elitr_bench.judges.identity.JudgeConfig`; a
family adds its own record. Unknown or misspelt options fail with one line naming the
closest one, because a typo would otherwise silently change what a score means.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from elitr_bench.judges.conceal import has_concealed_userinfo
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import (
    FAMILIES,
    JudgeFamily,
    batch_refusal,
    default_family,
    families,
    get_family,
    owner_of,
    select_family,
)
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.option_types import Converter, option_converters
from elitr_bench.judges.rubrics import RUBRICS
from elitr_bench.llm.constrained import INSTALL_HINT
from elitr_bench.llm.constrained import available as structured_available
from elitr_bench.llm.redact import MASK

#: Greedy decoding, for judges whose paper gives no sampling (a family's ``defaults``).
GREEDY: Mapping[str, Any] = {"temperature": 0.0, "top_p": 1.0}


def family_defaults(name: str) -> Mapping[str, Any]:
    """The shared options family ``name`` sets differently from the dataclass defaults.

    Each family registers its own (greedy decoding where its paper gives no sampling,
    the method it runs); the registry, not this module, knows them.
    """
    return get_family(name).defaults


def judge_family(options: Mapping[str, Any]) -> str:
    """The family a spec's shared options select, as the registered families say.

    Every family is asked (:func:`~elitr_bench.judges.family.select_family`: its own
    predicate, then its methods, then its rubrics); a spec none selects gets the default
    family. A family that only a command selects is named by that command.
    """
    return select_family(options).name


#: The shared options a spec may set, with their converters (the family's come from its
#: record), from the real type hints of :class:`JudgeConfig`.
_OPTION_TYPES: dict[str, Converter] = option_converters(
    JudgeConfig, skip=("backend", "model", "spec", "family", "options")
)
_OPTION_ALIASES = {"max_new_tokens": "max_tokens", "n": "samples", "k": "samples"}


def _convert(name: str, raw: str, spec: str, converter: Converter | None = None) -> Any:
    converter = converter or _OPTION_TYPES[name]
    try:
        return converter.convert(raw)
    except ValueError:
        raise JudgeConfigError(
            f"judge spec {spec!r}: option {name}={raw!r} is not a valid {converter.kind}"
        ) from None


def _max_cost(raw: str, spec: str) -> float:
    """A spec's ``max_cost=`` in USD: a finite number above 0 (there is no "no cap" value)."""
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise JudgeConfigError(
            f"judge spec {spec!r}: max_cost={raw} must be a number of US dollars above 0, "
            "e.g. max_cost=5; drop the option for no cap"
        )
    return value


def without_option(spec: str, name: str) -> str:
    """``spec`` with every ``name=...`` option dropped (as the parser reads keys).

    The finish line of a run its ``max_cost=`` stopped names the spec without the cap,
    so that the command it prints judges what the cap held back.
    """
    head, *parts = spec.split(",")
    kept = [part for part in parts if _option_name(part.partition("=")[0]) != name]
    return ",".join([head, *kept])


def _option_name(key: str) -> str:
    """An option's name as the spec parser reads it: ``Max-Cost`` is ``max_cost``."""
    return key.strip().lower().replace("-", "_")


def _family_values(
    fam: JudgeFamily, raw: Mapping[str, str], spec: str, *, named: bool = False
) -> dict[str, Any]:
    """The family's own options of a spec, converted; refuses any other option.

    An option of another family names that family and how a spec selects it, unless a
    command named the family, where no other family can be chosen;
    an unknown option gets the closest option this family takes ("did you mean").
    """
    types = fam.converters
    owner: JudgeFamily | None = None
    used: list[str] = []  # the first other family's options, as the spec wrote them
    for key, value in raw.items():
        if key in types:
            continue
        found = owner_of(key)
        if found is None:
            known = sorted([*_OPTION_TYPES, *types, "price"])
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
            elsewhere = "" if close else _closest_elsewhere(key, fam)
            raise JudgeConfigError(
                f"judge spec {spec!r}: unknown option {key!r}; "
                + (f"did you mean {close[0]!r}? " if close else elsewhere)
                + f"known options of {fam.label}: {', '.join(known)}"
            )
        if owner is None or found.name == owner.name:
            owner = found
            used.append(f"{key}={value}")
    if owner is not None:
        if named:
            way = f"{fam.label} does not read it; drop it"
        elif owner.selector:
            way = f"add {owner.selector} or drop the option"
        else:
            way = "drop it"
        raise JudgeConfigError(
            f"judge spec {spec!r}: {', '.join(used)} appl{'ies' if len(used) == 1 else 'y'} "
            f"to {owner.label} only; {way}"
        )
    return {key: _convert(key, value, spec, types[key]) for key, value in raw.items()}


def _closest_elsewhere(key: str, fam: JudgeFamily) -> str:
    """The "did you mean" among the other families' options, and how to select theirs."""
    for other in families():
        if other.name == fam.name:
            continue
        close = difflib.get_close_matches(key, other.option_names(), n=1, cutoff=0.75)
        if close:
            how = f", with {other.selector}" if other.selector else ""
            return f"did you mean {close[0]!r} ({other.label}{how})? "
    return ""


def _validate(config: JudgeConfig, spec: str) -> None:
    def bad(msg: str) -> JudgeConfigError:
        return JudgeConfigError(f"judge spec {spec!r}: {msg}")

    registered = families()
    family_rubrics = [(f.name, f.rubric_names()) for f in registered if not f.default]
    family_rubrics = [(name, r) for name, r in family_rubrics if r]
    if config.rubric not in RUBRICS and not any(config.rubric in r for _, r in family_rubrics):
        broken = FAMILIES.broken(config.rubric)
        if broken is not None:  # the plugin that would register it cannot be loaded
            raise bad(str(broken))
        others = " or ".join(f"{', '.join(r)} ({family})" for family, r in family_rubrics)
        raise bad(
            f"unknown rubric {config.rubric!r}; installed rubrics: {', '.join(RUBRICS)} "
            f"({default_family().short or default_family().name}) or {others}"
            + FAMILIES.broken_note()
        )
    methods = sorted({m for f in registered for m in f.method_names()})
    if config.method and config.method not in methods:
        raise bad(f"unknown method {config.method!r}; use one of {', '.join(methods)}")
    check = get_family(config.family).check
    if check is not None:
        check(config, spec)
    if config.batch and config.backend != "openai":
        raise bad(
            "batch=on sends through an OpenAI-compatible Batch API; it applies to openai: "
            "judges only (drop batch=on)"
        )
    refusal = batch_refusal(config.family) if config.batch else None
    if refusal is not None:
        raise bad(f"batch=on: {refusal} (drop batch=on)")
    if not 0.0 <= config.temperature <= 2.0:
        raise bad(f"temperature={config.temperature} must be in [0, 2]")
    if not 0.0 < config.top_p <= 1.0:
        raise bad(f"top_p={config.top_p} must be in (0, 1]")
    for name in ("samples", "concurrency", "max_tokens", "batch_size"):
        if getattr(config, name) < 1:
            raise bad(f"{name}={getattr(config, name)} must be >= 1")
    for name in ("reask", "retries"):
        if getattr(config, name) < 0:
            raise bad(f"{name}={getattr(config, name)} must be >= 0")
    for name in ("rpm", "tpm", "backoff", "context"):
        if getattr(config, name) < 0:
            raise bad(f"{name}={getattr(config, name)} must be >= 0")
    if config.timeout <= 0:
        raise bad(f"timeout={config.timeout} must be > 0")
    if config.max_cost is not None:
        _max_cost(str(config.max_cost), spec)  # set by with_options: the same rule
    if config.structured not in ("auto", "on", "off"):
        raise bad(f"structured={config.structured} must be auto, on or off")
    if config.structured == "on" and config.backend == "hf" and not structured_available():
        raise bad(f"structured=on for an hf judge decodes with xgrammar: {INSTALL_HINT}")
    if config.structured == "on" and config.backend not in ("openai", "hf"):
        # Only an OpenAI-compatible endpoint takes a response_format and only an hf judge
        # decodes one itself; saying "on" to another would be a promise silently broken.
        raise bad(
            f"structured=on needs an openai or hf judge (it sends response_format); the "
            f"{config.backend} backend has no schema-constrained decoding: use structured=auto"
        )
    if config.backend != "openai" and (config.azure or config.base_url):
        raise bad("azure/base_url apply to the openai backend only")
    if has_concealed_userinfo(config.base_url):
        raise bad(
            f"base_url user info is {MASK}, as written in results and logs; give the real "
            "user:password@ in base_url= or in OPENAI_BASE_URL"
        )


def with_options(config: JudgeConfig, **changes: Any) -> JudgeConfig:
    """Return a copy with some options changed, shared or the family's (validated).

    Raises:
        JudgeConfigError: An option that neither the config nor its family has.
    """
    own = {f.name for f in fields(config.options)} if config.options is not None else set()
    unknown = sorted(k for k in changes if k not in own and k not in _OPTION_TYPES)
    if unknown:
        raise JudgeConfigError(
            f"judge spec {config.spec or config.backend!r}: no option {', '.join(unknown)} "
            f"for {get_family(config.family).label}"
        )
    mine = {k: v for k, v in changes.items() if k in own}
    shared = {k: v for k, v in changes.items() if k not in own}
    options = replace(config.options, **mine) if mine else config.options
    new = replace(config, options=options, **shared)
    _validate(new, config.spec or config.backend)
    return new
