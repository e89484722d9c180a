"""The data layer against the real released files, and its behaviour on bad input."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from elitr_bench.data import (
    DataError,
    load_benchmark,
    load_released_responses,
    released_systems,
    sources,
    store,
)
from tests.support.shared_data import shared_data_dir

SHARED = shared_data_dir()


def test_counts_match_the_paper_table_1() -> None:
    bench = load_benchmark()
    dev, test = bench.questions("qa", "dev"), bench.questions("qa", "test2")
    assert (len(bench.meetings_of("dev")), len(dev)) == (10, 141)
    assert (len(bench.meetings_of("test2")), len(test)) == (8, 130)
    assert Counter(q.question_type for q in dev) == {
        "what": 59,
        "who": 51,
        "when": 21,
        "howmany": 10,
    }
    assert Counter(q.question_type for q in test) == {
        "what": 57,
        "who": 45,
        "when": 20,
        "howmany": 8,
    }
    # Table 1's position column is lost in the paper's text extraction; these are the
    # released annotations, and they must sum to the question counts.
    assert Counter(q.answer_position for q in dev) == {"B": 45, "M": 29, "E": 32, "S": 35}
    assert Counter(q.answer_position for q in test) == {"B": 43, "M": 34, "E": 22, "S": 31}


def test_qa_and_conv_differ_on_16_dev_and_17_test_questions() -> None:
    bench = load_benchmark()
    for split, expected in (("dev", 16), ("test2", 17)):
        qa, conv = bench.questions("qa", split), bench.questions("conv", split)
        assert [(q.meeting_id, q.question_id) for q in qa] == [
            (q.meeting_id, q.question_id) for q in conv
        ]
        assert sum(a.question != b.question for a, b in zip(qa, conv, strict=True)) == expected


def test_every_meeting_has_its_manual_transcript() -> None:
    bench = load_benchmark()
    assert len(bench.meetings) == 18
    for meeting in bench.meetings.values():
        assert "/transcript_MAN" in meeting.source_name
        assert len(meeting.transcript) > 10_000
    # Known quirk: dev_006 has no speaker labels at all.
    assert "(PERSON" not in bench.meetings["meeting_en_dev_006"].transcript[:2000]
    assert bench.meetings["meeting_en_dev_001"].transcript.startswith("(PERSON")


def test_turn_order_follows_released_order() -> None:
    questions = load_benchmark().questions("conv", "dev")
    first = [q for q in questions if q.meeting_id == "meeting_en_dev_001"]
    assert [q.turn for q in first] == list(range(len(first)))
    assert [q.question_id for q in first][:3] == ["1", "2", "3"]


def test_released_responses_and_scores() -> None:
    st = load_released_responses("qa", "dev", "st")
    assert len(st) == 141 * 9
    everything = load_released_responses("qa", "test2", "st", "all-eval")
    assert len(everything) == 390
    assert {r.system for r in everything} == {"GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5"}
    assert all(
        set(r.scores) == {"gpt4", "prometheus", "gold_human", "silver_human"} for r in everything
    )
    assert all(r.scores["prometheus"] % 2 == 0 for r in everything)  # released already doubled
    systems = released_systems()
    assert "GPT-3.5" in systems[("qa", "dev", "st")]
    assert "GPT-3.5" not in systems[("conv", "dev", "mt")]


def test_unreleased_combination_is_a_clear_error() -> None:
    with pytest.raises(DataError, match="no released responses for setting=conv split=dev mode=st"):
        load_released_responses("conv", "dev", "st")


# ------------------------------------------------------------------ bad input
def _mirror(tmp_path: Path, skip: str | None = None) -> Path:
    """A data dir that links to the shared files, optionally without one of them."""
    for source in sources.ALL_SOURCES:
        if source.relpath == skip:
            continue
        dest = tmp_path / source.relpath
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.symlink_to(SHARED / source.relpath)
    return tmp_path


def test_missing_file_names_the_file_and_the_remedy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "ELITR_BENCH_DATA_DIR", str(_mirror(tmp_path, skip=sources.QUESTIONS.relpath))
    )
    with pytest.raises(DataError) as err:
        load_benchmark()
    message = str(err.value)
    assert "missing elitr-bench/data.zip" in message and "unset ELITR_BENCH_DATA_DIR" in message
    assert "\n" not in message


def test_wrong_sha256_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _mirror(tmp_path, skip=sources.QUESTIONS.relpath)
    target = root / sources.QUESTIONS.relpath
    target.write_bytes((SHARED / sources.QUESTIONS.relpath).read_bytes() + b"\0")
    monkeypatch.setenv("ELITR_BENCH_DATA_DIR", str(root))
    with pytest.raises(DataError, match=r"data\.zip: sha256 .* does not match the pinned"):
        load_benchmark()


def test_wrong_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELITR_BENCH_ZIP_PASSWORD", "not-the-password")
    with pytest.raises(DataError, match="wrong password"):
        load_benchmark()


def test_corrupt_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _mirror(tmp_path, skip=sources.QUESTIONS.relpath)
    (root / sources.QUESTIONS.relpath).write_bytes(b"PK\x03\x04 this is not a zip")
    monkeypatch.setenv("ELITR_BENCH_DATA_DIR", str(root))
    monkeypatch.setenv("ELITR_BENCH_SKIP_VERIFY", "1")
    with pytest.raises(DataError, match="corrupt zip archive"):
        load_benchmark()


def _questions_zip(path: Path, payloads: dict[str, str]) -> None:
    # Unencrypted stand-ins: zipfile ignores the password for unencrypted members.
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in payloads.items():
            archive.writestr(f"data/{name}", text)


def _valid_payloads() -> dict[str, str]:
    meeting = {
        "id": "meeting_en_dev_001",
        "questions": [
            {
                "id": "1",
                "question-type": "who",
                "answer-position": "B",
                "question": "Q?",
                "groundtruth-answer": "A",
            }
        ],
    }
    names = [f"elitr-bench-{s}_{p}.json" for s in ("qa", "conv") for p in ("dev", "test2")]
    return {n: json.dumps({"split": "dev", "meetings": [meeting]}) for n in names}


def _use_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, edit: Callable[[str], str]
) -> None:
    """The data folder of the tests, its questions archive valid but for ``edit`` of one file."""
    root = _mirror(tmp_path, skip=sources.QUESTIONS.relpath)
    payloads = _valid_payloads()
    payloads[f"elitr-bench-{name}.json"] = edit(payloads[f"elitr-bench-{name}.json"])
    _questions_zip(root / sources.QUESTIONS.relpath, payloads)
    monkeypatch.setenv("ELITR_BENCH_DATA_DIR", str(root))
    monkeypatch.setenv("ELITR_BENCH_SKIP_VERIFY", "1")


def test_corrupt_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use_questions(tmp_path, monkeypatch, "qa_dev", lambda _: '{"split": "dev", "meetings": [')
    with pytest.raises(DataError, match=r"elitr-bench-qa_dev\.json: invalid JSON"):
        load_benchmark()


def test_bad_field_value_names_the_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_questions(tmp_path, monkeypatch, "qa_dev", lambda text: text.replace('"who"', '"whom"'))
    with pytest.raises(DataError, match=r"meeting_en_dev_001:q1: field 'question-type' is 'whom'"):
        load_benchmark()


def test_question_without_transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use_questions(
        tmp_path,
        monkeypatch,
        "conv_test2",
        lambda text: text.replace("meeting_en_dev_001", "meeting_en_dev_099"),
    )
    with pytest.raises(DataError, match="meeting_en_dev_099, which has no transcript_MAN file"):
        load_benchmark()


# ------------------------------------------------------------- download path
def test_download_into_cache_once_and_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ELITR_BENCH_DATA_DIR")
    monkeypatch.setenv("ELITR_BENCH_CACHE", str(tmp_path / "cache"))
    good = sources.Source(
        key="data",
        relpath=sources.QUESTIONS.relpath,
        url=(SHARED / sources.QUESTIONS.relpath).as_uri(),
        sha256=sources.QUESTIONS.sha256,
        licence="CC BY 4.0",
    )
    path = store.resolve(good)
    assert path == tmp_path / "cache" / "data" / good.relpath
    assert store.sha256_of(path) == good.sha256
    mtime = path.stat().st_mtime_ns
    assert store.resolve(good) == path and path.stat().st_mtime_ns == mtime  # not fetched again

    tampered = sources.Source(
        key="x",
        relpath="elitr-bench/other.zip",
        url=(SHARED / sources.RESPONSES.relpath).as_uri(),
        sha256=sources.QUESTIONS.sha256,
        licence="",
    )
    with pytest.raises(DataError, match="downloaded bytes have sha256"):
        store.resolve(tampered)
    assert not (tmp_path / "cache" / "data" / "elitr-bench" / "other.zip").exists()
    assert not list((tmp_path / "cache" / "data" / "elitr-bench").glob(".other.zip.*"))


def test_no_download_when_forbidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ELITR_BENCH_DATA_DIR")
    monkeypatch.setenv("ELITR_BENCH_CACHE", str(tmp_path))
    with pytest.raises(DataError, match="run `elitr-bench data fetch`"):
        store.resolve(sources.QUESTIONS, download=False)


def test_nothing_unzipped_in_the_repo() -> None:
    repo = Path(__file__).resolve().parents[2]
    leaked = [
        p
        for p in repo.rglob("*")
        if ".git" not in p.parts
        and (
            (p.name.startswith("elitr-bench-") and p.suffix == ".json")
            or p.name.startswith("transcript_MAN")
        )
    ]
    assert leaked == []
    assert shutil.which("lm_eval") is not None
