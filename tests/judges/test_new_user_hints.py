"""Fixes found by trying the minutes, CREAM and MESA commands as a new user would.

Each error must name a way out that exists for the command at hand: the keyless QA
judges (replay, lexical) cannot score minutes, and ``elitr-bench arena``/``mesa`` have no
``--metadata`` flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.config import check_judge_ready, parse_judge_spec
from elitr_bench.judges.errors import JudgeNotReadyError
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The error line (``mesa`` prints its plan on stderr before it)."""
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("elitr-bench: error: "), err
    return err


def test_missing_key_hint_is_the_callers_alternative() -> None:
    config = parse_judge_spec("openai:gpt-4o")
    with pytest.raises(JudgeNotReadyError) as qa:
        check_judge_ready(config, env={})
    assert """--metadata '{"judge": "replay"}'""" in str(qa.value)
    with pytest.raises(JudgeNotReadyError) as other:
        check_judge_ready(config, env={}, alternative="use X")
    assert str(other.value).endswith("export OPENAI_API_KEY (or use X)")
    assert "replay" not in str(other.value)


@pytest.mark.parametrize(
    "command",
    [
        ["arena", "--automin", "--systems", "gpt4,ntr", "--meetings", "1", "--quiet"],
        ["mesa", "--systems", "gpt4", "--meetings", "1"],
    ],
)
def test_arena_and_mesa_without_key_name_their_own_flag(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code = main([*command, "--judge", "openai:gpt-4o", "--out", str(tmp_path / "out")])
    assert code == 2
    err = _error_line(capsys)
    assert "no API key" in err
    assert "--judge openai:MODEL,base_url=http://127.0.0.1:PORT/v1" in err
    assert "--metadata" not in err and "replay" not in err


def test_minutes_task_preflights_its_judge_before_generation(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rejected key stops an lm-eval minutes run before the model generates anything."""
    from lm_eval.evaluator import simple_evaluate
    from lm_eval.tasks import TaskManager

    def reject(request: RecordedRequest) -> Reply:
        return Reply(status=401, content="bad key")

    loopback.handler = reject
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    generated: list[Any] = []
    from elitr_bench.models import replay

    original = replay.ReplayLM.generate_until
    monkeypatch.setattr(
        replay.ReplayLM,
        "generate_until",
        lambda self, *a, **k: generated.append(1) or original(self, *a, **k),
    )
    spec = f"openai:judge-model,rubric=gpt-afgr,base_url={loopback.base_url},retries=0"
    manager = TaskManager(include_defaults=False, metadata={"judge": spec})
    with pytest.raises(JudgeNotReadyError) as err:
        simple_evaluate(
            model="elitr-replay",
            model_args="system=gpt4",
            tasks=["automin23_en"],
            task_manager=manager,
            limit=1,
        )
    message = str(err.value)
    assert "nothing was generated or judged yet" in message
    assert """--metadata '{"judge": "none"}'""" in message and "replay" not in message
    assert generated == []
    assert len(loopback.snapshot()) >= 1  # the preflight request itself
