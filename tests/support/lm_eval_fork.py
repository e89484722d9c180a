"""The real ``lm_eval`` CLI, launched as a fork of an interpreter that has already started.

Most of the suite's time went into ``lm_eval`` launches, and most of a launch is the same
work every time: importing lm-eval, torch and transformers (about 4 s on this project's
2-core machine) and indexing lm-eval's own 14,000 task YAMLs (about 6 s; lm-eval 0.4
parses them all in every ``TaskManager``). A test's own part is often a second or two.

So each pytest worker keeps one server process (this file, run as a script). It imports
what every launch imports, builds lm-eval's index of its *built-in* task folder once, and
then, for each launch, forks: the child chdirs, takes the launch's environment, points its
stdin at ``/dev/null`` and its stdout and stderr at files, sets ``sys.argv`` as the
console script would, and calls lm-eval's console entry point ``cli_evaluate``. It ends as
the console script's interpreter would: ``SystemExit`` (or an uncaught exception, with its
traceback) leaves through the top of this script, so non-daemon threads are joined, the
``atexit`` handlers run and the streams are flushed. Everything after the fork is the
launch's own: each child starts from the same just-imported state, and nothing it
changes (modules, registries, the index) reaches the next one.

What differs from a fresh interpreter, and why it does not matter here:

* the modules are imported before the launch's arguments are parsed (the hook, lm-eval's
  registries and the import watcher do the same work on the same imports, only earlier);
* lm-eval's index of its own folder is built once, from the same files, with lm-eval's
  own ``TaskIndex.build`` (by the server, or by the session's first process to need it:
  tests/support/startup/sitecustomize.py); any ``--include_path`` (ours, which the start-up hook
  adds, and a test's) is indexed by the child, and a task there overrides a built-in one
  with lm-eval's warning, as in a fresh run;
* what most launches load anyway is loaded by the server too: ROUGE's scorer (it imports
  nltk and scipy.stats, about 2 s), transformers' Llama classes, and the ELITR-Bench
  questions, transcripts and released responses of the server's data folder (decrypting
  the authors' zip archives in Python takes about 3 s). A launch reads them through the
  same per-location caches (:mod:`elitr_bench.data.loaders`) that a process of its own
  fills on first use, so one with another data folder or zip password loads its own, and
  the data loaders' tests read the archives in-process as before;
* torch's environment report, which lm-eval writes into every results file (it runs pip
  and a dozen other commands, about 1 s), is made once by the server: every launch's
  results carry that text, which a fresh launch in the same interpreter would print too;
* the server's heap after those imports is frozen (``gc.freeze()``): the cyclic collector
  never walks it again. A fresh interpreter's exit collects it (about 2 CPU s, two thirds
  of a short launch); a forked launch leaves it to the operating system, the objects the
  launch itself made are collected as before. What would have freed them at exit does not
  run: nanobind (triton's bindings, which torch imports) then reports those objects as
  leaked on stderr, and :func:`without_frozen_leak_report` takes exactly that report off
  the end of a launch's stderr (a fresh launch prints none);
* the environment is read at import time by some libraries (Hugging Face offline
  switches, OpenMP threads, ``PYTHONPATH``, our ``ELITR_BENCH_NO_HOOK``; our package
  reads none at import): a launch whose
  environment differs from the server's in such a variable (:func:`import_time_env`) runs
  in a fresh interpreter instead, as does every launch under ``ELITR_TEST_FRESH_LM_EVAL=1``.
  lm-eval's ``LM_HARNESS_CACHE_PATH`` (the request cache's folder, kept in a module global
  that only a launch reads) is the exception: each forked launch sets that global again
  from its own environment, with lm-eval's own expression.

Tests of the start-up hook itself launch fresh interpreters of their own.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

#: Environment variables read when a module is imported: a launch that sets them differently
#: from the server's environment needs an interpreter of its own.
IMPORT_TIME_PREFIXES = (
    "PYTHON", "HF_", "HUGGINGFACE", "TRANSFORMERS", "TORCH", "OMP_", "MKL_", "CUDA",
    "LD_", "TOKENIZERS", "XDG_", "HOME", "ELITR_BENCH_NO_HOOK", "LMEVAL", "LM_EVAL",
    "LM_HARNESS", "DATASETS", "VIRTUAL_ENV", "ACCELERATE", "RANK", "LOCAL_RANK", "WORLD_SIZE",
    "MASTER_",
)  # fmt: skip


#: Read by lm-eval at import into module globals that only a launch uses, re-read by every
#: forked launch (:func:`_reread_at_launch`) as the import did: ``LM_HARNESS_CACHE_PATH``
#: (``lm_eval.caching.cache.PATH``, the request cache's folder).
REREAD_AT_LAUNCH = ("LM_HARNESS_CACHE_PATH",)

#: Matching the prefixes above but read only by the launch itself: ``HF_EVALUATE_OFFLINE`` at
#: the import of ``evaluate``, which the server never imports (lm-eval loads it for a metric
#: it does not register), and ``TORCHINDUCTOR_CACHE_DIR`` whenever inductor looks for its
#: cache. Both are set in a pytest worker by what it ran before (a fixture; torch compiling),
#: and a fresh launch would inherit them just the same. (Intel OpenMP's ``KMP_*``, which
#: sklearn and joblib set when imported, are not matched at all: torch's CPU build on Linux
#: runs on GNU OpenMP, which does not read them.)
READ_BY_THE_LAUNCH = ("HF_EVALUATE_OFFLINE", "TORCHINDUCTOR_CACHE_DIR")


#: The lines of nanobind's report, at interpreter exit, of bound objects still alive
#: (triton's, which torch imports): a forked launch leaves the server's frozen heap to the
#: operating system instead of collecting it, so the report ends its stderr.
_LEAK_REPORT_LINE = re.compile(
    r"nanobind: leaked \d+ \w+!| - leaked .*| - \.\.\. skipped remainder"
    r"|nanobind: this is likely caused by a reference counting issue in the binding code\."
    r"|See https://nanobind\.readthedocs\.io/en/latest/refleaks\.html"
)


def without_frozen_leak_report(stderr: str) -> str:
    """``stderr`` without the nanobind leak report that ends it, if it ends in one (only)."""
    lines = stderr.splitlines(keepends=True)
    start = len(lines)
    while start and _LEAK_REPORT_LINE.fullmatch(lines[start - 1].rstrip("\r\n")):
        start -= 1
    if start < len(lines) and lines[start].startswith("nanobind: leaked "):
        return "".join(lines[:start])
    return stderr


def import_time_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that a module the server imports may read at import."""
    return {
        k: v
        for k, v in env.items()
        if k.upper().startswith(IMPORT_TIME_PREFIXES)
        and k not in READ_BY_THE_LAUNCH
        and k not in REREAD_AT_LAUNCH
    }


