"""Where the pinned files live on disk, and getting them there.

Two places are possible. ``ELITR_BENCH_DATA_DIR`` names a directory the user fills
(offline machines, CI); otherwise files are downloaded once into the cache
(``ELITR_BENCH_CACHE``, default the user cache dir) and reused. Either way every file
is verified against its pinned sha256 before a byte of it is parsed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from functools import lru_cache
from pathlib import Path

from elitr_bench.data.errors import DataError
from elitr_bench.data.sources import Source

DATA_DIR_ENV = "ELITR_BENCH_DATA_DIR"
CACHE_ENV = "ELITR_BENCH_CACHE"
SKIP_VERIFY_ENV = "ELITR_BENCH_SKIP_VERIFY"
_CHUNK = 1 << 20


def cache_root() -> Path:
    """Base directory of everything the project caches (data, noisy transcripts, judges)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("elitr-bench"))


def data_dir() -> Path | None:
    """The user-provided data directory, or None when data comes from the cache."""
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env).expanduser() if env else None


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verify(path: Path, source: Source, *, where: str) -> None:
    if os.environ.get(SKIP_VERIFY_ENV) == "1":
        return
    got = _cached_sha256(str(path), path.stat().st_mtime_ns, path.stat().st_size)
    if got != source.sha256:
        raise DataError(
            f"{path}: sha256 {got[:12]}… does not match the pinned {source.sha256[:12]}… "
            f"({where}); replace it with the file from {source.url} "
            f"or set {SKIP_VERIFY_ENV}=1 to use it anyway"
        )


@lru_cache(maxsize=32)
def _cached_sha256(path: str, mtime_ns: int, size: int) -> str:
    # Keyed by mtime and size so a file replaced on disk is hashed again.
    return sha256_of(Path(path))


def local_path(source: Source, root: Path) -> Path | None:
    """Find a source below ``root``: its usual sub-folder first, then flat."""
    for candidate in (root / source.relpath, root / source.filename):
        if candidate.is_file():
            return candidate
    return None


def resolve(source: Source, *, download: bool = True) -> Path:
    """Return the verified local path of ``source``, downloading it if needed.

    Args:
        source: The pinned file.
        download: Whether a missing cache file may be fetched.

    Raises:
        DataError: The file is missing (and may not be downloaded), fails its checksum,
            or the download fails.
    """
    root = data_dir()
    if root is not None:
        path = local_path(source, root)
        if path is None:
            raise DataError(
                f"{DATA_DIR_ENV}={root}: missing {source.relpath}; put the file from "
                f"{source.url} there, or unset {DATA_DIR_ENV} to download it into the cache"
            )
        _verify(path, source, where=f"from {DATA_DIR_ENV}")
        return path
    path = cache_root() / "data" / source.relpath
    if not path.is_file():
        if not download:
            raise DataError(
                f"{path}: not downloaded yet; run `elitr-bench data fetch` "
                f"or set {DATA_DIR_ENV} to a directory holding {source.relpath}"
            )
        _download(source, path)
    _verify(path, source, where="in the cache; delete it to download again")
    return path


def _download(source: Source, dest: Path) -> None:
    """Fetch ``source`` into ``dest`` atomically, with a progress bar."""
    from tqdm.auto import tqdm

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{source.filename}.")
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(source.url, timeout=60) as resp:
            total = int(resp.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=source.filename) as bar:
                for chunk in iter(lambda: resp.read(_CHUNK), b""):
                    out.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
        if digest.hexdigest() != source.sha256:
            raise DataError(
                f"{source.url}: downloaded bytes have sha256 {digest.hexdigest()[:12]}…, "
                f"expected {source.sha256[:12]}…; the upstream file changed, report it or set "
                f"{DATA_DIR_ENV} to a directory holding the pinned file"
            )
        tmp.replace(dest)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise DataError(
            f"{source.url}: download failed ({exc}); check the network, or set "
            f"{DATA_DIR_ENV} to a directory holding {source.relpath}"
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)
