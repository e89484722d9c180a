"""Every judge spec our ``--help`` texts and READMEs print parses as the command would.

An example that the parser refuses (``elitr-bench mesa --help`` once printed
``--judge openai:gpt-4o,debate=same,layout=prefix``, refused because ``debate=`` needed
``method=mesa``) sends a new user into an error on the first try. Specs are collected
from the argparse help of every ``elitr-bench`` subcommand, from the ``--judge`` flags in
the README code blocks and from every ``"judge": "..."`` in the READMEs and ``docs/``
pages, and parsed with the judge family the command gives them (``mesa`` -> mesa,
``arena`` -> cream).
"""

from __future__ import annotations

import argparse
import re

import pytest

from elitr_bench.cli import build_parser
from elitr_bench.judges.config import parse_judge_spec
from tests.conftest import ROOT

#: Subcommands whose ``--judge`` implies a judge family.
FAMILY = {"mesa": "mesa", "mesa-train": "mesa", "arena": "cream"}

_IN_HELP = re.compile(r"\b(?:openai|hf):[^\s()]+")
_FLAG = re.compile(r"--judge[ =]([\"']?)([^\s\"']+)\1")
_METADATA = re.compile(r'"judge":\s*"([^"]+)"')
_FENCE = re.compile(r"```(?:bash|sh|console)?\n(.*?)```", re.S)
_COMMAND = re.compile(r"elitr-bench\s+([a-z-]+)")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def help_examples() -> list[tuple[str, str, str | None]]:
    """(where, spec, family) for each spec printed in a subcommand's option help."""
    out = []
    for name, parser in _subcommands().items():
        for action in parser._actions:
            for spec in _IN_HELP.findall(action.help or ""):
                where = f"elitr-bench {name} {'/'.join(action.option_strings)}"
                out.append((where, spec.rstrip(",.;"), FAMILY.get(name)))
    return out


PLUGIN_PAGES = ("extending.md", "operations-cache-and-plugins.md")


def readme_examples() -> list[tuple[str, str, str | None]]:
    """(where, spec, family) for each spec in the READMEs' and docs' commands and metadata."""
    out = []
    readmes = [
        ROOT / "README.md",
        # extending.md's specs select the out-of-tree example family (examples/judge_family)
        # and operations-cache-and-plugins.md's the example rubric (examples/qa_rubric), which
        # tests/judges/test_example_family.py and test_example_rubric.py install and run.
        *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in PLUGIN_PAGES),
        *sorted((ROOT / "elitr_bench").rglob("README.md")),
    ]
    for readme in readmes:
        text = readme.read_text("utf-8")
        where = str(readme.relative_to(ROOT))
        for spec in _METADATA.findall(text):  # lm_eval --metadata: the family is inferred
            if spec.lower() not in ("none", "off", "skip", "..."):  # "...": a placeholder
                out.append((where, spec, None))
        for block in _FENCE.findall(text):
            for line in block.replace("\\\n", " ").splitlines():
                command = _COMMAND.search(line)
                family = FAMILY.get(command.group(1)) if command else None
                for _, spec in _FLAG.findall(line):
                    if spec.upper() != "SPEC":
                        out.append((f"{where}: {line.strip()[:60]}", spec, family))
    return out


EXAMPLES = help_examples() + readme_examples()


def test_examples_were_found() -> None:
    """The collection itself works (a regex that finds nothing would pass every spec)."""
    specs = {spec for _, spec, _ in EXAMPLES}
    assert len(EXAMPLES) >= 15
    assert "openai:gpt-4o,debate=same,layout=prefix" in specs  # mesa --help
    assert any(where.startswith("README.md") for where, _, _ in EXAMPLES)
    assert any(where.startswith("docs/judges.md") for where, _, _ in EXAMPLES)
    assert any(family == "cream" for _, _, family in EXAMPLES)


@pytest.mark.parametrize(("where", "spec", "family"), EXAMPLES)
def test_every_printed_spec_parses(where: str, spec: str, family: str | None) -> None:
    config = parse_judge_spec(spec, family=family)
    assert config.spec == spec, where
