"""Never a silently different prompt: lm-eval's request cache and ``--samples``.

Through the real ``lm_eval`` CLI; the request cache is a file under each test's own
``LM_HARNESS_CACHE_PATH``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.data import load_benchmark
from tests.conftest import run_lm_eval
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

pytestmark = pytest.mark.slow


def _run(out: Path, cache: Path, args: list[str]) -> tuple[Any, list[dict[str, Any]]]:
    proc = run_lm_eval(
        [*args, "--output_path", str(out), "--log_samples"],
        env={"LM_HARNESS_CACHE_PATH": str(cache)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = out.rglob("samples_*.jsonl")
    return proc, [json.loads(line) for line in path.read_text().splitlines()]


def _prompts(rows: list[dict[str, Any]]) -> list[str]:
    return [r["arguments"]["gen_args_0"]["arg_0"] for r in sorted(rows, key=lambda r: r["doc_id"])]


def test_request_cache_key_follows_the_prompt_options(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    base = ["--model", "elitr-replay", "--model_args", "system=gpt-4", "--tasks", "elitr_qa_dev"]
    cached = [*base, "--limit", "2", "--cache_requests", "true"]
    plain = json.dumps({"judge": "none"})
    markers = json.dumps({"judge": "none", "qa_markers": True})

    _, first = _run(tmp_path / "a", cache, [*cached, "--metadata", plain])
    assert not any("QUESTION:" in p for p in _prompts(first))
    assert len(list(cache.iterdir())) == 1
    # Another option, another key: the cached plain prompts are not reused.
    proc, second = _run(tmp_path / "b", cache, [*cached, "--metadata", markers])
    assert all("QUESTION: " in p and p.endswith(" ANSWER:") for p in _prompts(second))
    assert len(list(cache.iterdir())) == 2
    # The same options again: a cache hit (no contexts built) with the same prompts.
    proc, third = _run(tmp_path / "c", cache, [*cached, "--metadata", markers])
    assert "Building contexts for elitr_qa_dev" not in proc.stderr
    assert _prompts(third) == _prompts(second) and len(list(cache.iterdir())) == 2

    # --samples: lm-eval's cache ignores it, so ours is not used (nor written).
    picked = {"elitr_qa_dev": [5]}
    proc, rows = _run(
        tmp_path / "d",
        cache,
        [*base, "--samples", json.dumps(picked), "--cache_requests", "true", "--metadata", plain],
    )
    question = load_benchmark().questions("qa", "dev")[5].question
    assert [r["doc"]["question"] for r in rows] == [question]
    assert _prompts(rows)[0].endswith(question)
    assert "--cache_requests is not used with --samples" in proc.stderr
    assert len(list(cache.iterdir())) == 2


def test_cache_hit_keeps_chat_template_and_system_instruction(
    tiny_llama: Path, tmp_path: Path
) -> None:
    """A cached run re-renders truncated prompts exactly as the run that built the cache."""
    cache = tmp_path / "cache"
    args = [
        "--model", "hf",
        "--model_args", f"pretrained={tiny_llama},max_length=1024,dtype=float32",
        "--gen_kwargs", "max_gen_toks=4", "--limit", "2", "--tasks", "elitr_qa_dev",
        "--apply_chat_template", "--system_instruction", "Answer briefly.",
        "--cache_requests", "true",
        "--metadata", json.dumps({"judge": "none", "overlength": "truncate_middle"}),
    ]  # fmt: skip
    _, built = _run(tmp_path / "a", cache, args)
    proc, reused = _run(tmp_path / "b", cache, args)
    assert "Building contexts for elitr_qa_dev" not in proc.stderr  # a cache hit
    for prompt in _prompts(reused):
        assert "Answer briefly." in prompt and "<|user|>" in prompt and "\n[...]\n" in prompt
    assert _prompts(reused) == _prompts(built)


def test_samples_on_a_multiturn_task_plays_the_earlier_turns(tmp_path: Path) -> None:
    """``--samples`` picks turn 3 and turn 2: they are asked after their conversations."""
    questions = load_benchmark().questions("qa", "dev")
    first = [i for i, q in enumerate(questions) if q.meeting_id == "meeting_en_dev_001"]
    second = [i for i, q in enumerate(questions) if q.meeting_id == "meeting_en_dev_002"]
    picked = [first[3], second[2]]
    answers: dict[str, str] = {}

    def reply(request: RecordedRequest) -> str:
        if "### Response to evaluate:" in request.prompt:
            return "Feedback: fine. \\boxed{7}"
        if request.body.get("max_tokens") == 1:
            return "ok"  # the judge's preflight
        answers[request.prompt] = f"answer {len(answers)}"
        return answers[request.prompt]

    out = tmp_path / "out"
    with LoopbackOpenAI(reply) as server:
        judge = f"openai:judge-model,base_url={server.base_url},cache={tmp_path / 'j.sqlite'}"
        args = [
            "--model", "local-chat-completions",
            "--model_args", f"model=loopback,base_url={server.chat_url},num_concurrent=1",
            "--tasks", "elitr_qa_mt_dev", "--apply_chat_template",
            "--samples", json.dumps({"elitr_qa_mt_dev": picked}),
            "--metadata", json.dumps({"judge": judge}),
            "--output_path", str(out), "--log_samples",
        ]  # fmt: skip
        proc = run_lm_eval(args, env={"OPENAI_API_KEY": "sk-unused"})
        requests = server.snapshot()
    assert proc.returncode == 0, proc.stderr[-3000:]
    chats = [r.body["messages"] for r in requests if r.body["model"] == "loopback"]
    judged = [r for r in requests if "### Response to evaluate:" in r.prompt]
    # Turns 1-4 of the first meeting and 1-3 of the second were played, one batch per
    # turn; only the two chosen questions were logged and judged.
    assert [len(m) for m in chats] == [1, 1, 3, 3, 5, 5, 7]
    assert len(judged) == 2
    (path,) = out.rglob("samples_*.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(r["doc_id"] for r in rows) == sorted(picked)
    for row in rows:
        doc = row["doc"]
        (prompt,) = row["arguments"]["gen_args_0"]["arg_0"]  # lm-eval's JsonChatStr
        messages = json.loads(prompt)
        asked = [m["content"] for m in messages if m["role"] == "user"]
        meeting = [q for q in questions if q.meeting_id == doc["meeting_id"]]
        assert [a.split("\n\n")[-1] for a in asked] == [q.question for q in meeting][
            : doc["turn"] + 1
        ]
        history = [m["content"] for m in messages if m["role"] == "assistant"]
        assert len(history) == doc["turn"] and all(h.startswith("answer ") for h in history)
        assert row["judge_score"] == 7.0 and row["resps"][0][0].startswith("answer ")
