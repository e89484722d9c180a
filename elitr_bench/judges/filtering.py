"""What the judge filters of every family share: logging judged responses, the exit line.

lm-eval hands each judge filter its task's responses; whatever the family, a judged
response is logged as one JSON string, and items a judge could not judge end the run
with one line saying how to finish them (``elitr-bench score``).
"""

from __future__ import annotations

import json
import math
import re
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from elitr_bench.cli_errors import exit_with_error_after_run
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.options import without_option
from elitr_bench.judges.summary.budget import budget_problem, shown_usd, spec_cap
from elitr_bench.llm.errors import CACHE_ERROR_PREFIX
from elitr_bench.llm.redact import MASK

#: A judge failure whose request the server refused as malformed (HTTP 400/422): sending
#: the same request again, as ``elitr-bench score`` with the same spec would, fails again.
_REFUSED_REQUEST = re.compile(r"\bHTTP (400|422) from\b")

#: The QA judge filter's name, the default source of an exit line.
FILTER_NAME = "elitr_judge"

#: Judge failures of this process per filter: failed and judged item counts, first
#: reason, judge spec.
_FAILURES: dict[str, dict[str, Any]] = {}


def _argv_value(names: tuple[str, ...]) -> str | None:
    """The value of a command-line option of this process (``--opt V`` or ``--opt=V``)."""
    argv = sys.argv[1:]
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def finish_hint(spec: str) -> str:
    """How to judge the items a failed judge left (names the run's ``--output_path``)."""
    logged = any(a in ("--log_samples", "-s") for a in sys.argv[1:])
    out = _argv_value(("--output_path", "-o"))
    if _argv_value(("--config", "-C")) is not None:  # options may come from a YAML file
        logged, out = True, out or "OUTPUT_PATH"
    if not logged or not out:
        return (
            "the answers were not saved because --log_samples --output_path DIR was not set; "
            "re-run with them (or with --predict_only) to keep answers when the judge fails"
        )
    if spec.split(",")[0].strip().lower() == "replay":
        # The released scores have none for these answers, now or later: asking replay
        # again would fail the same way.
        return (
            "the released judge scores have none for them, so judge them with an LLM judge "
            f"or lexical: elitr-bench score {shlex.quote(out)} --judge openai:MODEL "
            "(or --judge lexical)"
        )
    hint = f"finish with: elitr-bench score {shlex.quote(out)} --judge {shlex.quote(spec)}"
    if MASK + "@" in spec:  # concealed credentials (judges/conceal.py) cannot be copied
        hint += f" (with the real user info in place of {MASK}, or in OPENAI_BASE_URL)"
    return hint


def record_failures(
    reasons: Sequence[str],
    total: int,
    config: JudgeConfig,
    *,
    source: str = FILTER_NAME,
    judge: str = "the judge",
    items: str = "answers",
    hint: str = "",
) -> None:
    """Count the items a judge filter could not judge and arrange the one-line exit.

    Counts add up over the tasks of one process (one line per filter ``source``), so the
    line lm-eval's run ends with covers every task.

    Args:
        reasons: One reason per item judged with status ``error`` (empty: all judged).
        total: Items the filter judged this time.
        config: The judge, named in the ``elitr-bench score`` hint.
        source: The filter, one line each.
        judge: Who failed, as the line says it.
        items: What was judged (plural noun).
        hint: What to do instead of re-running the same judge (e.g. when its window is
            too small for some prompts); default: the ``elitr-bench score`` call.
    """
    counts = _FAILURES.setdefault(source, {"failed": 0, "total": 0, "first": "", "spec": ""})
    counts["total"] += total
    if not reasons:
        return
    counts["failed"] += len(reasons)
    counts["first"] = counts["first"] or reasons[0]
    counts["spec"] = config.spec or config.backend
    counts["hint"] = hint or counts.get("hint") or ""
    if not counts["hint"] and counts["first"].startswith(CACHE_ERROR_PREFIX):
        # `score` reads the same cache: it would fail alike until the file is dealt with.
        spec = config.spec or config.backend
        counts["hint"] = f"first move the cache aside (or use cache=off); then {finish_hint(spec)}"
    if not counts["hint"] and _REFUSED_REQUEST.search(counts["first"]):
        # The server refuses the request as built from the spec: the same spec fails again.
        # (A refused response_format never gets here: the client drops it and resends.)
        counts["hint"] = (
            "the judge's server refuses the requests themselves, so the same judge spec "
            "would fail the same way: fix what the message names (model, base_url or an "
            f"option of the spec), then {finish_hint('A_FIXED_JUDGE_SPEC')}"
        )
    exit_with_error_after_run(
        f"{judge} failed on {counts['failed']} of {counts['total']} {items} "
        f"({counts['first']}); results and samples are still written, with status "
        f"'error' on those items; {counts['hint'] or finish_hint(counts['spec'])}",
        source=source,
    )


