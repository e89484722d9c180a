"""``elitr-bench cache info|prune|clear``: look after the judge cache file.

The cache keeps every paid judge reply (:mod:`elitr_bench.llm.cache`) and would otherwise
grow for ever. ``info`` says where it is, how many entries it holds, how big it is and,
per judge model, when its oldest and newest entries were written; ``prune`` deletes the
entries older than some days and/or of one model; ``clear`` deletes them all, after
asking (``--yes`` skips the question; without a terminal to ask, it refuses). Each command
opens the file the runs use (``--cache``, else ``ELITR_JUDGE_CACHE``, else the default
location) and never creates one. They touch nothing but a judge cache: any other file
(another program's SQLite file, results, a mistyped path) is refused in one line and left
as it was; with ``ELITR_JUDGE_CACHE=off`` or ``memory`` the runs keep no file to look after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.llm.cache import (
    ENV_MAX_MB,
    SQLiteCache,
    cache_location,
    inspect_cache_file,
    max_cache_bytes,
    not_our_cache,
)


class CacheCommandError(ElitrBenchError):
    """Bad input to ``elitr-bench cache`` (one line naming the flag and the fix)."""


def _path(args: argparse.Namespace, doing: str) -> Path | None:
    """The file to look after, or None (one line said why there is none)."""
    if args.cache:
        return Path(args.cache).expanduser()
    where = cache_location()
    if isinstance(where, Path):
        return where
    kept = "no cache" if where == "off" else "their cache in memory only"
    print(
        f"ELITR_JUDGE_CACHE={os.environ.get('ELITR_JUDGE_CACHE', '').strip()}: judged runs "
        f"keep {kept}, so there is nothing {doing}; name a file with --cache PATH"
    )
    return None


def _open(args: argparse.Namespace, doing: str) -> SQLiteCache | None:
    """The cache the command names, or None (one line said so) when there is none yet.

    Only our own file is opened (:func:`~elitr_bench.llm.cache.inspect_cache_file`):
    another program's, or any file that is not a judge cache, is refused untouched.
    """
    path = _path(args, doing)
    if path is None:
        return None
    flag = f"--cache {args.cache}" if args.cache else "ELITR_JUDGE_CACHE"
    found = inspect_cache_file(path)
    if found.kind == "missing":
        if args.cache:  # named on purpose: a mistyped path, not a cache yet to be made
            raise CacheCommandError(
                f"--cache {path}: no such file; check the path (without --cache the "
                f"command looks after the runs' cache, {_default()})"
            )
        print(
            f"no judge cache at {path} yet (the first judged run creates it); name another "
            "file with --cache PATH or ELITR_JUDGE_CACHE"
        )
        return None
    if found.kind == "folder":
        raise CacheCommandError(f"{flag} names a folder ({path}); name the cache file inside it")
    if found.kind == "foreign":
        raise CacheCommandError(not_our_cache(path, found, flag))
    if found.kind == "empty":
        print(f"{path} holds no judge replies yet (an empty file); nothing {doing}")
        return None
    return SQLiteCache(path, max_bytes=0)  # 0: no eviction while looking after it


def _default() -> str:
    where = cache_location()
    return str(where) if isinstance(where, Path) else f"none: ELITR_JUDGE_CACHE={where}"


def _mb(size: int) -> str:
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(stamp)) if stamp else "-"


def _info(args: argparse.Namespace) -> int:
    limit = max_cache_bytes()
    cache = _open(args, "to show")
    if cache is None:
        return 0
    try:
        stats = cache.stats()
    finally:
        cache.close()
    print(f"cache: {stats.path}")
    print(f"entries: {stats.entries}")
    print(f"size: {_mb(stats.file_bytes)} on disk, {_mb(stats.data_bytes)} in use")
    print(
        f"size limit: {_mb(limit)} ({ENV_MAX_MB}; least recently used entries go first)"
        if limit is not None
        else f"size limit: none (set {ENV_MAX_MB} to cap it)"
    )
    if not stats.models:
        return 0
    rows = [("model", "backend", "entries", "oldest", "newest")]
    rows += [
        (m.model or "-", m.backend or "-", str(m.entries), _when(m.oldest), _when(m.newest))
        for m in stats.models
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not days > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of days (e.g. 30)")
    return days


def _compacted(cache: SQLiteCache) -> str:
    if cache.compact():
        return ""
    return " (another process has the file open: its size shrinks when it is idle)"


def _prune(args: argparse.Namespace) -> int:
    if args.older_than is None and args.model is None:
        raise CacheCommandError(
            "cache prune: say what to delete: --older-than DAYS, --model NAME, or both "
            "(elitr-bench cache info lists the models)"
        )
    cache = _open(args, "to prune")
    if cache is None:
        return 0
    try:
        if args.model is not None:
            models = sorted({m.model for m in cache.stats().models})
            if args.model not in models:
                raise CacheCommandError(
                    f"cache prune: {cache.path} holds no entry of model {args.model!r}; "
                    f"its models: {', '.join(models) or 'none'}"
                )
        seconds = args.older_than * 86400 if args.older_than is not None else None
        removed = cache.prune(older_than_s=seconds, model=args.model)
        left = cache.count()
        note = _compacted(cache) if removed else ""
    finally:
        cache.close()
    what = []
    if args.older_than is not None:
        what.append(f"written more than {args.older_than:g} days ago")
    if args.model is not None:
        what.append(f"of model {args.model}")
    print(f"deleted {removed} entries {' and '.join(what)}; {left} left{note}")
    return 0


def _confirm(count: int, path: Path) -> bool:
    if not sys.stdin or not sys.stdin.isatty():
        raise CacheCommandError(
            f"cache clear: this deletes all {count} entries of {path} and there is no "
            "terminal to ask; add --yes to confirm"
        )
    try:
        answer = input(f"delete all {count} judge replies in {path}? [y/N] ")
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def _clear(args: argparse.Namespace) -> int:
    cache = _open(args, "to clear")
    if cache is None:
        return 0
    try:
        count = cache.count()
        if count == 0:
            print(f"{cache.path} holds no entries; nothing to clear")
            return 0
        if not args.yes and not _confirm(count, cache.path):
            print("nothing deleted")
            return 1
        removed = cache.clear()
        note = _compacted(cache)
    finally:
        cache.close()
    print(f"deleted {removed} entries from {cache.path}{note}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``cache`` and its sub-commands to the ``elitr-bench`` parser."""
    where = (
        "the cache file (default: $ELITR_JUDGE_CACHE, else "
        f"{os.path.join('<user cache dir>', 'lm-eval-elitr', 'judge-cache.sqlite')})"
    )
    parser = sub.add_parser(
        "cache",
        help="look after the judge cache: info, prune, clear",
        description=__doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else None,
    )
    actions = parser.add_subparsers(dest="cache_command", metavar="ACTION", required=True)

    info = actions.add_parser(
        "info", help="where it is, entries, size, oldest/newest entry per judge model"
    )
    info.add_argument("--cache", metavar="PATH", help=where)
    info.set_defaults(handler=_info)

    prune = actions.add_parser("prune", help="delete old entries and/or one model's")
    prune.add_argument("--cache", metavar="PATH", help=where)
    prune.add_argument(
        "--older-than",
        metavar="DAYS",
        type=_days,
        help="delete entries written more than DAYS days ago",
    )
    prune.add_argument(
        "--model", metavar="NAME", help="delete the entries of this judge model (see info)"
    )
    prune.set_defaults(handler=_prune)

    clear = actions.add_parser("clear", help="delete every entry (asks first)")
    clear.add_argument("--cache", metavar="PATH", help=where)
    clear.add_argument("--yes", action="store_true", help="do not ask")
    clear.set_defaults(handler=_clear)
