"""Fixtures for judge tests: a loopback OpenAI-compatible server and an isolated cache."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

TEST_KEY = "sk-loopback-SECRET-5f3a9c1e7b2d4a60"

_RESPONSE = re.compile(r"### Response to evaluate:\n(.*?)\n\n### Reference answer", re.S)


def response_in(request: RecordedRequest) -> str:
    """The response text embedded in a judge prompt."""
    match = _RESPONSE.search(request.prompt)
    return match.group(1) if match else ""


def boxed_by_response(score_of: Callable[[str], int]) -> Callable[[RecordedRequest], str]:
    r"""Server script: answer every judge prompt with ``\boxed{score_of(response)}``."""

    def handler(request: RecordedRequest) -> str:
        return f"Feedback: fine. \\boxed{{{score_of(response_in(request))}}}"

    return handler


@pytest.fixture(autouse=True)
def _isolated_judge_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Never touch the user's cache, judge setting or real API keys."""
    from elitr_bench.judges.spec import reset_run_judge
    from elitr_bench.llm import memory

    monkeypatch.setenv("ELITR_JUDGE_CACHE", str(tmp_path / "judge-cache.sqlite"))
    monkeypatch.delenv("ELITR_JUDGE", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    reset_run_judge()
    # A loopback port a refused test used can come back for a later test of this process,
    # and with it the refused credentials' scope: every test starts with none refused.
    memory.forget()
    yield
    reset_run_judge()
    memory.forget()


@pytest.fixture
def loopback() -> Iterator[LoopbackOpenAI]:
    """A started loopback server (default reply ``ok``; set ``.handler`` to script it)."""
    with LoopbackOpenAI() as server:
        yield server


def minutes_replay_args(judge: str, out: Path, limit: int = 2) -> list[str]:
    """``lm_eval`` arguments: AutoMin 2023's released GPT-4 minutes judged by ``judge``."""
    return [
        "--model", "elitr-replay", "--model_args", "system=gpt4",
        "--tasks", "automin23_en", "--limit", str(limit),
        "--metadata", json.dumps({"judge": judge}),
        "--log_samples", "--output_path", str(out),
    ]  # fmt: skip


def chat_qa_args(chat_url: str, judge: str, out: Path, limit: int = 2) -> list[str]:
    """``lm_eval`` arguments: the loopback as the tested chat model on ``limit`` ELITR questions."""
    return [
        "--model", "local-chat-completions",
        "--model_args", f"model=loopback,base_url={chat_url},num_concurrent=1",
        "--tasks", "elitr_qa_dev", "--apply_chat_template", "--limit", str(limit),
        "--log_samples", "--output_path", str(out),
        "--metadata", json.dumps({"judge": judge}),
    ]  # fmt: skip
