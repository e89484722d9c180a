"""A scripted MESA judge for the loopback server (shared by the MESA tests), and its own checks.

Replies depend only on the prompt: which step (Figs. 3-5), which error type (the criteria
slot), and which debate role, so tests can predict every request and every number.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tests.support.openai_server import RecordedRequest, Reply

_CRITERIA = re.compile(r"\*\*\* criteria: ([A-Za-z]+):")
STEP_MARKERS = {
    "identification": "Step 1 is to collect possible error instances.",
    "verification": "Step 2 is to rate the severity of the potential error instances.",
    "scoring": "Step 3 is to rate the summary considering the actual error instances",
}
NAME_TO_CODE = {
    "Omission": "OM",
    "Repetition": "REP",
    "Incoherence": "INC",
    "Coreference": "COR",
    "Hallucination": "HAL",
    "Language": "LAN",
    "Structure": "STR",
    "Irrelevance": "IRR",
}


def classify(prompt: str) -> tuple[str, str, str]:
    """(kind, type code, role) of a MESA request; kind is a step or a self-training call."""
    if prompt.startswith("You review an automatic evaluator"):
        return "feedback", "", "single"
    if prompt.startswith("You improve an automatic evaluator"):
        code = re.search(r"\(([A-Z]+)\):", prompt)
        return "consolidation", code.group(1) if code else "", "single"
    role = "single"
    if "--- Multi-agent discussion: challenger" in prompt:
        role = "challenger" + re.search(r"challenger (\d) of", prompt).group(1)  # type: ignore[union-attr]
    elif "--- Multi-agent discussion: moderator ---" in prompt:
        role = "synthesis"
    step = next(s for s, marker in STEP_MARKERS.items() if marker in prompt)
    match = _CRITERIA.search(prompt)
    code = NAME_TO_CODE.get(match.group(1), match.group(1)) if match else ""
    return step, code, role


@dataclass
class MesaScript:
    """Scripted replies: per type a rating and a confidence; faults per (step, type)."""

    ratings: Mapping[str, tuple[float, float]]
    broken: dict[tuple[str, str], str] = field(default_factory=dict)
    calls: list[tuple[str, str, str, str]] = field(default_factory=list)

    def reply(self, step: str, code: str) -> str:
        if (step, code) in self.broken:
            return self.broken[(step, code)]
        if step == "identification":
            return json.dumps(
                [
                    {"instance": f"{code} one", "reasoning": "maybe", "certainty": "80"},
                    {"instance": f"{code} two", "reasoning": "unsure", "certainty": 30},
                ]
            )
        if step == "verification":
            return (
                "```json\n"
                + json.dumps(
                    [
                        {
                            "instance": f"{code} one",
                            "reasoning": "yes",
                            "certainty": "90",
                            "error_exists": True,
                            "severity": 6,
                        },
                        {
                            "instance": f"{code} two",
                            "reasoning": "no",
                            "certainty": "70",
                            "error_exists": "false",
                        },
                    ]
                )
                + "\n```"
            )
        if step == "scoring":
            rating, confidence = self.ratings[code]
            return json.dumps(
                {"reasoning": f"{code} reasoning", "confidence": confidence, "rating": rating}
            )
        if step == "feedback":
            return json.dumps(
                {
                    c: {
                        "completeness": 3,
                        "overlap": None,
                        "logic": 4,
                        "difference": "major difference",
                        "feedback": f"{c} too harsh",
                    }
                    for c in self.ratings
                }
            )
        return f"- rate {code} less harshly"

    def __call__(self, request: RecordedRequest) -> Reply | str:
        messages = request.body["messages"]
        if messages[-1]["content"].startswith("Restate your final"):  # repeats itself
            step, code, role = classify(messages[-3]["content"])
            self.calls.append(("restatement", code, role, str(request.body.get("model"))))
            return str(messages[-2]["content"])
        step, code, role = classify(request.prompt)
        self.calls.append((step, code, role, str(request.body.get("model"))))
        return self.reply(step, code)


PAPER_RATINGS = {
    "OM": (4.0, 8.0),
    "REP": (1.0, 9.0),
    "INC": (2.0, 7.0),
    "COR": (0.0, 10.0),
    "HAL": (3.0, 6.0),
    "LAN": (1.0, 8.0),
    "STR": (2.0, 5.0),
    "IRR": (5.0, 9.0),
}


def make_script(**kwargs: object) -> MesaScript:
    return MesaScript(ratings=dict(PAPER_RATINGS), **kwargs)  # type: ignore[arg-type]


def test_classify_reads_step_type_and_role() -> None:
    from elitr_bench.judges.mesa.error_types import load_error_types
    from elitr_bench.judges.mesa.prompts import challenge_prompt, step_prompt

    om = load_error_types().get("OM")
    prompt = step_prompt("verification", om, summary="s", transcript="t", list_of_instances="[]")
    assert classify(prompt) == ("verification", "OM", "single")
    assert classify(challenge_prompt(prompt, "draft", 1)) == ("verification", "OM", "challenger2")


Handler = Callable[[RecordedRequest], "Reply | str"]
