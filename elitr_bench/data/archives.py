"""Reading members of the authors' password-protected archives in memory.

The questions and responses are encrypted to keep them out of training crawls; we
honour that by never writing a decrypted copy to disk.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

from elitr_bench.data.errors import DataError
from elitr_bench.data.sources import DEFAULT_ZIP_PASSWORD

PASSWORD_ENV = "ELITR_BENCH_ZIP_PASSWORD"


def zip_password() -> bytes:
    """The archive password: ``ELITR_BENCH_ZIP_PASSWORD`` or the published default."""
    return os.environ.get(PASSWORD_ENV, DEFAULT_ZIP_PASSWORD).encode()


def read_zip_member(path: Path, member: str) -> bytes:
    """Decrypt one member of a zip archive into memory.

    Raises:
        DataError: Corrupt archive, missing member, or wrong password, naming the file.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            try:
                return archive.read(member, pwd=zip_password())
            except KeyError:
                raise DataError(
                    f"{path}: no member {member!r} in the archive; the file is not the "
                    "pinned release, replace it (see `elitr-bench data verify`)"
                ) from None
            except RuntimeError as exc:
                if "password" in str(exc).lower():
                    raise DataError(
                        f"{path}: wrong password for {member!r}; unset {PASSWORD_ENV} to use "
                        "the published password, or set it to the right one"
                    ) from None
                raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise DataError(
            f"{path}: corrupt zip archive ({exc}); delete it and run `elitr-bench data fetch`"
        ) from None


def read_zip_json(path: Path, member: str) -> Any:
    """Decrypt and parse a JSON member of a zip archive."""
    raw = read_zip_member(path, member)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(
            f"{path}:{member}: invalid JSON ({exc}); the archive is damaged, replace it"
        ) from None


def read_tar_in_zip(path: Path, member: str) -> dict[str, bytes]:
    """Decrypt a tar archive stored in a zip and return its regular files by name.

    macOS resource forks (``._*``) and ``.DS_Store`` files in the release are skipped.
    """
    raw = read_zip_member(path, member)
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            for info in tar.getmembers():
                base = info.name.rsplit("/", 1)[-1]
                if not info.isfile() or base.startswith("._") or base == ".DS_Store":
                    continue
                handle = tar.extractfile(info)
                if handle is not None:
                    files[info.name] = handle.read()
    except (tarfile.TarError, EOFError) as exc:
        raise DataError(f"{path}:{member}: corrupt tar archive ({exc}); replace the file") from None
    return files
