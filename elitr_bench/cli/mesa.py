"""``elitr-bench mesa`` and ``elitr-bench mesa-train`` over AutoMin 2023's released minutes.

``mesa`` assesses the chosen systems' minutes and writes ``mesa.jsonl`` (one line per
summary: ``system``, ``meeting_id``, ``quality``, ``impact``, ``types.<TYPE>.{rating,
confidence,instances}``; readable by ``elitr-bench minutes-check --metric-file``), the full
assessments with every raw reply (``mesa_details.jsonl``) and ``run.json`` (judge identity,
plan, usage). ``mesa-train`` runs one self-training iteration on feedback meetings and
writes ``guidance.yaml`` for ``mesa --guidance``. Both print calls, tokens and cost before
the first request and stop at ``--max-cost``, and stop when a prompt cannot fit the judge's
context window (unless ``overlength=skip|truncate_middle``); every call is cached before
use, so a killed run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from elitr_bench.cli.budget import add_budget_flags, comma_list
from elitr_bench.data.folder import FolderLock, write_atomic
from elitr_bench.judges.errors import JudgeConfigError
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.options import with_options
from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.judges.summary.base import MinutesAssessment, MinutesItem
from elitr_bench.judges.usage import usage_line

if TYPE_CHECKING:
    from elitr_bench.judges.mesa.method import MesaMethod
    from elitr_bench.judges.mesa.plan import Plan
    from elitr_bench.llm.client import JudgeClient

RESULTS_FILE = "mesa.jsonl"
DETAILS_FILE = "mesa_details.jsonl"


def mesa_config(
    spec: str, error_types: str | None = None, guidance: str | None = None
) -> JudgeConfig:
    """The judge config of a ``--judge`` spec with ``method=mesa`` and CLI file overrides.

    The spec gets the MESA family's defaults (``judges/mesa/options.py`` registers them):
    ``method=mesa`` is implied, so MESA options such as ``debate=`` need no ``method=``.

    Raises:
        JudgeConfigError: Bad spec, a different method, or a bad file.
    """
    config = parse_judge_spec(spec, family="mesa")  # method=mesa, MADP-S, greedy
    if config.method and config.method != "mesa":
        raise JudgeConfigError(
            f"--judge {config.spec!r} selects method={config.method}; drop it (MESA is implied)"
        )
    changes: dict[str, Any] = {"method": "mesa"}
    if error_types is not None:
        changes["error_types"] = error_types
    if guidance is not None:
        changes["guidance"] = guidance
    return with_options(config, **changes)


def result_line(assessment: MinutesAssessment, codes: Sequence[str]) -> dict[str, Any]:
    """The ``mesa.jsonl`` record of one summary (None = unscored, never a number)."""
    details = assessment.details
    types = details.get("types", {})
    return {
        "system": assessment.system,
        "meeting_id": assessment.meeting_id,
        "quality": assessment.scores.get("mesa_quality"),
        "impact": details.get("impact"),
        "status": assessment.status,
        "reason": assessment.reason,
        "types": {
            code: {
                "rating": types.get(code, {}).get("rating"),
                "confidence": types.get(code, {}).get("confidence"),
                "instances": types.get(code, {}).get("instances"),
            }
            for code in codes
        },
    }


def _systems(raw: str | None) -> list[str] | None:
    """``--systems``: None (all) when absent, empty or ``all``, else the named systems."""
    if raw is not None and raw.strip().lower() in ("", "all"):
        return None
    return comma_list(raw)


def _preflight(config: JudgeConfig, pool: Sequence[JudgeConfig], plan: Plan, dry_run: bool) -> None:
    """Check the judge before the first paid call, after the plan and ``--max-cost``.

    Key, package and URL are checked offline; then one minimal request proves the
    endpoint, key and model (a dead endpoint would otherwise retry every call and write
    empty results); the same for each debate pool member. Skipped with ``--dry-run``
    (nothing is sent) and when the plan counts no call (the cache answers every
    assessment).

    Raises:
        JudgeNotReadyError: One line naming what is wrong and the fix.
    """
    from elitr_bench.judges.readiness import KEYLESS_JUDGE, check_judge_ready

    if dry_run:
        return
    for judge in (config, *pool):
        check_judge_ready(
            judge, network=plan.calls > 0, command="elitr-bench", alternative=KEYLESS_JUDGE
        )


def _plan_and_check(
    args: argparse.Namespace,
    config: JudgeConfig,
    method: MesaMethod,
    client: JudgeClient,
    items: Sequence[MinutesItem],
    *,
    extra_calls: int = 0,
    extra_prompt_chars: int = 0,
) -> Plan | None:
    """Plan the calls, print the plan, honour ``--max-cost``, then preflight the judge.

    ``mesa`` and ``mesa-train`` do this identically before their first paid call. The
    client is closed when the command stops here (an error, or ``--dry-run``).

    Returns:
        The plan, or None when the command stops here (``--dry-run``).
    """
    from elitr_bench.judges.aio import run_coroutine
    from elitr_bench.judges.mesa.plan import check_budget, make_plan
    from elitr_bench.judges.summary.budget import spending_cap

    try:
        plan = make_plan(
            items,
            method,
            config,
            extra_calls=extra_calls,
            extra_prompt_chars=extra_prompt_chars,
            client=client,
        )
        batch = config.batch and plan.cost_usd is not None
        priced = f"{config.model} at the batch price" if batch else config.model
        print(plan.line(priced), file=sys.stderr, flush=True)
        if not args.dry_run:
            check_budget(plan, spending_cap(args.max_cost, config.max_cost))
        _preflight(config, method.options.pool, plan, args.dry_run)
    except BaseException:
        run_coroutine(client.aclose)
        raise
    if args.dry_run:
        run_coroutine(client.aclose)
        print("dry run: nothing was sent or written", file=sys.stderr)
        return None
    return plan


def _check_context(method: MesaMethod, config: JudgeConfig, items: Sequence[MinutesItem]) -> None:
    """Stop before any call when a summary's prompts cannot fit the judge's window.

    With ``overlength=skip`` or ``truncate_middle`` the method handles such summaries
    itself; the debate pool's members are checked too (each has its own window).

    Raises:
        ContextWindowError: One line naming the meetings, their tokens and the way out.
    """
    from elitr_bench.judges.mesa.fit import check_all, window_budget
    from elitr_bench.llm.context_window import judge_window

    pairs = [(i.meeting_id, i.transcript, i.minutes) for i in items]
    policy = method.options.overlength
    budget = method.budget()
    check_all(pairs, budget, policy, method.window, config)
    for member in method.options.pool:
        window = judge_window(member)
        mine = window_budget(window, member.max_tokens, True, budget.extra_chars)
        check_all(pairs, mine, policy, window, member)


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """The whole file in one rename: never a file cut by a full disk or a kill."""
    write_atomic(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def _close(method: MesaMethod, client: JudgeClient) -> None:
    """Close what a run that stops before judging opened (the judge's connections)."""
    from elitr_bench.judges.aio import run_coroutine

    async def close() -> None:
        await method.aclose()
        await client.aclose()

    run_coroutine(close)


@contextlib.contextmanager
def _one_writer(out: Path, wait: bool, method: MesaMethod, client: JudgeClient) -> Iterator[None]:
    """Hold the folder's lock while the body writes (one run writes a MESA folder).

    When the lock cannot be had, the method and client opened for the run are closed
    before the refusal goes up.
    """
    lock = FolderLock(out, wait=wait)
    try:
        lock.acquire()
    except BaseException:
        _close(method, client)
        raise
    try:
        yield
    finally:
        lock.release()


def _cmd_mesa(args: argparse.Namespace) -> int:
    from elitr_bench.data.minutes import AUTOMIN_MEETINGS, select_meetings
    from elitr_bench.judges.mesa.automin import automin_items
    from elitr_bench.judges.mesa.method import MesaMethod
    from elitr_bench.judges.mesa.options import DEFAULT_MESA_JUDGE
    from elitr_bench.judges.spec import resolve_judge_spec
    from elitr_bench.judges.summary.run import make_client

    config = mesa_config(
        resolve_judge_spec(args.judge, default=DEFAULT_MESA_JUDGE), args.error_types, args.guidance
    )
    method = MesaMethod(config)
    guidance = method.options.guidance
    meetings = select_meetings(args.meetings, AUTOMIN_MEETINGS)
    if guidance is not None:
        if args.meetings is None:
            kept = [m for m in meetings if m not in guidance.feedback_meetings]
            if len(kept) < len(meetings):
                print(
                    f"MESA: leaving out the guidance's feedback meeting(s) "
                    f"{', '.join(sorted(set(meetings) - set(kept)))}",
                    file=sys.stderr,
                )
            meetings = kept
        guidance.check_disjoint(meetings)
    items = automin_items(_systems(args.systems), meetings)
    _check_context(method, config, items)
    client = make_client(config)
    plan = _plan_and_check(args, config, method, client, items)
    if plan is None:
        return 0
    out = Path(args.out)
    with _one_writer(out, args.wait, method, client):
        return _assess_and_write(args, config, method, client, items, plan, meetings, out)


def _assess_and_write(
    args: argparse.Namespace,
    config: JudgeConfig,
    method: MesaMethod,
    client: JudgeClient,
    items: Sequence[MinutesItem],
    plan: Plan,
    meetings: Sequence[str],
    out: Path,
) -> int:
    """Judge and write the output files (the caller holds the folder's lock)."""
    from elitr_bench.judges.aio import run_coroutine
    from elitr_bench.judges.summary.run import assess_items_run

    async def run() -> Any:
        try:
            return await assess_items_run(items, config, client, method=method, desc="MESA")
        finally:
            await method.aclose()
            await client.aclose()

    if config.batch:  # through the endpoint's Batch API, submitted and waited for
        from elitr_bench.judges.batching import BatchPlan
        from elitr_bench.judges.summary.batching import assess_in_batches

        run_coroutine(client.aclose)  # the plan's client; the batches' clients are their own
        try:
            result = assess_in_batches([("MESA", items)], config, method, BatchPlan()).runs[0]
        finally:
            run_coroutine(method.aclose)
    else:
        result = run_coroutine(run)
    codes = method.types.codes
    _write_jsonl(out / RESULTS_FILE, [result_line(a, codes) for a in result.assessments])
    _write_jsonl(out / DETAILS_FILE, [a.to_dict() for a in result.assessments])
    run_info = {
        "judge": result.identity,
        "mesa": method.identity(),
        "plan": plan.to_dict(),
        "usage": result.usage,
        "pool_usage": method.pool_usage(),
        "summary": result.summary,
        "elapsed_s": round(result.elapsed_s, 3),
        "systems": sorted({i.system for i in items}),
        "meetings": list(meetings),
    }
    write_atomic(out / "run.json", json.dumps(run_info, indent=2) + "\n")
    _print_summary(result.assessments, result.usage, out)
    if result.errors:
        print(
            f"MESA: {result.errors} summaries failed (reasons in {DETAILS_FILE}); finished "
            "calls are cached, re-run the same command to resume",
            file=sys.stderr,
        )
        return 1
    return 0


def _print_summary(
    assessments: Sequence[MinutesAssessment], usage: dict[str, Any], out: Path
) -> None:
    by_system: dict[str, list[float]] = {}
    for a in assessments:
        q = a.scores.get("mesa_quality")
        by_system.setdefault(a.system, [])
        if q is not None:
            by_system[a.system].append(q)
    print(f"{'system':<12} {'scored':>6} {'quality':>8}")
    for system, values in sorted(by_system.items()):
        mean = f"{statistics.fmean(values):8.2f}" if values else f"{'-':>8}"
        print(f"{system:<12} {len(values):>6} {mean}")
    statuses = {s: sum(a.status == s for a in assessments) for s in ("ok", "partial")}
    print(
        f"{usage_line(usage)}; tokens {usage.get('prompt_tokens', 0)}+"
        f"{usage.get('completion_tokens', 0)}, "
        f"cost ${usage.get('estimated_cost_usd', 0.0)}; ok {statuses['ok']}, partial "
        f"{statuses['partial']}, of {len(assessments)}; wrote {out / RESULTS_FILE}"
    )


def _cmd_train(args: argparse.Namespace) -> int:
    from elitr_bench.data.minutes import AUTOMIN_MEETINGS, select_meetings
    from elitr_bench.judges.aio import run_coroutine
    from elitr_bench.judges.mesa.method import MesaMethod
    from elitr_bench.judges.mesa.options import DEFAULT_MESA_JUDGE
    from elitr_bench.judges.mesa.selftrain import automin_feedback_samples, split_meetings, train
    from elitr_bench.judges.spec import resolve_judge_spec
    from elitr_bench.judges.summary.run import make_client

    config = mesa_config(
        resolve_judge_spec(args.judge, default=DEFAULT_MESA_JUDGE), args.error_types, args.guidance
    )
    method = MesaMethod(config)
    feedback_meetings, evaluate = split_meetings(
        AUTOMIN_MEETINGS, select_meetings(args.feedback_meetings, AUTOMIN_MEETINGS)
    )
    samples = automin_feedback_samples(feedback_meetings, _systems(args.systems))
    if not samples:
        raise JudgeConfigError(
            f"meetings {', '.join(feedback_meetings)} have no human scores (AutoMin 2023 "
            "judged neither 001, 008 nor 012); pick others with --feedback-meetings"
        )
    items = [s.item for s in samples]
    _check_context(method, config, items)
    extra_chars = sum(len(i.transcript) + len(i.minutes) + 4000 for i in items)
    extra_chars += len(method.types) * 500 * len(items)
    client = make_client(config)
    plan = _plan_and_check(
        args,
        config,
        method,
        client,
        items,
        extra_calls=len(items) + len(method.types),
        extra_prompt_chars=extra_chars,
    )
    if plan is None:
        return 0

    async def run() -> Any:
        try:
            return await train(
                samples,
                method,
                client,
                meta={"judge": config.identity(), "mesa": method.identity()},
            )
        finally:
            await method.aclose()
            await client.aclose()

    out = Path(args.out)
    with _one_writer(out, args.wait, method, client):
        result = run_coroutine(run)
        path = result.guidance.save(out / "guidance.yaml")
        _write_jsonl(out / "feedback.jsonl", result.feedback)
        _write_jsonl(out / DETAILS_FILE, [a.to_dict() for a in result.assessments])
    print(
        f"wrote {path} (feedback meetings {', '.join(feedback_meetings)}); review it, then: "
        f"elitr-bench mesa --guidance {path} --judge ... (evaluates {len(evaluate)} other "
        "meetings)"
    )
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--judge",
        default=None,
        help="judge spec, e.g. openai:gpt-4o (the paper's MESA: MADP-S debate, greedy), "
        "openai:gpt-4o,debate=none (Single-n, 1/5 of the calls) or "
        "openai:gpt-4o,debate=same,layout=prefix (method=mesa implied; default "
        "$ELITR_JUDGE or openai:gpt-4o, the paper's model)",
    )
    parser.add_argument(
        "--systems",
        default=None,
        help="comma-separated AutoMin systems (default: all 9, annot = human reference)",
    )
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument(
        "--wait",
        action="store_true",
        help="if another run is writing the --out folder, wait for it to finish (default: "
        "refuse, naming that run)",
    )
    add_budget_flags(parser, "calls, tokens, cost")
    parser.add_argument(
        "--error-types", default=None, help="error-type YAML file (default: the paper's)"
    )
    parser.add_argument(
        "--guidance", default=None, help="self-training guidance file (from mesa-train)"
    )


def register(subparsers: Any) -> None:
    """Add ``mesa`` and ``mesa-train`` to the ``elitr-bench`` CLI."""
    mesa = subparsers.add_parser(
        "mesa",
        help="MESA error-type assessment of AutoMin 2023's minutes",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    _common(mesa)
    mesa.add_argument(
        "--meetings",
        default=None,
        help="N (first N), ids or 1-based indices, comma-separated (default: all 12, minus "
        "the guidance's feedback meetings)",
    )
    mesa.set_defaults(handler=_cmd_mesa)

    trainer = subparsers.add_parser(
        "mesa-train",
        help="MESA self-training on human-scored meetings",
    )
    _common(trainer)
    trainer.add_argument(
        "--feedback-meetings",
        required=True,
        help="meetings whose human scores give the feedback (N, ids or indices); they are "
        "then excluded from evaluation",
    )
    trainer.set_defaults(handler=_cmd_train)
