"""MESA's judge-spec options, read from the shared :class:`JudgeConfig`.

``openai:gpt-4o,method=mesa,debate=same,layout=prefix,error_types=my.yaml,guidance=g.yaml``:
the options are plain ``JudgeConfig`` fields (so they travel in ``--metadata``, result
files and ``elitr-bench score`` unchanged); this module turns them into checked objects.
Files named by options are read when the spec is parsed, so a typo fails in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.judges.config import FamilyHooks, register_family_hooks
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.mesa.error_types import ErrorTypes, load_error_types
from elitr_bench.judges.mesa.fit import OVERLENGTH_POLICIES
from elitr_bench.judges.mesa.guidance import Guidance, load_guidance
from elitr_bench.judges.mesa.prompts import LAYOUTS, Layout

if TYPE_CHECKING:
    from elitr_bench.judges.config import JudgeConfig

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
    from elitr_bench.judges.config import parse_judge_spec

    spec = config.spec or config.backend

    def bad(msg: str) -> JudgeConfigError:
        return JudgeConfigError(f"judge spec {spec!r}: {msg}")

    debate = _DEBATE_ALIASES.get(config.debate.strip().lower(), config.debate.strip().lower())
    if debate not in DEBATES:
        raise bad(f"debate={config.debate!r}; use none, same (MADP-S) or mixed (MADP-M)")
    if config.layout not in LAYOUTS:
        raise bad(f"layout={config.layout!r}; use paper (Figs. 3-5 verbatim) or prefix")
    if config.overlength not in OVERLENGTH_POLICIES:
        raise bad(f"overlength={config.overlength!r}; use {', '.join(OVERLENGTH_POLICIES)}")
    if config.context < 0:
        raise bad(f"context={config.context} must be >= 0 (0 = not checked)")
    pool: list[JudgeConfig] = []
    if debate == "mixed":
        try:
            specs = _pool_specs(config.pool)
        except OSError as exc:
            raise bad(f"pool file {config.pool!r}: {exc.strerror}") from None
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
    elif config.pool.strip():
        raise bad("pool= is used only with debate=mixed")
    error_types = load_error_types(config.error_types or None)
    guidance = load_guidance(config.guidance, error_types) if config.guidance else None
    return MesaOptions(
        debate=debate,
        pool=tuple(pool),
        error_types=error_types,
        guidance=guidance,
        layout=config.layout,
        overlength=config.overlength,
        context=config.context,
    )


#: Judge-spec options that only MESA reads, in the order a refusal names them.
MESA_ONLY_OPTIONS: tuple[str, ...] = ("debate", "pool", "error_types", "guidance", "layout")


def validate_mesa_options(config: JudgeConfig, spec: str) -> None:
    """Check MESA options while the spec is parsed (called by ``judges/config.py``).

    Raises:
        ElitrBenchError: One line naming the option or file at fault.
    """
    if config.method != "mesa":
        from elitr_bench.judges.config import JudgeConfig as _Config

        # The dataclass's own defaults, so this check cannot drift from JudgeConfig.
        default = {f.name: f.default for f in fields(_Config)}
        defaults = {name: default[name] for name in MESA_ONLY_OPTIONS}
        used = [f"{k}={getattr(config, k)}" for k, v in defaults.items() if getattr(config, k) != v]
        if used:
            raise JudgeConfigError(
                f"judge spec {spec!r}: {', '.join(used)} appl{'ies' if len(used) == 1 else 'y'} "
                "to MESA only; add method=mesa or drop the option"
            )
        return
    try:
        mesa_options(config)
    except JudgeConfigError:
        raise
    except ElitrBenchError as exc:
        raise JudgeConfigError(f"judge spec {spec!r}: {exc}") from None


register_family_hooks(FamilyHooks("mesa", check=validate_mesa_options))
