"""Judge families register with the core: their options records, defaults and checks.

A spec's options are split as the families say; an option of another family names that
family and how to select it, and a misspelt option gets "did you mean" from the family
the spec selects (or, failing that, from another family, with how to select it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import (
    FAMILIES,
    METHODS,
    JudgeFamily,
    Method,
    families,
    register_family,
)
from elitr_bench.judges.mesa.options import MesaSpecOptions
from elitr_bench.judges.minutes.family import MinutesOptions
from elitr_bench.judges.options import with_options
from elitr_bench.judges.qa.family import QAOptions
from elitr_bench.judges.spec import parse_judge_spec


@pytest.mark.parametrize(
    ("spec", "family", "options"),
    [
        ("openai:gpt-4-0613", "qa", QAOptions()),
        ("replay,system=GPT-4", "qa", QAOptions(system="GPT-4")),
        ("openai:m,rubric=gpt-art,filler=false", "minutes", MinutesOptions(filler=False)),
        ("openai:m,method=mesa,layout=prefix", "mesa", MesaSpecOptions(layout="prefix")),
    ],
)
def test_each_family_owns_a_frozen_options_record(spec: str, family: str, options: object) -> None:
    config = parse_judge_spec(spec)
    assert config.family == family and config.options == options
    assert config.options_of(type(options)) is config.options
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.options.__setattr__(dataclasses.fields(config.options)[0].name, "x")
    other = MesaSpecOptions if family != "mesa" else QAOptions
    with pytest.raises(JudgeConfigError, match=f"is a {family} judge"):
        config.options_of(other)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("openai:m,debate=none", "debate=none applies to MESA only; add method=mesa or drop"),
        ("openai:m,rubric=gpt-afgr,layout=prefix,pool=a", "layout=prefix, pool=a apply to MESA"),
        ("openai:m,method=mesa,system=GPT-4", "system=GPT-4 applies to the QA judges only; drop"),
        ("openai:m,filler=false", "applies to the AutoMin GPT judges only; add rubric=gpt-art"),
        ("openai:m,debat=same", "did you mean 'debate' (MESA, with method=mesa)?"),
        ("openai:m,method=mesa,layot=prefix", "did you mean 'layout'?"),
        ("openai:m,rubric=gpt-afgr,filer=false", "did you mean 'filler'?"),
        ("openai:m,rubric=gpt-afgr,temprature=0", "did you mean 'temperature'?"),
        ("openai:m,method=mesa,zzz=1", "known options of MESA: api_key_env, "),
    ],
)
def test_options_are_checked_per_family(spec: str, fragment: str) -> None:
    with pytest.raises(JudgeConfigError) as err:
        parse_judge_spec(spec)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_a_command_that_names_the_family_is_not_told_to_select_another() -> None:
    with pytest.raises(JudgeConfigError) as err:
        parse_judge_spec("openai:m,debate=none", family="cream")  # elitr-bench arena
    assert str(err.value).endswith(
        "debate=none applies to MESA only; CREAM does not read it; drop it"
    )
    with pytest.raises(JudgeConfigError, match="MESA does not read it; drop it"):
        parse_judge_spec("openai:m,filler=false", family="mesa")  # elitr-bench mesa


def test_known_options_name_the_family_own_and_no_other() -> None:
    with pytest.raises(JudgeConfigError) as err:
        parse_judge_spec("openai:m,zzz=1")
    listed = str(err.value).split("known options of the QA judges: ")[1].split(", ")
    assert "system" in listed and "temperature" in listed
    assert not {"debate", "filler", "layout"} & set(listed)


def test_with_options_changes_shared_and_family_options() -> None:
    config = parse_judge_spec("openai:m,method=mesa")
    changed = with_options(config, layout="prefix", temperature=0.5)
    assert changed.options == MesaSpecOptions(layout="prefix") and changed.temperature == 0.5
    assert config.options.layout == "paper"  # a copy
    with pytest.raises(JudgeConfigError, match="no option filler for MESA"):
        with_options(config, filler=False)
    with pytest.raises(JudgeConfigError, match="layout='sideways'"):
        with_options(config, layout="sideways")  # validated like a parsed spec


def test_every_family_registers_a_frozen_options_record() -> None:
    specs = {
        "qa": "openai:m",
        "minutes": "openai:m,rubric=gpt-afgr",
        "mesa": "openai:m,method=mesa",
        "cream": "openai:m",
    }
    for family in families():
        config = parse_judge_spec(specs[family.name], family=family.name)
        assert config.family == family.name
        assert dataclasses.is_dataclass(family.options)
        assert family.options.__dataclass_params__.frozen  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _ToyOptions:
    """A third-party family's options."""

    strictness: int = 1


