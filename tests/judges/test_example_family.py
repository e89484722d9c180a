"""The out-of-tree judge family of ``examples/judge_family`` installs and runs untouched.

It proves the registry's promise: installed with ``pip install --no-deps --target DIR``
(or, where pip cannot build, its package and ``dist-info`` written as pip would: the
tests never skip; no edit of elitr_bench, which never names it), its own tests pass
against the installed copy, and ``method=geval,steps=3`` judges AutoMin minutes through
the real ``lm_eval``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_lm_eval
from tests.support.lm_eval_runs import read_results, replay_args
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest
from tests.support.plugin_env import install_example, run_in_site, run_own_tests, site_env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "judge_family"
ROOT = EXAMPLE.parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(site folder, source copy): the example built from a copy, installed (pip if it can)."""
    return install_example(EXAMPLE, tmp_path_factory.mktemp("example_family"))


def test_elitr_bench_never_names_the_example() -> None:
    package = ROOT / "elitr_bench"
    assert not [p for p in package.rglob("*.py") if "geval" in p.read_text(encoding="utf-8")]


def test_installed_the_entry_point_finds_it_and_its_tests_pass(
    installed: tuple[Path, Path],
) -> None:
    site, src = installed
    probe = (
        "import importlib.metadata as m, elitr_geval;"
        "from elitr_bench.judges.config import parse_judge_spec as p;"
        "print(elitr_geval.__file__);"
        "print([e.value for e in m.entry_points(group='elitr_bench.judge_families')]);"
        "print(p('openai:m,method=geval,steps=2').family)"
    )
    out = run_in_site(site, "-c", probe, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    where, entry_points, family = out.stdout.splitlines()
    assert Path(where).is_relative_to(site)
    assert "elitr_geval.family" in entry_points and family == "geval"
    tests = run_own_tests(site, src)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout


def test_the_commands_list_it_as_they_list_ours(installed: tuple[Path, Path]) -> None:
    """Help texts and messages name the minutes methods and reply kinds the registry knows."""
    site, _ = installed
    probe = "\n".join(
        [
            "import contextlib, io, json",
            "from elitr_bench.cli import main",
            "from elitr_bench.cli.read_reply import Record, read_record",
            "from elitr_bench.judges.summary.registry import selectors_text",
            "out = io.StringIO()",
            "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):",
            "    main(['score', '--help'])",
            "reading = read_record('geval', Record('Score: 4'))",
            "print(json.dumps([' '.join(out.getvalue().split()), selectors_text(), reading]))",
        ]
    )
    out = run_in_site(site, "-c", probe, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    help_text, selectors, reading = json.loads(out.stdout)
    assert "openai:gpt-4o,rubric=gpt-afgr (or rubric=gpt-art, method=geval, method=mesa)" in (
        help_text
    )
    assert selectors == "rubric=gpt-afgr, rubric=gpt-art, method=geval or method=mesa"
    assert reading == {"values": {"geval_score": 4.0}, "reasons": {}}


@pytest.mark.slow
def test_it_judges_automin_minutes_through_lm_eval(
    installed: tuple[Path, Path], loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    site, _ = installed
    prompts: list[str] = []

    def handler(request: RecordedRequest) -> str:
        prompts.append(request.prompt)
        return "Score: 4"

    loopback.handler = handler
    spec = f"openai:gpt-4o,method=geval,steps=3,base_url={loopback.base_url},reask=0"
    out = tmp_path / "run"
    args = replay_args("gpt4", "automin23_en", limit=1, out=out, judge=spec, log_samples=False)
    proc = run_lm_eval(args, env=site_env(site))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = read_results(out, "automin23_en")
    assert results["geval_score,openai:gpt-4o:geval"] == 4.0
    assert results["judge_unscored,openai:gpt-4o:geval"] == 0.0
    [judged] = [p for p in prompts if p != "Reply with OK."]  # the preflight asks that
    assert "3. Check whether" in judged and "\n4. " not in judged


def test_the_docs_list_exactly_the_files_the_example_needed() -> None:
    """``docs/extending.md`` "Adding a judge family" names every file of the example."""
    import re

    doc = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    block = doc.split("<!-- family-files -->")[1].split("<!-- /family-files -->")[0]
    listed = set(re.findall(r"^- `([^`]+)`:", block, re.M))
    skip = {"__pycache__", "build", ".pytest_cache", ".ruff_cache"}
    files = {
        p.relative_to(EXAMPLE).as_posix()
        for p in EXAMPLE.rglob("*")
        if p.is_file()
        and not skip & set(p.relative_to(EXAMPLE).parts)
        and not any(part.endswith(".egg-info") for part in p.parts)
    }
    assert listed == files
