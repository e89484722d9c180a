"""``elitr-bench read-reply KIND [FILE|-]``: what the judge reader takes from one reply.

The same code the runs use (the family's grammar under the core's reading policy), so a
user who wonders why an item was unscored can paste the logged reply and see each field's
value or reason. ``--jsonl FILE`` reads one JSON object per line::

    {"reply": "...", "finish_reason": "stop" | "length" | null,
     "key_facts": [...], "units": N, "evaluated": "..." | [...]}

(``key_facts`` and ``units`` for ``cream-alignment``; ``evaluated``, optional, is the text
the judge evaluated, whose lines quoted in the reply never supply a value; ``"turn":
"restatement"`` reads the reply as the judge's answer to the restatement message, and
``"first_reply"`` gives the first reply it answers, whose one stated value per field the
restatement must confirm; a field it stated two values for stays unscored) and prints one
result per line, in order. A reply that a run would ask to restate its values carries
``"restate": "<why>"`` (and, for one FILE, a ``restate: <why>`` line on standard error).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from elitr_bench.data.errors import ElitrBenchError
from elitr_bench.data.run_files import parse_json_lines
from elitr_bench.judges.cream.parse import AlignmentGrammar
from elitr_bench.judges.cream.scoring import score_side
from elitr_bench.judges.family import families
from elitr_bench.judges.reading import Grammar, Reading, read_reply, read_restatement
from elitr_bench.judges.rubrics import RUBRICS


class ReadReplyError(ElitrBenchError):
    """Bad input to ``read-reply`` (one line naming the file, line or flag)."""


@dataclass(frozen=True)
class Record:
    """One reply to read, with what some kinds need besides the text."""

    reply: str
    finish_reason: str | None = None
    key_facts: tuple[str, ...] | None = None
    units: int | None = None
    evaluated: tuple[str, ...] = ()
    turn: str = "first"
    first_reply: str | None = None


def _read(grammar: Grammar, record: Record) -> Reading:
    if record.turn == "restatement" and grammar.restatement is not None:
        first = Reading({})
        if record.first_reply is not None:  # the reply the restatement answers
            first = read_reply(grammar, record.first_reply, None, record.evaluated)
        restated = read_restatement(grammar, first, record.reply, record.finish_reason)
        return replace(restated, restate="")  # a run asks no second restatement
    return read_reply(grammar, record.reply, record.finish_reason, record.evaluated)


def _alignment(record: Record) -> Reading:
    if not record.key_facts or record.units is None or record.units < 1:
        raise ReadReplyError(
            "read-reply cream-alignment: give the key facts asked about and the summary's "
            "number of units (--key-facts FILE --units N, or 'key_facts' and 'units' in "
            "each --jsonl line)"
        )
    reading = _read(AlignmentGrammar(record.key_facts, record.units), record)
    side = score_side(
        "reply",
        record.units,
        record.key_facts,
        record.reply,
        finish_reason=record.finish_reason,
        reading=reading,
    )
    values = dict(side.scores)
    reasons = {k: side.reason for k, v in values.items() if v is None}
    return Reading(values, reasons, restate=reading.restate, restated=reading.restated)


def _grammar(grammar: Grammar) -> Callable[[Record], Reading]:
    def read(record: Record) -> Reading:
        return _read(grammar, record)

    return read


def kinds() -> dict[str, Callable[[Record], Reading]]:
    """KIND -> reader: every family's grammars and every QA rubric's (installed ones too).

    ``cream-alignment`` reads a reply against the key facts asked about (``--key-facts``,
    ``--units``), which no grammar alone has, so it is added here.
    """
    out = {kind: _grammar(g) for family in families() for kind, g in family.reply_kinds().items()}
    out.update({name: _grammar(rubric.grammar) for name, rubric in RUBRICS.items()})
    out["cream-alignment"] = _alignment
    return out


def read_record(kind: str, record: Record) -> dict[str, Any]:
    """``{"values": ..., "reasons": ...}`` for one reply (rounded to 4 places)."""
    out = kinds()[kind](record).to_dict()
    out["values"] = {
        k: round(v, 4) if isinstance(v, float) else v for k, v in out["values"].items()
    }
    return out


def _record(data: Any, where: str) -> Record:
    if not isinstance(data, Mapping) or not isinstance(data.get("reply", ""), str):
        raise ReadReplyError(f'{where}: expected a JSON object with a "reply" string')
    finish = data.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise ReadReplyError(f"{where}: finish_reason must be a string or null")
    facts = data.get("key_facts")
    if facts is not None and not (
        isinstance(facts, list) and all(isinstance(f, str) for f in facts)
    ):
        raise ReadReplyError(f"{where}: key_facts must be a list of strings")
    units = data.get("units")
    if units is not None and (isinstance(units, bool) or not isinstance(units, int)):
        raise ReadReplyError(f"{where}: units must be an integer")
    turn = data.get("turn") or "first"
    if turn not in ("first", "restatement"):
        raise ReadReplyError(f'{where}: turn must be "first" or "restatement"')
    evaluated = data.get("evaluated") or ()
    if isinstance(evaluated, str):
        evaluated = (evaluated,)
    first = data.get("first_reply")
    if first is not None and not isinstance(first, str):
        raise ReadReplyError(f"{where}: first_reply must be a string")
    return Record(
        str(data.get("reply") or ""),
        finish,
        tuple(facts) if facts is not None else None,
        units,
        tuple(str(e) for e in evaluated),
        turn,
        first,
    )


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text("utf-8")
    except FileNotFoundError:
        raise ReadReplyError(f"read-reply: {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReadReplyError(f"read-reply: {path}: cannot read ({exc})") from None


def _records(args: argparse.Namespace) -> Sequence[Record]:
    if args.jsonl:
        if args.file not in (None, "-"):
            raise ReadReplyError("read-reply: give either FILE or --jsonl FILE, not both")
        lines = _read_text(args.jsonl).split("\n")
        fix = "give one JSON object per line (see read-reply --help)"
        return [
            _record(data, f"{args.jsonl}:{number}")
            for number, data in parse_json_lines(lines, args.jsonl, fix, ReadReplyError)
        ]
    facts = None
    if args.key_facts:
        facts = tuple(f.strip() for f in _read_text(args.key_facts).splitlines() if f.strip())
    evaluated = (_read_text(args.evaluated),) if args.evaluated else ()
    reply = _read_text(args.file or "-")
    turn = "restatement" if args.restatement or args.first_reply else "first"
    first = _read_text(args.first_reply) if args.first_reply else None
    return [Record(reply, args.finish_reason, facts, args.units, evaluated, turn, first)]


def _handler(args: argparse.Namespace) -> int:
    records = _records(args)
    for record in records:
        result = read_record(args.kind, record)
        print(json.dumps(result, ensure_ascii=False))
        if len(records) == 1 and not args.jsonl and result.get("restate"):
            print(f"restate: {result['restate']}", file=sys.stderr)
    return 0


def register(subparsers: Any) -> None:
    """Add ``read-reply`` to the ``elitr-bench`` parser."""
    parser = subparsers.add_parser(
        "read-reply",
        help="what the judge reader takes from a reply, and why",
        description=(
            "Read one judge reply (FILE, or - for standard input) with the code the runs "
            "use and print {'values': ..., 'reasons': ...} as one JSON line; with --jsonl, "
            "one result per input line."
        ),
    )
    known = kinds()
    parser.add_argument("kind", choices=sorted(known), metavar="KIND", help=", ".join(known))
    parser.add_argument("file", nargs="?", default=None, metavar="FILE|-")
    parser.add_argument("--jsonl", metavar="FILE", help="one JSON object per line ('-': stdin)")
    parser.add_argument(
        "--finish-reason",
        default=None,
        help="the backend's finish reason of the reply ('length': cut off, never read)",
    )
    parser.add_argument(
        "--key-facts", metavar="FILE", help="cream-alignment: the key facts, one per line"
    )
    parser.add_argument(
        "--units", type=int, default=None, help="cream-alignment: the summary's numbered units"
    )
    parser.add_argument(
        "--evaluated",
        metavar="FILE",
        help="the text the judge evaluated (answer, minutes): quoted lines never count",
    )
    parser.add_argument(
        "--restatement",
        action="store_true",
        help="read the reply as the judge's answer to the restatement message (strict JSON)",
    )
    parser.add_argument(
        "--first-reply",
        metavar="FILE",
        help="with --restatement: the first reply it answers (its values must be confirmed)",
    )
    parser.set_defaults(handler=_handler)
