"""No reply of the red-team corpus becomes a wrong number, and no value is lost unasked.

A reply that is not in the asked format is not lost: the run asks the judge to restate it
(``restate`` in the reading). Only the values listed in ``accepted_unscored.yaml`` stay
unscored with no restatement.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli.read_reply import kinds, read_record
from tests.judges.redteam import accepted, entries, record, verdict

ENTRIES = list(entries())
MAIN = "import sys; from elitr_bench.cli import main; sys.exit(main())"
ACCEPTED = accepted()


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["id"])
def test_reply_gives_its_value_or_none_never_another(entry: dict[str, Any]) -> None:
    got = read_record(entry["kind"], record(entry))
    for field, expected in entry["expected"].items():
        value = got["values"].get(field)
        outcome = verdict(entry["kind"], expected, value, bool(got.get("restate")))
        assert outcome != "wrong", f"{field}: expected {expected!r}, read {value!r}"
        if outcome == "unscored":
            # Only the values listed as accepted losses may stay unread, with their reason.
            assert field in ACCEPTED.get(entry["id"], {}), (
                f"{field}: the clean value {expected!r} was lost ({got['reasons'].get(field)})"
            )
            assert got["reasons"][field] == ACCEPTED[entry["id"]][field]


def test_corpus_covers_every_kind_with_hard_shapes() -> None:
    assert len(ENTRIES) >= 250
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES)
    kinds_seen = {e["kind"] for e in ENTRIES}
    assert kinds_seen == set(kinds()) - {"automin-filler"}
    shapes = {e["shape"] for e in ENTRIES}
    for shape in (
        "truncated",
        "quoting",
        "correction",
        "conflicting",
        "off-scale",
        "json",
        "table",
        "language",
        "injection",
        "echo",
        "notes-section",
        "sub-bullets",
        "content-numbers",
        "restatement-disagrees",
    ):
        assert shape in shapes, shape
    # Issue 39: clean replies full of content numbers (dates, counts, amounts, another
    # field's value), in every family, and restatements that contradict their first reply.
    numbers = [e for e in ENTRIES if e["shape"] == "content-numbers"]
    assert len(numbers) >= 40
    assert {e["kind"] for e in numbers} == kinds_seen
    assert all(e.get("turn") == "restatement" for e in ENTRIES if "first_reply" in e)
    cut = [e for e in ENTRIES if e.get("finish_reason") == "length"]
    assert len(cut) >= 10
    for entry in cut:  # a cut-off reply never gives a value and is asked again, not restated
        got = read_record(entry["kind"], record(entry))
        assert all(v is None for v in got["values"].values()), entry["id"]
        assert "restate" not in got, entry["id"]


def test_clean_content_number_replies_cost_no_extra_call() -> None:
    """Issue 39: dates, counts, amounts, durations and another field's value never veto."""
    clean = [e for e in ENTRIES if e["shape"] == "content-numbers"]
    for entry in clean:
        got = read_record(entry["kind"], record(entry))
        assert "restate" not in got, f"{entry['id']}: {got['restate']}"


def test_accepted_losses_are_still_lost() -> None:
    """An accepted loss the reader now scores right is removed from the list (kept honest)."""
    by_id = {e["id"]: e for e in ENTRIES}
    for reply_id, fields in ACCEPTED.items():
        got = read_record(by_id[reply_id]["kind"], record(by_id[reply_id]))
        for field in fields:
            assert got["values"].get(field) is None, f"{reply_id}/{field} is scored now"
            assert "restate" not in got, f"{reply_id} is restated now: drop it from the list"


def test_read_reply_cli_is_the_same_reader(tmp_path: Path) -> None:
    """``elitr-bench read-reply KIND --jsonl`` prints, line by line, what the tests read."""
    for kind in ("gpt-art", "cream-alignment", "mesa-scoring"):
        chosen = [e for e in ENTRIES if e["kind"] == kind]
        lines = []
        for e in chosen:
            row = {"reply": e["reply"], "finish_reason": e.get("finish_reason")}
            if e.get("turn"):  # an answer to the restatement message
                row["turn"] = e["turn"]
            if e.get("first_reply"):  # the reply it answers
                row["first_reply"] = e["first_reply"]
            if kind == "cream-alignment":
                row |= {"key_facts": e["key_facts"], "units": e["units"]}
            lines.append(json.dumps(row))
        path = tmp_path / f"{kind}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-c", MAIN, "read-reply", kind, "--jsonl", str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        printed = [json.loads(line) for line in done.stdout.splitlines()]
        assert printed == [read_record(kind, record(e)) for e in chosen]


def test_first_contact_tallies_come_from_git() -> None:
    """Batch D met the reader of its parent commit: that tally, not today's, is shown."""
    from tests.judges import redteam_history as history

    shallow = history._git("rev-parse", "--is-shallow-repository").stdout.strip()
    if shallow != "false":  # no history to read: one line and exit 1, never a made-up tally
        done = subprocess.run(
            [sys.executable, "-m", "tests.judges.redteam", "--first-contact"],
            capture_output=True, text=True, cwd=history.REPO, check=False,
        )  # fmt: skip
        assert done.returncode == 1 and "needs the full git history" in done.stdout
        return
    contact = history.first_contact("batch_d")
    assert contact.first and contact.added_in and contact.reader_at
    assert history._short(history.adding_commit("batch_d")) == contact.added_in
    # The numbers its commit message reported when it was added (45d5f0b).
    assert contact.tally.splitlines()[-1].split() == [
        "total", "right", "53", "unscored", "5", "wrong", "0"
    ]  # fmt: skip
    assert "batch_d: added in" in contact.describe()
