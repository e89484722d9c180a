"""The one middle cut of a transcript's text: where a cut may fall, and how it is marked.

Every middle cut of the package (``context_budget`` and ``overlength=truncate_middle`` in
the tasks, sized in the model's tokens; MESA's ``overlength=truncate_middle``, sized in the
judge's) keeps the beginning and the end of a meeting and joins them here: each side ends
at a speaker turn when one is near, a long turn straddling the cut is cut inside at a line,
sentence or word and marked, and :data:`ELISION` stands where the middle was; how much
to keep is searched for here too (:func:`largest_fitting_cut`). A small module at the
top of the package (like :mod:`elitr_bench.tokens`): it imports nothing of
the package, so the tasks and the judges both use it.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable

#: Marker inserted where ``truncate_middle`` removed part of a transcript.
ELISION = "\n[...]\n"
#: Marks the kept piece of a speaker turn that the middle cut went through: it ends the
#: head's last piece, and follows the repeated speaker label that opens the tail.
TURN_CUT = "[turn cut]"
#: A speaker turn straddling the cut is dropped whole when that costs at most this share of
#: the kept tokens on its side of the cut; a longer one is cut inside (:func:`join_cut`).
CUT_SLACK = 0.03
#: A line that starts a speaker turn: the anonymized speaker label, ``(PERSON4)``.
SPEAKER_TURN = re.compile(r"^\([A-Z][A-Za-z]*\d+\)", re.MULTILINE)


def turn_starts(transcript: str) -> list[int]:
    """Character offsets of the lines that start a speaker turn (``(PERSON4) ...``)."""
    return [m.start() for m in SPEAKER_TURN.finditer(transcript)]


def speaker_turns(transcript: str) -> list[str]:
    """A transcript split into speaker turns: a labelled line and its continuation lines.

    Text before the first label (if any) is a turn of its own; joining the turns with
    line breaks gives the transcript back.
    """
    starts = [s for s in turn_starts(transcript) if s > 0]
    bounds = [0, *starts, len(transcript) + 1]
    return [transcript[a : b - 1] for a, b in itertools.pairwise(bounds)]


def _line_starts(transcript: str) -> list[int]:
    return [0] + [i + 1 for i, c in enumerate(transcript) if c == "\n"]


#: Where a head may end inside a unit, finest last: after a line, a sentence, a word.
_HEAD_ENDS = (re.compile(r"\n"), re.compile(r"(?<=[.!?])[ \t]"), re.compile(r"[ \t]"))
#: Where a tail may start inside a unit: a line, a sentence, a word.
_TAIL_STARTS = (re.compile(r"(?<=\n)"), re.compile(r"(?<=[.!?][ \t])"), re.compile(r"(?<=[ \t])"))


def join_cut(transcript: str, head_len: int, tail_at: int, slack: int | None = None) -> str:
    """Join a transcript's first ``head_len`` and its characters from ``tail_at`` on.

    Each side ends on a unit boundary (a speaker turn; a line in a transcript without
    speaker labels) when one lies within ``slack`` characters of where the tokens put it
    (None: any distance), keeping no partial turn. Otherwise the long turn straddling the
    cut is cut inside, at the nearest line, sentence or word boundary within ``slack``
    (where there is none, where the tokens say), and its kept piece is marked with
    :data:`TURN_CUT`: at the end of the head, and after the speaker's label, repeated, at
    the start of the tail, so the model still sees who is speaking. Between the two
    sides is :data:`ELISION`.
    """
    reach = len(transcript) if slack is None else max(slack, 0)
    turns = turn_starts(transcript)
    units = turns if turns else _line_starts(transcript)
    head_end, head_whole = _head_end(transcript, head_len, units, reach)
    tail_start, tail_whole = _tail_start(transcript, max(tail_at, head_end), units, reach)
    head = transcript[:head_end].rstrip("\n")  # whole lines keep their own spacing
    if not head_whole and head.strip():
        head = head.rstrip() + " " + TURN_CUT
    tail = transcript[tail_start:].lstrip("\n")
    if not tail_whole and tail.strip():
        tail = tail.lstrip()
        label = _label_of(transcript, tail_start, turns)
        tail = f"{label} {TURN_CUT} {tail}" if label else f"{TURN_CUT} {tail}"
    return head + ELISION + tail


def _head_end(transcript: str, end: int, units: list[int], reach: int) -> tuple[int, bool]:
    """Where a head about ``end`` long stops, and whether that is a unit boundary."""
    if end >= len(transcript):
        return len(transcript), True
    best = _snap_back(end, units)
    if best is not None and end - best <= reach:
        return best, True
    floor = max(end - reach, (best or 0) + 1)
    for pattern in _HEAD_ENDS:
        found = [m.start() for m in pattern.finditer(transcript, floor, end + 1)]
        if found:
            return found[-1], False
    # no word ends within reach: the previous one, before the turn's own start
    words = [m.start() for m in _HEAD_ENDS[-1].finditer(transcript, (best or 0) + 1, end + 1)]
    return (words[-1], False) if words else (end, end in units)


def _tail_start(transcript: str, start: int, units: list[int], reach: int) -> tuple[int, bool]:
    """Where a tail from about ``start`` resumes, and whether that is a unit boundary."""
    total = len(transcript)
    if start >= total:
        return total, True
    best = _snap_forward(start, units, total)
    if best is not None and best - start <= reach:
        return best, True
    label = _label_of(transcript, start, units)
    if label and transcript.startswith(label, start - len(label) - 1):
        return start - len(label) - 1, True  # only the speaker label would be cut
    ceiling = min(start + reach, best if best is not None else total)
    for pattern in _TAIL_STARTS:
        found = next((m.start() for m in pattern.finditer(transcript, start, ceiling)), None)
        if found is not None:
            return found, False
    end = best if best is not None else total  # no word ends within reach: the next one
    word = next((m.start() for m in _TAIL_STARTS[-1].finditer(transcript, start, end)), None)
    return (word, False) if word is not None else (start, start in units)


def _label_of(transcript: str, at: int, turns: list[int]) -> str:
    """The speaker label of the turn holding offset ``at`` (empty when it has none)."""
    start = next((t for t in reversed(turns) if t <= at), None)
    if start is None:
        return ""
    match = SPEAKER_TURN.match(transcript, start)
    return match.group(0) if match else ""


def largest_fitting_cut(
    cut: Callable[[int], str],
    excess: Callable[[str], int],
    keep: int,
    units_per_token: float = 1.0,
) -> str | None:
    """The cut keeping the most of a transcript whose excess is <= 0 (None: not even none).

    The one search for how much to keep, for the tasks (kept units: the model's tokens)
    and MESA (kept units: characters, as an OpenAI judge's tokens are counted, not
    decoded). The first cut keeps ``keep`` units; joined text re-tokenises a little
    differently and the cut lands on boundaries, so the kept units are lowered by any
    remaining excess (``units_per_token`` units a token) and the cut redone, a few times at
    most. That ends in a few steps unless boundary snapping makes a plateau: in
    ``meeting_en_dev_002`` at a 300-token budget, keeping anything from 282 to 294 tokens
    gave the same 301-token cut, so steps of one token never left it. Bisection does, in
    about log2(keep) cuts.

    Args:
        cut: The transcript cut to keep about this many units (0: the elision alone).
        excess: Tokens by which a text (or the prompt built from it) overruns its limit.
        keep: Units the first cut keeps.
        units_per_token: Units a token of excess stands for.
    """
    tried = keep
    for _ in range(8):
        tried = keep = max(keep, 0)
        text = cut(keep)
        over = excess(text)
        if over <= 0:
            return text
        if keep == 0:
            return None
        keep -= max(1, math.ceil(over * units_per_token))
    best = cut(0)
    if excess(best) > 0:
        return None
    low, high = 0, tried  # ``low`` fits, ``high`` (the last keep tried) does not
    while high - low > 1:
        mid = (low + high) // 2
        text = cut(mid)
        if excess(text) <= 0:
            low, best = mid, text
        else:
            high = mid
    return best


def _snap_back(end: int, starts: list[int]) -> int | None:
    """The latest boundary in ``starts`` that keeps no partial line of a head ``end`` long.

    A head that stops just before a line break (``end + 1`` starts the next line) holds
    its last line whole. Offset 0 does not count: it would keep nothing.
    """
    best = None
    for start in starts:
        if start > end + 1:
            break
        if start > 0:
            best = start
    return best


def _snap_forward(start: int, starts: list[int], total: int) -> int | None:
    """The first boundary in ``starts`` at or after ``start`` (None when there is none)."""
    return next((b for b in starts if start <= b < total), None)
