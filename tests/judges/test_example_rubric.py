"""The out-of-tree QA rubric of ``examples/qa_rubric`` installs and runs untouched (issue 34).

Installed with ``pip install --no-deps --target DIR`` (or as pip would, where pip cannot
build it: the tests never skip; no edit of elitr_bench, which never names it), its own
tests pass against the installed copy, ``rubric=strict4-rubric`` judges ELITR-Bench
answers through the real ``lm_eval`` on ``elitr_qa_dev``, and
``elitr-bench judge-check`` and ``read-reply`` take it like a built-in rubric.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_lm_eval
from tests.support.lm_eval_runs import read_results, replay_args
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest
from tests.support.plugin_env import install_example, run_in_site, run_own_tests, site_env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qa_rubric"
ROOT = EXAMPLE.parents[1]
CLI = "import sys; from elitr_bench.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(site folder, source copy): the example built from a copy, installed (pip if it can)."""
    return install_example(EXAMPLE, tmp_path_factory.mktemp("example_rubric"))


def _cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_in_site(site, "-c", CLI, *args, timeout=600)


def _strict(request: RecordedRequest) -> str:
    """A judge grading every answer 3 on the strict rubric (the preflight gets its OK)."""
    if request.prompt == "Reply with OK.":
        return "OK"
    assert "Grading scale:\n4: every fact" in request.prompt, request.prompt[:300]
    return "The answer has the main fact.\n[RESULT] 3"


def test_elitr_bench_never_names_the_example() -> None:
    package = ROOT / "elitr_bench"
    named = [p for p in package.rglob("*.py") if "strict4" in p.read_text(encoding="utf-8")]
    assert not named


def test_installed_its_tests_pass_and_specs_list_it(installed: tuple[Path, Path]) -> None:
    site, src = installed
    probe = (
        "import elitr_rubric_strict;"
        "from elitr_bench.judges.config import parse_judge_spec as p;"
        "from elitr_bench.judges.errors import JudgeConfigError;"
        "print(elitr_rubric_strict.__file__);"
        "print(p('openai:m,rubric=strict4-rubric').rubric_obj.high);"
        "from elitr_bench.judges.family import FAMILIES;"
        "print('strict4-rubric' in FAMILIES.names())\n"
        "try:\n p('openai:m,rubric=strict5-rubric')\n"
        "except JudgeConfigError as exc:\n print(exc)"
    )
    out = run_in_site(site, "-c", probe, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    where, high, as_family, refused = out.stdout.splitlines()
    assert Path(where).is_relative_to(site) and high == "4"
    assert as_family == "False"  # its entry point registered a rubric, not a family
    assert re.search(
        r"unknown rubric 'strict5-rubric'; installed rubrics: .*strict4-rubric", refused
    )
    tests = run_own_tests(site, src)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout

    read = run_in_site(
        site, "-c", CLI, "read-reply", "strict4-rubric", "-", timeout=120,
        stdin="Fine.\n[RESULT] 4",
    )  # fmt: skip
    assert read.returncode == 0, read.stderr[-2000:]
    assert json.loads(read.stdout)["values"] == {"score": 4}


@pytest.fixture
def strict_judge(installed: tuple[Path, Path], loopback: LoopbackOpenAI) -> tuple[Path, str]:
    """(site folder, judge spec): the plugin rubric, judged by the loopback server."""
    loopback.handler = _strict
    spec = f"openai:gpt-4o,rubric=strict4-rubric,base_url={loopback.base_url},progress=false"
    return installed[0], spec


@pytest.mark.slow
def test_it_judges_elitr_qa_dev_through_lm_eval(
    strict_judge: tuple[Path, str], loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    site, spec = strict_judge
    out = tmp_path / "run"
    args = replay_args("gpt-4", "elitr_qa_dev", limit=2, out=out, judge=spec, log_samples=False)
    proc = run_lm_eval(args, env=site_env(site))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = read_results(out, "elitr_qa_dev")
    scores = {k: v for k, v in results.items() if k.startswith("judge_score,")}
    assert list(scores.values()) == [7.5], results  # [RESULT] 3 on 1-4 -> 7.5 of 10
    assert results[next(k for k in results if k.startswith("judge_unscored,"))] == 0.0
    assert sum(1 for r in loopback.requests if "Grading scale" in r.prompt) == 2


@pytest.mark.slow
def test_judge_check_takes_the_plugin_rubric(
    strict_judge: tuple[Path, str], tmp_path: Path
) -> None:
    site, spec = strict_judge
    report = tmp_path / "check.json"
    proc = _cli(site, "judge-check", "--judge", spec, "--output", str(report))
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(report.read_text())
    assert data["judge"]["rubric"] == "strict4-rubric" and data["n_scored"] == 390
    assert {item["judge"] for item in data["items"]} == {7.5}
    proc = _cli(site, "judge-check", "--judge", spec, "--rubric", "strict4-rubric")
    assert proc.returncode == 0, proc.stderr[-3000:]  # --rubric lists installed rubrics
