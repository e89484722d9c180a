"""MESA against the scripted loopback judge.

Exact prompts, call order and count, Eq. 1-2, unscored types, cache re-runs, debate
(MADP-S/M), prompt layouts and over-long transcripts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest

from elitr_bench.judges.aio import run_coroutine
from elitr_bench.judges.mesa.error_types import load_error_types
from elitr_bench.judges.mesa.fit import check_all
from elitr_bench.judges.mesa.prompts import challenge_prompt, step_prompt, synthesis_prompt
from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.judges.summary.base import MinutesAssessment, MinutesItem
from elitr_bench.judges.summary.registry import get_method
from elitr_bench.judges.summary.run import assess_items_run
from elitr_bench.llm.context_window import ContextWindowError
from elitr_bench.middle_cut import ELISION
from tests.judges.test_mesa_script import PAPER_RATINGS, MesaScript, classify, make_script
from tests.support.openai_server import LoopbackOpenAI

TYPES = load_error_types()
ITEM = MinutesItem("meeting_a", "sys1", "ALICE: we ship on Friday.\nBOB: agreed.", "- Ship Friday.")
STEP_ORDER = ["identification", "verification", "scoring"]
# Sec. 2.5 weights, written out here on purpose (not read from the code under test).
WEIGHTS = {"OM": 1.1, "REP": 0.9, "INC": 0.9, "COR": 1.0, "HAL": 1.1, "LAN": 0.9}
WEIGHTS |= {"STR": 1.0, "IRR": 1.1}


def run(
    server: LoopbackOpenAI, items: Sequence[MinutesItem], options: str = ""
) -> list[MinutesAssessment]:
    config = parse_judge_spec(
        f"openai:m1,method=mesa,debate=none,base_url={server.base_url},progress=false{options}"
    )
    method = get_method(config)

    async def go() -> Any:
        try:
            return await assess_items_run(items, config, method=method, progress=False)
        finally:
            await method.aclose()  # type: ignore[attr-defined]

    return list(run_coroutine(go).assessments)


def eq12(ratings: dict[str, tuple[float, float]]) -> float:
    num = sum(s * (c / 10) * WEIGHTS[k] for k, (s, c) in ratings.items())
    den = sum((c / 10) * WEIGHTS[k] for k, (s, c) in ratings.items())
    return 1 + (5 - num / den) / 5 * 9


def test_single_prompts_order_count_and_quality(loopback: LoopbackOpenAI) -> None:
    script = make_script()
    loopback.handler = script
    (result,) = run(loopback, [ITEM])

    assert len(loopback.requests) == 24  # 8 types x 3 steps
    for code in TYPES.codes:
        steps = [s for s, c, r, _ in script.calls if c == code]
        assert steps == STEP_ORDER, code
    # Exact prompts of OM's three steps, with the instances of the scripted replies.
    om = TYPES.get("OM")
    prompts = {
        classify(r.prompt)[0]: r.prompt for r in loopback.requests if "Omission:" in r.prompt
    }
    both = {"summary": ITEM.minutes, "transcript": ITEM.transcript}
    assert prompts["identification"] == step_prompt("identification", om, **both)
    found = [
        {"instance": "OM one", "reasoning": "maybe", "certainty": 80.0},
        {"instance": "OM two", "reasoning": "unsure", "certainty": 30.0},
    ]
    assert prompts["verification"] == step_prompt(
        "verification", om, list_of_instances=json.dumps(found), **both
    )
    checked = [
        {"instance": "OM one", "reasoning": "yes", "certainty": 90.0, "error_exists": True,
         "severity": 6.0},
        {"instance": "OM two", "reasoning": "no", "certainty": 70.0, "error_exists": False},
    ]  # fmt: skip
    assert prompts["scoring"] == step_prompt(
        "scoring", om, list_of_instances=json.dumps(checked), **both
    )
    # Eq. 1-2 from the scripted ratings: (14.24 / 6.19) by hand.
    assert result.status == "ok"
    assert result.details["impact"] == pytest.approx(14.24 / 6.19, abs=1e-9)
    assert result.scores["mesa_quality"] == pytest.approx(eq12(dict(PAPER_RATINGS)), abs=1e-9)
    assert result.scores["mesa_quality"] == pytest.approx(1 + (5 - 14.24 / 6.19) * 9 / 5)
    assert {c: result.scores[f"mesa_{c}"] for c in TYPES.codes} == {
        c: r for c, (r, _) in PAPER_RATINGS.items()
    }
    assert result.details["types"]["IRR"]["instances"] == 1
    assert result.details["types"]["IRR"]["candidates"] == 2

    # Same run again: everything comes from the cache.
    loopback.reset()
    (again,) = run(loopback, [ITEM])
    assert len(loopback.requests) == 0
    assert again.scores == result.scores


def test_unscored_types_are_named_and_left_out_of_eq1(loopback: LoopbackOpenAI) -> None:
    script = make_script(
        broken={
            ("scoring", "HAL"): "The summary is mostly faithful; I would say 3.",
            ("identification", "LAN"): '[{"instance": "x", "reasoning": "r", "certainty": 250}]',
            ("verification", "STR"): '[{"instance": "x", "reasoning": "r", "certainty": 5',
        }
    )
    loopback.handler = script
    (result,) = run(loopback, [ITEM])  # greedy (MESA's default): broken lists are not re-asked

    assert result.status == "partial"
    for code in ("HAL", "LAN", "STR"):
        assert result.scores[f"mesa_{code}"] is None and code in result.reason
    assert "outside [0, 100]" in result.reason and "no JSON" in result.reason
    assert result.details["unscored_types"] == ["HAL", "LAN", "STR"]  # file order
    kept = {k: v for k, v in PAPER_RATINGS.items() if k not in ("HAL", "LAN", "STR")}
    assert result.scores["mesa_quality"] == pytest.approx(eq12(kept), abs=1e-9)
    # LAN stops after step 1, STR after step 2 (a greedy judge would repeat itself), HAL
    # after step 3, whose prose is asked once to restate (and the script repeats itself).
    assert [s for s, c, _, _ in script.calls if c == "LAN"] == ["identification"]
    assert [s for s, c, _, _ in script.calls if c == "STR"] == ["identification", "verification"]
    assert [s for s, c, _, _ in script.calls if c == "HAL"][-2:] == ["scoring", "restatement"]
    assert len(loopback.requests) == 5 * 3 + 1 + 2 + 3 + 1
    raw = result.details["types"]["HAL"]["steps"]["scoring"][0]["raw"]
    assert raw.startswith("The summary is mostly faithful")  # nothing lost


def _roles_in_order(script: MesaScript, code: str, step: str) -> list[str]:
    return [r for s, c, r, _ in script.calls if c == code and s == step]


def test_debate_same_model_order_count_and_prompts(loopback: LoopbackOpenAI) -> None:
    script = make_script()
    loopback.handler = script
    (result,) = run(loopback, [ITEM], ",debate=same")

    assert len(loopback.requests) == 8 * 3 * 5  # draft + 3 challengers + synthesis per step
    for code in TYPES.codes:
        assert [s for s, c, _, _ in script.calls if c == code] == [
            step for step in STEP_ORDER for _ in range(5)
        ]
        for step in STEP_ORDER:
            roles = _roles_in_order(script, code, step)
            assert roles[0] == "single" and roles[-1] == "synthesis"  # draft first, then ...
            assert sorted(roles[1:4]) == ["challenger1", "challenger2", "challenger3"]
    # Exact debate prompts of OM's first step.
    om = TYPES.get("OM")
    base = step_prompt("identification", om, summary=ITEM.minutes, transcript=ITEM.transcript)
    draft = script.reply("identification", "OM")
    sent = {r.prompt for r in loopback.requests}
    challenges = [challenge_prompt(base, draft, i, 3) for i in range(3)]
    assert set(challenges) <= sent and base in sent
    assert synthesis_prompt(base, draft, [draft] * 3) in sent
    assert result.scores["mesa_quality"] == pytest.approx(eq12(dict(PAPER_RATINGS)), abs=1e-9)
    assert {m for *_, m in script.calls} == {"m1"}


def test_debate_mixed_pool_sends_challengers_to_pool_models(loopback: LoopbackOpenAI) -> None:
    script = make_script()
    loopback.handler = script
    url = loopback.base_url
    pool = f",debate=mixed,pool=openai:pa;base_url={url}|openai:pb;base_url={url}"
    (result,) = run(loopback, [ITEM], pool)

    assert len(loopback.requests) == 120
    models = {(role, m) for _, _, role, m in script.calls}
    assert models == {
        ("single", "m1"),
        ("synthesis", "m1"),
        ("challenger1", "pa"),
        ("challenger2", "pb"),
        ("challenger3", "pa"),
    }
    assert result.status == "ok"


def test_prefix_layout_puts_transcript_first(loopback: LoopbackOpenAI) -> None:
    loopback.handler = make_script()
    other = MinutesItem(ITEM.meeting_id, "sys2", ITEM.transcript, "- Ship Monday.")
    run(loopback, [ITEM, other], ",layout=prefix")
    head = f"Consider the original meeting transcript: * {ITEM.transcript} *.\n"
    assert len(loopback.requests) == 48
    assert all(r.prompt.startswith(head) for r in loopback.requests)
    assert (
        sum(
            r.prompt.startswith(head + "Next, read the summary: ** - Ship Monday. **")
            for r in loopback.requests
        )
        == 24
    )


def test_overlength_error_skip_and_truncate(loopback: LoopbackOpenAI) -> None:
    long_item = MinutesItem(
        "meeting_long",
        "sys1",
        "\n".join(f"SPK{i % 3}: line {i} " + "word " * 20 for i in range(400)),
        "- x",
    )
    config = parse_judge_spec("openai:m1,method=mesa,context=12000,max_tokens=512")
    method = get_method(config)
    with pytest.raises(ContextWindowError) as err:
        check_all(
            [(long_item.meeting_id, long_item.transcript, long_item.minutes)],
            method.budget(),  # type: ignore[attr-defined]
            "error",
            method.window,  # type: ignore[attr-defined]
            config,
        )
    # m1 is no model we know: counted as an estimate, and the line says so.
    assert re.search(r"meeting_long \([\d,]+ tokens\)", str(err.value))
    assert "overlength=skip" in str(err.value) and "12,000-token window" in str(err.value)
    assert "counted as a bound" in str(err.value) and "\n" not in str(err.value)

    loopback.handler = make_script()
    (skipped,) = run(loopback, [long_item], ",context=12000,max_tokens=512,overlength=skip")
    assert skipped.status == "skipped" and "12,000" in skipped.reason
    assert len(loopback.requests) == 0

    second = MinutesItem(long_item.meeting_id, "sys2", long_item.transcript, "- y")
    opts = ",context=12000,max_tokens=512,overlength=truncate_middle"
    done = run(loopback, [long_item, second], opts)
    assert [a.status for a in done] == ["ok", "ok"]
    assert done[0].details["transcript"]["action"] == "truncated"
    cut = {r.prompt.split("Also, consider the original meeting transcript: * ")[1].split(" *.\n")[0]
           for r in loopback.requests if "Step 1 is" in r.prompt}  # fmt: skip
    assert len(cut) == 1  # both summaries of the meeting see the same cut transcript
    (text,) = cut
    assert ELISION in text and text.startswith("SPK0: line 0 ") and text.endswith("word ")
    assert len(text) < len(long_item.transcript)


def test_error_types_are_assessed_concurrently(loopback: LoopbackOpenAI) -> None:
    import threading

    script = make_script()
    all_in = threading.Event()
    arrived: list[str] = []
    waited: list[bool] = []
    lock = threading.Lock()

    def handler(request: Any) -> Any:
        step, code, _ = classify(request.prompt)
        if step == "identification":
            with lock:
                arrived.append(code)
                if len(arrived) == len(TYPES):
                    all_in.set()
            waited.append(all_in.wait(5))  # held until every type's first step is in flight
        return script(request)

    loopback.handler = handler
    (result,) = run(loopback, [ITEM])
    assert sorted(arrived) == sorted(TYPES.codes) and all(waited)
    assert result.status == "ok"