@pytest.fixture
def toy_family() -> Iterator[JudgeFamily]:
    family = JudgeFamily("toy", label="the toy judge", options=_ToyOptions, defaults={"seed": 7})
    register_family(family)
    yield family
    FAMILIES.unregister("toy")


def test_batch_on_is_refused_in_one_line_for_a_family_that_does_not_batch(
    toy_family: JudgeFamily,
) -> None:
    """Every built-in family batches; a family says so (``batches``), else it is refused."""
    assert all(family.batches for family in families() if family.name != "toy")
    with pytest.raises(JudgeConfigError, match=r"batch=on") as refused:
        parse_judge_spec("openai:m,batch=on", family="toy")
    assert "the toy family (the toy judge) sends one by one" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_new_family_registers_itself_without_editing_the_core(
    toy_family: JudgeFamily,
) -> None:
    config = parse_judge_spec("openai:m,strictness=3", family="toy")
    assert config.options_of(_ToyOptions).strictness == 3 and config.seed == 7
    with pytest.raises(JudgeConfigError, match="strictness='high' is not a valid int"):
        parse_judge_spec("openai:m,strictness=high", family="toy")
    with pytest.raises(JudgeConfigError, match="strictness=3 applies to the toy judge only"):
        parse_judge_spec("openai:m,strictness=3")


def test_the_spec_parser_names_no_family_or_rubric() -> None:
    """The spec parser asks the registry: no family, label or rubric in its text.

    ``judges/config.py`` and the modules it re-exports are read.
    """
    import re
    from pathlib import Path

    import elitr_bench.judges.config as config_module
    from elitr_bench.judges import identity, options, readiness, spec
    from elitr_bench.judges.rubrics import RUBRICS

    modules = (config_module, identity, options, readiness, spec)
    text = "".join(Path(m.__file__ or "").read_text(encoding="utf-8") for m in modules)
    names = {f.name for f in families()} | {r for f in families() for r in f.rubric_names()}
    names |= set(RUBRICS) | {"automin", "filler", "gpt-art", "gpt-afgr", "madp"}
    found = sorted(n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text, re.I))
    assert found == []
    assert {"qa", "minutes", "mesa", "cream", "gpt4-rubric"} <= names  # the check bites


@pytest.fixture
def method_family() -> Iterator[JudgeFamily]:
    family = JudgeFamily(
        "picky",
        label="the picky judge",
        options=_ToyOptions,
        methods=(Method("picky"),),
    )
    register_family(family)
    yield family
    FAMILIES.unregister("picky")


def test_a_method_of_a_registered_family_selects_it(method_family: JudgeFamily) -> None:
    config = parse_judge_spec("openai:m,method=picky,strictness=4")
    assert config.family == "picky" and config.options_of(_ToyOptions).strictness == 4
    with pytest.raises(
        JudgeConfigError, match="strictness=4 applies to the picky judge only; add method=picky"
    ):
        parse_judge_spec("openai:m,rubric=gpt-art,strictness=4")


def test_a_predicate_selects_a_family_before_methods_and_rubrics() -> None:
    family = JudgeFamily("eager", label="the eager judge", select=lambda o: o.get("samples") == 5)
    register_family(family)
    try:
        assert parse_judge_spec("openai:m,samples=5,rubric=gpt-art").family == "eager"
        assert parse_judge_spec("openai:m,samples=4,rubric=gpt-art").family == "minutes"
    finally:
        FAMILIES.unregister("eager")


def test_a_name_taken_by_another_module_is_an_error_naming_both() -> None:
    families()  # the built-in ones are registered
    with pytest.raises(
        JudgeConfigError,
        match=r"judge family 'mesa' is registered twice: "
        r"by elitr_bench\.judges\.mesa\.options and by tests\.judges\.test_families",
    ):
        register_family(JudgeFamily("mesa", label="another MESA"))
    assert next(f for f in families() if f.name == "mesa").label == "MESA"


def test_the_default_family_is_the_one_a_bare_config_has() -> None:
    from elitr_bench.judges.family import default_family
    from elitr_bench.judges.identity import JudgeConfig

    assert JudgeConfig(backend="openai").family == default_family().name
    assert parse_judge_spec("openai:m").family == default_family().name


