"""Whether a judge can run here, checked before anything is generated or paid.

A missing key, package, model or endpoint is one line naming the fix (and a judge that
needs none), before a run spends its generation time; the network preflight sends one
minimal request where the judge's endpoint is remote.
"""

from __future__ import annotations

import importlib
import importlib.util
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

from elitr_bench.judges.errors import JudgeConfigError, JudgeNotReadyError
from elitr_bench.judges.family import (
    families,
    get_family,
)
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.llm import memory
from elitr_bench.llm.endpoint import effective_base_url
from elitr_bench.llm.memory import Scope
from elitr_bench.llm.redact import (
    redact_text,
)

# --- readiness ------------------------------------------------------------------------


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def judge_flag_hint(spec: str, command: str = "lm_eval") -> str:
    """How to pick another judge with a flag that exists in ``command``.

    ``lm_eval`` has no ``--judge``: its judge travels in ``--metadata``.
    """
    if command == "lm_eval":
        return f'--metadata \'{{"judge": "{spec}"}}\''
    return f"--judge {spec}"


#: A judge any machine can run without a key: an OpenAI-compatible server on this host.
LOCAL_SERVER_JUDGE = "openai:MODEL,base_url=http://127.0.0.1:PORT/v1"


def keyless_alternatives(
    answers: bool = True, command: str = "lm_eval", *, replay: bool = False
) -> str:
    """The ways to go on without an API key that can work for the run at hand.

    Only judges that can score what the run holds are named: ``replay`` has scores for the
    released systems' answers to questions only, ``lexical`` scores such answers only,
    and ``none`` is a way out only where generation can go on and be judged later.

    Args:
        answers: The run holds ELITR-Bench answers to questions (False: anything else,
            e.g. summaries, which only an LLM judge scores).
        command: ``lm_eval`` (the judge is set in ``--metadata``) or ``elitr-bench``
            (``--judge``).
        replay: The answers are the released systems' (``--model elitr-replay`` runs, or
            ``judge-check``'s 390 released answers).

    Returns:
        The alternatives, separated by ``; ``.
    """
    ways: list[str] = []
    if answers:
        if replay:
            ways.append(f"{judge_flag_hint('replay', command)} (the released judge scores)")
        ways.append(f"{judge_flag_hint('lexical', command)} (token F1, not the paper's score)")
    if command == "lm_eval":
        ways.append(
            f"generate now and judge later: {judge_flag_hint('none', command)}, then "
            "elitr-bench score RUN_DIR --judge SPEC"
        )
    ways.append(
        f"a local OpenAI-compatible server needs no key: "
        f"{judge_flag_hint(LOCAL_SERVER_JUDGE, command)}"
    )
    return "; ".join(ways)


#: The way out of a missing key for ``elitr-bench`` commands whose judges must be LLMs
#: (every command judging anything but answers to questions).
KEYLESS_JUDGE = keyless_alternatives(False, "elitr-bench")


