"""One value per name in the results of our tasks.

Our tasks put the meeting-clustered standard error into lm-eval's results through a
per-sample carrier key ``<metric>_stderr`` (see :mod:`elitr_bench.tasks.metrics`). lm-eval
then also writes a standard error *of that key*, ``<metric>_stderr_stderr,<filter>``,
always ``"N/A"``: a name that means nothing and that every results reader trips over. The
start-up hook's ``simple_evaluate`` wrapper and ``elitr-bench score`` drop those keys from
the results of our tasks and groups (never from anyone else's).
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from functools import lru_cache
from pathlib import Path
from typing import Any

#: What lm-eval appends to a key for its standard error.
_STDERR = "_stderr"


@lru_cache(maxsize=1)
def our_names() -> frozenset[str]:
    """Names of our tasks and groups (read once from our task folder's YAML)."""
    from lm_eval.tasks._index import TaskIndex

    folder = Path(__file__).resolve().parent
    return frozenset(TaskIndex.build([folder]))


def is_stderr_of_stderr(key: str) -> bool:
    """``judge_score_stderr_stderr,<filter>``: a standard error of a standard error."""
    return key.split(",", 1)[0].endswith(_STDERR + _STDERR)


def tidy_results(results: MutableMapping[str, Any], names: Iterable[str] | None = None) -> None:
    """Drop ``*_stderr_stderr`` keys of our tasks and groups, in place.

    Args:
        results: A results dict as ``simple_evaluate`` returns it (``results``/``groups``).
        names: Whose entries to tidy (default: every task and group of ours).
    """
    ours = frozenset(names) if names is not None else our_names()
    for section in ("results", "groups"):
        entries = results.get(section)
        if not isinstance(entries, MutableMapping):
            continue
        for name, metrics in entries.items():
            if name not in ours or not isinstance(metrics, MutableMapping):
                continue
            for key in [k for k in metrics if isinstance(k, str) and is_stderr_of_stderr(k)]:
                del metrics[key]
