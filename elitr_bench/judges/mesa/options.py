"""MESA's judge-spec options, and the MESA family's registration with the judge core.

``openai:gpt-4o,method=mesa,debate=same,layout=prefix,error_types=my.yaml,guidance=g.yaml``:
the spec's MESA options land in :class:`MesaSpecOptions`, the family's own record (they
travel in ``--metadata``, result files and ``elitr-bench score`` as the spec string);
:func:`mesa_options` turns them into checked objects. Files named by options are read
when the spec is parsed, so a typo fails in seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import JudgeFamily, Method, register_family
from elitr_bench.judges.mesa.error_types import ErrorTypes, load_error_types
from elitr_bench.judges.mesa.fit import OVERLENGTH_POLICIES
from elitr_bench.judges.mesa.guidance import Guidance, load_guidance
from elitr_bench.judges.mesa.parsing import SCORING
from elitr_bench.judges.mesa.prompts import LAYOUTS, Layout
from elitr_bench.judges.options import GREEDY

if TYPE_CHECKING:
    from elitr_bench.judges.identity import JudgeConfig

Debate = Literal["none", "same", "mixed"]
DEBATES: tuple[Debate, ...] = ("none", "same", "mixed")
_DEBATE_ALIASES = {
    "off": "none",
    "single": "none",
    "madp-s": "same",
    "madp_s": "same",
    "s": "same",
    "madp-m": "mixed",
    "madp_m": "mixed",
    "m": "mixed",
}

#: Challengers per debate step (Fig. 2: three act "synchronously").
CHALLENGERS = 3

#: The judge of ``elitr-bench mesa`` and ``mesa-train`` without ``--judge`` or
#: ``ELITR_JUDGE``: the paper's backbone, GPT-4o (Sec. 1, footnote 4). The paper names no
#: snapshot, so this is the alias; its 128k window holds every AutoMin 2023 summary, where
#: the QA judge's ``gpt-4-0613`` (8k) holds none.
DEFAULT_MESA_JUDGE = "openai:gpt-4o"


@dataclass(frozen=True)
class MesaSpecOptions:
    """The spec options only MESA reads, as written (checked by :func:`mesa_options`).

    Attributes:
        debate: ``same`` (MADP-S: moderator and three challengers of the judge's model,
            the paper's MESA), ``none`` (one model per step, the paper's Single-n) or
            ``mixed`` (MADP-M: challengers from ``pool``).
        pool: ``debate=mixed``: challenger judge specs separated by ``|`` (options inside
            a member with ``;``), or a file with one spec per line.
        error_types: Error-type YAML file (``""`` = the paper's, packaged).
        guidance: Self-training guidance file appended to the step prompts.
        layout: ``paper`` (Figs. 3-5 verbatim) or ``prefix`` (transcript first, for
            servers with prefix caching).
        overlength: A prompt longer than the judge's window: ``error``, ``skip`` or
            ``truncate_middle`` (as the QA tasks' option).
    """

    debate: str = "same"
    pool: str = ""
    error_types: str = ""
    guidance: str = ""
    layout: str = "paper"
    overlength: str = "error"


@dataclass(frozen=True)
class MesaOptions:
    """Checked MESA options of one judge config.

    Attributes:
        debate: ``none`` (the paper's Single-n), ``same`` (MADP-S) or ``mixed`` (MADP-M).
        pool: Challenger judge configs (``mixed``; empty otherwise).
        error_types: The error types assessed.
        guidance: Self-training guidance, or None.
        layout: ``paper`` or ``prefix``.
        overlength: ``error``, ``skip`` or ``truncate_middle``.
        context: Judge context in tokens (0 = unchecked).
    """

    debate: Debate
    pool: tuple[JudgeConfig, ...]
    error_types: ErrorTypes
    guidance: Guidance | None
    layout: Layout
    overlength: str
    context: int


def _pool_specs(raw: str) -> list[str]:
    text = raw.strip()
    if not text:
        return []
    path = Path(text).expanduser()
    if "|" not in text and ":" not in text.split(";")[0] and path.is_file():
        lines = path.read_text(encoding="utf-8").splitlines()
        return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    return [part.strip().replace(";", ",") for part in text.split("|") if part.strip()]


def mesa_options(config: JudgeConfig) -> MesaOptions:
    """Parse and check the MESA options of a config.

    Raises:
        JudgeConfigError: Bad debate/layout/overlength/context/pool value.
        ElitrBenchError: Bad error-type or guidance file (their one-line messages).
    """
    from elitr_bench.judges.spec import parse_judge_spec

    spec = config.spec or config.backend
    raw = config.options_of(MesaSpecOptions)

    def bad(msg: str) -> JudgeConfigError:
        return JudgeConfigError(f"judge spec {spec!r}: {msg}")

    debate = _DEBATE_ALIASES.get(raw.debate.strip().lower(), raw.debate.strip().lower())
    if debate not in DEBATES:
        raise bad(f"debate={raw.debate!r}; use none, same (MADP-S) or mixed (MADP-M)")
    if raw.layout not in LAYOUTS:
        raise bad(f"layout={raw.layout!r}; use paper (Figs. 3-5 verbatim) or prefix")
    if raw.overlength not in OVERLENGTH_POLICIES:
        raise bad(f"overlength={raw.overlength!r}; use {', '.join(OVERLENGTH_POLICIES)}")
    if config.context < 0:
        raise bad(f"context={config.context} must be >= 0 (0 = not checked)")
    pool: list[JudgeConfig] = []
    if debate == "mixed":
        try:
            specs = _pool_specs(raw.pool)
        except OSError as exc:
            raise bad(f"pool file {raw.pool!r}: {exc.strerror}") from None
        if not specs:
            raise bad(
                "debate=mixed needs pool=SPEC|SPEC|... (options in a member with ';') or "
                "pool=FILE with one judge spec per line"
            )
        for member in specs:
            try:
                parsed = parse_judge_spec(member)
            except JudgeConfigError as exc:
                raise bad(f"pool member {member!r}: {exc}") from None
            if not parsed.is_llm:
                raise bad(f"pool member {member!r} is not an LLM judge (openai:... or hf:...)")
            pool.append(parsed)
    elif raw.pool.strip():
        raise bad("pool= is used only with debate=mixed")
    error_types = load_error_types(raw.error_types or None)
    guidance = load_guidance(raw.guidance, error_types) if raw.guidance else None
    return MesaOptions(
        debate=debate,
        pool=tuple(pool),
        error_types=error_types,
        guidance=guidance,
        layout=raw.layout,  # checked against LAYOUTS above
        overlength=raw.overlength,
        context=config.context,
    )


def validate_mesa_options(config: JudgeConfig, spec: str) -> None:
    """Check MESA options while the spec is parsed (the family's ``check``).

    Options of MESA in a spec of another family are refused by the spec parser itself;
    a command that names the family refuses another ``method=`` (``elitr-bench mesa``).

    Raises:
        JudgeConfigError: One line naming the option or file at fault.
    """
    if config.method != "mesa":
        return
    try:
        options = mesa_options(config)
    except JudgeConfigError:
        raise
    except ElitrBenchError as exc:
        raise JudgeConfigError(f"judge spec {spec!r}: {exc}") from None
    if config.batch and options.debate == "mixed":
        raise JudgeConfigError(
            f"judge spec {spec!r}: batch=on sends one model's requests per batch, and "
            "debate=mixed asks the pool's models too; use debate=same or debate=none, or "
            "drop batch=on"
        )


#: Metrics where a lower value is better: MESA's error ratings (0 = no error) and impact,
#: as lm-eval metrics (``mesa_OM``) or ``elitr-bench mesa`` fields (``types.OM.rating``).
_LOWER_IS_BETTER = re.compile(r"^(?:mesa_[A-Z][A-Z0-9_]*|types\.[^.]+\.rating|(?:mesa_)?impact)$")


def _lower_is_better(metric: str) -> bool:
    return bool(_LOWER_IS_BETTER.match(metric))


def _scale(metric: str) -> tuple[float, float] | None:
    if metric == "mesa_quality":
        return (1.0, 10.0)  # MESA Eq. 2
    if metric.startswith("mesa_"):
        return (0.0, 5.0)  # MESA Fig. 5: ratings 0-5
    return None


register_family(
    JudgeFamily(
        "mesa",
        label="MESA",
        options=MesaSpecOptions,
        defaults={**GREEDY, "method": "mesa"},
        methods=(Method("mesa"),),  # its factory: mesa/method.py, imported on first use
        check=validate_mesa_options,
        grammars={"mesa-scoring": SCORING},
        redacted=("pool",),
        lower_is_better=_lower_is_better,
        scale=_scale,
        batches=True,
    )
)