# Long: one branch per backend, its checks in the order a user fixes them (hf, network: helpers).
def check_judge_ready(
    config: JudgeConfig | None,
    env: Mapping[str, str] | None = None,
    *,
    network: bool = False,
    command: str = "lm_eval",
    alternative: str | None = None,
) -> None:
    """Fail fast, before generation, when the judge cannot run here.

    Meant to be called before the model under test is loaded (``lm_eval``'s start-up
    hook calls it from ``simple_evaluate``) so that a missing API key does not surface
    only after hours of model inference. Without ``network`` nothing is loaded and nothing
    leaves the machine; with it (and ``preflight`` left on in the spec) an API judge also
    gets one minimal authenticated request, once per process and endpoint (see
    :meth:`~elitr_bench.llm.openai_backend.OpenAIBackend.preflight`), and an
    ``hf`` judge's config and tokenizer are resolved (local folder or hub cache, never the
    weights). Other models a family's judges call (its ``models`` hook) are checked the
    same way, and a family's ``ready`` hook checks what its non-LLM backends read.
    The judge cache of an API or hf judge is opened and its pages read, so a damaged file
    is named before anything is generated.

    Args:
        config: The judge (None: judging is off, nothing to check).
        env: Environment to read (default ``os.environ``).
        network: Also send the preflight request of API judges and resolve hf judges.
        command: ``lm_eval`` or ``elitr-bench``: which flags the fix names.
        alternative: The ways out to suggest, as the caller's users would type them
            (default: :func:`keyless_alternatives` for answers of a generating model).

    Raises:
        JudgeNotReadyError: One line naming what is missing and how to fix it.
        JudgeCacheError: The judge cache file is damaged (one line: the file, the fix).
    """
    if config is None:
        return
    environ = os.environ if env is None else env
    if alternative is None:
        alternative = keyless_alternatives(True, command)
    if config.backend in ("openai", "hf"):
        # A damaged cache fails here, in one line, not after the model has generated.
        check_cache(config.cache)
    if config.backend == "openai":
        if importlib.util.find_spec("openai") is None:
            raise JudgeNotReadyError(
                "judge openai: the 'openai' package is not installed; pip install openai"
            )
        if config.azure:
            missing = [
                v for v in ("AZURE_OPENAI_ENDPOINT", config.api_key_env) if not environ.get(v)
            ]
            if config.api_key_env == "OPENAI_API_KEY" and environ.get("AZURE_OPENAI_API_KEY"):
                missing = [v for v in missing if v != "OPENAI_API_KEY"]
            if missing:
                raise JudgeNotReadyError(
                    f"judge {config.spec or 'openai'} (azure): set {' and '.join(missing)} "
                    "in the environment"
                )
        else:
            base = effective_base_url(config, environ)
            if base:
                parsed = urlparse(base)
                if parsed.scheme not in ("http", "https") or not parsed.netloc:
                    raise JudgeNotReadyError(
                        f"judge {config.spec or 'openai'}: base URL {redact_text(base)!r} is not "
                        "an http(s) URL; fix OPENAI_BASE_URL or base_url="
                    )
            if not environ.get(config.api_key_env) and not (base and _is_loopback(base)):
                raise JudgeNotReadyError(
                    f"judge {config.spec or 'openai'}: no API key; export {config.api_key_env} "
                    f"(or {alternative})"
                )
        if network:
            for model in _models_of(config):
                _preflight(replace(config, model=model), environ, alternative, config)
    elif config.backend == "hf":
        if importlib.util.find_spec("transformers") is None:
            raise JudgeNotReadyError("judge hf: the 'transformers' package is not installed")
        for model in _models_of(config):
            if model.startswith(("/", ".", "~")) and not Path(model).expanduser().exists():
                raise JudgeNotReadyError(
                    f"judge hf:{model}: model path {model!r} does not exist; nothing was "
                    "generated yet. Fix the path or name a hub id"
                )
            if network and config.preflight:
                _resolve_hf(model, environ)
    else:
        for family in families():  # the family that reads files for its backend says so
            if family.ready is not None:
                family.ready(config, environ)


def _models_of(config: JudgeConfig) -> list[str]:
    """The judge's model, then the others its family calls (its ``models`` hook)."""
    hook = get_family(config.family).models
    return [config.model, *(hook(config) if hook is not None else ())]


#: Weight files ``from_pretrained`` loads (one of them, or a shard index, must exist).
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".msgpack", ".h5")

#: The topic under which an endpoint's passed check is kept (:mod:`elitr_bench.llm.memory`).
_READY = "ready"


