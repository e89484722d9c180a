"""Judge specs: parsing ``openai:gpt-4-0613,rubric=...`` strings, readiness checks, run setting.

A judge is named by one string so that it travels unchanged through ``--metadata``,
environment variables and result files. Parsing is strict (unknown backends and options
fail with one line) because a typo in a judge option would otherwise silently change
what a reported score means.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import ipaddress
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from elitr_bench.judges.errors import JudgeConfigError, JudgeNotReadyError
from elitr_bench.judges.family import (
    DEFAULT_FAMILY,
    FAMILIES,
    JudgeFamily,
    default_family,
    families,
    get_family,
    owner_of,
    select_family,
)
from elitr_bench.judges.option_types import Converter, option_converters
from elitr_bench.judges.rubrics import DEFAULT_RUBRIC, RUBRICS, Rubric
from elitr_bench.llm.endpoint import effective_base_url, endpoint_key
from elitr_bench.llm.redact import (
    MASK,
    conceal_spec,
    has_concealed_userinfo,
    redact_text,
    reveal_spec,
)

DEFAULT_JUDGE_SPEC = "openai:gpt-4-0613"
"""The paper's judge (Sec. 4, footnote 9) with the Fig. 6/7 rubric."""

ENV_JUDGE = "ELITR_JUDGE"
ENV_CACHE = "ELITR_JUDGE_CACHE"

BACKENDS = ("openai", "hf", "replay", "lexical")
_NEEDS_TARGET = {"openai": "a model name, e.g. openai:gpt-4-0613", "hf": "a path or hub id"}


_Options = TypeVar("_Options")


