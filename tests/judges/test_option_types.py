"""Spec options convert from real type hints, in a module without postponed annotations.

This module deliberately has no ``from __future__ import annotations``: the hints are
real objects here, where a converter that compared ``str(field.type)`` as text would
leave every option a string.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

import pytest

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import FAMILIES, JudgeFamily, Method, register_family
from elitr_bench.judges.option_types import UnsupportedOptionType, converter_for
from elitr_bench.judges.spec import parse_judge_spec


@dataclass(frozen=True)
class _TypedOptions:
    """Every kind of option the converter table supports."""

    strict: bool = False
    steps: int = 5
    weight: float = 1.0
    note: str = ""
    limit: Optional[int] = None  # noqa: UP045 -- the typing spelling is what is tested
    cap: float | None = None
    aspects: tuple[str, ...] = ("coherence",)
    mode: Literal["fast", "slow"] = "fast"


@pytest.fixture
def typed_family() -> Iterator[JudgeFamily]:
    family = JudgeFamily(
        "typed", label="the typed judge", options=_TypedOptions, methods=(Method("typed"),)
    )
    register_family(family)
    yield family
    FAMILIES.unregister("typed")


def test_options_convert_from_their_hints(typed_family: JudgeFamily) -> None:
    config = parse_judge_spec(
        "openai:m,method=typed,strict=yes,steps=7,weight=0.5,note=x,limit=3,cap=none,"
        "aspects=coherence|fluency,mode=slow"
    )
    assert config.family == "typed"
    assert config.options_of(_TypedOptions) == _TypedOptions(
        strict=True,
        steps=7,
        weight=0.5,
        note="x",
        limit=3,
        cap=None,
        aspects=("coherence", "fluency"),
        mode="slow",
    )
    assert parse_judge_spec("openai:m,method=typed").options_of(_TypedOptions) == (_TypedOptions())


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("steps=five", "steps='five' is not a valid int"),
        ("strict=maybe", "strict='maybe' is not a valid bool"),
        ("limit=x", "limit='x' is not a valid int | None"),
        ("mode=medium", "mode='medium' is not a valid one of fast, slow"),
    ],
)
def test_bad_values_name_the_type(typed_family: JudgeFamily, option: str, message: str) -> None:
    with pytest.raises(JudgeConfigError, match=re.escape(message)):
        parse_judge_spec(f"openai:m,method=typed,{option}")


@dataclass(frozen=True)
class _PathOptions:
    """An option type the table cannot convert."""

    where: Path = Path(".")


def test_an_unsupported_hint_is_refused_when_the_family_registers() -> None:
    with pytest.raises(JudgeConfigError, match=r"_PathOptions\.where: .*Path.* is not a spec"):
        register_family(JudgeFamily("pathy", label="the path judge", options=_PathOptions))
    assert "pathy" not in FAMILIES.names()


@pytest.mark.parametrize("hint", [list[str], dict[str, int], Literal[1, 2], int | str])
def test_other_hints_are_unsupported(hint: object) -> None:
    with pytest.raises(UnsupportedOptionType):
        converter_for(hint)
