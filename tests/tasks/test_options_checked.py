"""Options are checked: near-miss keys, --num_fewshot, and an API judge before generation.

The lm-eval cases run lm-eval's own ``simple_evaluate`` in-process (the CLI's evaluator)
with a task manager limited to our folder; the CLI's one-line output is checked in
``tests/judges/test_judge_failure_cli.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from elitr_bench.tasks.options import (
    FOREIGN_KEYS,
    OPTION_KEYS,
    OptionError,
    TaskOptions,
    near_miss,
    register_option_keys,
)
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("judg", "judge"),
        ("Judge", "judge"),
        ("prompt-role", "prompt_role"),
        ("overlenght", "overlength"),
        ("differing-only", "differing_only"),
        ("qa_marker", "qa_markers"),
        ("histroy", "history"),
        ("noise-seed", "noise_seed"),
    ],
)
def test_near_misses_are_refused_with_the_fix(key: str, meant: str) -> None:
    assert near_miss(key) == meant
    with pytest.raises(OptionError) as err:
        TaskOptions.from_metadata({key: "x", "version": 1.0})
    message = str(err.value)
    assert (
        f"did you mean {meant!r}" in message and f"""--metadata '{{"{meant}": "x"}}'""" in message
    )
    assert "\n" not in message


@pytest.mark.parametrize(
    "key",
    ["pretrained", "dtype", "max_length", "system", "seed", "random_seed", "add_bos_token",
     "enable_thinking", "think_end_token", "prefix_cache_device", "wr", "version"],
)  # fmt: skip
def test_keys_of_lm_eval_and_models_are_left_alone(key: str) -> None:
    assert near_miss(key) is None
    TaskOptions.from_metadata({key: "1", "judge": "none"})


@pytest.fixture
def restore_keys() -> Iterator[None]:
    keys, foreign = dict(OPTION_KEYS), set(FOREIGN_KEYS)
    yield
    OPTION_KEYS.clear()
    OPTION_KEYS.update(keys)
    FOREIGN_KEYS.clear()
    FOREIGN_KEYS.update(foreign)


def test_new_tasks_extend_the_known_keys(restore_keys: None) -> None:
    assert near_miss("summary_stile") is None
    register_option_keys({"summary_style": "bullets or prose"}, foreign=("judge_x",))
    assert near_miss("summary_stile") == "summary_style" and near_miss("judge_x") is None


# --- through lm-eval's evaluator ---------------------------------------------------------


def _evaluate(metadata: dict[str, Any], **kwargs: Any) -> Any:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from elitr_bench.tasks import TASKS_DIR

    manager = TaskManager(
        include_path=str(TASKS_DIR),
        include_defaults=False,
        metadata={"system": "gpt-4", **metadata},
    )
    return simple_evaluate(
        model="elitr-replay",
        model_args="system=gpt-4",
        tasks=["elitr_qa_dev"],
        limit=2,
        task_manager=manager,
        **kwargs,
    )


@pytest.fixture
def generation_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts generate_until calls of the replay model (none may happen before a refusal)."""
    from elitr_bench.models.replay import ReplayLM

    calls: list[int] = []
    original = ReplayLM.generate_until

    def spy(self: Any, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        calls.append(len(requests))
        return original(self, requests, disable_tqdm)

    monkeypatch.setattr(ReplayLM, "generate_until", spy)
    return calls


@pytest.mark.slow
def test_num_fewshot_is_refused(generation_spy: list[int]) -> None:
    # The YAML says num_fewshot: 0, for which lm-eval would ignore the flag silently.
    with pytest.raises(OptionError, match=r"zero-shot .* drop --num_fewshot 2") as err:
        _evaluate({"judge": "replay"}, num_fewshot=2)
    assert "\n" not in str(err.value) and generation_spy == []


@pytest.mark.slow
def test_wrong_key_fails_before_any_generation(
    generation_spy: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from elitr_bench.judges import JudgeNotReadyError

    def refuse(request: RecordedRequest) -> Reply:
        return Reply(status=401, body={"error": {"message": "Incorrect API key provided"}})

    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0000000000000000")
    with LoopbackOpenAI(refuse) as server:
        judge = f"openai:gpt-4-0613,base_url={server.base_url},progress=false"
        with pytest.raises(JudgeNotReadyError, match="OPENAI_API_KEY was rejected"):
            _evaluate({"judge": judge})
        assert len(server.requests) == 1 and server.requests[0].body["max_tokens"] == 1
    assert generation_spy == []
