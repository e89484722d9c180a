"""A CREAM arena: systems' minutes of the same meetings, compared pair by pair, persisted.

An arena lives in one output folder. ``arena.json`` holds the judge identity, the meetings
and the systems; ``minutes.jsonl`` the exact minutes each system entered with;
``comparisons.jsonl`` every finished comparison, appended as soon as it is done. Adding a
system later re-reads the folder and judges only the comparisons it does not hold yet (the
new system against every old one, both orders); a killed run resumes the same way, and the
judge cache makes any repeated request free as well.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import permutations
from pathlib import Path
from typing import Any

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.data.folder import write_atomic
from elitr_bench.data.run_files import read_json_lines
from elitr_bench.judges.aio import run_coroutine
from elitr_bench.judges.asking import request_for
from elitr_bench.judges.cream.compare import CALLS_PER_COMPARISON, CreamJudge, Entrant
from elitr_bench.judges.cream.prompts import (
    alignment_prompt,
    extraction_prompt,
    paragraph_of,
)
from elitr_bench.judges.cream.scoring import Comparison
from elitr_bench.judges.cream.segment import DEFAULT_UNIT, Summary
from elitr_bench.judges.errors import JudgeError
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.llm.base import CompletionRequest, FatalBackendError
from elitr_bench.llm.batch import BatchPending
from elitr_bench.llm.cache import Completion, JudgeCache
from elitr_bench.llm.client import JudgeClient
from elitr_bench.tokens import estimate_tokens

log = logging.getLogger(__name__)

ARENA_VERSION = 1
ARENA_FILE = "arena.json"
MINUTES_FILE = "minutes.jsonl"
COMPARISONS_FILE = "comparisons.jsonl"


class ArenaError(ElitrBenchError):
    """Bad arena input (too few systems, mismatched runs, a foreign output folder)."""


@dataclass(frozen=True)
class SystemMinutes:
    """One entrant of an arena: a system's minutes for each meeting.

    Attributes:
        system: Name on the leaderboard (AutoMin system or run name).
        minutes: meeting_id -> minutes text (unchanged).
        source: Where the minutes came from (``automin``, a run folder).
        tasks: lm-eval tasks of a run ("" for AutoMin's release).
    """

    system: str
    minutes: Mapping[str, str]
    source: str = ""
    tasks: tuple[str, ...] = ()


@dataclass
class ArenaState:
    """What an arena folder holds (empty for a new arena)."""

    judge: dict[str, Any] = field(default_factory=dict)
    meetings: list[str] = field(default_factory=list)
    systems: dict[str, SystemMinutes] = field(default_factory=dict)
    comparisons: dict[tuple[str, str, str], Comparison] = field(default_factory=dict)


#: The fix for an arena folder that cannot be read.
_NEW_FOLDER = "use another --out folder"


def load_state(out: Path) -> ArenaState:
    """Read an arena folder (an empty state when it holds no arena yet)."""
    state = ArenaState()
    meta_path = out / ARENA_FILE
    if not meta_path.exists():
        return state
    try:
        meta = json.loads(meta_path.read_text("utf-8"))
        state.judge = dict(meta["judge"])
        # Arenas written before the unit was recorded were all judged by lines.
        state.judge.setdefault("unit", "line")
        state.meetings = [str(m) for m in meta["meetings"]]
        texts: dict[str, dict[str, str]] = {}
        sources = {str(k): v for k, v in meta.get("systems", {}).items()}
        minutes_path = out / MINUTES_FILE
        if minutes_path.exists():
            for _, row in read_json_lines(minutes_path, _NEW_FOLDER, ArenaError):
                texts.setdefault(row["system"], {})[row["meeting_id"]] = row["text"]
        for name, info in sources.items():
            minutes = texts.get(name, {})
            missing = [m for m in state.meetings if m not in minutes]
            if missing:
                # Listed without its minutes: an older version was stopped between writing
                # the two files. The system never entered; the same command adds it again.
                log.warning(
                    "%s: system %r is listed without its minutes of %s; it is left out and "
                    "enters again when a command names it",
                    meta_path,
                    name,
                    missing[0],
                )
                continue
            state.systems[name] = SystemMinutes(
                name, minutes, str(info.get("source", "")), tuple(info.get("tasks", []))
            )
        comp_path = out / COMPARISONS_FILE
        if comp_path.exists():
            # a line cut by a killed run is passed over: that comparison is simply redone
            for _, row in read_json_lines(comp_path, _NEW_FOLDER, ArenaError, skip_invalid=True):
                try:
                    comp = Comparison.from_dict(row)
                except (ValueError, KeyError, TypeError):
                    continue
                state.comparisons[comp.key] = comp
    except ArenaError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArenaError(
            f"{meta_path}: not a readable arena ({type(exc).__name__}: {exc}); {_NEW_FOLDER}"
        ) from None
    return state


def merge(
    state: ArenaState,
    entrants: Sequence[SystemMinutes],
    meetings: Sequence[str] | None,
    judge: Mapping[str, Any],
    out: Path,
) -> ArenaState:
    """Add entrants to an arena, checking that everything still compares like with like.

    Raises:
        ArenaError: A different judge than the folder's, other meetings, a system name
            that already entered with other minutes, an entrant missing a meeting, or
            fewer than two systems.
    """
    if state.comparisons and state.judge and dict(state.judge) != dict(judge):
        changed = sorted(k for k in {*state.judge, *judge} if state.judge.get(k) != judge.get(k))
        if changed == ["unit"]:
            here = state.judge.get("unit")
            raise ArenaError(
                f"{out}: this arena counts {here}s (its conciseness divides by {here}s), "
                f"not {judge.get('unit')}s; pass --unit {here}, or use a new --out folder"
            )
        raise ArenaError(
            f"{out}: this arena was judged with another judge ({', '.join(changed)} differ); "
            "use the same --judge, --key-facts and --unit, or a new --out folder"
        )
    if state.meetings:
        if meetings is not None and sorted(meetings) != sorted(state.meetings):
            raise ArenaError(
                f"{out}: this arena covers {len(state.meetings)} meetings "
                f"({', '.join(state.meetings)}); drop --meetings or use a new --out folder"
            )
        chosen = list(state.meetings)
    elif meetings is not None:
        chosen = sorted(meetings)
    else:
        chosen = sorted({m for e in entrants for m in e.minutes})
    systems = dict(state.systems)
    for entrant in entrants:
        old = systems.get(entrant.system)
        if old is not None:
            differs = [m for m in chosen if old.minutes.get(m) != entrant.minutes.get(m)]
            if differs:
                raise ArenaError(
                    f"{out}: system {entrant.system!r} is already in this arena with other "
                    f"minutes of {differs[0]}; give the new run another name (NAME=PATH)"
                )
            continue
        missing = [m for m in chosen if m not in entrant.minutes]
        if missing:
            raise ArenaError(
                f"{entrant.source or entrant.system}: no minutes of {', '.join(missing[:3])}"
                f"{' ...' if len(missing) > 3 else ''} (system {entrant.system}); the arena "
                "compares the same meetings for every system: pick them with --meetings"
            )
        systems[entrant.system] = SystemMinutes(
            entrant.system,
            {m: entrant.minutes[m] for m in chosen},
            entrant.source,
            entrant.tasks,
        )
    run_tasks = {e.tasks for e in systems.values() if e.tasks}
    if len(run_tasks) > 1:
        listing = "; ".join(f"{e.system}: {','.join(e.tasks)}" for e in systems.values() if e.tasks)
        raise ArenaError(
            f"runs of different task sets ({listing}); an arena compares minutes of the same "
            "meetings, so pass runs of the same minutes task"
        )
    if len(systems) < 2:
        raise ArenaError(
            f"an arena needs at least 2 systems, got {len(systems)} "
            f"({', '.join(systems) or 'none'}); pass more runs, --automin or --systems"
        )
    if not chosen:
        raise ArenaError("no meetings to compare; check --meetings and the runs' tasks")
    return ArenaState(dict(judge), chosen, systems, dict(state.comparisons))


def save_meta(state: ArenaState, out: Path) -> None:
    """Write the minutes of every system, then ``arena.json`` (before any judging).

    ``arena.json`` is the commit point of adding a system: the minutes are written first,
    each file in one rename, so a kill or a full disk between the two leaves the old arena
    (with some unused minutes) that the same command resumes, never a system listed
    without its minutes.
    """
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "version": ARENA_VERSION,
        "method": "cream",
        "judge": state.judge,
        "meetings": state.meetings,
        "systems": {
            s.system: {"source": s.source, "tasks": list(s.tasks)} for s in state.systems.values()
        },
    }
    rows = [
        json.dumps({"system": s.system, "meeting_id": m, "text": t}, ensure_ascii=False)
        for s in state.systems.values()
        for m, t in sorted(s.minutes.items())
    ]
    write_atomic(out / MINUTES_FILE, "\n".join(rows) + "\n")
    write_atomic(out / ARENA_FILE, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


def entrant_of(state: ArenaState, system: str, meeting: str) -> Entrant:
    """A system's summary of a meeting as it enters a comparison."""
    return Entrant.of(system, state.systems[system].minutes[meeting])


def pending(state: ArenaState) -> list[tuple[str, str, str]]:
    """Comparisons (meeting, first, second) the arena does not hold yet, both orders."""
    names = sorted(state.systems)
    todo = []
    for meeting in state.meetings:
        for first, second in permutations(names, 2):
            done = state.comparisons.get((meeting, first, second))
            if done is None or done.status == "error":
                todo.append((meeting, first, second))
    return todo


@dataclass(frozen=True)
class ArenaPlan:
    """What an arena run will ask before it asks.

    Attributes:
        comparisons: Comparisons to run (both orders of each new pair and meeting).
        done: Comparisons already in the arena folder.
        calls: Judge calls without re-asks (3 per comparison).
        max_calls: Judge calls if every reply needed all re-asks and a restatement.
        restated_max: The restatement turns among ``max_calls`` (one per call at most).
        prompt_tokens: Estimated prompt tokens (characters / 4) of ``calls``.
        completion_tokens_max: Completion tokens if every reply used ``max_tokens``.
        cost_usd: Estimated upper-bound cost (None when the model has no known price).
    """

    comparisons: int
    done: int
    calls: int
    max_calls: int
    prompt_tokens: int
    completion_tokens_max: int
    cost_usd: float | None
    restated_max: int = 0


def plan(state: ArenaState, todo: Sequence[tuple[str, str, str]], config: JudgeConfig) -> ArenaPlan:
    """Count calls and estimate their cost (cache hits are not subtracted)."""
    from elitr_bench.judges.pricing import estimate_cost
    from elitr_bench.judges.usage import judge_prices

    max_kf = int(state.judge.get("max_key_facts", 16))
    unit = str(state.judge.get("unit", DEFAULT_UNIT))
    chars = 0
    for meeting, first, second in todo:
        a = entrant_of(state, first, meeting).summary
        b = entrant_of(state, second, meeting).summary
        extraction = len(extraction_prompt(paragraph_of(a.lines, b.lines), max_kf))
        # Each alignment resends the extraction turn and its reply (at most max_tokens).
        history = extraction + 4 * config.max_tokens
        aligns = len(alignment_prompt(a.units(unit))) + len(alignment_prompt(b.units(unit)))
        chars += extraction + 2 * history + aligns
    calls = CALLS_PER_COMPARISON * len(todo)
    prompt_tokens = estimate_tokens(chars)
    completion = calls * config.max_tokens
    prices = judge_prices(config)  # batch=on: the batch price
    cost = estimate_cost(prompt_tokens, completion, prices) if prices else None
    return ArenaPlan(
        comparisons=len(todo),
        done=len(state.comparisons),
        calls=calls,
        max_calls=calls * (config.reask + 2),
        restated_max=calls,
        prompt_tokens=prompt_tokens,
        completion_tokens_max=completion,
        cost_usd=cost,
    )


def context_check(
    state: ArenaState, todo: Sequence[tuple[str, str, str]], config: JudgeConfig
) -> None:
    """Stop before any call when a comparison's prompts cannot fit the judge's window.

    The extraction prompt is known exactly. An alignment prompt resends the extraction
    turn and its reply, which is not known yet but is at most ``max_tokens`` long, so
    it is counted with that many tokens for the reply: an upper bound.

    Raises:
        ContextWindowError: One line naming the meetings, their tokens and the way out.
    """
    from elitr_bench.judges.overlength import Overlong, overlength_line, way_out
    from elitr_bench.llm.context_window import ContextWindowError, judge_window

    window = judge_window(config)
    if not window.checked:
        return
    max_kf = int(state.judge.get("max_key_facts", 16))

    unit = str(state.judge.get("unit", DEFAULT_UNIT))
    over: list[Overlong] = []
    for meeting, first, second in todo:
        a = Summary.of(state.systems[first].minutes[meeting])
        b = Summary.of(state.systems[second].minutes[meeting])
        extraction = extraction_prompt(paragraph_of(a.lines, b.lines), max_kf)
        needed = [window.prompt_tokens(request_for(config, extraction, 0))]
        history = (("user", extraction), ("assistant", ""))
        for side in (a, b):
            reply_bound = config.max_tokens
            alignment = request_for(config, alignment_prompt(side.units(unit)), 0, history)
            needed.append(window.prompt_tokens(alignment) + reply_bound)
        tokens = max(needed)
        if tokens > window.prompt_budget(config.max_tokens):
            over.append(Overlong(meeting, tokens, config.max_tokens))
    if over:
        alternatives = ("a smaller max_tokens= in the judge spec (reserved for each reply)",)
        raise ContextWindowError(
            overlength_line(
                "arena (CREAM prompts, a quoted reply counted at max_tokens)",
                over,
                window,
                way_out(config, over, *alternatives),
            )
        )


async def run_comparisons(
    state: ArenaState,
    todo: Sequence[tuple[str, str, str]],
    judge: CreamJudge,
    out: Path,
    progress: bool = True,
) -> list[Comparison]:
    """Run the comparisons concurrently, appending each to ``comparisons.jsonl`` when done.

    A comparison whose judge requests fail for good (after the client's retries) is
    returned with status ``error`` and not written, so the next run asks again (finished
    calls come from the cache). The others are never lost.
    """
    bar: Any = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc="CREAM comparisons", unit="cmp", leave=False)
    path = out / COMPARISONS_FILE
    out.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        # A run killed mid-line left a partial record (skipped on load); start a new line.
        with path.open("a", encoding="utf-8") as tail:
            tail.write("\n")
    handle = path.open("a", encoding="utf-8")

    async def one(meeting: str, first: str, second: str) -> Comparison:
        a = entrant_of(state, first, meeting)
        b = entrant_of(state, second, meeting)
        try:
            comp = await judge.compare(meeting, a, b)
        except JudgeError as exc:
            reason = str(exc).splitlines()[0][:300]
            if not isinstance(exc, BatchPending):  # waiting for a batch: nothing failed
                log.warning("CREAM %s %s vs %s failed: %s", meeting, first, second, reason)
            comp = Comparison(
                meeting,
                first,
                second,
                (),
                (judge.unscored(a, reason), judge.unscored(b, reason)),
                "error",
                reason,
                judge=judge.identity(),
            )
        else:
            handle.write(json.dumps(comp.to_dict(), ensure_ascii=False) + "\n")
            handle.flush()
        state.comparisons[comp.key] = comp
        if bar is not None:
            bar.update(1)
        return comp

    try:
        return list(await asyncio.gather(*(one(*key) for key in todo)))
    finally:
        handle.close()
        if bar is not None:
            bar.close()