def _resolve_hf(model: str, environ: Mapping[str, str]) -> None:
    """Resolve an hf judge's config and tokenizer without loading weights (seconds).

    A local folder must hold a config, a tokenizer and a weights file. A hub id must be
    in the hub cache, or (unless ``HF_HUB_OFFLINE``) have a ``config.json`` on the hub;
    one request answers that, where ``from_pretrained`` would retry for half a minute.
    """
    scope = Scope("hf", "", model)
    if memory.recall(scope, _READY):
        return
    from transformers import AutoConfig, AutoTokenizer

    fix = (
        "nothing was generated yet. Download it first (hf download MODEL), pass a local "
        "folder, or skip this check with preflight=false in the judge spec"
    )
    local = Path(model).expanduser()
    try:
        AutoConfig.from_pretrained(model, local_files_only=True)
        AutoTokenizer.from_pretrained(model, local_files_only=True)
    except (OSError, ValueError) as exc:
        if local.is_dir() or environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
            where = "in this folder" if local.is_dir() else "in the hub cache (HF_HUB_OFFLINE)"
            first = " ".join(str(exc).split())[:200]
            raise JudgeNotReadyError(
                f"judge hf:{model}: no loadable config/tokenizer {where} ({first}); {fix}"
            ) from None
        _on_hub(model, fix)
    else:
        if local.is_dir() and not any(
            p.name.endswith(_WEIGHT_SUFFIXES) for p in local.iterdir() if p.is_file()
        ):
            raise JudgeNotReadyError(
                f"judge hf:{model}: the folder has a config and tokenizer but no weights "
                f"(*.safetensors, *.bin); {fix}"
            )
    memory.remember(scope, _READY, True)


def _on_hub(model: str, fix: str) -> None:
    """Ask the hub once whether ``model`` has a config (it is not in the local cache)."""
    from huggingface_hub import file_exists

    try:
        found = file_exists(model, "config.json")
    except Exception as exc:  # connection errors, bad ids: all mean "cannot load it"
        first = " ".join(str(exc).split())[:160]
        raise JudgeNotReadyError(
            f"judge hf:{model}: not in the hub cache and the hub did not answer ({first}); {fix}"
        ) from None
    if not found:
        raise JudgeNotReadyError(f"judge hf:{model}: the hub has no config.json for it; {fix}")


def _preflight(
    config: JudgeConfig,
    environ: Mapping[str, str],
    alternative: str,
    judge: JudgeConfig | None = None,
) -> None:
    """One minimal authenticated request to an API judge, once per process and endpoint.

    Costs nothing for the replay, lexical and hf judges (never called for them) and at
    most a 1-token completion for an API judge; ``preflight=false`` skips it. ``judge``
    is the spec's config when ``config`` is another model its family calls (named in the
    error as the family's ``other_model`` option).
    """
    if not config.preflight:
        return
    from elitr_bench.judges.aio import run_coroutine
    from elitr_bench.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(config, environ)
    # Passed once in this process for these credentials (in-memory hash) and key variable.
    scope = Scope(backend.kind, backend.endpoint, backend.model)
    topic = f"{_READY} {backend.auth_scope} {config.api_key_env}"
    if memory.recall(scope, topic):
        return

    async def probe() -> str | None:
        try:
            return await backend.preflight()
        finally:
            await backend.aclose()

    problem = run_coroutine(probe)
    if problem is not None:
        name = config.spec or "openai"
        if judge is not None and judge.model != config.model:
            name += f" (its {get_family(judge.family).other_model} {config.model})"
        raise JudgeNotReadyError(
            f"judge {name}: {problem}; nothing was generated or judged yet. "
            f"Fix the key, base_url or model ({alternative}), "
            "or skip this check with preflight=false in the judge spec"
        )
    memory.remember(scope, topic, True)


def check_cache(setting: str = "") -> None:
    """Open the cache a judge will use and read its pages, so a damaged file fails now.

    Meant for start-up checks (before the model under test loads); costs a read of the
    file once per process. ``off`` and ``memory`` have nothing to check. A file that does
    not exist yet is not created here (a check writes nothing: ``--dry-run`` and a refused
    budget leave no file behind); the folder it will go in must be writable.

    Raises:
        JudgeCacheError: The file is damaged or not a cache (one line: file and fix).
        JudgeConfigError: The file cannot be opened, or created, at all.
    """
    from elitr_bench.llm.cache import SQLiteCache, cache_location

    where = cache_location(setting)
    if not isinstance(where, Path):
        return
    if not where.exists():
        folder = next((p for p in where.parents if p.exists()), Path("/"))
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise JudgeConfigError(
                f"judge cache {where}: cannot create it ({folder} is not a writable folder); "
                "set ELITR_JUDGE_CACHE or cache= to a writable path, or cache=off"
            )
        return
    SQLiteCache(where).close()
