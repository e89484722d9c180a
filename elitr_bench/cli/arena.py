"""``elitr-bench arena``: a CREAM leaderboard of minutes from lm-eval runs and/or AutoMin 2023.

Every lm-eval output folder of a minutes task is one system (named by model and settings,
or ``NAME=PATH``); ``--automin`` adds the released AutoMin 2023 systems. The command prints
the number of judge calls and their estimated cost before asking anything, stops above
``--max-cost``, then runs the comparisons concurrently through the shared judge client.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from elitr_bench.cli.budget import add_budget_flags, comma_list
from elitr_bench.data.folder import FolderLock, remove_leftovers
from elitr_bench.judges.cream.arena import (
    ARENA_FILE,
    MINUTES_FILE,
    ArenaError,
    ArenaPlan,
    ArenaState,
    SystemMinutes,
    compare_in_batches,
    context_check,
    load_state,
    merge,
    needs_requests,
    pending,
    plan,
    run_comparisons,
    save_meta,
)
from elitr_bench.judges.cream.compare import CreamJudge, cream_identity
from elitr_bench.judges.cream.matches import DEFAULT_TOLERANCE
from elitr_bench.judges.cream.prompts import DEFAULT_MAX_KEY_FACTS
from elitr_bench.judges.cream.ratings import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_INITIAL,
    DEFAULT_K,
    DEFAULT_ORDERS,
    DEFAULT_SCALE,
    EloParams,
)
from elitr_bench.judges.cream.scoring import Comparison
from elitr_bench.judges.cream.segment import DEFAULT_UNIT, UNITS
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.readiness import KEYLESS_JUDGE, check_judge_ready
from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.judges.summary.budget import check_budget, spending_cap
from elitr_bench.judges.usage import usage_line

DEFAULT_CREAM_JUDGE = "openai:gpt-4o-2024-05-13"
"""The paper's CREAM evaluator (Sec. 3.1 "gpt-4o-2024-05-13"; Sec. 4.1.2 "GPT-4o as
evaluator model")."""


def _run_entrant(arg: str) -> SystemMinutes:
    """One positional input: ``PATH`` or ``NAME=PATH`` of an lm-eval minutes run."""
    from elitr_bench.data.minutes import load_run_minutes

    name = ""
    path = arg
    if "=" in arg and not Path(arg).exists():
        name, _, path = arg.partition("=")
    run = load_run_minutes(path)
    texts: dict[str, str] = {}
    for minutes in run.minutes:
        texts[minutes.meeting_id] = minutes.text
    return SystemMinutes(name.strip() or run.name, texts, str(path), tuple(sorted(run.tasks)))


def _automin_entrants(systems: list[str] | None) -> list[SystemMinutes]:
    from elitr_bench.data.minutes import load_automin_minutes

    texts: dict[str, dict[str, str]] = defaultdict(dict)
    for minutes in load_automin_minutes(systems):
        texts[minutes.system][minutes.meeting_id] = minutes.text
    return [SystemMinutes(s, t, "automin") for s, t in texts.items()]


def _judge_config(spec: str | None) -> JudgeConfig:
    # CREAM prints no sampling: its family decodes greedily unless the spec says otherwise.
    config = parse_judge_spec(spec or DEFAULT_CREAM_JUDGE, family="cream")
    if not config.is_llm:
        raise ArenaError(
            f"--judge {config.spec}: CREAM needs an LLM judge (openai:<model> or hf:<model>)"
        )
    return config


def arena_command(args: argparse.Namespace) -> int:
    """Handler of ``elitr-bench arena``.

    One run writes an arena folder at a time (:class:`~elitr_bench.data.folder.FolderLock`):
    the state is read after the lock is taken and every file is written before it is
    released, so two runs adding systems to one folder keep both (the second waits with
    ``--wait``, or refuses in one line naming the first).
    """
    if args.systems and not args.automin:
        raise ArenaError("--systems picks AutoMin systems; add --automin (runs enter whole)")
    if not args.runs and not args.automin and not (Path(args.out) / "arena.json").exists():
        raise ArenaError(
            "arena: nothing to compare; pass lm-eval output folders of a minutes task, "
            "--automin, or --out of an existing arena"
        )
    if args.key_facts < 1:
        raise ArenaError(f"--key-facts {args.key_facts}: must be at least 1 (the paper: 16, 30)")
    config = _judge_config(args.judge)
    out = Path(args.out)
    entrants = [_run_entrant(arg) for arg in args.runs]
    names = [e.system for e in entrants]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ArenaError(f"two runs are both named {clash[0]!r}; name them apart with NAME=PATH")
    if args.automin:
        entrants += _automin_entrants(comma_list(args.systems))
    if args.dry_run:  # reads only: no lock, so a plan can be printed beside a running arena
        return _arena(args, config, out, entrants)
    with FolderLock(out, wait=args.wait):
        for leftover in [*remove_leftovers(out), *_remove_legacy_temp(out)]:
            print(f"removed {leftover.name}, left by a run that was stopped while writing")
        return _arena(args, config, out, entrants)


