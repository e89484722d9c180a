"""What defines a judge: the :class:`JudgeConfig` record and the identity of its scores.

A judge is named by one string (:mod:`elitr_bench.judges.spec`) and parsed into this
record; :meth:`JudgeConfig.identity` is what a reported score depends on (backend,
model, rubric, sampling, prompt hash, endpoint), recorded with every judgement so that a
rerun with another judge is never mistaken for the same one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeVar

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import (
    DEFAULT_FAMILY,
    families,
    get_family,
)
from elitr_bench.judges.rubrics import DEFAULT_RUBRIC, RUBRICS, Rubric
from elitr_bench.llm import reasoning
from elitr_bench.llm.base import REASONING_HEADROOM
from elitr_bench.llm.endpoint import DEFAULTS, endpoint_key
from elitr_bench.llm.memory import Scope
from elitr_bench.llm.redact import (
    redact_text,
)

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
        batch: Send the judge's requests as OpenAI Batch API batches (half the price,
            answered within 24 hours; :mod:`elitr_bench.llm.batch`). Not part of
            :meth:`identity`: a batch asks exactly what one-by-one calls ask, and its
            replies share their cache entries.
        structured: Send a restatement turn's JSON schema as OpenAI's
            ``response_format``: ``on``, ``off`` or ``auto`` (openai-compatible backends,
            and hf judges where xgrammar imports: they decode under the schema).
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
    timeout: float = DEFAULTS.timeout
    retries: int = 6
    backoff: float = 1.0
    cache: str = ""
    base_url: str = DEFAULTS.base_url
    api_key_env: str = DEFAULTS.api_key_env
    azure: bool = DEFAULTS.azure
    api_version: str = DEFAULTS.api_version
    batch_size: int = DEFAULTS.batch_size
    device: str = DEFAULTS.device
    price_in: float | None = None
    price_out: float | None = None
    max_cost: float | None = None
    progress: bool = True
    preflight: bool = True
    method: str = ""
    context: int = DEFAULTS.context
    structured: str = "auto"
    batch: bool = False
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

        An OpenAI reasoning model (:mod:`elitr_bench.llm.reasoning`) also records the
        sampling it ran at (``sampling.effective``: temperature 1, ``max_completion_tokens``).

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
        if self.backend == "openai" and reasoning.known(Scope(self.backend, endpoint, self.model)):
            # A reasoning model of the table runs at 1 whatever was asked: the limit as sent,
            # and the only temperature and top_p it takes (neither is sent). Learnt refusals
            # are left out: an identity must not depend on what this process learnt first.
            ident["sampling"]["effective"] = {
                "max_completion_tokens": self.max_tokens + REASONING_HEADROOM,
                "temperature": 1.0,
                "top_p": 1.0,
            }
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


def judge_endpoint(config: JudgeConfig, env: Mapping[str, str] | None = None) -> str:
    """The judge's endpoint in cache keys and identities (see ``llm.endpoint.endpoint_key``)."""
    return endpoint_key(config, env)