@dataclass(frozen=True)
class JudgeConfig:
    """Everything that defines a judge and how it is run.

    The fields are what every judge shares: the endpoint and transport settings, the
    sampling, the prompt (``rubric``/``method``) and the re-asks. What only one family
    reads is in ``options``, that family's own frozen record
    (:mod:`elitr_bench.judges.family`).

    The dataclass defaults are ELITR-Bench's answer judge's: the paper samples its GPT-4
    evaluator (App. C.1: the evaluator is a source of variance under the run's seed)
    with the setting App. B gives for GPT-4, temperature 0.6 and top-p 0.9; the seed
    (2023, the paper's first seed) is sent to the API. A family whose paper gives no
    sampling decodes greedily instead (its ``defaults``, applied by
    :func:`parse_judge_spec`).

    Attributes:
        backend: ``openai``, ``hf``, ``replay`` or ``lexical``.
        model: Model name (openai), path or hub id (hf); ``""`` for replay and lexical.
        rubric: Rubric name (one of :data:`~elitr_bench.judges.rubrics.RUBRICS`, or a
            rubric a family registers).
        temperature: Sampling temperature (0 = greedy).
        top_p: Nucleus sampling mass.
        seed: Seed passed to the backend; sample ``i`` / re-ask ``j`` use a derived seed.
        samples: Number of judgements per item (mean and spread are reported).
        reask: Extra attempts for an output without a valid score before it is unscored.
        max_tokens: Output token limit per judgement.
        concurrency: Requests in flight at once.
        rpm: Requests-per-minute limit (0 = none).
        tpm: Tokens-per-minute limit (0 = none).
        timeout: Per-request timeout in seconds.
        retries: Retries of a failed request (429, 5xx, timeout, connection).
        backoff: Base of the exponential back-off in seconds.
        cache: Cache location: a path, ``off``, or ``""`` for the default location.
        base_url: OpenAI-compatible endpoint (else ``OPENAI_BASE_URL`` / the SDK default).
        api_key_env: Name of the environment variable holding the key (never the key).
        azure: Use Azure OpenAI (``AZURE_OPENAI_ENDPOINT``/``AZURE_OPENAI_API_KEY``).
        api_version: Azure API version.
        batch_size: Prompts per generation batch (hf).
        device: Torch device for hf (``""`` = auto).
        price_in: USD per 1M prompt tokens (None = price table).
        price_out: USD per 1M completion tokens (None = price table).
        max_cost: A cap in USD on the judging a run may plan (None = no cap): over it,
            or with no price known, nothing is sent (see ``judges/summary/budget.py``).
            Not part of :meth:`identity`: a cap decides whether a run judges, never
            what a judgement is, so caches and reused judgements are shared.
        progress: Show a tqdm progress bar.
        preflight: Send one minimal authenticated request before any generation
            (openai backend), so a wrong key, URL or model fails in seconds.
        method: A judge method a family registers (see ``judges/summary/registry.py``).
        context: Every judge: its model's context window in tokens (prompt plus output).
            0 = known from the OpenAI model table or an hf judge's config, else not
            checked (see ``llm/context_window.py``); a value overrides both.
        structured: Send a restatement turn's JSON schema as OpenAI's
            ``response_format``: ``on``, ``off`` or ``auto`` (openai-compatible backends).
        family: The judge family's registered name (:mod:`elitr_bench.judges.family`).
        options: The family's own options record; read it with :meth:`options_of`.
    """

    backend: str
    model: str = ""
    rubric: str = DEFAULT_RUBRIC
    temperature: float = 0.6
    top_p: float = 0.9
    seed: int | None = 2023
    samples: int = 1
    reask: int = 1
    max_tokens: int = 1024
    concurrency: int = 16
    rpm: float = 0.0
    tpm: float = 0.0
    timeout: float = 120.0
    retries: int = 6
    backoff: float = 1.0
    cache: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    azure: bool = False
    api_version: str = "2024-06-01"
    batch_size: int = 8
    device: str = ""
    price_in: float | None = None
    price_out: float | None = None
    max_cost: float | None = None
    progress: bool = True
    preflight: bool = True
    method: str = ""
    context: int = 0
    structured: str = "auto"
    family: str = DEFAULT_FAMILY
    options: Any = None
    spec: str = field(default="", compare=False)

    def options_of(self, kind: type[_Options]) -> _Options:
        """The family options record, typed (``config.options_of(MyOptions)``).

        Raises:
            JudgeConfigError: The config is of another family.
        """
        if not isinstance(self.options, kind):
            raise JudgeConfigError(
                f"judge spec {self.spec or self.backend!r} is a {self.family} judge; "
                f"{kind.__name__} belongs to another family"
            )
        return self.options

    @property
    def rubric_obj(self) -> Rubric:
        """The rubric this judge uses.

        Raises:
            JudgeConfigError: The rubric is another family's (a prompt of its own).
        """
        if self.rubric not in RUBRICS:
            owner = next((f for f in families() if self.rubric in f.rubric_names()), None)
            raise JudgeConfigError(
                f"judge spec {self.spec or self.backend!r}: rubric={self.rubric} "
                + (f"belongs to {owner.label}" if owner else "is not a rubric of this judge")
                + f"; this judge needs rubric={' or '.join(RUBRICS)}"
            )
        return RUBRICS[self.rubric]

    @property
    def is_llm(self) -> bool:
        """Whether this judge sends prompts to a language model."""
        return self.backend in ("openai", "hf")

    def identity(self) -> dict[str, Any]:
        """What a reported score depends on: backend, model, rubric, sampling, prompt hash.

        Contains no secrets (the key's *variable name* is not even included).
        """
        ident: dict[str, Any] = {
            "backend": self.backend,
            "model": self.model,
            "rubric": self.rubric,
        }
        if self.rubric in RUBRICS:
            ident["prompt_hash"] = self.rubric_obj.prompt_hash
        if self.method:
            ident["method"] = self.method
        if self.is_llm:
            ident.update(family_identity(self))
            ident["sampling"] = {
                "temperature": self.temperature,
                "top_p": self.top_p,
                "seed": self.seed,
                "max_tokens": self.max_tokens,
                "samples": self.samples,
                "reask": self.reask,
            }
        endpoint = judge_endpoint(self)
        if endpoint:  # only then, so identities of the default OpenAI API stay as they were
            ident["endpoint"] = endpoint
        if self.backend == "lexical":
            ident["note"] = "non-LLM fallback: token-F1 vs reference mapped to the scale"
        if self.backend == "replay":
            ident["source"] = "released ELITR-Bench judge scores"
        return ident

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every option, the family's flattened in (credentials masked)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "options"}
        if self.options is not None:
            out.update(asdict(self.options))
        for name in ("base_url", *get_family(self.family).redacted):
            if isinstance(out.get(name), str):
                out[name] = redact_text(out[name])
        return out


