"""The one home of run files: their discovery and the one JSON-lines reader.

Every bad line is refused alike, in one line naming the file and the line, by every
command that reads one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.data.errors import DataError, ElitrBenchError
from elitr_bench.data.minutes import load_run_minutes
from elitr_bench.data.run_files import (
    lm_eval_samples_below,
    parse_json_lines,
    read_json_lines,
    read_results_file,
    results_payload,
    samples_below,
    samples_file_of,
    task_of,
)
from elitr_bench.judges.cream.arena import ArenaError, load_state
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.metaeval.minutes_inputs import read_metric_file
from elitr_bench.report.errors import ReportError
from elitr_bench.scoring.qa import read_samples

STAMP = "2026-11-22T22-21-47.123456"
SAMPLE = {
    "system": "a",
    "meeting_id": "m1",
    "text": "t",
    "doc_id": 0,
    "doc": {"meeting_id": "meeting_en_test2023_001"},
    "resps": [["- a"]],
}


def _cut_file(path: Path) -> Path:
    """A JSON-lines file whose second line was cut by a killed writer."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(SAMPLE) + "\n\n" + json.dumps(SAMPLE)[:20] + "\n", "utf-8")
    return path


def test_the_reader_names_the_file_and_line_and_the_fix(tmp_path: Path) -> None:
    path = _cut_file(tmp_path / "rows.jsonl")
    with pytest.raises(DataError) as caught:
        list(read_json_lines(path, "re-run it"))
    message = str(caught.value)
    assert message.startswith(f"{path}:3: not JSON (") and message.endswith("; re-run it")
    assert "\n" not in message
    # the caller's own error type, and lines a killed appender cut passed over on request
    with pytest.raises(ArenaError, match=r"rows\.jsonl:3: not JSON"):
        list(read_json_lines(path, "fix", ArenaError))
    assert [n for n, _ in read_json_lines(path, "fix", skip_invalid=True)] == [1]


def test_line_separators_inside_json_strings_do_not_split_a_line() -> None:
    text = json.dumps({"reply": "one\u2028two\x85three"}, ensure_ascii=False) + "\n"
    assert list(parse_json_lines(text.split("\n"), "-", "fix")) == [
        (1, {"reply": "one\u2028two\x85three"})
    ]


def test_read_reply_jsonl_keeps_a_reply_with_a_line_separator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replies = tmp_path / "replies.jsonl"
    row = {"reply": "Score: 4\u2028(four)"}
    replies.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["read-reply", "gpt4-rubric", "--jsonl", str(replies)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    replies.write_text('{"reply": "x"}\n{"reply": \n', encoding="utf-8")
    assert main(["read-reply", "gpt4-rubric", "--jsonl", str(replies)]) == 2
    err = capsys.readouterr().err
    assert f"{replies}:2: not JSON (" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("reader", ["score", "minutes", "metric-file", "arena"])
def test_every_reader_names_the_cut_line(tmp_path: Path, reader: str) -> None:
    samples = _cut_file(tmp_path / "run" / f"samples_automin23_en_{STAMP}.jsonl")
    with pytest.raises(ElitrBenchError) as caught:
        if reader == "score":
            read_samples(samples)
        elif reader == "minutes":
            load_run_minutes(samples)
        elif reader == "metric-file":
            read_metric_file(_cut_file(tmp_path / "mesa.jsonl"))
        else:
            arena = tmp_path / "arena"
            _cut_file(arena / "minutes.jsonl")
            meta = {"judge": {"model": "m"}, "meetings": ["m1"], "systems": {"a": {}}}
            (arena / "arena.json").write_text(json.dumps(meta), "utf-8")
            load_state(arena)
    expected = {"score": JudgeConfigError, "arena": ArenaError}.get(reader, DataError)
    assert isinstance(caught.value, expected)
    assert ":3: not JSON (" in str(caught.value) and "\n" not in str(caught.value)


def test_run_file_discovery(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    own = run / f"samples_elitr_qa_dev_{STAMP}.jsonl"
    own.write_text(json.dumps(SAMPLE) + "\n")
    (run / f"results_{STAMP}.json").write_text("{}")
    rescoring = run / "samples_elitr_qa_dev_2026-11-23T10-00-00.000001.jsonl"
    rescoring.write_text(json.dumps(SAMPLE) + "\n")
    (run / "results_rescored_2026-11-23T10-00-00.000001.json").write_text("{}")
    cut = run / "samples_elitr_qa_test_2026-11-24T10-00-00.000001.jsonl"
    cut.write_text('{"doc":')
    assert samples_below(run) == sorted([own, rescoring, cut])
    assert samples_below(own) == [own] and samples_below(tmp_path / "none") == []
    assert lm_eval_samples_below(run) == [own]
    assert samples_file_of(run / f"results_{STAMP}.json", "elitr_qa_dev") == own
    rescored = run / "results_rescored_2026-11-23T10-00-00.000001.json"
    assert samples_file_of(rescored, "elitr_qa_dev") == rescoring
    assert samples_file_of(rescored, "elitr_qa_test") is None


def test_results_files_and_task_names(tmp_path: Path) -> None:
    results = tmp_path / f"results_{STAMP}.json"
    results.write_text('{"results": {"elitr_qa_dev": {}}')  # cut by a full disk
    with pytest.raises(ReportError) as caught:
        read_results_file(results, ReportError, "re-run it")
    assert str(caught.value).startswith(f"{results}: unreadable lm-eval results file (")
    assert str(caught.value).endswith("; re-run it")
    assert results_payload(results) == {} and results_payload(tmp_path / "none.json") == {}
    results.write_text('{"results": {}}')
    assert read_results_file(results) == {"results": {}}
    assert task_of(tmp_path / f"samples_elitr_qa_mt_dev_{STAMP}.jsonl") == "elitr_qa_mt_dev"
    assert task_of(tmp_path / f"samples_elitr_qa_dev_rescored_{STAMP}.jsonl") == "elitr_qa_dev"
    assert task_of(tmp_path / "samples_elitr_qa_dev_copy.jsonl") == "elitr_qa_dev"
