"""``elitr-bench data fetch|verify|info``."""

from __future__ import annotations

import argparse
from collections import Counter

from elitr_bench.data import store
from elitr_bench.data.sources import (
    ALL_SOURCES,
    AUTOMIN_COMMIT,
    AUTOMIN_DIR,
    AUTOMIN_MANIFEST,
    AUTOMIN_REPOSITORY,
    automin_sources,
)

#: At most this many bad AutoMin files are listed one by one (the rest are counted).
_MAX_LISTED = 5


def _automin_root(path_of_one: object) -> str:
    """The ``automin-2023`` folder a resolved AutoMin file lives in (for messages)."""
    text = str(path_of_one)
    return text[: text.index(AUTOMIN_DIR) + len(AUTOMIN_DIR)] if AUTOMIN_DIR in text else text


def _fetch(args: argparse.Namespace) -> int:
    for source in ALL_SOURCES:
        path = store.resolve(source, download=True)
        print(f"ok  {source.relpath}  {path}")
    from tqdm.auto import tqdm

    files = automin_sources()
    last = None
    for source in tqdm(files, desc=f"{AUTOMIN_DIR} files", unit="file", leave=False):
        last = store.resolve(source, download=True)
    print(f"ok  {AUTOMIN_DIR}/  {len(files)} files  {_automin_root(last)}")
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
    files = automin_sources()
    bad: list[str] = []
    last = None
    for source in files:
        try:
            last = store.resolve(source, download=False)
        except ValueError as exc:
            bad.append(f"BAD {source.relpath}: {exc}")
    if bad:
        failures += 1
        print(*bad[:_MAX_LISTED], sep="\n")
        if len(bad) > _MAX_LISTED:
            print(f"BAD {AUTOMIN_DIR}/: {len(bad) - _MAX_LISTED} more of {len(files)} files")
    else:
        print(
            f"ok  {AUTOMIN_DIR}/  {len(files)} files match {AUTOMIN_MANIFEST} "
            f"({AUTOMIN_REPOSITORY}@{AUTOMIN_COMMIT[:12]})  {_automin_root(last)}"
        )
    return 1 if failures else 0


def _info(args: argparse.Namespace) -> int:
    from elitr_bench.data import load_benchmark, released_systems

    root = store.data_dir()
    print(f"data from: {root if root else store.cache_root() / 'data'}")
    for source in ALL_SOURCES:
        print(f"  {source.relpath}  ({source.licence})  {source.url}")
    print(
        f"  {AUTOMIN_DIR}/  ({len(automin_sources())} files, licence not stated)  "
        f"https://github.com/{AUTOMIN_REPOSITORY}/tree/{AUTOMIN_COMMIT}"
    )
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
    _info_minutes()
    return 0


def _info_minutes() -> None:
    from elitr_bench.data import minutes

    print("\nminutes (tasks elitr_minutes_dev, elitr_minutes_test, automin23_en):")
    for split in ("dev", "test2"):
        meetings = minutes.load_elitr_minutes_meetings(split)
        refs = sum(len(m.references) for m in meetings)
        print(f"  ELITR {split}: {len(meetings)} meetings, {refs} reference minutes")
    automin = minutes.load_automin_meetings()
    scores = minutes.load_automin_human_scores()
    judged = sorted({s.meeting_id for s in scores})
    hunks = sum(s.count for s in scores if s.level == "hunk" and s.criterion == "adequacy")
    documents = sum(1 for s in scores if s.level == "document" and s.criterion == "adequacy")
    print(
        f"  AutoMin 2023 {minutes.AUTOMIN_SPLIT}: {len(automin)} meetings, "
        f"{len(judged)} with human scores ({documents} document-level, {hunks} hunks)"
    )
    print(
        "  released minutes (use with --model elitr-replay --model_args system=NAME "
        f"--tasks automin23_en): {', '.join(minutes.AUTOMIN_SYSTEMS)}"
    )


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
