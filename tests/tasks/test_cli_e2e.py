"""End to end through the real ``lm_eval`` console script, no ``--include_path``.

Each run is a fresh interpreter, so these also prove the start-up hook registers our
tasks and models after a plain ``pip install``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.prompts import ANSWER_PROMPT
from tests.conftest import run_lm_eval
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

pytestmark = pytest.mark.slow

FIG5_HEAD = ANSWER_PROMPT.split("{transcript}")[0]
FIG5_TAIL = ANSWER_PROMPT.split("{transcript}")[1]


def _outputs(out: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    samples = {}
    for path in out.rglob("samples_*.jsonl"):
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines()]
    return results, samples


def _check_run(
    proc: Any, out: Path, extra: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    results, samples = _outputs(out)
    assert set(samples) == {"elitr_qa_dev", "elitr_qa_test", *extra}
    for task, rows in samples.items():
        assert len(rows) == 2
        for row in rows:
            doc = row["doc"]
            for field in ("meeting_id", "question_id", "question_type", "answer_position"):
                assert doc[field]
            assert doc["split"] == ("dev" if task.endswith("dev") else "test2")
    assert "elitr_qa" in results["results"]
    assert any(k.startswith("f1,") for k in results["results"]["elitr_qa"])  # ,<judge>
    return results, samples


def _tiny_hf_args(model: Path, *, max_length: int = 1024) -> list[str]:
    return [
        "--model", "hf",
        "--model_args", f"pretrained={model},max_length={max_length},dtype=float32",
        "--gen_kwargs", "max_gen_toks=4",
        "--limit", "2",
        "--log_samples",
        "--metadata", json.dumps({"overlength": "truncate_middle", "judge": "none"}),
    ]  # fmt: skip


def test_hf_with_chat_template(tiny_llama: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = _tiny_hf_args(tiny_llama)
    tasks = "elitr_qa,elitr_qa_mt_dev"
    proc = run_lm_eval(
        ["--tasks", tasks, *args, "--apply_chat_template", "--output_path", str(out)]
    )
    results, samples = _check_run(proc, out, frozenset({"elitr_qa_mt_dev"}))
    # Multi-turn with a local model: turn 2 carries turn 1's question and own answer.
    turn1, turn2 = sorted(samples["elitr_qa_mt_dev"], key=lambda r: r["doc"]["turn"])
    prompt2 = turn2["arguments"]["gen_args_0"]["arg_0"]
    expected_tail = (
        f"{turn1['doc']['question']}</s>\n<|assistant|>\n{turn1['resps'][0][0].strip()}</s>\n"
        f"<|user|>\n{turn2['doc']['question']}</s>\n<|assistant|>\n"
    )
    assert prompt2.endswith(expected_tail)
    assert turn2["prompt_tokens"] <= 1024 - 4
    row = samples["elitr_qa_dev"][0]
    prompt = row["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith("<|user|>\n" + FIG5_HEAD)
    assert prompt.endswith(FIG5_TAIL + "\n\n" + row["doc"]["question"] + "</s>\n<|assistant|>\n")
    # The tiny model has 1024 tokens: prompts were cut in the middle, and counted.
    assert "\n[...]\n" in prompt
    assert 0 < row["prompt_tokens"] <= 1024 - 4
    dev = results["results"]["elitr_qa_dev"]
    assert dev["overlength_truncated,none"] == 2 and dev["overlength_skipped,none"] == 0


def test_hf_plain_prompt_noisy_task_and_overlength_error(tiny_llama: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    tasks = "elitr_qa,elitr_qa_wer40_test"
    proc = run_lm_eval(["--tasks", tasks, *_tiny_hf_args(tiny_llama), "--output_path", str(out)])
    results, samples = _check_run(proc, out, frozenset({"elitr_qa_wer40_test"}))
    prompt = samples["elitr_qa_test"][1]["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith(FIG5_HEAD) and "<|user|>" not in prompt
    assert prompt.endswith(FIG5_TAIL + "\n\n" + samples["elitr_qa_test"][1]["doc"]["question"])

    # The noisy variant asks the same questions about a transcript at WER 0.4.
    for clean, noisy in zip(samples["elitr_qa_test"], samples["elitr_qa_wer40_test"], strict=True):
        assert noisy["doc"]["question"] == clean["doc"]["question"]
        assert noisy["doc"]["target_wer"] == 0.4
        assert abs(noisy["doc"]["effective_wer"] - 0.4) <= 0.02
        assert (
            noisy["arguments"]["gen_args_0"]["arg_0"] != clean["arguments"]["gen_args_0"]["arg_0"]
        )
    assert abs(results["results"]["elitr_qa_wer40_test"]["effective_wer,none"] - 0.4) <= 0.02

    # Default policy: refuse to silently left-truncate the meeting.
    args = _tiny_hf_args(tiny_llama)
    args[args.index("--metadata") + 1] = json.dumps({"judge": "none"})
    args.remove("--log_samples")
    proc = run_lm_eval(["--tasks", "elitr_qa_dev", *args])
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert "exceed the model's context of 1024 tokens" in last
    assert "meeting_en_dev_001 (" in last and """--metadata '{"overlength": "skip"}'""" in last


def _model_or_judge(request: RecordedRequest) -> str:
    """One loopback server plays both the tested model and the judge."""
    if "### Response to evaluate:" in request.prompt:
        return "Feedback: the response names only some participants. \\boxed{6}"
    return "The participants were [PERSON3] and [PERSON6]."


def test_local_chat_completions_against_loopback(tmp_path: Path) -> None:
    out = tmp_path / "out"
    key = "sk-test-SECRET-value-4242"
    with LoopbackOpenAI(_model_or_judge) as server:
        cache = tmp_path / "judge.sqlite"
        judge = f"openai:judge-model,base_url={server.base_url},temperature=0,cache={cache}"
        proc = run_lm_eval(
            [
                "--model",
                "local-chat-completions",
                "--model_args",
                f"model=loopback,base_url={server.chat_url},num_concurrent=1,max_retries=1",
                "--tasks",
                "elitr_qa",
                "--apply_chat_template",
                "--limit",
                "2",
                "--log_samples",
                "--output_path",
                str(out),
                "--metadata",
                json.dumps({"prompt_role": "system", "qa_markers": True, "judge": judge}),
            ],
            env={"OPENAI_API_KEY": key},
        )
        requests = server.snapshot()
    results, samples = _check_run(proc, out)
    chats = [r.body["messages"] for r in requests if r.body["model"] == "loopback"]
    judged = [r for r in requests if r.body["model"] == "judge-model"]
    # The judge was checked once (a 1-token request), before any generation.
    assert judged[0] is requests[0] and judged[0].body["max_tokens"] == 1
    judged = judged[1:]
    assert len(chats) == 4 and len(judged) == 4
    for messages in chats:
        assert [m["role"] for m in messages] == ["system", "user"]
        assert messages[0]["content"].startswith(FIG5_HEAD) and messages[0]["content"].endswith(
            FIG5_TAIL
        )
        assert messages[1]["content"].startswith("QUESTION: ") and messages[1]["content"].endswith(
            " ANSWER:"
        )
    questions = {row["doc"]["question"] for rows in samples.values() for row in rows}
    assert {m[1]["content"][len("QUESTION: ") : -len(" ANSWER:")] for m in chats} == questions
    # The scripted answer names two of the five participants: F1 is neither 0 nor 1.
    first = samples["elitr_qa_dev"][0]
    assert first["doc"]["question_id"] == "1" and 0 < first["f1"] < 1
    assert results["results"]["elitr_qa_dev"]["f1,openai:judge-model"] > 0
    # The judge ran inside lm-eval on every answer, and its raw output is logged.
    assert results["results"]["elitr_qa"]["judge_score,openai:judge-model"] == 6.0
    assert all(row["judge_score"] == 6.0 for rows in samples.values() for row in rows)
    assert "boxed{6}" in json.dumps(first["filtered_resps"])
    assert all(j.body["temperature"] == 0 for j in judged)
    usage = results["configs"]["elitr_qa_dev"]["metadata"]["judge_usage"]
    assert usage["requests"] == 2 and "estimated_cost_usd" in usage
    identity = results["configs"]["elitr_qa_dev"]["metadata"]["judge_identity"]
    assert identity["model"] == "judge-model" and identity["sampling"]["temperature"] == 0
    for path in [*out.rglob("*"), tmp_path / "judge.sqlite"]:
        if path.is_file():
            assert key not in path.read_text(errors="ignore"), path
    assert key not in proc.stdout + proc.stderr


def test_validate_and_list() -> None:
    proc = run_lm_eval(["validate", "--tasks", "elitr_qa,elitr_qa_mt,elitr_conv,elitr_qa_noisy"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "valid" in (proc.stdout + proc.stderr).lower()
    proc = run_lm_eval(["ls", "groups"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    for group in ("elitr_qa ", "elitr_qa_mt ", "elitr_conv ", "elitr_qa_noisy "):
        assert group in proc.stdout


def _two_meetings_two_turns() -> tuple[dict[str, list[int]], list[tuple[str, str]]]:
    from elitr_bench.data import load_benchmark

    questions = load_benchmark().questions("conv", "dev")
    picked: list[int] = []
    for meeting in ("meeting_en_dev_001", "meeting_en_dev_002"):
        picked += [i for i, q in enumerate(questions) if q.meeting_id == meeting][:2]
    return {"elitr_conv_dev": picked}, [
        (questions[i].meeting_id, questions[i].question) for i in picked
    ]


def test_multiturn_history_is_the_models_own_answers(tmp_path: Path) -> None:
    """Turn k carries exactly the k-1 earlier questions and the model's own answers.

    Uses lm-eval's ``openai-chat-completions`` (the single-turn test above uses
    ``local-chat-completions``), pointed at the loopback server.
    """
    samples_arg, picked = _two_meetings_two_turns()
    counter = iter(range(1000))
    given: dict[str, str] = {}  # last user message -> the answer the server gave

    def answer(request: RecordedRequest) -> str:
        given[request.prompt] = f"own answer #{next(counter)}"
        return given[request.prompt]

    out = tmp_path / "out"
    with LoopbackOpenAI(answer) as server:
        proc = run_lm_eval(
            [
                "--model",
                "openai-chat-completions",  # the OpenAI client class, pointed at loopback
                "--model_args",
                f"model=loopback,base_url={server.chat_url},num_concurrent=2,max_retries=1",
                "--tasks",
                "elitr_conv_dev",
                "--apply_chat_template",
                "--samples",
                json.dumps(samples_arg),
                "--log_samples",
                "--output_path",
                str(out),
                "--metadata",
                json.dumps({"judge": "none"}),
            ],
            env={"OPENAI_API_KEY": "sk-unused"},
        )
        requests = server.snapshot()
    assert proc.returncode == 0, proc.stderr[-3000:]
    chats = [r.body["messages"] for r in requests]
    assert len(chats) == 4
    # Turn 1 of both meetings arrives before any turn 2 (one batch per turn).
    assert [len(m) for m in chats] == [1, 1, 3, 3]
    first_turns = [m[0]["content"] for m in chats[:2]]
    for messages in chats[2:]:
        user1, assistant1, _ = messages
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert user1["content"] in first_turns  # the same meeting's first turn, verbatim
        # The history is exactly what the model answered to that first turn.
        assert assistant1["content"] == given[user1["content"]]
    questions_asked = [m[-1]["content"].split("\n\n")[-1] for m in chats]
    assert sorted(questions_asked) == sorted(q for _, q in picked)
    _, samples = _outputs(out)
    rows = samples["elitr_conv_dev"]
    turns = sorted((r["doc"]["meeting_id"][-3:], r["doc"]["turn"]) for r in rows)
    assert turns == [("001", 0), ("001", 1), ("002", 0), ("002", 1)]
    for row in rows:
        assert row["doc"]["mode"] == "mt"
        assert row["resps"][0][0].startswith("own answer #")