@dataclass
class _ArenaJudge:
    """The CREAM judge of an arena's pending comparisons, as the pass loop drives it."""

    cream: CreamJudge
    state: ArenaState
    out: Path
    progress: bool

    @property
    def client(self) -> JudgeClient:
        return self.cream.client

    def judge(self, items: list[tuple[str, str, str]], desc: str) -> list[Comparison]:
        return run_coroutine(
            lambda: run_comparisons(self.state, items, self.cream, self.out, self.progress)
        )

    async def aclose(self) -> None:
        await self.cream.client.aclose()


def compare_in_batches(
    state: ArenaState,
    todo: Sequence[tuple[str, str, str]],
    judge: CreamJudge,
    out: Path,
    progress: bool = True,
) -> tuple[list[Comparison], JudgeClient]:
    """:func:`run_comparisons` through the endpoint's Batch API (``batch=on``).

    The extractions go in one batch, then the alignments that quote them (and the
    restatements), each read from the cache as one-by-one judging reads it
    (:mod:`elitr_bench.judges.batching`); a comparison is written when it is done. The
    comparisons and the client whose usage they cost; ``judge`` gives the settings, its
    own client is not used.

    Raises:
        BatchFailed: The endpoint has no Batch API, or a batch failed validation.
    """
    from elitr_bench.judges.asking import make_client
    from elitr_bench.judges.batching import BatchPlan, judge_groups

    def make(cache: JudgeCache) -> _ArenaJudge:
        client = make_client(judge.config, cache)
        cream = CreamJudge(judge.config, client, judge.max_key_facts, judge.unit)
        return _ArenaJudge(cream, state, out, progress)

    outcome = judge_groups([("CREAM", todo)], judge.config, BatchPlan(), make)
    ((arena, done),) = outcome.runs
    return done, arena.client


