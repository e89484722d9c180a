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
import json
import re
from pathlib import Path

import pytest

from elitr_bench.cli import build_parser
from elitr_bench.judges.spec import parse_judge_spec
from tests.conftest import ROOT
from tests.support.plugin_env import install_without_pip, run_in_site

#: Subcommands whose ``--judge`` implies a judge family.
FAMILY = {"mesa": "mesa", "mesa-train": "mesa", "arena": "cream"}

_IN_HELP = re.compile(r"\b(?:openai|hf):[^\s()]+")
_FLAG = re.compile(r"--judge[ =]([\"']?)([^\s\"']+)\1")
_METADATA = re.compile(r'"judge":\s*"([^"]+)"')
#: A fenced block and its language, fences paired from the top (a closing fence is never
#: taken for an opening one).
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
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


#: Pages whose specs select the out-of-tree examples: extending.md's the example family
#: (examples/judge_family), operations-cache-and-plugins.md's the example rubric
#: (examples/qa_rubric). They parse only with those installed, which
#: :func:`test_the_plugin_pages_specs_parse_with_the_examples_installed` does.
PLUGIN_PAGES = ("extending.md", "operations-cache-and-plugins.md")


def page_examples(pages: list[Path]) -> list[tuple[str, str, str | None]]:
    """(where, spec, family) for each spec in the pages' commands and ``--metadata``."""
    out = []
    for page in pages:
        text = page.read_text("utf-8")
        where = str(page.relative_to(ROOT))
        for spec in _METADATA.findall(text):  # lm_eval --metadata: the family is inferred
            if spec.lower() not in ("none", "off", "skip", "..."):  # "...": a placeholder
                out.append((where, spec, None))
        for lang, block in _FENCE.findall(text):
            if lang not in ("", "bash", "sh", "console"):
                continue
            for line in block.replace("\\\n", " ").splitlines():
                command = _COMMAND.search(line)
                family = FAMILY.get(command.group(1)) if command else None
                for _, spec in _FLAG.findall(line):
                    if spec.upper() != "SPEC":
                        out.append((f"{where}: {line.strip()[:60]}", spec, family))
    return out


def readme_examples() -> list[tuple[str, str, str | None]]:
    """(where, spec, family) for each spec in the READMEs' and docs' commands and metadata."""
    return page_examples(
        [
            ROOT / "README.md",
            *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in PLUGIN_PAGES),
            *sorted((ROOT / "elitr_bench").rglob("README.md")),
        ]
    )


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


#: Parses each (spec, family) of stdin's JSON list; prints the spec or the error of each.
_PARSE_ALL = """
import json, sys
from elitr_bench.judges.config import parse_judge_spec
out = []
for spec, family in json.load(sys.stdin):
    try:
        out.append(parse_judge_spec(spec, family=family).spec)
    except Exception as exc:
        out.append(f"{type(exc).__name__}: {exc}")
print(json.dumps(out))
"""


def test_the_plugin_pages_specs_parse_with_the_examples_installed(tmp_path: Path) -> None:
    """The specs left out above select the examples: installed, each parses as printed."""
    site = tmp_path / "site"
    for example in ("judge_family", "qa_rubric"):
        install_without_pip(ROOT / "examples" / example, site)
    examples = page_examples([ROOT / "docs" / page for page in PLUGIN_PAGES])
    specs = [spec for _, spec, _ in examples]
    assert "openai:gpt-4o,method=geval,steps=3" in specs  # extending.md
    assert "openai:gpt-4o,rubric=strict4-rubric" in specs  # operations-cache-and-plugins.md
    pairs = json.dumps([[spec, family] for _, spec, family in examples])
    proc = run_in_site(site, "-c", _PARSE_ALL, timeout=120, stdin=pairs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    parsed = json.loads(proc.stdout)
    assert [(where, got) for (where, _, _), got in zip(examples, parsed, strict=True)] == [
        (where, spec) for where, spec, _ in examples
    ]
