"""Pinned public sources of the benchmark data.

The files are never vendored: they are fetched at run time from the commits the
benchmark authors published, and every byte is checked against a sha256 so that a
re-tagged or re-uploaded file cannot silently change reported numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

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

ALL_SOURCES: tuple[Source, ...] = (QUESTIONS, RESPONSES, TRANSCRIPTS_DEV, TRANSCRIPTS_TEST)