class _CacheOnlyBackend:
    """Backend of a replay against the cache: reaching it means a request would be sent."""

    def __init__(self, real: Any) -> None:
        # The real backend's names make the same cache keys.
        self.kind: str = real.kind
        self.model: str = real.model
        self.endpoint: str = getattr(real, "endpoint", "")

    async def complete(self, request: CompletionRequest) -> Completion:
        raise FatalBackendError("not in the cache")

    async def aclose(self) -> None:
        return None


async def needs_requests(
    state: ArenaState, todo: Sequence[tuple[str, str, str]], judge: CreamJudge
) -> bool:
    """Whether judging ``todo`` would send any request (False: the cache answers all).

    The plan counts every pending comparison, because later prompts quote earlier replies
    and cannot be looked up in advance. This replays the comparisons against the cache
    alone, through the same client layer and prompts, and stops at the first request it
    would send. It decides whether the judge's preflight request is worth making: an
    arena whose pending calls are all cached (a run killed before writing its records)
    then finishes offline.
    """
    real = judge.client
    probe = JudgeClient(
        backend=_CacheOnlyBackend(real.backend),
        cache=real.cache,
        retries=0,
    )
    replay = CreamJudge(judge.config, probe, judge.max_key_facts, judge.unit)
    for meeting, first, second in todo:
        a = entrant_of(state, first, meeting)
        b = entrant_of(state, second, meeting)
        try:
            await replay.compare(meeting, a, b)
        except JudgeError:
            return True
    return False
