"""lm-eval's own clients read our runs: W&B, the Hub logger's details, zeno, make_table.

The W&B logger and ``scripts/zeno_visualize.py`` look every metric of a task's
``metric_list`` up in every logged sample (``x[metric] for x in data``); the Hub logger's
files must load with ``datasets``; ``make_table`` prints what a leaderboard reads.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.clustered import clustered_mean
from tests.conftest import run_lm_eval
from tests.support.evaluate import evaluate
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

#: Questions of two dev meetings (a clustered stderr needs two) and a test conversation.
SAMPLES = {"elitr_qa_dev": [0, 1, 2, 20, 21, 22], "elitr_conv_test": [0, 1, 2, 3, 4, 5]}
HUB_ARGS = (
    "hub_results_org=elitr-test,details_repo_name=details,"
    "push_results_to_hub=False,push_samples_to_hub=False"
)


def _judge_every_other(request: RecordedRequest) -> str:
    """A judge that scores some answers and gives no score for others (unscored items)."""
    if "### Response to evaluate:" not in request.prompt:
        return "ok"  # the judge preflight
    response = request.prompt.split("### Response to evaluate:\n", 1)[1].split("\n\n###")[0]
    if len(response) % 2:
        return "I would rather not grade this one."
    return f"Feedback: fine. \\boxed{{{3 + len(response) % 7}}}"


def _samples(out: Path) -> dict[str, list[dict[str, Any]]]:
    found = {}
    for path in out.rglob("samples_*.jsonl"):
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        found[task] = [json.loads(line) for line in path.read_text().splitlines()]
    return found


def _assert_every_listed_metric_everywhere(
    results: dict[str, Any], samples: dict[str, list[dict[str, Any]]]
) -> None:
    """What W&B's ``_generate_dataset`` and zeno's ``generate_system_df`` do, as a check.

    Zeno also makes a metric of exactly the ``aggregation: mean`` entries, so every ranked
    score must be listed under that name (a custom name would leave Zeno with no metric).
    """
    for task, rows in samples.items():
        entries = results["configs"][task]["metric_list"]
        listed = [m["metric"] for m in entries]
        missing = [(m, r["doc_id"]) for r in rows for m in listed if m not in r]
        assert not missing, (task, missing[:5])
        zeno_metrics = {m["metric"] for m in entries if m.get("aggregation") == "mean"}
        ranked = {m["metric"] for m in entries if m.get("higher_is_better") is not None}
        assert ranked and ranked <= zeno_metrics, (task, ranked - zeno_metrics)


def _wandb_tables(root: Path) -> dict[str, dict[str, Any]]:
    """The tables of an offline W&B run: name -> {columns, data}."""
    tables = {}
    for path in root.rglob("*.table.json"):
        parts = path.parts[path.parts.index("table") + 1 :]
        name = "/".join([*parts[:-1], parts[-1].rsplit("_", 2)[0]])
        tables[name] = json.loads(path.read_text())
    return tables


@pytest.mark.slow
def test_wandb_hub_logger_zeno_and_make_table_read_a_judged_run(tmp_path: Path) -> None:
    import datasets
    import wandb  # noqa: F401  # the dev extra: a failure, never a skip
    from lm_eval.utils import make_table

    out, wandb_dir = tmp_path / "out", tmp_path / "wandb"
    wandb_dir.mkdir()
    with LoopbackOpenAI(_judge_every_other) as server:
        judge = f"openai:judge-model,base_url={server.base_url},cache={tmp_path / 'j.sqlite'}"
        args = [
            "--model", "elitr-replay", "--model_args", "system=gpt-4",
            "--tasks", "elitr_qa_dev,elitr_conv_test", "--samples", json.dumps(SAMPLES),
            "--metadata", json.dumps({"judge": judge}),
            "--output_path", str(out), "--log_samples",
            "--wandb_args", "project=elitr-test,mode=offline",
            "--hf_hub_log_args", HUB_ARGS,
        ]  # fmt: skip
        env = {"OPENAI_API_KEY": "sk-unused", "WANDB_DIR": str(wandb_dir), "WANDB_SILENT": "1"}
        proc = run_lm_eval(args, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Logging to W&B failed" not in proc.stdout + proc.stderr
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    samples = _samples(out)
    assert set(samples) == {"elitr_qa_dev", "elitr_conv_test"}
    _assert_every_listed_metric_everywhere(results, samples)

    # Unscored answers carry judge_score None and are left out of the mean, never 0.
    rows = [r for task_rows in samples.values() for r in task_rows]
    unscored = [r for r in rows if r["judge_unscored"] == 1.0]
    scored = [r for r in rows if r["judge_score"] is not None]
    assert unscored and scored and len(unscored) + len(scored) == len(rows)
    assert all(r["judge_score"] is None for r in unscored)
    dev = [r["judge_score"] for r in samples["elitr_qa_dev"] if r["judge_score"] is not None]
    assert results["results"]["elitr_qa_dev"]["judge_score,openai:judge-model"] == pytest.approx(
        statistics.fmean(dev)
    )
    # Its stderr is the meeting-clustered one, from the same samples (not s / sqrt(n)).
    scored_dev = [r for r in samples["elitr_qa_dev"] if r["judge_score"] is not None]
    clustered = clustered_mean(
        [r["judge_score"] for r in scored_dev], [r["doc"]["meeting_id"] for r in scored_dev]
    )
    assert len({r["doc"]["meeting_id"] for r in scored_dev}) == 2
    written = results["results"]["elitr_qa_dev"]["judge_score_stderr,openai:judge-model"]
    assert written == pytest.approx(clustered.se)
    assert written != pytest.approx(statistics.stdev(dev) / math.sqrt(len(dev)))

    # W&B: one samples table per task with a row per sample and a column per metric.
    tables = _wandb_tables(wandb_dir)
    for task, task_rows in samples.items():
        table = tables[f"{task}_eval_results"]
        assert len(table["data"]) == len(task_rows)
        listed = [m["metric"] for m in results["configs"][task]["metric_list"]]
        assert set(listed) <= set(table["columns"])
    # Its results table shows the clustered stderr of the results file.
    shown = {(row[0], row[4]): row[6] for row in tables["evaluation/eval_results"]["data"]}
    stderr = results["results"]["elitr_qa_dev"]["judge_score_stderr,openai:judge-model"]
    assert isinstance(stderr, float) and shown[("elitr_qa_dev", "judge_score")] == f"{stderr:.4f}"

    # The Hub logger's local details and results load with datasets.
    for path in [*out.rglob("samples_*.jsonl"), *out.rglob("results_*.json")]:
        loaded = datasets.load_dataset("json", data_files=str(path), split="train")
        assert loaded.num_rows == (1 if path.suffix == ".json" else 6)

    table = make_table(results)
    assert "judge_score" in table and "overlength_skipped" in table


def test_metric_lists_follow_the_run(tiny_llama: Path) -> None:
    """prompt_tokens when counted, effective_wer on noisy transcripts, judge metrics when judged."""
    noisy = evaluate(
        "hf",
        f"pretrained={tiny_llama},max_length=1024,dtype=float32",
        ["elitr_qa_wer40_dev"],
        limit=2,
        gen_kwargs="max_gen_toks=2",
        device="cpu",
        metadata={"judge": "none", "overlength": "truncate_middle"},
    )
    listed = {m["metric"]: m for m in noisy["configs"]["elitr_qa_wer40_dev"]["metric_list"]}
    assert set(listed) == {
        "f1", "rouge_l", "effective_wer", "prompt_tokens",
        "overlength_skipped", "overlength_truncated",
    }  # fmt: skip
    _assert_every_listed_metric_everywhere(noisy, noisy["samples"])
    # Descriptive statistics are reported but not ranked; only scores have a direction.
    ranked = noisy["higher_is_better"]["elitr_qa_wer40_dev"]
    assert ranked == {
        "f1": True, "rouge_l": True, "effective_wer": None, "prompt_tokens": None,
        "overlength_skipped": None, "overlength_truncated": None,
    }  # fmt: skip

    replay = evaluate(
        "elitr-replay", "system=gpt-4", ["elitr_qa_dev"], limit=3, metadata={"judge": "replay"}
    )
    # No tokenizer: no prompt_tokens; clean transcripts: no effective_wer.
    listed_replay = [m["metric"] for m in replay["configs"]["elitr_qa_dev"]["metric_list"]]
    assert listed_replay == [
        "judge_score", "judge_unscored", "judge_errors", "judge_format_in_answer", "f1", "rouge_l",
        "overlength_skipped", "overlength_truncated",
    ]  # fmt: skip
    _assert_every_listed_metric_everywhere(replay, replay["samples"])


def test_minutes_run_through_the_wandb_and_hub_logger_classes(tmp_path: Path) -> None:
    import datasets
    import wandb  # the dev extra: a failure, never a skip
    from lm_eval.loggers import EvaluationTracker, WandbLogger

    result = evaluate(
        "elitr-replay", "system=gpt4", ["automin23_en"], limit=4, metadata={"judge": "none"}
    )
    config = result["configs"]["automin23_en"]
    listed = [m["metric"] for m in config["metric_list"]]
    assert "sections" not in listed and "prompt_tokens" not in listed  # not produced here
    ranked = result["higher_is_better"]["automin23_en"]
    assert ranked["rouge1"] is True and ranked["lines"] is None and ranked["words"] is None
    assert ranked["words_per_line"] is None
    samples = result.pop("samples")
    _assert_every_listed_metric_everywhere(result, samples)

    run = wandb.init(project="elitr-test", mode="offline", dir=str(tmp_path))
    try:
        logger = WandbLogger()
        logger.post_init(result)
        logger.log_eval_result()
        logger.log_eval_samples(samples)  # raised KeyError: 'sections' before
    finally:
        run.finish()
    table = _wandb_tables(tmp_path)["automin23_en_eval_results"]
    assert len(table["data"]) == 4 and set(listed) <= set(table["columns"])

    tracker = EvaluationTracker(output_path=str(tmp_path / "hub"), **_hub_kwargs())
    tracker.save_results_aggregated(results=result, samples=samples)
    tracker.save_results_samples(task_name="automin23_en", samples=samples["automin23_en"])
    (path,) = (tmp_path / "hub").rglob("samples_automin23_en_*.jsonl")
    loaded = datasets.load_dataset("json", data_files=str(path), split="train")
    assert loaded.num_rows == 4 and set(listed) <= set(loaded.column_names)


def _hub_kwargs() -> dict[str, Any]:
    pairs = (part.split("=", 1) for part in HUB_ARGS.split(","))
    return {k: (v if v not in ("True", "False") else v == "True") for k, v in pairs}


def test_nan_not_a_guess_when_nothing_was_scored() -> None:
    """A metric without any value aggregates to NaN (JSON NaN), not 0 or a crash."""
    from elitr_bench.tasks.metrics import cluster_stderr, mean, total

    assert math.isnan(mean([None, None]))
    assert total([None, 1.0, 0.0]) == 1.0
    assert cluster_stderr([{"cluster": "m1", "value": None}, None]) == "N/A"
