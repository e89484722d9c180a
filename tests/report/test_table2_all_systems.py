"""Table 2's dev columns for all nine released systems, through the real lm-eval pipeline.

Each system's released answers are replayed by ``elitr-replay``, judged by the replay
judge inside lm-eval, saved in lm-eval's output layout and read back by the report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from elitr_bench.report import build_report
from tests.report.conftest import _write_run

pytestmark = pytest.mark.slow

#: Paper Table 2, dev columns: (single-turn QA, multi-turn QA, multi-turn Conv), as printed.
#: Compared within 0.01: GPT-4's multi-turn cells print 8.53 where the released files give
#: 1202 / 141 = 8.5248 (one judge point fewer; see tests/tasks/test_tasks.py).
TABLE2_DEV: dict[str, tuple[float, float | None, float | None]] = {
    "GPT-3.5": (7.04, None, None),
    "GPT-4": (8.21, 8.53, 8.53),
    "LongAlpaca-7B": (5.89, 4.53, 4.70),
    "LongAlpaca-13B": (6.17, 4.76, 4.74),
    "LongChat-7B-v1.5": (6.60, 5.85, 5.21),
    "Vicuna-7B-v1.5": (5.42, 4.68, 4.67),
    "Vicuna-13B-v1.5": (5.92, 5.52, 5.42),
    "LongAlign-7B": (6.11, 5.43, 5.04),
    "LongAlign-13B": (6.27, 4.65, 4.81),
}
SETTINGS = (("qa", "st"), ("qa", "mt"), ("conv", "mt"))


def test_table2_dev_columns_for_every_released_system(
    tmp_path: Path, lm_eval_offline: None
) -> None:
    for system, paper in TABLE2_DEV.items():
        tasks = ["elitr_qa_dev"] + (["elitr_qa_mt_dev", "elitr_conv_dev"] if paper[1] else [])
        _write_run(tmp_path / "runs" / system, system, tasks, {"judge": "replay"})
    report = build_report([tmp_path / "runs"], tmp_path / "report")
    records = report.table("table2_judge_score").records  # type: ignore[attr-defined]
    got = {
        (r["model"], r["setting"], r["mode"]): r["value"] for r in records if r["split"] == "dev"
    }
    for system, paper in TABLE2_DEV.items():
        for (setting, mode), expected in zip(SETTINGS, paper, strict=True):
            if expected is None:
                assert (system, setting, mode) not in got
            else:
                assert got[(system, setting, mode)] == pytest.approx(expected, abs=0.01), (
                    system,
                    setting,
                    mode,
                )