def family_identity(config: JudgeConfig) -> Mapping[str, Any]:
    """What the config's family options add to its judge identity (a second model)."""
    hook = get_family(config.family).identity
    return hook(config) if hook is not None else {}


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
    if config.structured == "on" and config.backend != "openai":
        # Only an OpenAI-compatible endpoint takes a response_format; saying "on" to a judge
        # that cannot honour it would be a promise silently broken.
        raise bad(
            f"structured=on needs an openai judge (it sends response_format); the "
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


# --- readiness ------------------------------------------------------------------------


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def judge_endpoint(config: JudgeConfig, env: Mapping[str, str] | None = None) -> str:
    """The judge's endpoint in cache keys and identities (see ``llm.endpoint.endpoint_key``)."""
    return endpoint_key(config, env)


def judge_flag_hint(spec: str, command: str = "lm_eval") -> str:
    """How to pick another judge with a flag that exists in ``command``.

    ``lm_eval`` has no ``--judge``: its judge travels in ``--metadata``.
    """
    if command == "lm_eval":
        return f'--metadata \'{{"judge": "{spec}"}}\''
    return f"--judge {spec}"


#: A judge any machine can run without a key: an OpenAI-compatible server on this host.
LOCAL_SERVER_JUDGE = "openai:MODEL,base_url=http://127.0.0.1:PORT/v1"


def keyless_alternatives(
    answers: bool = True, command: str = "lm_eval", *, replay: bool = False
) -> str:
    """The ways to go on without an API key that can work for the run at hand.

    Only judges that can score what the run holds are named: ``replay`` has scores for the
    released systems' answers to questions only, ``lexical`` scores such answers only,
    and ``none`` is a way out only where generation can go on and be judged later.

    Args:
        answers: The run holds ELITR-Bench answers to questions (False: anything else,
            e.g. summaries, which only an LLM judge scores).
        command: ``lm_eval`` (the judge is set in ``--metadata``) or ``elitr-bench``
            (``--judge``).
        replay: The answers are the released systems' (``--model elitr-replay`` runs, or
            ``judge-check``'s 390 released answers).

    Returns:
        The alternatives, separated by ``; ``.
    """
    ways: list[str] = []
    if answers:
        if replay:
            ways.append(f"{judge_flag_hint('replay', command)} (the released judge scores)")
        ways.append(f"{judge_flag_hint('lexical', command)} (token F1, not the paper's score)")
    if command == "lm_eval":
        ways.append(
            f"generate now and judge later: {judge_flag_hint('none', command)}, then "
            "elitr-bench score RUN_DIR --judge SPEC"
        )
    ways.append(
        f"a local OpenAI-compatible server needs no key: "
        f"{judge_flag_hint(LOCAL_SERVER_JUDGE, command)}"
    )
    return "; ".join(ways)


#: The way out of a missing key for ``elitr-bench`` commands whose judges must be LLMs
#: (every command judging anything but answers to questions).
KEYLESS_JUDGE = keyless_alternatives(False, "elitr-bench")


def check_judge_ready(
    config: JudgeConfig | None,
    env: Mapping[str, str] | None = None,
    *,
    network: bool = False,
    command: str = "lm_eval",
    alternative: str | None = None,
) -> None:
    """Fail fast, before generation, when the judge cannot run here.

    Meant to be called before the model under test is loaded (``lm_eval``'s start-up
    hook calls it from ``simple_evaluate``) so that a missing API key does not surface
    only after hours of model inference. Without ``network`` nothing is loaded and nothing
    leaves the machine; with it (and ``preflight`` left on in the spec) an API judge also
    gets one minimal authenticated request, once per process and endpoint (see
    :meth:`~elitr_bench.llm.openai_backend.OpenAIBackend.preflight`), and an
    ``hf`` judge's config and tokenizer are resolved (local folder or hub cache, never the
    weights). Other models a family's judges call (its ``models`` hook) are checked the
    same way, and a family's ``ready`` hook checks what its non-LLM backends read.
    The judge cache of an API or hf judge is opened and its pages read, so a damaged file
    is named before anything is generated.

    Args:
        config: The judge (None: judging is off, nothing to check).
        env: Environment to read (default ``os.environ``).
        network: Also send the preflight request of API judges and resolve hf judges.
        command: ``lm_eval`` or ``elitr-bench``: which flags the fix names.
        alternative: The ways out to suggest, as the caller's users would type them
            (default: :func:`keyless_alternatives` for answers of a generating model).

    Raises:
        JudgeNotReadyError: One line naming what is missing and how to fix it.
        JudgeCacheError: The judge cache file is damaged (one line: the file, the fix).
    """
    if config is None:
        return
    environ = os.environ if env is None else env
    if alternative is None:
        alternative = keyless_alternatives(True, command)
    if config.backend in ("openai", "hf"):
        # A damaged cache fails here, in one line, not after the model has generated.
        from elitr_bench.llm.cache import check_cache

        check_cache(config.cache)
    if config.backend == "openai":
        if importlib.util.find_spec("openai") is None:
            raise JudgeNotReadyError(
                "judge openai: the 'openai' package is not installed; pip install openai"
            )
        if config.azure:
            missing = [
                v for v in ("AZURE_OPENAI_ENDPOINT", config.api_key_env) if not environ.get(v)
            ]
            if config.api_key_env == "OPENAI_API_KEY" and environ.get("AZURE_OPENAI_API_KEY"):
                missing = [v for v in missing if v != "OPENAI_API_KEY"]
            if missing:
                raise JudgeNotReadyError(
                    f"judge {config.spec or 'openai'} (azure): set {' and '.join(missing)} "
                    "in the environment"
                )
        else:
            base = effective_base_url(config, environ)
            if base:
                parsed = urlparse(base)
                if parsed.scheme not in ("http", "https") or not parsed.netloc:
                    raise JudgeNotReadyError(
                        f"judge {config.spec or 'openai'}: base URL {redact_text(base)!r} is not "
                        "an http(s) URL; fix OPENAI_BASE_URL or base_url="
                    )
            if not environ.get(config.api_key_env) and not (base and _is_loopback(base)):
                raise JudgeNotReadyError(
                    f"judge {config.spec or 'openai'}: no API key; export {config.api_key_env} "
                    f"(or {alternative})"
                )
        if network:
            for model in _models_of(config):
                _preflight(replace(config, model=model), environ, alternative, config)
    elif config.backend == "hf":
        if importlib.util.find_spec("transformers") is None:
            raise JudgeNotReadyError("judge hf: the 'transformers' package is not installed")
        for model in _models_of(config):
            if model.startswith(("/", ".", "~")) and not Path(model).expanduser().exists():
                raise JudgeNotReadyError(
                    f"judge hf:{model}: model path {model!r} does not exist; nothing was "
                    "generated yet. Fix the path or name a hub id"
                )
            if network and config.preflight:
                _resolve_hf(model, environ)
    else:
        for family in families():  # the family that reads files for its backend says so
            if family.ready is not None:
                family.ready(config, environ)


def _models_of(config: JudgeConfig) -> list[str]:
    """The judge's model, then the others its family calls (its ``models`` hook)."""
    hook = get_family(config.family).models
    return [config.model, *(hook(config) if hook is not None else ())]


#: Weight files ``from_pretrained`` loads (one of them, or a shard index, must exist).
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".msgpack", ".h5")

