"""A forked ``lm_eval`` launch answers as the console script in a fresh interpreter does.

The suite's launches go through :mod:`tests.support.lm_eval_fork`; these tests hold it to
the fresh console script: the same exit status, output and samples, ``subprocess.run``'s
timeout, and a fresh interpreter whenever the environment changes what is read at import.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import _BASE_ENV, _fork_server, run_fresh_lm_eval
from tests.support.lm_eval_fork import import_time_env, without_frozen_leak_report

pytestmark = pytest.mark.slow


def _fresh(args: list[str], *, own_index: bool = False) -> subprocess.CompletedProcess[str]:
    """A fresh console script; ``own_index``: lm-eval indexes its tasks itself.

    Otherwise it reads the session's copy of that index, as the fork servers do
    (tests/support/startup/sitecustomize.py).
    """
    env = dict(os.environ)
    if own_index:
        env.pop("ELITR_TEST_LM_EVAL_INDEX", None)
    return run_fresh_lm_eval(args, env=env)


def _samples(out: Path) -> list[dict[str, object]]:
    (path,) = out.rglob("samples_*.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: r[k] for k in ("doc_id", "arguments", "resps", "filtered_resps")} for r in rows]


def test_a_forked_launch_gives_the_fresh_console_scripts_answers(tmp_path: Path) -> None:
    fork = _fork_server()
    if fork is None:
        pytest.skip("ELITR_TEST_FRESH_LM_EVAL is set: every launch is fresh")
    run = [
        "--model", "elitr-replay", "--model_args", "system=gpt-4", "--tasks", "elitr_qa_dev",
        "--limit", "2", "--log_samples", "--metadata", json.dumps({"judge": "none"}),
    ]  # fmt: skip
    forked = fork.run([*run, "--output_path", str(tmp_path / "forked")], os.environ, 300)
    # exactly as a user runs it: the session's copy of lm-eval's index is held to it here
    fresh = _fresh([*run, "--output_path", str(tmp_path / "fresh")], own_index=True)
    assert forked.returncode == fresh.returncode == 0, forked.stderr[-2000:]
    assert _samples(tmp_path / "forked") == _samples(tmp_path / "fresh")
    table = [line for line in forked.stdout.splitlines() if "elitr_qa_dev" in line]
    assert table and table == [line for line in fresh.stdout.splitlines() if "elitr_qa_dev" in line]

    # a mistyped task: the same status and the same last line of stderr
    typo = ["--model", "elitr-replay", "--model_args", "system=gpt-4", "--tasks", "elitr_qa_devv"]
    forked, fresh = fork.run(typo, os.environ, 300), _fresh(typo)
    assert forked.returncode == fresh.returncode != 0
    assert forked.stderr.strip().splitlines()[-1] == fresh.stderr.strip().splitlines()[-1]


def test_a_launch_past_its_timeout_raises_as_subprocess_run_does(tmp_path: Path) -> None:
    fork = _fork_server()
    if fork is None:
        pytest.skip("ELITR_TEST_FRESH_LM_EVAL is set: every launch is fresh")
    args = ["--model", "elitr-replay", "--model_args", "system=gpt-4", "--tasks", "elitr_qa_dev"]
    with pytest.raises(subprocess.TimeoutExpired):
        fork.run([*args, "--output_path", str(tmp_path)], os.environ, 0.5)
    # the server goes on serving
    assert fork.run(["--model", "nope-model", "--tasks", "x"], os.environ, 300).returncode != 0


def test_an_import_time_variable_takes_a_fresh_interpreter(tmp_path: Path) -> None:
    """``HF_HUB_OFFLINE`` is read at import: a fork would keep the server's."""
    fork = _fork_server()
    if fork is None:
        pytest.skip("ELITR_TEST_FRESH_LM_EVAL is set: every launch is fresh")
    assert fork.serves({**_BASE_ENV, "ELITR_BENCH_CACHE": "/elsewhere"})  # read at run time
    changed = {**_BASE_ENV, "HF_HUB_OFFLINE": "0"}
    assert import_time_env(changed) != import_time_env(_BASE_ENV)
    assert not fork.serves(changed)


def test_a_forked_launch_puts_the_request_cache_where_its_environment_says(
    tmp_path: Path,
) -> None:
    """lm-eval reads ``LM_HARNESS_CACHE_PATH`` at import; each forked launch reads it again."""
    fork = _fork_server()
    if fork is None:
        pytest.skip("ELITR_TEST_FRESH_LM_EVAL is set: every launch is fresh")
    args = ["--model", "elitr-replay", "--model_args", "system=gpt-4", "--tasks", "elitr_qa_dev"]
    args += ["--limit", "1", "--cache_requests", "true", "--metadata", '{"judge": "none"}']
    for name in ("a", "b"):
        env = {**_BASE_ENV, "LM_HARNESS_CACHE_PATH": str(tmp_path / name / "cache")}
        assert fork.serves(env)
        proc = fork.run([*args, "--output_path", str(tmp_path / name / "out")], env, 300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert len(list((tmp_path / name / "cache").iterdir())) == 1  # its own folder
    # tests/tasks/test_request_safety.py holds the cache's keys and hits


#: nanobind's report as a forked launch's interpreter ends (abridged: it lists every object).
LEAK_REPORT = """nanobind: leaked 4 instances!
 - leaked instance 0x7f0381c57a28 of type "triton._C.libtriton.ir.attribute"
nanobind: leaked 64 types!
 - leaked type "triton._C.libtriton.ir.location"
 - ... skipped remainder
nanobind: leaked 514 functions!
 - leaked function "get_slice_layout"
 - ... skipped remainder
nanobind: this is likely caused by a reference counting issue in the binding code.
See https://nanobind.readthedocs.io/en/latest/refleaks.html
"""


@pytest.mark.parametrize(
    ("stderr", "kept"),
    [
        ("one line\n" + LEAK_REPORT, "one line\n"),
        (LEAK_REPORT, ""),
        ("one line\n", "one line\n"),
        # anything after the report keeps it whole: only a report that ends stderr goes
        ("one line\n" + LEAK_REPORT + "later\n", "one line\n" + LEAK_REPORT + "later\n"),
        # lines that look like its tail, without its first line, are not a report
        ('x\n - leaked type "t"\n', 'x\n - leaked type "t"\n'),
    ],
)
def test_only_the_leak_report_that_ends_stderr_is_taken_off(stderr: str, kept: str) -> None:
    assert without_frozen_leak_report(stderr) == kept
