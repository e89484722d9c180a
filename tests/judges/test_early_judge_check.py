"""Every judge is checked before lm-eval builds the model under test (issue 16, point 9).

The real ``lm_eval`` CLI runs with ``marker-lm`` (tests/support/marker_model.py), a model
that leaves a file when lm-eval constructs it: a missing key or an unloadable ``hf``
judge must stop the run with one line while that file is still absent. The unit tests
cover what the start-up hook resolves (our tasks, groups and tags, never lm-eval's own),
``--predict_only``, ``preflight=false``, the replay judge on generated answers, and hints
that name only what can work for the run at hand.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.errors import JudgeNotReadyError
from elitr_bench.judges.readiness import check_judge_ready
from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.tasks.preflight import check_run_judges, our_task_kinds
from tests.conftest import run_lm_eval
from tests.support import marker_model
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply

MARKER_ARGS = ["--model", "marker-lm", "--tasks", "elitr_qa_dev", "--limit", "1"]


def run_marked(
    marker: Path, args: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``lm_eval ARGS`` with the marker model (tests/support/marker_model.py)."""
    marked = {**env, marker_model.MARKER_ENV: str(marker)}
    return run_lm_eval(args, env=marked, model_script=marker_model.SCRIPT)


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_missing_key_and_hf_judge_fail_before_the_model_is_built(tmp_path: Path) -> None:
    marker = tmp_path / "built"
    no_key = {"OPENAI_API_KEY": "", "ELITR_JUDGE": ""}

    # Control: the marker works (--predict_only judges nothing, so nothing is checked).
    out = tmp_path / "predict"
    args = [*MARKER_ARGS, "--predict_only", "--log_samples", "--output_path", str(out)]
    control = run_marked(marker, args, no_key)
    assert control.returncode == 0, control.stderr[-3000:]
    assert marker.read_text() == "built"
    marker.unlink()

    # The default judge without a key: one line, before lm-eval builds the model.
    proc = run_marked(marker, MARKER_ARGS, no_key)
    assert proc.returncode != 0 and not marker.exists()
    line = _last_line(proc)
    assert line.startswith("elitr-bench: error: judge openai:gpt-4-0613: no API key;")
    # Ways out for a generating model: no replay (it has no scores for these answers).
    assert "replay" not in line and """--metadata '{"judge": "lexical"}'""" in line
    assert """--metadata '{"judge": "none"}', then elitr-bench score RUN_DIR""" in line

    # An hf judge (the README's Prometheus kind) whose folder does not exist.
    missing = tmp_path / "models" / "prometheus-13b"
    judge = {"judge": f"hf:{missing},rubric=prometheus-rubric"}
    proc = run_marked(marker, [*MARKER_ARGS, "--metadata", json.dumps(judge)], no_key)
    assert proc.returncode != 0 and not marker.exists()
    line = _last_line(proc)
    assert f"judge hf:{missing}: model path '{missing}' does not exist" in line


def test_the_hook_sees_only_our_tasks() -> None:
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_defaults=False)  # our folder only, through the hook
    kinds = our_task_kinds(["elitr_qa", "automin23_en", "not_a_task"], manager)
    assert kinds == {"elitr_qa_dev": "qa", "elitr_qa_test": "qa", "automin23_en": "minutes"}
    assert our_task_kinds(["hellaswag", "arc_easy"], None) == {}
    # A run of lm-eval's own tasks checks nothing, whatever our judge setting says.
    assert check_run_judges(tasks=["hellaswag"], model="hf", metadata={"judge": "hf:/x"}) == []
    # --predict_only judges nothing: nothing to check.
    assert check_run_judges(tasks=["elitr_qa_dev"], model="hf", predict_only=True) == []


