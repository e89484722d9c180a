"""Errors of ours raised while lm-eval creates our models are one line, not a traceback.

lm-eval creates the model before it loads any task, so the hook our task and judge
modules install is not there yet; the model modules install it themselves.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from elitr_bench import cli_errors
from elitr_bench.data.errors import ElitrBenchError

# A fresh interpreter reaches our models the way lm-eval's CLI does (registry
# placeholders); each module must install the hook on its own, before any task loads.
PROBE = textwrap.dedent(
    """
    import sys
    from lm_eval.api.registry import get_model

    def installed():
        return getattr(sys.excepthook, "_elitr_previous", None) is not None

    get_model("hf-prefix")
    print("hf-prefix", installed())
    sys.excepthook = sys.__excepthook__
    replay = get_model("elitr-replay")
    print("elitr-replay", installed())
    print("task modules", sorted(m for m in sys.modules if m.startswith("elitr_bench.tasks")))
    replay.create_from_arg_string("system=nosuch", {})
    """
)


def _construction_error(model: str) -> ElitrBenchError:
    if model == "elitr-replay":
        from elitr_bench.models.replay import ReplayLM

        with pytest.raises(ElitrBenchError) as err:
            ReplayLM(system="nosuch")
    else:
        from elitr_bench.models.hf_prefix import HFPrefixLM

        with pytest.raises(ElitrBenchError) as err:
            HFPrefixLM(pretrained="unused", prefix_cache_mb=-1)
    return err.value


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("elitr-replay", "--model_args system='nosuch': no released responses"),
        ("hf-prefix", "--model_args prefix_cache_mb=-1: must be >= 0"),
    ],
)
def test_model_construction_errors_print_one_line(
    model: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    error = _construction_error(model)
    passed_on: list[type[BaseException]] = []
    hook = cli_errors._chain(lambda t, v, tb: passed_on.append(t))
    hook(type(error), error, error.__traceback__)
    err = capsys.readouterr().err
    assert err.startswith("elitr-bench: error: " + expected) and err.count("\n") == 1
    assert passed_on == []


@pytest.mark.slow
def test_model_modules_install_the_hook_before_any_task_loads() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.stdout.splitlines() == [
        "hf-prefix True",
        "elitr-replay True",
        "task modules []",
    ], proc.stderr[-2000:]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("elitr-bench: error: --model_args system='nosuch'")