# --------------------------------------------------------------------------- client
class ForkedLmEval:
    """One worker's server and the launches it forks (one at a time)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self._lock = threading.Lock()
        self._server = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self.env,
            text=True,
        )
        ready = self._read()
        if ready.get("ready") is not True:  # pragma: no cover - the server failed to start
            raise RuntimeError(f"lm_eval fork server did not start: {ready}")
        #: What the imports themselves put in the environment (lm-eval sets
        #: ``HF_XET_HIGH_PERFORMANCE``): a launch that has not set them gets them, as a
        #: fresh interpreter would from the same imports.
        self.set_at_import: dict[str, str] = ready["set_at_import"]

    def serves(self, env: Mapping[str, str]) -> bool:
        """Whether a launch with ``env`` can be forked from this server."""
        if self._server.poll() is not None:
            return False
        wanted, started = import_time_env(env), import_time_env(self.env)
        for key, value in self.set_at_import.items():
            if wanted.get(key, value) == value:
                wanted.pop(key, None)
                started.pop(key, None)
        return wanted == started

    def run(
        self,
        args: list[str],
        env: Mapping[str, str],
        timeout: float,
        *,
        models: Sequence[Path] = (),
        stderr_path: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``subprocess.run``'s answer for ``lm_eval *args``, from a forked child.

        ``models`` are module files the child imports before the CLI runs, as a script that
        registers an lm-eval model and then calls the console entry point would
        (tests/support/marker_model.py). ``stderr_path`` is where the child writes its
        stderr as it goes (a test may read it while the launch runs); it is read back into
        the answer at the end, as from the scratch file otherwise.
        """
        cmd = ["lm_eval", *args]
        with self._lock, tempfile.TemporaryDirectory(prefix="lm-eval-fork-") as scratch:
            out = Path(scratch) / "stdout"
            err = stderr_path if stderr_path is not None else Path(scratch) / "stderr"
            request = {
                "argv": args,
                "env": dict(env),
                "cwd": os.getcwd(),
                "stdout": str(out),
                "stderr": str(err),
                "timeout": timeout,
                "models": [str(path) for path in models],
            }
            assert self._server.stdin is not None
            self._server.stdin.write(json.dumps(request) + "\n")
            self._server.stdin.flush()
            reply = self._read()
            stdout = out.read_text(errors="replace") if out.exists() else ""
            stderr = err.read_text(errors="replace") if err.exists() else ""
            stderr = without_frozen_leak_report(stderr)
        if reply.get("timed_out"):
            raise subprocess.TimeoutExpired(cmd, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(cmd, int(reply["returncode"]), stdout, stderr)

    def close(self) -> None:
        """End the server (its stdin closes; it exits at the end of its loop)."""
        if self._server.stdin is not None and not self._server.stdin.closed:
            self._server.stdin.close()
        try:
            self._server.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self._server.kill()

    def _read(self) -> dict[str, Any]:
        assert self._server.stdout is not None
        line = self._server.stdout.readline()
        if not line:
            raise RuntimeError("lm_eval fork server ended unexpectedly")
        reply: dict[str, Any] = json.loads(line)
        return reply


# --------------------------------------------------------------------------- server
def _warm() -> None:
    """Import what every launch imports; index lm-eval's built-in tasks once."""
    import lm_eval  # our start-up hook patches lm-eval on this import
    import lm_eval.__main__
    import lm_eval.evaluator
    import lm_eval.models
    import lm_eval.models.huggingface
    import lm_eval.tasks
    from lm_eval.tasks import _index

    import elitr_bench.tasks.task  # noqa: F401

    # The index of lm-eval's built-in folder, built (or read from the session's copy) now
    # and kept: each launch, a fork, gets its own copy of the mapping.
    startup = _startup_module()
    folder = os.environ.get(startup.ENV)
    startup.share_index(_index, Path(folder) if folder else None, keep=True)
    _index.TaskIndex.build([Path(lm_eval.tasks.__file__).parent])
    _load_what_launches_load()
    if "evaluate" in sys.modules:  # READ_BY_THE_LAUNCH would then be read here, too early
        raise RuntimeError("the lm_eval fork server imported `evaluate`: see READ_BY_THE_LAUNCH")


def _startup_module() -> Any:
    """tests/support/startup/sitecustomize.py, loaded by its path (not as ``sitecustomize``)."""
    path = Path(__file__).with_name("startup") / "sitecustomize.py"
    spec = importlib.util.spec_from_file_location("elitr_tests_startup", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_what_launches_load() -> None:
    """ROUGE, the Llama classes, the released data and torch's environment report, once."""
    import rouge_score.rouge_scorer  # noqa: F401 - nltk and scipy.stats
    import transformers.generation.utils
    import transformers.models.llama.modeling_llama  # noqa: F401
    from torch.utils import collect_env

    from elitr_bench.data.errors import DataError
    from elitr_bench.data.loaders import RELEASED_FILES, load_benchmark, load_released_responses

    with contextlib.suppress(DataError):  # no data here: each launch says so itself
        load_benchmark()
        for release in RELEASED_FILES:
            load_released_responses(*release)
    report = collect_env.get_pretty_env_info()
    collect_env.get_pretty_env_info = lambda: report


def _reread_at_launch() -> None:
    """What lm-eval's ``caching.cache`` computed from the environment at import, again."""
    from lm_eval.caching import cache

    cache.OVERRIDE_PATH = os.getenv("LM_HARNESS_CACHE_PATH")
    cache.PATH = cache.OVERRIDE_PATH or f"{cache.MODULE_DIR}/.cache"


def _launch(request: dict[str, Any], set_at_import: dict[str, str]) -> None:
    """In the forked child: become ``lm_eval *argv`` and end as its interpreter would."""
    os.setpgid(0, 0)  # a timeout ends the launch and whatever it started
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update({**set_at_import, **request["env"]})
    _reread_at_launch()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the child's stdin until it exits
    script = Path(sys.executable).with_name("lm_eval")
    sys.argv = [str(script), *request["argv"]]
    for path in request["models"]:  # each registers its model with lm-eval when imported
        spec = importlib.util.spec_from_file_location(Path(path).stem, path)
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    from lm_eval.__main__ import cli_evaluate

    sys.exit(cli_evaluate())  # the console script's last line


def _wait(pid: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"returncode": os.waitstatus_to_exitcode(status), "timed_out": False}
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"returncode": -9, "timed_out": True}
        time.sleep(0.02)


def _serve(requests: IO[str], replies: IO[str]) -> None:
    before = dict(os.environ)
    _warm()
    set_at_import = {k: v for k, v in os.environ.items() if before.get(k) != v}
    # What the imports built lives as long as the server: out of the collector's sight, no
    # launch spends its exit collecting it (see "What differs" above).
    gc.collect()
    gc.freeze()
    replies.write(json.dumps({"ready": True, "set_at_import": set_at_import}) + "\n")
    replies.flush()
    for line in iter(requests.readline, ""):
        request = json.loads(line)
        replies.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _launch(request, set_at_import)  # leaves through SystemExit, out of this script
        replies.write(json.dumps(_wait(pid, float(request["timeout"]))) + "\n")
        replies.flush()


if __name__ == "__main__":
    # Not the folder of this file: a launch must import only what a fresh one would.
    del sys.path[0]
    _serve(sys.stdin, sys.stdout)
    # Only the server gets here (a launch leaves through SystemExit, above): it has nothing
    # left to write, and tearing down its frozen heap would only cost time.
    sys.stderr.flush()
    os._exit(0)
