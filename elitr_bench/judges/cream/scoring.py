"""Completeness and conciseness of one summary against the key facts (App. A.1).

Both are the FineSurE definitions the paper follows (Song et al., 2024):

* completeness = key facts the summary supports / key facts;
* conciseness = distinct summary sentences cited by supported key facts / summary
  sentences (App. A.1's S is "the set of sentences in the summary"); with ``unit=line``,
  lines instead of sentences (the arena's option, see ``segment.py``).

A comparison (one concatenation order of one pair) keeps the key facts, each summary's
alignment and both scores, so that the arena can show which facts a summary captured or
missed and re-analyse without asking the judge again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from elitr_bench.judges.cream.parse import Alignment, parse_alignment
from elitr_bench.judges.reading import Reading

METRICS: tuple[str, ...] = ("completeness", "conciseness")


def completeness(alignments: Sequence[Alignment]) -> float:
    """Share of key facts the summary supports (App. A.1, Completeness)."""
    if not alignments:
        raise ValueError("completeness needs at least one key fact")
    return sum(a.supported for a in alignments) / len(alignments)


def conciseness(alignments: Sequence[Alignment], n_units: int) -> float | None:
    """Share of summary units (sentences or lines) that support a key fact (App. A.1).

    None when a supported key fact came without line numbers: which units it covers is
    unknown, and guessing would change the score.
    """
    if n_units < 1:
        raise ValueError("conciseness needs a summary with at least one sentence or line")
    if any(a.supported and not a.lines for a in alignments):
        return None
    cited = {line for a in alignments if a.supported for line in a.lines}
    return len(cited) / n_units


@dataclass(frozen=True)
class SideScore:
    """One summary's alignment and scores within one comparison.

    Attributes:
        system: The summary's system.
        n_lines: Its number of non-empty lines.
        scores: ``completeness`` / ``conciseness`` -> value, None = unscored.
        alignments: One entry per key fact (empty when the alignment was unusable).
        reason: Why a metric is unscored ("" when both are scored).
        raw: The judge's alignment reply: the one read or restated (else the last attempt).
        attempts: Alignment requests made (1 + re-asks used).
        n_sentences: Its number of sentences (None in records made before sentences
            were counted, which were all judged by lines).
        unit: What the alignment numbered and conciseness divided by: ``sentence`` or
            ``line`` (the default only for those older records).
        restatement: The restatement turn's reply whose values were read (``""``: none).
    """

    system: str
    n_lines: int
    scores: Mapping[str, float | None]
    alignments: tuple[Alignment, ...] = ()
    reason: str = ""
    raw: str = ""
    attempts: int = 0
    n_sentences: int | None = None
    unit: str = "line"
    restatement: str = ""

    @property
    def n_units(self) -> int:
        """The conciseness denominator: sentences or lines, as the summary was numbered."""
        if self.unit == "sentence":
            if self.n_sentences is None:
                raise ValueError(f"{self.system}: unit=sentence without a sentence count")
            return self.n_sentences
        return self.n_lines

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "system": self.system,
            "unit": self.unit,
            "n_lines": self.n_lines,
            "n_sentences": self.n_sentences,
            "scores": dict(self.scores),
            "alignments": [
                {
                    "key_fact": a.key_fact,
                    "supported": a.supported,
                    "lines": list(a.lines),
                    "judge_key_fact": a.judge_key_fact,
                }
                for a in self.alignments
            ],
            "reason": self.reason,
            "raw": self.raw,
            "attempts": self.attempts,
            **({"restatement": self.restatement} if self.restatement else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SideScore:
        """Inverse of :meth:`to_dict`."""
        return cls(
            system=str(data["system"]),
            n_lines=int(data["n_lines"]),
            scores={str(k): (None if v is None else float(v)) for k, v in data["scores"].items()},
            alignments=tuple(
                Alignment(
                    str(a["key_fact"]),
                    bool(a["supported"]),
                    tuple(int(x) for x in a["lines"]),
                    str(a.get("judge_key_fact", "")),
                )
                for a in data.get("alignments", [])
            ),
            reason=str(data.get("reason", "")),
            raw=str(data.get("raw") or ""),
            attempts=int(data.get("attempts", 0)),
            n_sentences=None if data.get("n_sentences") is None else int(data["n_sentences"]),
            unit=str(data.get("unit", "line")),
            restatement=str(data.get("restatement") or ""),
        )


def unscored_side(
    system: str,
    n_lines: int,
    reason: str,
    raw: str | None = "",
    attempts: int = 0,
    *,
    n_sentences: int | None = None,
    unit: str = "line",
) -> SideScore:
    """A side whose alignment could not be used: every metric None, reason kept."""
    return SideScore(
        system,
        n_lines,
        dict.fromkeys(METRICS),
        (),
        reason,
        raw or "",
        attempts,
        n_sentences,
        unit,
    )


def score_side(
    system: str,
    n_lines: int,
    key_facts: Sequence[str],
    reply: str | None,
    attempts: int = 1,
    *,
    n_sentences: int | None = None,
    unit: str = "line",
    finish_reason: str | None = None,
    reading: Reading | None = None,
    restatement: str = "",
) -> SideScore:
    """Read an alignment reply and compute both metrics (unscored with a reason on error).

    ``unit`` says what the alignment prompt numbered: line numbers are checked against,
    and conciseness divides by, ``n_sentences`` for ``sentence`` and ``n_lines`` for
    ``line``. A missing or empty reply is unscored like any reply without a JSON list, a
    cut-off one (``finish_reason="length"``) like any cut-off judge reply. A "Yes"
    without line numbers still counts as supported for completeness but leaves
    conciseness unscored (which lines it covers is unknown).
    """
    side = unscored_side(system, n_lines, "", reply, attempts, n_sentences=n_sentences, unit=unit)
    side = replace(side, restatement=restatement)
    n_units = side.n_units
    if reading is None:  # the reading the run made (a restatement's) else the reply's own
        reading = parse_alignment(reply, key_facts, n_units, finish_reason)
    alignments = reading.value("alignments")
    if alignments is None:
        return replace(side, reason=reading.reason)
    scores: dict[str, float | None] = {
        "completeness": completeness(alignments),
        "conciseness": conciseness(alignments, n_units),
    }
    missing = [i for i, a in enumerate(alignments, start=1) if a.supported and not a.lines]
    note = "; ".join(f'alignment entry {i}: "Yes" without line numbers' for i in missing)
    reason = f"conciseness unscored: {note}" if scores["conciseness"] is None else ""
    return replace(side, scores=scores, alignments=alignments, reason=reason)


@dataclass(frozen=True)
class Comparison:
    """One CREAM comparison: a pair of summaries of one meeting in one concatenation order.

    Attributes:
        meeting_id: The meeting.
        first: System whose summary comes first in the extraction paragraph.
        second: System whose summary comes second.
        key_facts: Key facts extracted from the paragraph (empty if extraction failed).
        sides: ``(first, second)`` alignment results.
        status: ``ok`` (all four scores), ``partial``, ``unscored`` or ``error`` (the
            judge could not be reached; never persisted as done).
        reason: Why something is unscored or failed.
        extraction_raw: The extraction reply: the one read or restated (else the last
            attempt).
        judge: Identity of the judge that made it (model, prompt hash, limit, sampling).
        extraction_restatement: The extraction's restatement turn reply (``""``: none).
    """

    meeting_id: str
    first: str
    second: str
    key_facts: tuple[str, ...]
    sides: tuple[SideScore, SideScore]
    status: str
    reason: str = ""
    extraction_raw: str = ""
    judge: Mapping[str, Any] = field(default_factory=dict)
    extraction_restatement: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """``(meeting_id, first, second)``: what identifies a comparison in an arena."""
        return (self.meeting_id, self.first, self.second)

    def side(self, system: str) -> SideScore:
        """The side of a system taking part in this comparison."""
        for side in self.sides:
            if side.system == system:
                return side
        raise KeyError(system)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (one line of the arena's ``comparisons.jsonl``)."""
        return {
            "meeting_id": self.meeting_id,
            "first": self.first,
            "second": self.second,
            "status": self.status,
            "reason": self.reason,
            "key_facts": list(self.key_facts),
            "sides": [s.to_dict() for s in self.sides],
            "extraction_raw": self.extraction_raw,
            **(
                {"extraction_restatement": self.extraction_restatement}
                if self.extraction_restatement
                else {}
            ),
            "judge": dict(self.judge),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """Inverse of :meth:`to_dict`."""
        sides = [SideScore.from_dict(s) for s in data["sides"]]
        return cls(
            meeting_id=str(data["meeting_id"]),
            first=str(data["first"]),
            second=str(data["second"]),
            key_facts=tuple(str(f) for f in data.get("key_facts", [])),
            sides=(sides[0], sides[1]),
            status=str(data["status"]),
            reason=str(data.get("reason", "")),
            extraction_raw=str(data.get("extraction_raw", "")),
            judge=dict(data.get("judge", {})),
            extraction_restatement=str(data.get("extraction_restatement") or ""),
        )


def comparison_status(sides: Sequence[SideScore]) -> str:
    """``ok`` when all four scores exist, ``partial`` when some do, else ``unscored``."""
    values = [v for s in sides for v in s.scores.values()]
    have = sum(v is not None for v in values)
    if values and have == len(values):
        return "ok"
    return "partial" if have else "unscored"