def test_checks_read_the_metadata_and_model_as_the_tasks_will(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # A keyless judge passes; the minutes task without a judge has nothing to check.
    assert [c.backend for c in check_run_judges(tasks=["elitr_qa_dev"], model="hf",
            metadata={"judge": "lexical"})] == ["lexical"]  # fmt: skip
    assert check_run_judges(tasks=["automin23_en"], model="hf") == []
    # The replayed system travels in --model_args, as lm-eval merges it into metadata.
    [config] = check_run_judges(
        tasks=["elitr_qa_dev"], model="elitr-replay", model_args="system=gpt-4",
        metadata={"judge": "replay"},
    )  # fmt: skip
    assert config.options.system == "GPT-4"  # canonical name, as the task gives it
    # judge: replay on a generating model: its answers have no released scores.
    with pytest.raises(JudgeNotReadyError) as replay:
        check_run_judges(tasks=["elitr_qa_dev"], model="hf", metadata={"judge": "replay"})
    assert "judge replay scores only the released systems' answers" in str(replay.value)
    assert "--model hf writes new ones" in str(replay.value)
    assert """'{"judge": "replay"}'""" not in str(replay.value)
    # A replay run may be told about replay; a misspelt option is named before the judge.
    with pytest.raises(JudgeNotReadyError, match=r"""'\{"judge": "replay"\}' \(the released"""):
        check_run_judges(tasks=["elitr_qa_dev"], model="elitr-replay")
    with pytest.raises(ValueError, match="'judg' is not an option"):
        check_run_judges(tasks=["elitr_qa_dev"], model="hf", metadata={"judg": "replay"})
    # Minutes tasks: the QA-only keyless judges are never suggested.
    with pytest.raises(JudgeNotReadyError) as err:
        check_run_judges(
            tasks=["automin23_en"], model="hf", metadata={"judge": "openai:gpt-4o,rubric=gpt-afgr"}
        )
    assert "lexical" not in str(err.value) and "replay" not in str(err.value)
    assert "base_url=http://127.0.0.1:PORT/v1" in str(err.value)


def test_hf_judge_resolves_config_and_tokenizer_without_weights(
    tiny_llama: Path, tmp_path: Path
) -> None:
    ready = parse_judge_spec(f"hf:{tiny_llama},rubric=prometheus-rubric")
    check_judge_ready(ready, network=True)  # config, tokenizer and a weights file: fine
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(JudgeNotReadyError, match="no loadable config/tokenizer in this folder"):
        check_judge_ready(parse_judge_spec(f"hf:{empty}"), network=True)
    check_judge_ready(parse_judge_spec(f"hf:{empty},preflight=false"), network=True)
    check_judge_ready(parse_judge_spec(f"hf:{empty}"))  # offline: the folder exists
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (no_weights / name).write_bytes((tiny_llama / name).read_bytes())
    with pytest.raises(JudgeNotReadyError, match="no weights"):
        check_judge_ready(parse_judge_spec(f"hf:{no_weights}"), network=True)
    # A hub id that is not in the cache while offline (the tests run with HF_HUB_OFFLINE).
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    with pytest.raises(JudgeNotReadyError, match=r"in the hub cache \(HF_HUB_OFFLINE\)"):
        check_judge_ready(parse_judge_spec("hf:prometheus-eval/prometheus-13b-v1.0"), network=True)


def _generated_run(folder: Path, model: str) -> Path:
    """A QA run folder as lm-eval writes it: a results file naming the model, one sample."""
    folder.mkdir(parents=True)
    stamp = "2026-01-01T00-00-00.000001"
    (folder / f"results_{stamp}.json").write_text(
        json.dumps({"config": {"model": model}, "results": {"elitr_qa_dev": {}}})
    )
    sample = {
        "doc_id": 0,
        "doc": {"meeting_id": "001", "question_id": "1", "question": "q", "answer": "a"},
        "resps": [["an answer"]],
        "filtered_resps": ["an answer"],
    }
    path = folder / f"samples_elitr_qa_dev_{stamp}.jsonl"
    path.write_text(json.dumps(sample) + "\n")
    return path


def test_score_never_suggests_a_judge_that_cannot_score_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _generated_run(tmp_path / "hf-run", "hf")
    assert main(["score", str(run.parent), "--judge", "replay"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--judge replay scores only the released systems' answers" in line
    assert "holds answers of --model hf" in line and "--judge lexical" in line
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["score", str(run.parent), "--judge", "openai:gpt-4o"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "no API key" in line and "--judge lexical" in line and "replay" not in line
    replayed = _generated_run(tmp_path / "replay-run", "elitr-replay")
    assert main(["score", str(replayed.parent), "--judge", "openai:gpt-4o"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--judge replay (the released judge scores)" in line


def test_preflight_checks_the_filler_model_too(loopback: LoopbackOpenAI) -> None:
    """A ``filler_model`` the endpoint does not serve fails before anything, named."""

    def handler(request: RecordedRequest) -> Reply | str:
        if isinstance(request.body, dict) and request.body.get("model") == "no-such-mini":
            return Reply(status=404, content="model not found")
        return "OK"

    loopback.handler = handler
    spec = (
        f"openai:judge-m,rubric=gpt-afgr,base_url={loopback.base_url},"
        "filler_model=no-such-mini,retries=0"
    )
    with pytest.raises(JudgeNotReadyError) as err:
        check_judge_ready(parse_judge_spec(spec), network=True)
    assert "(its filler_model no-such-mini)" in str(err.value)
    assert "model 'no-such-mini' not found" in str(err.value)
    sent = [r.body["model"] for r in loopback.requests if r.path.endswith("/completions")]
    assert sent == ["judge-m", "no-such-mini"]  # the judge first, then its classifier
    # preflight=false: no request at all (the key is still checked, offline).
    loopback.reset()
    check_judge_ready(parse_judge_spec(spec + ",preflight=false"), network=True)
    assert loopback.requests == []