def _remove_legacy_temp(out: Path) -> list[Path]:
    """The fixed temp names of earlier versions (``arena.json.tmp``), if a kill left them."""
    removed = []
    for name in (ARENA_FILE + ".tmp", MINUTES_FILE + ".tmp"):
        path = out / name
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


def _arena(
    args: argparse.Namespace, config: JudgeConfig, out: Path, entrants: list[SystemMinutes]
) -> int:
    """The arena run proper: state read, judged and written under the folder's lock."""
    from elitr_bench.data.minutes import AUTOMIN_MEETINGS, select_meetings
    from elitr_bench.judges.aio import run_coroutine
    from elitr_bench.judges.summary.run import make_client, usage_of

    state = load_state(out)
    meetings = None
    if args.meetings is not None:
        available = sorted({m for e in entrants for m in e.minutes}) or list(AUTOMIN_MEETINGS)
        meetings = select_meetings(args.meetings, state.meetings or available)
    identity = cream_identity(config, args.key_facts, args.unit)
    state = merge(state, entrants, meetings, identity, out)
    todo = pending(state)
    p = plan(state, todo, config)
    _print_plan(out, state, p, config)
    context_check(state, todo, config)  # before --dry-run, --max-cost and any request
    if args.dry_run:
        print("dry run: nothing was sent or written")
        return 0
    check_budget(p.cost_usd, p.calls, spending_cap(args.max_cost, config.max_cost))
    usage: dict[str, Any] = {}
    failed = 0
    if todo:
        check_judge_ready(config, command="elitr-bench", alternative=KEYLESS_JUDGE)
        client = make_client(config)
        judge = CreamJudge(config, client, args.key_facts, args.unit)
        try:
            # One minimal request proves key, URL and model before the comparisons pay
            # (a dead endpoint would otherwise retry every call, then write empty
            # results); skipped when the cache answers every pending call.
            if run_coroutine(lambda: needs_requests(state, todo, judge)):
                check_judge_ready(
                    config, network=True, command="elitr-bench", alternative=KEYLESS_JUDGE
                )
        except BaseException:
            run_coroutine(client.aclose)
            raise
    save_meta(state, out)  # the arena's systems and minutes, before anything is paid
    if todo:
        progress = config.progress and not args.quiet

        async def go() -> list[Comparison]:
            try:
                return await run_comparisons(state, todo, judge, out, progress=progress)
            finally:
                await client.aclose()

        if config.batch:  # through the endpoint's Batch API, submitted and waited for
            run_coroutine(client.aclose)  # the preflight's; the batches' client is its own
            done, client = compare_in_batches(state, todo, judge, out, progress)
        else:
            done = run_coroutine(go)
        failed = sum(c.status == "error" for c in done)
        usage = usage_of(config, client)
        print(f"{usage_line(usage)}, estimated cost ${usage.get('estimated_cost_usd', 0):.4f}")
    return _write_report(args, state, out, usage, failed)


def _print_plan(out: Path, state: ArenaState, p: ArenaPlan, config: JudgeConfig) -> None:
    """The arena's size, what is already judged, and the calls and cost still to come."""
    n = len(state.systems)
    print(
        f"arena {out}: {n} systems x {len(state.meetings)} meetings, {n * (n - 1) // 2} pairs; "
        f"{p.done} comparisons already judged, {p.comparisons} to judge (both orders)"
    )
    cost = "unknown (no price for this model; set price=IN:OUT)"
    if p.cost_usd is not None:
        cost = f"${p.cost_usd:.2f} at most" + (" at the batch price" if config.batch else "")
    print(
        f"judge calls: {p.calls} ({p.comparisons} comparisons x 3: key-fact extraction and "
        f"one alignment per summary; up to {p.max_calls} with re-asks and "
        f"{p.restated_max} restatements); judge {config.model}; "
        f"estimated cost {cost} (cached calls are free)"
    )