#: Estimated cost (USD) of the judging this process let start: the plans of the judge
#: filters that passed their spec's ``max_cost=``, or had none.
_PLANNED: dict[str, float] = {"usd": 0.0}


def refused_by_cap(cost_usd: float | None, calls: int, config: JudgeConfig) -> str | None:
    """Why a judge filter must send nothing under its spec's ``max_cost=`` (None: go on).

    The cap is the run's, not one task's: ``lm_eval`` hands each task's responses to its
    filter in turn, so the plans of the tasks this process already judged count too, as
    ``elitr-bench score`` adds up its tasks. The rule is ``check_budget``'s
    (:func:`~elitr_bench.judges.summary.budget.budget_problem`): the first calls'
    estimate must not exceed the cap, and an unpriced judge cannot keep one. A plan let
    through is added to the run's total.

    Args:
        cost_usd: The filter's plan: estimated cost of its first calls (None: unpriced).
        calls: The plan's calls (none: nothing to pay, nothing refused).
        config: The judge; ``config.max_cost`` is the cap (None: no cap).

    Returns:
        The reason each item records (status ``error``), or None.
    """
    earlier = _PLANNED["usd"]
    total = None if cost_usd is None else earlier + cost_usd
    problem = budget_problem(total, calls, spec_cap(config.max_cost))
    if problem is None:
        _PLANNED["usd"] = earlier + (cost_usd or 0.0)
        return None
    if earlier and cost_usd is not None:
        problem += f" ({shown_usd(earlier)} of it planned by this run's earlier tasks)"
    return f"not sent: {problem}"


def cap_hint(config: JudgeConfig, priced: bool) -> str:
    """How to finish what a spec's ``max_cost=`` held back: ``score``, the spec uncapped."""
    finish = finish_hint(without_option(config.spec or config.backend, "max_cost"))
    if not finish.startswith("finish with"):  # nothing saved to finish from
        return f"{finish}, and a cap above the estimate (or none)"
    if not priced:  # a cap needs a price
        return f"{finish} (no cap: add price=IN:OUT to the spec and --max-cost USD to keep one)"
    return f"{finish} (no cap: add --max-cost USD, above the estimate, to keep one)"


def _finite(value: Any) -> Any:
    """Replace NaN and infinities (not valid JSON) by None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def judged_json(response: str, judge: dict[str, Any]) -> str:
    """One judged response as a JSON string.

    lm-eval logs filter outputs with ``str()``; a JSON string keeps the judge's raw
    output, score and status readable by any tool (``jq``, pandas), not just Python.
    """
    return json.dumps(_finite({"response": response, "judge": judge}), ensure_ascii=False)


def first_text(resp: Any) -> str:
    """A response may arrive as the raw repeats list or already reduced to a string.

    Shared by the QA and minutes judge filters and the minutes task's scoring.
    """
    while isinstance(resp, (list, tuple)):
        if not resp:
            return ""
        resp = resp[0]
    return "" if resp is None else str(resp)
