"""A plugin that cannot be loaded costs one warning, and breaks only the specs naming it.

Issue 41: every spec parse loads every entry point of ``elitr_bench.judge_families``,
and only ``ModuleNotFoundError`` was caught, so one stale plugin (written against a
release that still exported a name, a syntax error, a rubric that its registration
refuses) stopped every ``lm_eval`` run, the default judge's included. Here such
distributions, and one whose dependency is missing, are installed for real (packages and
``dist-info`` entry points on ``PYTHONPATH``, found by ``importlib.metadata``) beside a
healthy one, and the real registry (``FAMILIES``), the spec parser and the real
``lm_eval`` are asked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_lm_eval
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest
from tests.support.plugin_env import run_in_site, site_env, write_distribution

GROUP = "elitr_bench.judge_families"

#: A plugin written against a release that still exported ``parse_scores``.
STALE = "from elitr_bench.judges.reading import parse_scores  # gone from this release\n"
#: A plugin whose dependency is not installed.
NEEDY = "import geval_core_xyz  # not installed\n"
#: A plugin with a syntax error.
TYPO = "def judge(:\n    pass\n"
#: A plugin that registers a family, then a rubric its registration refuses (top 4 x 3 = 12).
WOBBLY = """
from elitr_bench.judges.family import JudgeFamily, Method, register_family
from elitr_bench.judges.rubrics import Rubric, register_rubric

register_family(JudgeFamily("wobbly", label="the wobbly judge", methods=(Method("wobbly"),)))
register_rubric(Rubric(
    name="wobbly-rubric", template="{question} {response} {reference} {rubric}",
    rubric="1-4", low=1, high=4, to_ten=3.0, marker="result",
))
"""
#: A plugin that ends the program when imported (issue 48: it ended every default run).
EXITING = "import sys\n\nsys.exit(3)\n"
#: A healthy rubric plugin beside them.
FINE = """
from elitr_bench.judges.rubrics import Rubric, register_rubric

register_rubric(Rubric(
    name="fine-rubric", template="{question} {response} {reference} {rubric}\\n[RESULT] N",
    rubric="1-5", low=1, high=5, to_ten=2.0, marker="result",
))
"""

#: (entry point name, distribution, module, source): what each broken plugin's line names.
BROKEN = {
    "stale": ("stale-geval 0.3.0", "stale_geval.family", "ImportError: cannot import name "),
    "typo": ("typo-judge 1.0", "typo_judge", "SyntaxError: "),
    "needy": (
        "needy-judge 0.1",
        "needy_judge",
        "its module needy_judge imports 'geval_core_xyz', which is not installed",
    ),
    "wobbly-rubric": (
        "wobbly-rubric 2.1",
        "wobbly_rubric",
        "JudgeConfigError: QA rubric 'wobbly-rubric' cannot be registered: to_ten=3.0",
    ),
    "exiting": ("exiting-judge 0.2", "exiting_judge", "its module exiting_judge calls sys.exit(3)"),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the three broken distributions and a healthy one, as installed."""
    site = tmp_path_factory.mktemp("broken_plugins") / "site"
    write_distribution(
        site, "stale-geval", "0.3.0", {GROUP: {"stale": "stale_geval.family"}},
        {"stale_geval/__init__.py": "", "stale_geval/family.py": STALE},
    )  # fmt: skip
    write_distribution(
        site, "typo-judge", "1.0", {GROUP: {"typo": "typo_judge"}}, {"typo_judge.py": TYPO}
    )
    write_distribution(
        site, "needy-judge", "0.1", {GROUP: {"needy": "needy_judge"}}, {"needy_judge.py": NEEDY}
    )
    write_distribution(
        site, "wobbly-rubric", "2.1", {GROUP: {"wobbly-rubric": "wobbly_rubric"}},
        {"wobbly_rubric.py": WOBBLY},
    )  # fmt: skip
    write_distribution(
        site, "exiting-judge", "0.2", {GROUP: {"exiting": "exiting_judge"}},
        {"exiting_judge.py": EXITING},
    )  # fmt: skip
    write_distribution(
        site, "fine-rubric", "1.0", {GROUP: {"fine-rubric": "fine_rubric"}},
        {"fine_rubric.py": FINE},
    )  # fmt: skip
    return site


def expected_line(name: str) -> str:
    """The start of broken plugin ``name``'s one line, and the error it names."""
    dist, module, _ = BROKEN[name]
    return f"plugin {name!r} (entry point {name} = {module} in {GROUP}, distribution {dist})"


PROBE = """
import json, logging
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logging.getLogger("elitr_bench").addHandler(Keep())
from elitr_bench.judges.config import parse_judge_spec
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import FAMILIES, METHODS, families
from elitr_bench.judges.rubrics import RUBRICS
out = {"default": [parse_judge_spec("openai:gpt-4o").family for _ in range(3)]}
out["fine"] = parse_judge_spec("openai:gpt-4o,rubric=fine-rubric").rubric_obj.high
out["families"] = [f.name for f in families()]
out["rubrics"] = sorted(RUBRICS)
out["methods"] = list(METHODS.names())
for spec in ["openai:m,method=stale", "openai:m,method=typo", "openai:m,method=needy",
             "openai:m,rubric=wobbly-rubric", "openai:m,method=wobbly",
             "openai:m,method=exiting"]:
    try:
        parse_judge_spec(spec)
        out[spec] = "parsed"
    except JudgeConfigError as exc:
        out[spec] = str(exc)
out["warnings"] = records
print(json.dumps(out))
"""