def _write_report(
    args: argparse.Namespace, state: ArenaState, out: Path, usage: dict[str, Any], failed: int
) -> int:
    """Ratings and tables of every judged comparison; 1 when none rated or some failed."""
    from elitr_bench.judges.cream.report import analyse, write_outputs

    params = EloParams(args.elo_initial, args.elo_k, args.elo_scale)
    result = analyse(state, args.tolerance, params, args.orders, args.bootstrap, args.seed)
    paths = write_outputs(result, out, usage)
    if not args.quiet:
        print(paths["leaderboard_md"].read_text("utf-8"))
    unscored = [c for c in result.comparisons if c.status not in ("ok", "error")]
    if unscored:
        print(f"{len(unscored)} comparisons (partly) unscored; reasons in {paths['keyfacts_md']}")
    print(f"wrote {', '.join(p.name for p in paths.values())} to {out}")
    if not result.ratings:
        # Nothing was scored: ratings would be the initial value for every system, which
        # reads like a tie. No ratings are written; one line says why.
        hint = (
            f"{failed} comparisons failed (judge errors); re-run the same command to resume "
            "(finished calls come from the cache)"
            if failed
            else f"every comparison and its reason is in {paths['keyfacts_md']}"
        )
        print(f"elitr-bench: no ratings written: {result.no_ratings_reason(hint)}", file=sys.stderr)
        return 1
    for metric, why in result.unrated.items():
        print(f"no {metric} ratings: {why}")
    if failed:
        print(
            f"elitr-bench: {failed} comparisons failed (judge errors); re-run the same command "
            "to resume (finished calls come from the cache)",
            file=sys.stderr,
        )
        return 1
    return 0


# Long by nature: one add_argument per flag, read top to bottom as the --help they print.
def register(subparsers: Any) -> None:
    """Add ``arena`` to the ``elitr-bench`` parser."""
    p = subparsers.add_parser(
        "arena",
        help="CREAM arena: pairwise comparison of minutes, Elo/BT",
        description=(
            "Compare systems' minutes pairwise with CREAM (key facts from both summaries, "
            "completeness and conciseness, both orders) and rank them with Elo and "
            "Bradley-Terry. Inputs: lm-eval output folders of a minutes task (each run is "
            "one system; NAME=PATH names it) and/or --automin. Re-running with --out of an "
            "existing arena and a new run judges only the new pairs. Prompts that do not fit "
            "the judge's context window stop the command before any request."
        ),
    )
    p.add_argument("runs", nargs="*", help="lm-eval output folders (or NAME=PATH) of minutes runs")
    p.add_argument(
        "--automin",
        action="store_true",
        help="add the released AutoMin 2023 English systems (12 test meetings)",
    )
    p.add_argument(
        "--systems",
        help="AutoMin systems to add, comma-separated (with --automin; default: all 9)",
    )
    p.add_argument(
        "--meetings", help="N (first N meetings) or comma-separated meeting ids / 1-based indices"
    )
    p.add_argument(
        "--judge",
        help=f"judge spec, e.g. openai:gpt-4o,temperature=0 (default {DEFAULT_CREAM_JUDGE}, "
        "the paper's CREAM evaluator)",
    )
    p.add_argument("--out", required=True, help="arena folder (created; re-used to add runs)")
    add_budget_flags(p, "systems, pairs, calls, cost")
    p.add_argument(
        "--key-facts",
        type=int,
        default=DEFAULT_MAX_KEY_FACTS,
        help="'at most N' key facts (paper: 16, used for its Elo ranking, and 30)",
    )
    p.add_argument(
        "--unit",
        choices=UNITS,
        default=DEFAULT_UNIT,
        help="what the alignment step numbers and conciseness divides by: 'sentence' "
        "(default; the paper's cited sentences / sentences, split with pysbd) or 'line' "
        "(cited lines / lines); an arena folder keeps the unit it was judged with",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_TOLERANCE,
        help=f"score difference counted as a draw (default {DEFAULT_TOLERANCE:g}: exact ties "
        "only, as the paper's S = 0.5 for a draw; a tolerance is our option)",
    )
    p.add_argument(
        "--elo-initial",
        type=float,
        default=DEFAULT_INITIAL,
        help="initial Elo rating (default: %(default)g)",
    )
    p.add_argument(
        "--elo-k", type=float, default=DEFAULT_K, help="Elo K factor (default: %(default)g)"
    )
    p.add_argument(
        "--elo-scale",
        type=float,
        default=DEFAULT_SCALE,
        help="Elo logistic scale (default: %(default)g)",
    )
    p.add_argument(
        "--orders",
        type=int,
        default=DEFAULT_ORDERS,
        help="random match orders averaged for Elo (default: %(default)s)",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=DEFAULT_BOOTSTRAP,
        help="bootstrap replicates (meetings resampled) for the intervals",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of match orders and bootstrap")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no leaderboard print")
    p.add_argument(
        "--wait",
        action="store_true",
        help="if another run is writing the --out folder, wait for it to finish (default: "
        "refuse, naming that run)",
    )
    p.set_defaults(handler=arena_command)
