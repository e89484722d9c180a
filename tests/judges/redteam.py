"""The red-team reply corpus: judge replies written without reading the reader.

Replies under ``data/redteam/batch_*/`` were written by a helper that saw only the judge
prompts and was asked to imitate named judges (GPT-4, GPT-4o, Claude, Llama-3, Qwen,
Prometheus, a 135M chat model), with the values a careful reader takes from each.
``accepted_unscored.yaml`` lists the values the reader leaves unscored on purpose.

An entry with ``turn: restatement`` is the judge's answer to the restatement message and
is read with the restatement reader; its ``first_reply``, when given, is the reply it
answers, whose one stated value per field it must confirm (batches F and G).
``python -m tests.judges.redteam`` prints the tally per kind: right (the value, with no
extra call), restated (no value; the run asks the judge to restate), unscored (no value
and no restatement: cut off, empty, refused, or a
restatement answer that is not strict) and wrong (another value).

``python -m tests.judges.redteam --first-contact`` prints, for each batch, the tally the
reader gave it when it first met it, computed from git (``tests/judges/redteam_history.py``):
the reader of the parent of the commit that added the batch. From now on a red-team batch
is committed on its own, before the reader change it drives, so that this tally exists
for it; batches A and B came with the reader itself and batch C with its fixes (its
parent's tally is its first contact: 16 wrong, 65 unscored of 197 values).
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from elitr_bench.cli.read_reply import Record, read_record

DATA = Path(__file__).parent / "data" / "redteam"


def entries() -> Iterator[dict[str, Any]]:
    """Every reply of every batch, in file order."""
    for path in sorted(DATA.glob("batch_*/*.yaml")):
        yield from yaml.safe_load(path.read_text("utf-8"))


def accepted() -> dict[str, dict[str, str]]:
    """Reply id -> field -> reason, for values the reader leaves unscored on purpose."""
    return yaml.safe_load((DATA / "accepted_unscored.yaml").read_text("utf-8")) or {}


def record(entry: dict[str, Any]) -> Record:
    """The reader's input for one entry."""
    facts = entry.get("key_facts")
    return Record(
        entry["reply"] or "",
        entry.get("finish_reason"),
        tuple(facts) if facts else None,
        entry.get("units"),
        (),
        entry.get("turn") or "first",
        entry.get("first_reply"),
    )


def verdict(kind: str, expected: Any, got: Any, restate: bool = False) -> str:
    """``right``, ``restated``, ``unscored`` (a stated value left unread) or ``wrong``."""
    if got is None:
        return "right" if expected is None else ("restated" if restate else "unscored")
    if expected is None:
        return "wrong"
    if kind == "cream-key-facts":
        same = [str(s).strip() for s in got] == [str(s).strip() for s in expected]
        return "right" if same else "wrong"
    return "right" if abs(float(got) - float(expected)) < 1e-3 else "wrong"


def tally() -> dict[str, collections.Counter[str]]:
    """Per kind, how many field values are right, unscored and wrong."""
    out: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for entry in entries():
        got = read_record(entry["kind"], record(entry))
        restate = bool(got.get("restate"))
        for field, expected in entry["expected"].items():
            value = got["values"].get(field)
            out[entry["kind"]][verdict(entry["kind"], expected, value, restate)] += 1
    return out


if __name__ == "__main__":
    if "--first-contact" in sys.argv[1:]:
        from tests.judges.redteam_history import main as first_contact_main

        sys.exit(first_contact_main())
    counts = tally()
    total: collections.Counter[str] = collections.Counter()
    for kind in sorted(counts):
        c = counts[kind]
        total.update(c)
        print(
            f"{kind:18s} right {c['right']:4d}  restated {c['restated']:3d}  "
            f"unscored {c['unscored']:3d}  wrong {c['wrong']}"
        )
    print(
        f"{'total':18s} right {total['right']:4d}  restated {total['restated']:3d}  "
        f"unscored {total['unscored']:3d}  wrong {total['wrong']}"
    )
    sys.exit(1 if total["wrong"] else 0)
