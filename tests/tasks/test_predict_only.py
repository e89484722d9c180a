"""``--predict_only`` writes for our tasks what lm-eval writes for its own tasks."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager

from elitr_bench.tasks import TASKS_DIR
from tests.support.evaluate import evaluate

PLAIN_TASK = """\
task: plain_generation
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: []
  max_gen_toks: 2
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""


def _plain_task(folder: Path) -> Path:
    """A stock lm-eval YAML task (no class of ours) over two local questions."""
    data = folder / "plain.jsonl"
    rows = [{"question": "Two plus two?", "answer": "four"}, {"question": "Sky?", "answer": "blue"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "plain.yaml").write_text(PLAIN_TASK.format(data=data))
    return folder


def _shape(result: dict[str, Any], task: str) -> dict[str, Any]:
    """What a predict-only run records about a task, values of its own aside."""
    sample = result["samples"][task][0]
    return {
        "results": {k: v for k, v in result["results"][task].items() if k not in ("name", "alias")},
        "higher_is_better": result["higher_is_better"][task],
        "metric_list": result["configs"][task]["metric_list"],
        "sample_metrics": sample["metrics"],
        "sample_keys": sorted(k for k in sample if k not in ("doc", "doc_hash", "target_hash")),
    }


def test_predict_only_writes_what_lm_eval_writes_for_its_own_tasks(
    tiny_llama: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager = TaskManager(
        include_defaults=False,
        include_path=[TASKS_DIR, str(_plain_task(tmp_path))],
        metadata={"overlength": "truncate_middle"},  # no judge option: none is needed
    )
    with caplog.at_level(logging.WARNING):
        result = simple_evaluate(
            model="hf",
            model_args=f"pretrained={tiny_llama},max_length=1024,dtype=float32",
            tasks=["plain_generation", "elitr_qa_dev", "elitr_qa_mt_dev"],
            task_manager=manager,
            limit=2,
            gen_kwargs="max_gen_toks=2",
            device="cpu",
            predict_only=True,
        )
    assert result is not None
    own = _shape(result, "plain_generation")
    assert own["results"] == {"sample_len": 2, "bypass,none": 999, "bypass_stderr,none": "N/A"}
    for task in ("elitr_qa_dev", "elitr_qa_mt_dev"):
        ours = _shape(result, task)
        assert ours == own, task
        # The answers and documents stay, so `elitr-bench score` can score the run later.
        for row in result["samples"][task]:
            assert row["doc"]["question"] and row["doc"]["answer"] and row["resps"][0][0]
    assert not [r for r in caplog.records if "aggregation" in r.getMessage()]


def test_predict_only_minutes_and_no_metrics_averaged() -> None:
    result = evaluate("elitr-replay", "system=gpt4", ["automin23_en"], limit=2, predict_only=True)
    assert result["results"]["automin23_en"] == {
        "name": "automin23_en",
        "alias": "automin23_en",
        "sample_len": 2,
        "bypass,none": 999,
        "bypass_stderr,none": "N/A",
    }
    rows = result["samples"]["automin23_en"]
    assert all(row["metrics"] == ["bypass"] and row["resps"][0][0] for row in rows)
