"""Judge-family defaults (the papers' or said to be ours) and one budget behaviour.

ELITR-Bench's QA judge samples (0.6/0.9); the AutoMin GPT judges, CREAM and MESA print no
sampling, so they decode greedily unless the spec says otherwise; ``method=mesa`` is the
paper's MESA (MADP-S debate). ``--dry-run`` and ``--max-cost`` mean the same in ``arena``
and ``mesa``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.family import families
from elitr_bench.judges.options import GREEDY, family_defaults
from elitr_bench.judges.spec import parse_judge_spec
from tests.judges.test_mesa_script import make_script
from tests.support.minutes_judge import ARENA_AND_MESA, loopback_judge
from tests.support.openai_server import LoopbackOpenAI


@pytest.mark.parametrize(
    ("spec", "family", "expected"),
    [
        ("openai:gpt-4-0613", None, (0.6, 0.9, "qa", None, "")),
        ("hf:/m,rubric=prometheus-rubric", None, (0.6, 0.9, "qa", None, "")),
        ("openai:gpt-4o,rubric=gpt-afgr", None, (0.0, 1.0, "minutes", None, "")),
        ("openai:gpt-4o,rubric=gpt-art,filler=false", None, (0.0, 1.0, "minutes", None, "")),
        ("openai:gpt-4o,method=mesa", None, (0.0, 1.0, "mesa", "same", "mesa")),
        ("openai:gpt-4o,method=mesa,debate=none", None, (0.0, 1.0, "mesa", "none", "mesa")),
        ("openai:gpt-4o", "mesa", (0.0, 1.0, "mesa", "same", "mesa")),
        ("openai:gpt-4o,debate=same,layout=prefix", "mesa", (0.0, 1.0, "mesa", "same", "mesa")),
        ("openai:gpt-4o", "cream", (0.0, 1.0, "cream", None, "")),
        ("openai:gpt-4o,temperature=0.7", "cream", (0.7, 1.0, "cream", None, "")),
        ("openai:gpt-4o,rubric=gpt-afgr,top_p=0.5", None, (0.0, 0.5, "minutes", None, "")),
        (
            "openai:gpt-4o,method=mesa,temperature=0.7,top_p=0.95",
            None,
            (0.7, 0.95, "mesa", "same", "mesa"),
        ),
        ("openai:gpt-4o,temperature=0", None, (0.0, 0.9, "qa", None, "")),
    ],
)
def test_family_defaults_and_explicit_options_win(
    spec: str, family: str | None, expected: tuple[float, float, str, str | None, str]
) -> None:
    config = parse_judge_spec(spec, family=family)
    debate = getattr(config.options, "debate", None)  # MESA's own option, else none
    assert (config.temperature, config.top_p, config.family, debate, config.method) == expected
    # What ran is in the identity a results file records.
    sampling = config.identity()["sampling"]
    assert (sampling["temperature"], sampling["top_p"]) == expected[:2]


def test_family_defaults_leave_keyless_judges_and_bad_families_alone() -> None:
    assert parse_judge_spec("replay", family="mesa").method == ""  # not an LLM: no defaults
    with pytest.raises(JudgeConfigError, match="unknown judge family 'qa2'"):
        parse_judge_spec("openai:gpt-4o", family="qa2")
    assert {f.name for f in families()} == {"qa", "minutes", "mesa", "cream"}
    assert family_defaults("qa") == {} and family_defaults("cream") == GREEDY


def test_mesa_default_is_madp_s_and_its_plan_counts_every_debate_call(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback.handler = make_script()
    args = ["mesa", "--systems", "gpt4", "--meetings", "1", "--judge", loopback_judge(loopback)]
    assert main([*args, "--out", str(tmp_path / "dry"), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert (
        "MESA plan (MADP-S debate, the paper's MESA, 8 types x 3 steps x 5 calls = 120 per "
        "summary): 1 summaries -> 120 calls"
    ) in err
    assert "dry run: nothing was sent or written" in err
    assert loopback.requests == [] and not (tmp_path / "dry").exists()

    out = tmp_path / "run"
    assert main([*args, "--out", str(out)]) == 0
    completions = [r for r in loopback.requests if r.path.endswith("/chat/completions")]
    assert len(completions) == 120  # what the plan said
    assert {r.body["temperature"] for r in completions} == {0.0}  # greedy: no sampling given
    run = json.loads((out / "run.json").read_text())
    assert run["mesa"]["debate"] == "same" and run["plan"]["calls"] == 120
    assert run["judge"]["sampling"]["temperature"] == 0.0


def test_explicit_temperature_wins_over_the_family_default(
    loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    loopback.handler = make_script()
    judge = loopback_judge(loopback, ",debate=none,temperature=0.7")
    args = ["mesa", "--systems", "gpt4", "--meetings", "1", "--judge", judge]
    assert main([*args, "--out", str(tmp_path / "run")]) == 0
    completions = [r for r in loopback.requests if r.path.endswith("/chat/completions")]
    assert len(completions) == 24
    assert {(r.body["temperature"], r.body["top_p"]) for r in completions} == {(0.7, 1.0)}


@pytest.mark.parametrize("command", ARENA_AND_MESA)
def test_dry_run_and_max_cost_behave_alike(
    command: list[str],
    loopback: LoopbackOpenAI,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    base = [*command, "--out", str(out)]
    priced = loopback_judge(loopback, ",price=5:15")
    # --dry-run: the plan, status 0, nothing sent or written (even under a tiny budget).
    assert main([*base, "--judge", priced, "--dry-run", "--max-cost", "0"]) == 0
    captured = capsys.readouterr()
    assert "dry run: nothing was sent or written" in captured.out + captured.err
    assert loopback.requests == [] and not out.exists()
    # --max-cost below the estimate: the plan, then one error line, status 2.
    assert main([*base, "--judge", priced, "--max-cost", "0.001"]) == 2
    captured = capsys.readouterr()
    assert "calls" in captured.out + captured.err  # the plan was printed first
    [line] = [x for x in captured.err.splitlines() if x.startswith("elitr-bench: error:")]
    assert "exceeds --max-cost 0.001" in line
    # An unpriced judge under a budget is refused too: its cost could be anything.
    assert main([*base, "--judge", loopback_judge(loopback), "--max-cost", "100"]) == 2
    assert "has no known price" in capsys.readouterr().err
    assert loopback.requests == [] and not out.exists()
