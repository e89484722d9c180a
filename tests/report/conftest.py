"""Fixtures for report tests: real replayed lm-eval runs and small synthetic run dirs."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # matplotlib is imported only by the tests that draw
    from matplotlib.figure import Figure

#: Systems replayed for the real-run tests (Table 2 single-turn dev: 7.04, 8.21, 6.60).
SYSTEMS = ("gpt-3.5", "gpt-4", "longchat-7b")


def _write_run(out: Path, system: str, tasks: Sequence[str], metadata: Mapping[str, Any]) -> Path:
    """Run elitr-replay in-process and save it in lm-eval's own output layout."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    args = f"system={system}"
    res = simple_evaluate(
        model="elitr-replay",
        model_args=args,
        tasks=list(tasks),
        # lm-eval's CLI merges model_args into metadata; the replay judge reads `system`.
        task_manager=TaskManager(include_defaults=False, metadata={**metadata, "system": system}),
        log_samples=True,
    )
    assert res is not None
    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.log_experiment_args(
        model_source="elitr-replay",
        model_args=args,
        system_instruction=None,
        chat_template=None,
        fewshot_as_multiturn=False,
    )
    samples = res.pop("samples")
    tracker.save_results_aggregated(results=res, samples=samples)
    for task in res["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return out


@pytest.fixture(scope="session")
def lm_eval_offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep in-process lm-eval runs offline and out of the user's caches.

    Our task YAMLs name metrics lm-eval does not register, so lm-eval asks the HF
    ``evaluate`` hub for each; offline mode makes that fail at once instead of retrying
    for ~20 s per task.
    """
    import evaluate.config

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(evaluate.config, "HF_EVALUATE_OFFLINE", True)
        mp.setenv("HF_EVALUATE_OFFLINE", "1")
        mp.setenv("ELITR_BENCH_CACHE", str(tmp_path_factory.mktemp("report-cache")))
        yield


@pytest.fixture(scope="session")
def has_task(lm_eval_offline: None) -> Callable[[str], bool]:
    """Whether lm-eval's task index, with our hook installed, lists a task."""
    import elitr_bench._hook as hook

    hook.install()
    from lm_eval.tasks import TaskManager

    names = set(TaskManager(include_defaults=False).all_tasks)
    return lambda name: name in names


@pytest.fixture(scope="session")
def replay_runs(tmp_path_factory: pytest.TempPathFactory, lm_eval_offline: None) -> Path:
    """One output dir with replayed single-turn dev+test runs of three systems."""
    import elitr_bench._hook as hook

    hook.install()
    root = tmp_path_factory.mktemp("replay-runs")
    for system in SYSTEMS:
        _write_run(root / system, system, ["elitr_qa_dev", "elitr_qa_test"], {"judge": "replay"})
    return root


@pytest.fixture(scope="session")
def replay_mt_runs(
    tmp_path_factory: pytest.TempPathFactory, has_task: Callable[[str], bool]
) -> Path:
    """GPT-4 multi-turn QA and Conv dev runs; an unregistered task fails, never skips."""
    wanted = ["elitr_qa_mt_dev", "elitr_conv_dev"]
    missing = [t for t in wanted if not has_task(t)]
    if missing:
        pytest.fail(f"lm-eval does not know the tasks {missing}: registration broke", pytrace=False)
    root = tmp_path_factory.mktemp("replay-mt-runs")
    return _write_run(root, "gpt-4", wanted, {"judge": "replay"})


# ---------------------------------------------------------------- synthetic runs
def _questions(setting: str, split: str) -> list[Any]:
    from elitr_bench.data import load_benchmark

    return list(load_benchmark().questions(setting, split))


def write_synthetic_run(
    root: Path,
    name: str,
    *,
    task: str,
    setting: str,
    mode: str,
    split: str,
    score: Callable[[Any], float | None],
    model_args: str = "pretrained=org/toy-model",
    seed: int = 0,
    judge: Mapping[str, Any] | None = None,
    target_wer: float | None = None,
    effective: Callable[[str], float] | None = None,
    repr_filtered: bool = True,
    metadata: Mapping[str, Any] | None = None,
    doc_fields: Mapping[str, Any] | None = None,
    sample_fields: Callable[[Any], Mapping[str, Any]] | None = None,
) -> Path:
    """A fabricated lm-eval output dir for one task, shaped like real 0.4.13 output.

    Args:
        root: Parent of the run folder.
        name: Run folder name.
        task: Task name used in the file names.
        setting: Document setting (qa/conv).
        mode: Document mode (st/mt).
        split: dev or test2; the real questions of that split become the docs.
        score: Judge score per question (None = unscored); with ``judge=None`` the run
            carries no judge at all (judge=none) and only f1/rouge_l.
        model_args: lm-eval model_args string of the results config.
        seed: random_seed and generation seed of the run.
        judge: Judge identity logged with every judgement.
        target_wer: Noise level written into the docs (noisy tasks).
        effective: Achieved WER per meeting id (noisy tasks).
        repr_filtered: Store ``filtered_resps`` as a Python repr string, as lm-eval does.
        metadata: The task's metadata in the results file (``context_budget``,
            ``context_window``, ``retrieval``, as the tasks record them).
        doc_fields: More fields of every document (``rag_passages`` of retrieval tasks).
        sample_fields: More per-sample metrics of a question (``transcript_tokens``).
    """
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    stamp = f"2026-01-01T00-00-{seed % 60:02d}.{abs(hash(name)) % 10**6:06d}"
    lines = []
    scored: list[float] = []
    for i, q in enumerate(_questions(setting, split)):
        doc: dict[str, Any] = {
            "meeting_id": q.meeting_id,
            "question_id": q.question_id,
            "question": q.question,
            "answer": q.answer,
            "question_type": q.question_type,
            "answer_position": q.answer_position,
            "split": split,
            "setting": setting,
            "mode": mode,
            "turn": q.turn,
            **(doc_fields or {}),
        }
        if target_wer is not None:
            doc["target_wer"] = target_wer
            doc["effective_wer"] = effective(q.meeting_id) if effective else target_wer
        value = score(q)
        response = f"answer {i} from {model_args}"
        line: dict[str, Any] = {
            "doc_id": i,
            "doc": doc,
            "target": q.answer,
            "resps": [[response]],
            "filter": "none",
            "f1": 0.1 + (i % 7) / 10,
            "rouge_l": 0.05,
            **(sample_fields(q) if sample_fields else {}),
        }
        if judge is None:
            filtered: Any = response
        else:
            judged = {
                "score": value,
                "raw": "",
                "status": "scored" if value is not None else "unscored",
                "identity": dict(judge),
            }
            filtered = {"response": response, "judge": judged}
            if value is None:
                line["judge_unscored"] = 1.0
            else:
                line["judge_score"] = value
                line["judge_unscored"] = 0.0
                scored.append(value)
        line["filtered_resps"] = [str(filtered) if repr_filtered else filtered]
        lines.append(json.dumps(line))
    (folder / f"samples_{task}_{stamp}.jsonl").write_text("\n".join(lines) + "\n")
    results: dict[str, Any] = {"alias": task, "f1,none": 0.0}
    if scored:
        results["judge_score,none"] = sum(scored) / len(scored)
    (folder / f"results_{stamp}.json").write_text(
        json.dumps(
            {
                "results": {task: results},
                "configs": {
                    task: {"task": task, "test_split": split, "metadata": dict(metadata or {})}
                },
                "n-samples": {task: {"original": len(lines), "effective": len(lines)}},
                "config": {
                    "model": "hf",
                    "model_args": model_args,
                    "random_seed": seed,
                    "gen_kwargs": f"seed={seed}",
                },
            }
        )
    )
    return folder


@pytest.fixture()
def drawn(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Figure]]:
    """Every report figure as it is saved, keyed by file name.

    ``test_agreement.py`` has its own, which also lays each figure out before saving.
    """
    from elitr_bench.report import figures

    seen: dict[str, Figure] = {}
    save = figures._save

    def spy(fig: Figure, path: Path) -> Path:
        seen[path.name] = fig
        return save(fig, path)

    monkeypatch.setattr(figures, "_save", spy)
    yield seen


@pytest.fixture()
def synthetic() -> Callable[..., Path]:
    """The :func:`write_synthetic_run` helper."""
    return write_synthetic_run