#: hf judge models whose config and tokenizer resolved in this process.
_HF_OK: set[str] = set()


def _resolve_hf(model: str, environ: Mapping[str, str]) -> None:
    """Resolve an hf judge's config and tokenizer without loading weights (seconds).

    A local folder must hold a config, a tokenizer and a weights file. A hub id must be
    in the hub cache, or (unless ``HF_HUB_OFFLINE``) have a ``config.json`` on the hub;
    one request answers that, where ``from_pretrained`` would retry for half a minute.
    """
    if model in _HF_OK:
        return
    from transformers import AutoConfig, AutoTokenizer

    fix = (
        "nothing was generated yet. Download it first (hf download MODEL), pass a local "
        "folder, or skip this check with preflight=false in the judge spec"
    )
    local = Path(model).expanduser()
    try:
        AutoConfig.from_pretrained(model, local_files_only=True)
        AutoTokenizer.from_pretrained(model, local_files_only=True)
    except (OSError, ValueError) as exc:
        if local.is_dir() or environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
            where = "in this folder" if local.is_dir() else "in the hub cache (HF_HUB_OFFLINE)"
            first = " ".join(str(exc).split())[:200]
            raise JudgeNotReadyError(
                f"judge hf:{model}: no loadable config/tokenizer {where} ({first}); {fix}"
            ) from None
        _on_hub(model, fix)
    else:
        if local.is_dir() and not any(
            p.name.endswith(_WEIGHT_SUFFIXES) for p in local.iterdir() if p.is_file()
        ):
            raise JudgeNotReadyError(
                f"judge hf:{model}: the folder has a config and tokenizer but no weights "
                f"(*.safetensors, *.bin); {fix}"
            )
    _HF_OK.add(model)


