"""``elitr-bench data fetch|verify|info``."""

from __future__ import annotations

import argparse
from collections import Counter

from elitr_bench.data import store
from elitr_bench.data.sources import ALL_SOURCES


def _fetch(args: argparse.Namespace) -> int:
    for source in ALL_SOURCES:
        path = store.resolve(source, download=True)
        print(f"ok  {source.relpath}  {path}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    failures = 0
    for source in ALL_SOURCES:
        try:
            path = store.resolve(source, download=False)
        except ValueError as exc:
            failures += 1
            print(f"BAD {source.relpath}: {exc}")
        else:
            print(f"ok  {source.relpath}  sha256 {source.sha256[:12]}…  {path}")
    return 1 if failures else 0


def _info(args: argparse.Namespace) -> int:
    from elitr_bench.data import load_benchmark, released_systems

    root = store.data_dir()
    print(f"data from: {root if root else store.cache_root() / 'data'}")
    for source in ALL_SOURCES:
        print(f"  {source.relpath}  ({source.licence})  {source.url}")
    bench = load_benchmark()
    print("\nquestion sets:")
    for (setting, split), questions in bench.question_sets.items():
        types = Counter(q.question_type for q in questions)
        positions = Counter(q.answer_position for q in questions)
        meetings = len({q.meeting_id for q in questions})
        print(
            f"  {setting}_{split}: {meetings} meetings, {len(questions)} questions; "
            f"types {dict(types)}; positions {dict(positions)}"
        )
    print("\nreleased responses (use with --model elitr-replay --model_args system=NAME):")
    for (r_setting, r_split, r_mode), systems in released_systems().items():
        print(f"  {r_setting}_{r_split}_{r_mode}: {', '.join(systems)}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``data`` command group."""
    data = sub.add_parser("data", help="fetch, verify and describe the benchmark data")
    actions = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    actions.add_parser("fetch", help="download the pinned files into the cache").set_defaults(
        handler=_fetch
    )
    actions.add_parser("verify", help="check every file against its sha256").set_defaults(
        handler=_verify
    )
    actions.add_parser("info", help="counts, sources and released systems").set_defaults(
        handler=_info
    )
