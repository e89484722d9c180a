"""The ``elitr-bench`` console commands owned by the core (data, tasks-dir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from elitr_bench.cli import main


def test_data_verify_and_info(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "verify"]) == 0
    out = capsys.readouterr().out
    assert out.count("ok  ") == 6 and "elitr-bench/czech.zip" in out
    assert "ok  automin-2023/  284 files match automin_2023_manifest.json" in out
    assert main(["data", "info"]) == 0
    out = capsys.readouterr().out
    assert "qa_dev: 10 meetings, 141 questions" in out
    assert "qa_test2: 8 meetings, 130 questions" in out
    assert "conv_dev_mt: GPT-4, LongAlpaca-7B" in out


def test_data_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ELITR_BENCH_DATA_DIR", str(tmp_path))
    assert main(["data", "verify"]) == 1
    out = capsys.readouterr().out
    # 5 archives, then the first 5 missing AutoMin files and a count of the rest.
    assert out.count("BAD ") == 5 + 5 + 1 and "BAD automin-2023/: 279 more of 284 files" in out
    assert main(["data", "info"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("elitr-bench: error: ELITR_BENCH_DATA_DIR=") and "\n" not in err


def test_tasks_dir(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks-dir"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert (folder / "elitr_qa" / "elitr_qa_dev.yaml").is_file()


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (
            ["judge-check", "--judge", "lexical", "--max-cots", "1"],
            "elitr-bench judge-check has no option --max-cots; did you mean --max-cost?",
        ),
        (
            ["score", "run/", "--jugde=lexical"],
            "elitr-bench score has no option --jugde; did you mean --judge?",
        ),
        (["cache", "info", "--bogus"], "elitr-bench cache info has no option --bogus; elitr"),
        (["cache", "info", "extra"], "elitr-bench cache info takes no argument 'extra'"),
    ],
)
def test_an_unknown_option_is_one_line_naming_the_command_and_the_closest_flag(
    argv: list[str], want: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plain argparse message shows the top-level usage and no fix; nothing runs."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith(f"elitr-bench: error: {want}"), err
    assert "\n" not in err and "usage:" not in err and captured.out == ""
    assert err.endswith("--help lists its options") or err.endswith("--help lists what it takes")
