"""``elitr-replay``: its ``--model_args``, the run name lm-eval gives it, prompt options.

In-process tests build the model the way lm-eval's CLI does (a dict of ``--model_args``
through ``create_from_arg_obj``) and name the run with lm-eval's own tracker; one slow
test runs the real ``lm_eval`` CLI for two systems and two seeds.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lm_eval.loggers.evaluation_tracker import GeneralConfigTracker

from elitr_bench.models.replay import ReplayError, ReplayLM
from tests.conftest import run_lm_eval


def _run_name(model_args: dict[str, Any], seed: int) -> str:
    """lm-eval's folder name for a run with these ``--model_args`` (CLI path)."""
    random.seed(seed)  # what --seed does before lm-eval names the run
    ReplayLM.create_from_arg_obj(model_args, {"batch_size": 1, "device": None})
    tracker = GeneralConfigTracker()
    tracker.log_experiment_args("elitr-replay", model_args, None, None, False)
    assert tracker.model_name_sanitized is not None
    return tracker.model_name_sanitized


def test_runs_are_named_after_the_replayed_system_whatever_the_seed() -> None:
    names = {
        (system, seed): _run_name({"system": system}, seed)
        for system in ("gpt-4", "vicuna-13b", "ntr")
        for seed in (0, 1234)
    }
    assert names[("gpt-4", 0)] == names[("gpt-4", 1234)] == "elitr-replay__GPT-4"
    assert (
        names[("vicuna-13b", 0)] == names[("vicuna-13b", 1234)] == ("elitr-replay__Vicuna-13B-v1.5")
    )
    assert names[("ntr", 0)] == "elitr-replay__ntr"  # an AutoMin minutes system
    # The recorded name is accepted back (a run repeated from its results file) ...
    again = {"system": "gpt-4", "model": "elitr-replay/GPT-4"}
    assert _run_name(again, 7) == "elitr-replay__GPT-4"
    # ... but not one naming another system.
    with pytest.raises(ReplayError, match=r"model=elitr-replay/Vicuna.*did you mean system="):
        ReplayLM.create_from_arg_obj({"system": "gpt-4", "model": "elitr-replay/Vicuna"})


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            {"sytem": "vicuna-13b"},
            r"--model_args sytem=vicuna-13b: .*did you mean system=vicuna-13b",
        ),
        ({"System": "gpt-4"}, r"did you mean system=gpt-4"),
        ({}, r"--model_args system=NAME is required"),
        ({"model": "gpt-4"}, r"system=NAME is required.*did you mean system=gpt-4\?"),
        (
            {"pretrained": "x", "system": "gpt-4"},
            r"no argument 'pretrained'; it takes only system=",
        ),
    ],
)
def test_missing_or_unknown_model_args_are_refused(args: dict[str, str], expected: str) -> None:
    with pytest.raises(ReplayError, match=expected):
        ReplayLM.create_from_arg_obj(dict(args))
    text = ",".join(f"{k}={v}" for k, v in args.items())
    with pytest.raises(ReplayError, match=expected):
        ReplayLM.create_from_arg_string(text)


def test_prompt_options_render_plainly_and_change_no_answer() -> None:
    lm = ReplayLM(system="gpt-4")
    turns = [{"role": "system", "content": "A"}, {"role": "user", "content": "B"}]
    assert lm.apply_chat_template(turns) == "A\n\nB"  # as without --apply_chat_template
    assert lm.tokenizer_name == "elitr-replay" and lm.chat_template(True) is None


def _results(out: Path, folder: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((out / folder).glob("results_*.json"))]


@pytest.mark.slow
def test_cli_folders_separate_systems_and_prompt_flags_are_accepted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    common = ["--tasks", "elitr_qa_dev", "--limit", "2", "--output_path", str(out)]
    common += ["--log_samples", "--metadata", json.dumps({"judge": "replay"})]
    runs = {
        ("gpt-4", "1"): [],
        ("gpt-4", "2"): [
            "--apply_chat_template",
            "--system_instruction",
            "Be brief.",
            "--fewshot_as_multiturn",
        ],
        ("vicuna-13b", "1"): [],
    }
    for (system, seed), extra in runs.items():
        model = ["--model", "elitr-replay", "--model_args", f"system={system}"]
        proc = run_lm_eval([*model, "--seed", seed, *common, *extra])
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr
        said = [line for line in proc.stderr.splitlines() if "ignored: a replay returns" in line]
        if extra:  # said once, naming what it ignores
            assert len(said) == 1
            flags = "--apply_chat_template, --system_instruction, --fewshot_as_multiturn"
            assert f"{flags} ignored" in said[0]
        else:
            assert said == []
    assert sorted(p.name for p in out.iterdir()) == [
        "elitr-replay__GPT-4",
        "elitr-replay__Vicuna-13B-v1.5",
    ]
    plain, flagged = _results(out, "elitr-replay__GPT-4")
    assert plain["model_name"] == flagged["model_name"] == "elitr-replay/GPT-4"
    assert plain["config"]["model_args"] == {"system": "gpt-4", "model": "elitr-replay/GPT-4"}
    assert plain["results"] == flagged["results"]  # the flags change no answer, no score
    (vicuna,) = _results(out, "elitr-replay__Vicuna-13B-v1.5")
    assert vicuna["results"] != plain["results"]

    proc = run_lm_eval(["--model", "elitr-replay", "--model_args", "sytem=gpt-4", *common])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("elitr-bench: error: --model_args sytem=gpt-4: elitr-replay has no")
    assert "did you mean system=gpt-4?" in last


def test_importing_the_replay_model_first_keeps_lm_evals_own_models() -> None:
    """lm-eval fills its model table only while it is empty; ours must not be first."""
    code = (
        "import elitr_bench.models.replay\n"
        "from lm_eval.api.registry import get_model\n"
        "print(get_model('hf').__name__, get_model('elitr-replay').__name__)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["HFLM", "ReplayLM"]