def test_minutes_methods_share_the_collision_rule() -> None:
    from elitr_bench.judges.summary.registry import METHODS, get_method, register_method

    get_method(parse_judge_spec("openai:m,rubric=gpt-art"))  # registered by its module
    with pytest.raises(
        JudgeConfigError,
        match=r"minutes method 'gpt-art' is registered twice: "
        r"by elitr_bench\.judges\.minutes\.gpt and by tests\.judges\.test_families",
    ):
        register_method("gpt-art", lambda config: None)  # type: ignore[arg-type,return-value]
    assert METHODS.origin("gpt-art") == "elitr_bench.judges.minutes.gpt"


def test_an_unknown_method_is_refused_by_name_whatever_options_come_with_it() -> None:
    """A method no family declares is refused, listing the installed ones (issue 34)."""
    with pytest.raises(
        JudgeConfigError,
        match=r"unknown method 'zzz': no installed judge family declares it; installed "
        r"methods: rubric=gpt-afgr, rubric=gpt-art, method=mesa",
    ):
        parse_judge_spec("openai:m,method=zzz,filler=false")
    with pytest.raises(JudgeConfigError, match=r"prometheus-rubric \(QA\) or gpt-art"):
        parse_judge_spec("openai:m,rubric=likert")


class _OneField:
    """A stand-in grammar: only its identity matters to the kinds table."""

    fields: tuple[str, ...] = ("x",)

    def read(self, reply: object) -> object:
        raise NotImplementedError


def test_a_family_declares_each_method_once_and_everything_follows() -> None:
    """Issue 34, point 3: selector, factory registration and read-reply kind from one Method."""
    from elitr_bench.cli.read_reply import kinds
    from elitr_bench.judges.summary.registry import get_method, method_selectors

    made: list[str] = []
    grammar = _OneField()
    family = JudgeFamily(
        "once",
        label="the once judge",
        options=_ToyOptions,
        methods=(Method("once", factory=lambda c: made.append(c.spec), grammar=grammar),),  # type: ignore[arg-type]
    )
    register_family(family)
    try:
        assert family.selector == "method=once"
        assert "method=once" in method_selectors()
        assert METHODS.origin("once") == __name__
        get_method(parse_judge_spec("openai:m,method=once,strictness=2"))
        assert made == ["openai:m,method=once,strictness=2"]
        assert "once" in kinds()
        with pytest.raises(
            JudgeConfigError, match="strictness=2 applies to the once judge only; add method=once"
        ):
            parse_judge_spec("openai:m,rubric=gpt-art,strictness=2")
    finally:
        FAMILIES.unregister("once")
        METHODS.unregister("once")


def test_a_method_no_family_declares_is_refused_at_registration() -> None:
    """The example family without ``methods=`` was silently rerouted to the minutes family."""
    from elitr_bench.judges.summary.registry import register_method

    register_family(JudgeFamily("forgetful", label="the forgetful judge", options=_ToyOptions))
    try:
        with pytest.raises(
            JudgeConfigError,
            match=r"tests\.judges\.test_families registers minutes method 'forgetful', which "
            r"no judge family declares; add Method\('forgetful', factory=\.\.\.\)",
        ):
            register_method("forgetful", lambda config: None)  # type: ignore[arg-type,return-value]
        assert "forgetful" not in METHODS.names()
        with pytest.raises(JudgeConfigError, match="unknown method 'forgetful'"):
            parse_judge_spec("openai:m,method=forgetful,strictness=3")
    finally:
        FAMILIES.unregister("forgetful")


def test_a_method_declared_twice_is_refused_at_registration() -> None:
    families()
    with pytest.raises(JudgeConfigError, match="declares method 'mesa', which MESA"):
        register_family(JudgeFamily("copycat", label="the copycat", methods=(Method("mesa"),)))
    with pytest.raises(JudgeConfigError, match="declares method x twice"):
        register_family(JudgeFamily("twice", label="twice", methods=(Method("x"), Method("x"))))
    assert {f.name for f in families()}.isdisjoint({"copycat", "twice"})


def test_a_module_that_is_absent_is_told_from_one_whose_import_fails() -> None:
    """Issue 34, point 2: ``geval_plugin`` importing a missing ``geval`` is not "not installed".

    Installed plugins that fail are tested through the real registry and entry points in
    ``test_broken_plugins.py``; this is the rule telling the two apart.
    """
    from elitr_bench.judges.plugins import is_missing_module

    def error(name: str) -> ModuleNotFoundError:
        return ModuleNotFoundError(f"No module named {name!r}", name=name)

    assert is_missing_module(error("a"), "a.b.c") and is_missing_module(error("a.b.c"), "a.b.c")
    assert not is_missing_module(error("geval"), "geval_plugin")
    assert not is_missing_module(error("a.b"), "a.bc")
