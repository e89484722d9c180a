"""Real ``lm_eval`` CLI runs of a minutes task with the tiny random Llama (slow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.data.minutes import load_elitr_minutes_meetings, load_run_minutes
from elitr_bench.tasks.minutes import MINUTES_PROMPT
from tests.conftest import run_lm_eval

pytestmark = pytest.mark.slow


def _run(model: Path, out: Path, max_length: int, metadata: dict[str, Any], *extra: str) -> Any:
    proc = run_lm_eval(
        [
            "--model", "hf",
            "--model_args", f"pretrained={model},max_length={max_length},dtype=float32",
            "--tasks", "elitr_minutes_dev",
            "--gen_kwargs", "max_gen_toks=4",
            "--limit", "2",
            "--log_samples",
            "--output_path", str(out),
            "--metadata", json.dumps({"judge": "none", **metadata}),
            *extra,
        ]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    path = next(out.rglob("samples_elitr_minutes_dev_*.jsonl"))
    samples = [json.loads(line) for line in path.read_text().splitlines()]
    assert [s["doc"]["meeting_id"] for s in samples] == ["meeting_en_dev_001", "meeting_en_dev_002"]
    res = results["results"]["elitr_minutes_dev"]
    for metric in ("rouge1", "rouge2", "rougeL", "lines", "words", "words_per_line"):
        assert f"{metric},none" in res
    return res, samples


def test_hf_minutes_truncated_with_chat_template(tiny_llama: Path, tmp_path: Path) -> None:
    res, samples = _run(
        tiny_llama, tmp_path, 1024, {"overlength": "truncate_middle"}, "--apply_chat_template"
    )
    assert res["overlength_truncated,none"] == 2
    for row in samples:
        prompt = row["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.startswith("<|user|>\n" + MINUTES_PROMPT + " ")
        assert "\n[...]\n" in prompt and row["prompt_tokens"] <= 1024 - 4
        assert "sections" not in row  # listed (and logged) with overlength=chunked only


def test_hf_minutes_chunked(tiny_llama: Path, tmp_path: Path) -> None:
    res, samples = _run(tiny_llama, tmp_path, 4096, {"overlength": "chunked"})
    meetings = {m.meeting_id: m for m in load_elitr_minutes_meetings("dev")}
    for row in samples:
        assert row["sections"] >= 3  # 11k-16k-token transcripts in < 4k-token sections
        # The log keeps the meeting's whole prompt and the joined minutes of its sections.
        transcript = meetings[row["doc"]["meeting_id"]].transcript
        assert row["arguments"]["gen_args_0"]["arg_0"] == MINUTES_PROMPT + " " + transcript
        assert row["prompt_tokens"] > 4096
    assert res["overlength_truncated,none"] == 0
    run = load_run_minutes(tmp_path)
    assert run.settings == {"overlength": "chunked", "max_gen_toks": "4"}
    assert run.tasks == ("elitr_minutes_dev",)
    assert run.name == f"hf,{tiny_llama.name},max_gen_toks=4,overlength=chunked"
    assert [m.text for m in run.minutes] == [s["resps"][0][0] for s in samples]
