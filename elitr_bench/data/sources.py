"""Pinned public sources of the benchmark data.

The files are never vendored: they are fetched at run time from the commits the
benchmark authors published, and every byte is checked against a sha256 so that a
re-tagged or re-uploaded file cannot silently change reported numbers.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

ELITR_BENCH_COMMIT = "83649521b016e78b6293ceaf2585ea96f2ed9162"
UTTER_MS9_COMMIT = "a528415a4cb84ad9048113ddfb19e3a59e5ad589"

#: The zip password published in the ELITR-Bench README; the authors encrypt the files
#: only to keep the questions out of web-scraped training data.
DEFAULT_ZIP_PASSWORD = "utter"


@dataclass(frozen=True)
class Source:
    """One pinned data file.

    Attributes:
        key: Short name used in code and messages.
        relpath: Path below a data directory (``ELITR_BENCH_DATA_DIR`` or the cache).
        url: Download address at the pinned commit.
        sha256: Expected digest of the downloaded bytes.
        licence: Licence of the file, shown by ``elitr-bench data info``.
    """

    key: str
    relpath: str
    url: str
    sha256: str
    licence: str

    @property
    def filename(self) -> str:
        """Base name of the file."""
        return self.relpath.rsplit("/", 1)[-1]


def _bench(name: str, sha256: str) -> Source:
    return Source(
        key=name,
        relpath=f"elitr-bench/{name}.zip",
        url=f"https://github.com/utter-project/ELITR-Bench/raw/{ELITR_BENCH_COMMIT}/{name}.zip",
        sha256=sha256,
        licence="CC BY 4.0",
    )


def _ms9(name: str, sha256: str) -> Source:
    return Source(
        key=name,
        relpath=f"utter-ms9/{name}.tar.zip",
        url=(
            "https://github.com/utter-project/UTTER-MS9-meetingdata/raw/"
            f"{UTTER_MS9_COMMIT}/{name}.tar.zip"
        ),
        sha256=sha256,
        licence="CC BY 4.0",
    )


QUESTIONS = _bench("data", "0ae6e9ffe0cefd3079011154f5890176ad01feb0bf810ac16fc48b201c11e536")
RESPONSES = _bench(
    "generated-responses", "ec32dcc18b6ea018eeda89e904e6ec772c8097b7bc7d640832589b70067dce68"
)
TRANSCRIPTS_DEV = _ms9(
    "ELITR-English-dev", "9f4e2470f5cbd97965efd9b943c3d58c28c847ac81765e35c98bf1cd61418bb9"
)
TRANSCRIPTS_TEST = _ms9(
    "ELITR-English-test", "d68a1d2be564bbeda178bb511f64919ee6e0c9669a156b349f2f919781b28276"
)

#: Czech translations of every question and reference answer (same ids, types, positions
#: and order as ``data.zip``); the transcripts stay the English ones.
CZECH = _bench("czech", "7bb423f3b13f89c88f2dfe9cb2849840c5cd45923cb72e099f8158cccbbddd67")

ALL_SOURCES: tuple[Source, ...] = (QUESTIONS, RESPONSES, TRANSCRIPTS_DEV, TRANSCRIPTS_TEST, CZECH)


# --- AutoMin 2023 (ufal/automin-2023-data) -----------------------------------------------

AUTOMIN_REPOSITORY = "ufal/automin-2023-data"
AUTOMIN_COMMIT = "0531f617bfcbfbc7c01dc585955dc694fb10aa26"
#: Folder below a data directory (``ELITR_BENCH_DATA_DIR`` or the cache) that mirrors the
#: repository's layout.
AUTOMIN_DIR = "automin-2023"
#: relpath -> sha256 of every AutoMin file the project reads (hashes, not data), written by
#: :func:`build_automin_manifest` from a checkout of the pinned commit.
AUTOMIN_MANIFEST = "automin_2023_manifest.json"


def _automin_wanted(repo_path: str) -> bool:
    """Which repository files the project reads: English test meetings and the overall TSVs.

    The ``test_data/Task-A/test2023-en`` copies are byte-identical to the transcripts and
    references under ``submissions-and-scores/ELMI-en`` and the alignments are not used, so
    neither is pinned.
    """
    parts = repo_path.split("/")
    if parts[:1] != ["submissions-and-scores"]:
        return False
    if len(parts) == 2:
        return parts[1].startswith("elmi-en-overall-") and parts[1].endswith(".tsv")
    if len(parts) == 4 and parts[1] == "ELMI-en" and parts[2].startswith("meeting_en_test2023_"):
        return parts[3].startswith(("minutes_GENER_", "transcript_MAN", "evaluation+"))
    return False


def build_automin_manifest(checkout: Path) -> dict[str, Any]:
    """Hash the files the project reads from a checkout of the pinned AutoMin commit.

    Args:
        checkout: The repository root (or a data directory's ``automin-2023`` folder).

    Returns:
        The manifest: repository, commit and ``files`` (repository path -> sha256).
    """
    files: dict[str, str] = {}
    for path in sorted(checkout.rglob("*")):
        rel = path.relative_to(checkout).as_posix()
        if path.is_file() and _automin_wanted(rel):
            files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"repository": AUTOMIN_REPOSITORY, "commit": AUTOMIN_COMMIT, "files": files}


def _automin_source(repo_path: str, sha256: str) -> Source:
    url_path = urllib.parse.quote(repo_path, safe="/")
    return Source(
        key=f"automin:{repo_path}",
        relpath=f"{AUTOMIN_DIR}/{repo_path}",
        url=f"https://raw.githubusercontent.com/{AUTOMIN_REPOSITORY}/{AUTOMIN_COMMIT}/{url_path}",
        sha256=sha256,
        licence="not stated in the repository",
    )


@lru_cache(maxsize=1)
def automin_sources() -> tuple[Source, ...]:
    """Every pinned AutoMin 2023 file, from the manifest shipped with the package."""
    raw = resources.files("elitr_bench.data").joinpath(AUTOMIN_MANIFEST).read_text("utf-8")
    manifest = json.loads(raw)
    if manifest.get("commit") != AUTOMIN_COMMIT:  # pragma: no cover - a packaging mistake
        raise RuntimeError(f"{AUTOMIN_MANIFEST} was built for another commit")
    return tuple(_automin_source(p, h) for p, h in sorted(manifest["files"].items()))