def test_the_real_registry_isolates_each_broken_plugin(site: Path) -> None:
    proc = run_in_site(site, "-c", PROBE, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    # Specs naming no plugin parse, and the healthy plugin beside the broken ones works.
    assert out["default"] == ["qa", "qa", "qa"] and out["fine"] == 5
    assert "fine-rubric" in out["rubrics"]
    # One warning per broken plugin, however often the specs list what is installed.
    warnings = out["warnings"]
    assert len(warnings) == len(BROKEN), warnings
    for name, (_, _, error) in BROKEN.items():
        [line] = [w for w in warnings if w.startswith(expected_line(name))]
        assert f"cannot be loaded: {error}" in line and "\n" not in line, line
    # What the rubric plugin registered before failing is withdrawn, not left half there.
    assert "wobbly" not in out["families"] and "wobbly" not in out["methods"]
    assert not set(BROKEN) & set(out["rubrics"])
    # A spec naming a broken plugin gets that plugin's own error, in one line.
    for spec, name in [
        ("openai:m,method=stale", "stale"),
        ("openai:m,method=typo", "typo"),
        ("openai:m,method=needy", "needy"),
        ("openai:m,rubric=wobbly-rubric", "wobbly-rubric"),
        ("openai:m,method=exiting", "exiting"),
    ]:
        assert out[spec].startswith(f"judge spec {spec!r}: {expected_line(name)}"), out[spec]
        assert out[spec].endswith(", or pip uninstall " + BROKEN[name][0].split()[0])
    # A method the broken plugin would have declared under another name: unknown, with a note.
    assert "unknown method 'wobbly'" in out["openai:m,method=wobbly"]
    assert "; note: " + expected_line("wobbly-rubric") in out["openai:m,method=wobbly"]


#: A plugin whose entry point takes a built-in family's name: it would print if imported.
SHADOW = "print('SHADOW IMPORTED')\n"

SHADOW_PROBE = """
import json, logging
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logging.getLogger("elitr_bench").addHandler(Keep())
from elitr_bench.judges.family import families
from elitr_bench.judges.spec import parse_judge_spec
out = {"default": [parse_judge_spec("openai:gpt-4o").family for _ in range(2)]}
out["families"] = [f.name for f in families()]
out["warnings"] = records
print(json.dumps(out))
"""


def test_a_plugin_taking_a_built_in_family_name_gets_one_line(tmp_path: Path) -> None:
    """Issue 48: an entry point named ``qa`` was ignored without a word."""
    site = tmp_path / "site"
    write_distribution(
        site, "shadow-qa", "1.0", {GROUP: {"qa": "shadow_qa"}}, {"shadow_qa.py": SHADOW}
    )
    proc = run_in_site(site, "-c", SHADOW_PROBE, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SHADOW IMPORTED" not in proc.stdout  # the built-in family is the one used
    out = json.loads(proc.stdout)
    assert out["default"] == ["qa", "qa"] and "qa" in out["families"]
    [line] = out["warnings"]
    assert line == (
        f"plugin 'qa' (entry point qa = shadow_qa in {GROUP}, distribution shadow-qa 1.0) is "
        "ignored: 'qa' is the built-in judge family of elitr_bench.judges.qa.family; rename "
        "its entry point"
    ), line


def _boxed(request: RecordedRequest) -> str:
    return "OK" if request.prompt == "Reply with OK." else "Close enough. \\boxed{7}"


@pytest.mark.slow
def test_lm_eval_with_the_default_judge_runs_and_warns_once(
    site: Path, loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    """No ``--metadata``: the paper's gpt-4-0613 judge (here at the loopback) names no plugin."""
    loopback.handler = _boxed
    out = tmp_path / "run"
    proc = run_lm_eval(
        [
            "--model", "elitr-replay", "--model_args", "system=gpt-4",
            "--tasks", "elitr_qa_dev", "--limit", "1", "--output_path", str(out),
        ],
        env={**site_env(site), "OPENAI_BASE_URL": loopback.base_url},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    [results_file] = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())["results"]["elitr_qa_dev"]
    assert [v for k, v in results.items() if k.startswith("judge_score,")] == [7.0], results
    for name in BROKEN:
        assert proc.stderr.count(expected_line(name)) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_lm_eval_with_a_spec_naming_a_broken_plugin_stops_in_one_line(
    site: Path, loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    spec = f"openai:gpt-4o,rubric=wobbly-rubric,base_url={loopback.base_url}"
    proc = run_lm_eval(
        [
            "--model", "elitr-replay", "--model_args", "system=gpt-4",
            "--tasks", "elitr_qa_dev", "--limit", "1",
            "--metadata", json.dumps({"judge": spec}), "--output_path", str(tmp_path / "run"),
        ],
        env=site_env(site),
    )  # fmt: skip
    assert proc.returncode != 0
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("elitr-bench: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert expected_line("wobbly-rubric") in errors[0]
    assert "to_ten=3.0" in errors[0]
    assert not loopback.requests  # stopped before anything was judged