def _on_hub(model: str, fix: str) -> None:
    """Ask the hub once whether ``model`` has a config (it is not in the local cache)."""
    from huggingface_hub import file_exists

    try:
        found = file_exists(model, "config.json")
    except Exception as exc:  # connection errors, bad ids: all mean "cannot load it"
        first = " ".join(str(exc).split())[:160]
        raise JudgeNotReadyError(
            f"judge hf:{model}: not in the hub cache and the hub did not answer ({first}); {fix}"
        ) from None
    if not found:
        raise JudgeNotReadyError(f"judge hf:{model}: the hub has no config.json for it; {fix}")


#: Endpoints whose preflight passed in this process: the backend's in-memory
#: ``auth_scope`` (endpoint, credentials and model) and the key variable.
_PREFLIGHT_OK: set[tuple[str, str]] = set()


def _preflight(
    config: JudgeConfig,
    environ: Mapping[str, str],
    alternative: str,
    judge: JudgeConfig | None = None,
) -> None:
    """One minimal authenticated request to an API judge, once per process and endpoint.

    Costs nothing for the replay, lexical and hf judges (never called for them) and at
    most a 1-token completion for an API judge; ``preflight=false`` skips it. ``judge``
    is the spec's config when ``config`` is another model its family calls (named in the
    error as the family's ``other_model`` option).
    """
    if not config.preflight:
        return
    from elitr_bench.llm.aio import run_coroutine
    from elitr_bench.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(config, environ)
    key = (backend.auth_scope, config.api_key_env)
    if key in _PREFLIGHT_OK:
        return

    async def probe() -> str | None:
        try:
            return await backend.preflight()
        finally:
            await backend.aclose()

    problem = run_coroutine(probe)
    if problem is not None:
        name = config.spec or "openai"
        if judge is not None and judge.model != config.model:
            name += f" (its {get_family(judge.family).other_model} {config.model})"
        raise JudgeNotReadyError(
            f"judge {name}: {problem}; nothing was generated or judged yet. "
            f"Fix the key, base_url or model ({alternative}), "
            "or skip this check with preflight=false in the judge spec"
        )
    _PREFLIGHT_OK.add(key)
