"""Every ``elitr-bench ... --help`` is plain text, as a terminal shows it.

Issue 48: ``cache --help`` and ``mesa --help`` took their description from a module
docstring and printed its Sphinx markup (``:mod:`elitr_bench.llm.cache```, double
backticks). Each command's ``--help`` is asked for here, in-process, through ``main``, as a
user types it; ``run --help`` is lm_eval's own and left out.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from elitr_bench.cli import build_parser, main, plain_text

#: What Sphinx markup looks like when printed as it is.
MARKUP = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj|ref|envvar):`|``")


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if path or name != "run":
                    yield from _commands(child, (*path, name))


COMMANDS = list(_commands(build_parser()))


def test_every_command_is_asked() -> None:
    assert ("cache", "info") in COMMANDS and ("mesa",) in COMMANDS and len(COMMANDS) > 10


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "elitr-bench")
def test_help_is_plain_text(command: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*command, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: elitr-bench")
    printed = [line for line in out.splitlines() if MARKUP.search(line)]
    assert not printed, f"elitr-bench {' '.join(command)} --help prints markup: {printed}"


def test_the_cache_help_keeps_the_words_of_its_markup(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["cache", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(elitr_bench.llm.cache)" in out and "(--yes skips the question;" in out


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        (":func:`~elitr_bench.llm.cache.inspect_cache_file`", "inspect_cache_file"),
        (":mod:`elitr_bench.llm.cache`", "elitr_bench.llm.cache"),
        (":class:`.JudgeConfig`", "JudgeConfig"),
        (":ref:`the cache <cache-page>`", "the cache"),
        ("``mesa --guidance``, ``x``", "mesa --guidance, x"),
        ("100% of ``a`` and `b`", "100% of a and `b`"),
    ],
)
def test_plain_text(text: str, plain: str) -> None:
    assert plain_text(text) == plain
