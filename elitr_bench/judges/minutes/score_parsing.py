r"""Conservative reading of per-criterion 0-10 scores from a free-text judge reply.

The AutoMin GPT judges (Figs. 17-18) ask for "each score separately on a scale 0 to 10"
and leave the format to the model, so replies come as ``Adequacy: 8``, Markdown bold,
tables, JSON, numbered lists, prose ("I would rate the adequacy as 8 out of 10") and,
often, explanations that mention other numbers ("2 minor topics were omitted", "bullet
3"). A misread number is recorded with status ``ok`` and silently moves a system mean,
which is worse than no number, so a number counts only where it is *bound* to the
criterion:

* the criterion's name, then only separators (``:``, ``-``, ``|``, ``=``, "is", "as",
  "of", "score", "rated", a parenthesis or a scale statement such as "(0-10)" or "on a
  scale from 0 to 10"), then the number, optionally ``/10`` or "out of 10";
* the score just before it ("I would give it an 8 for adequacy");
* or a table cell under (or beside) the criterion, a JSON value under its key, or a
  ``Score: N`` line in the section the criterion heads.

Never a score: numbers inside a scale statement, list enumerators ("1. Adequacy",
"Adequacy:\n1. The minutes ..."), numbers that count something ("2 minor topics"),
and numbers after words that are not separators ("the fluency suffers in bullet 3").
A criterion given different values in one reply is unscored as conflicting (the same value
repeated is fine); a value outside 0-10 or on another scale ("8/5", "85/100", "80%", a
reply that says it scores on 1-5) is unscored, never clipped or rescaled.

Everything here is a pure function of the reply text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from elitr_bench.judges.reading import Candidate, Field, Reply, draft_values, json_values
from elitr_bench.judges.reading import Reading as ReplyReading
from elitr_bench.judges.reading import decide as decide_candidates

#: How each criterion may be named in a reply (Fig. 18 asks for "grammatical correctness";
#: replies also say "grammar" or "grammaticality"). Longest alternatives first.
CRITERION_NAMES: Mapping[str, str] = {
    "adequacy": r"adequacy",
    "relevance": r"relevance|relevancy",
    "topicality": r"topicality",
    "fluency": r"fluency",
    "grammaticality": r"grammaticality|grammatical[ _-]*correctness|grammar|grammatical",
}

SCALE_LOW, SCALE_HIGH = 0.0, 10.0
"""Both prompts ask for "a scale 0 to 10" (Figs. 17-18)."""

_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_NUM = r"[-+]?\d+(?:\.\d+)?|" + "|".join(_WORDS)
_NUMBER = re.compile(rf"(?P<num>{_NUM})(?![A-Za-z0-9_½¼¾⅓⅔])", re.I)
_DENOMINATOR = re.compile(
    r"[ \t]*/[ \t]*(?P<a>\d+(?:\.\d+)?)(?![\d.]*\d)"
    r"|[ \t]+(?:out[ \t]+)?of[ \t]+(?P<b>\d+(?:\.\d+)?|ten|five|hundred)\b",
    re.I,
)
_POINTS = re.compile(r"[ \t]*(?:points?|pts)\b\.?", re.I)
_RANGE = re.compile(rf"[ \t]*(?:-|to)[ \t]*(?P<num>{_NUM})(?![A-Za-z0-9_])", re.I)
_NEXT_WORD = re.compile(r"[ \t]*(?P<word>[A-Za-z][\w'’-]*)")
#: Words that may follow a score without making it a count ("8 because ...").
_AFTER_OK = frozenset(
    {
        "because", "since", "as", "and", "but", "with", "overall", "given", "due", "which",
        "indicating", "meaning", "so", "while", "although", "though", "considering",
        "reflecting", "reflects", "rather", "instead", "not", "now",
    }
)  # fmt: skip
# A scale statement: "0-10", "0 to 10", "on a scale of 0 to 10", "on a 1-5 scale",
# "out of 10", with an optional "where 10 is the best". Group ``hi`` is its upper end.
_SCALE = re.compile(
    r"(?:(?:on|in|using|with)[ \t]+)?(?:an?[ \t]+|the[ \t]+)?"
    r"(?:(?:scale|range)[ \t]*(?:of|from|:)?[ \t]*)?"
    r"(?:[01][ \t]*(?:-|to)[ \t]*(?P<hi>\d+)|out[ \t]+of[ \t]+(?P<hi2>\d+))(?![\d.]*\d)"
    r"(?:[ \t-]*points?)?(?:[ \t]*scale)?"
    r"(?:[ \t]*,?[ \t]*(?:where|with)[ \t]+\d+[ \t]+(?:is|=|being|as)[ \t]+(?:the[ \t]+)?"
    r"(?:best|worst|highest|lowest|excellent|perfect|poor)"
    r"(?:[ \t]*(?:and|,)[ \t]*\d+[ \t]+(?:is|=|being|as)[ \t]+(?:the[ \t]+)?\w+)?)?",
    re.I,
)
# A reply that states it scores on another scale ("on a 1-5 scale", "scale of 1 to 5").
_STATED_SCALE = re.compile(
    r"scale[ \t]*(?:of|from|:)?[ \t]*[01][ \t]*(?:-|to)[ \t]*(?P<a>\d+)"
    r"|[01][ \t]*(?:-|to)[ \t]*(?P<b>\d+)[ \t-]*(?:points?[ \t]*)?scale",
    re.I,
)
# Separators and filler words allowed between a criterion and its score.
_SEPARATOR = re.compile(r"[ \t]*(?::+|=>|->|→|=|\||-+|,|\.{2,}|…|[\"'“”‘’]+)", re.I)
_CHAIN_WORD = re.compile(
    r"[ \t]*(?:is|as|of|at|was|be|would|will|i|i'd|i’d|i'll|think|say|believe|give|gives|"
    r"giving|gave|given|gets|get|receives|receive|deserves|deserve|earns|earn|merits|"
    r"rated|rate|rating|ratings|scored|score|scores|grade|graded|mark|level|a|an|it|them|"
    r"this|these|the|its|their|minutes'?|summary|overall|final|here|now|should|could|must|"
    r"instead|changed|revised|lowered|raised|reduced|increased|adjusted|corrected|updated|"
    r"to|really|actually)(?![\w'’])",
    re.I,
)
_PAREN = re.compile(r"[ \t]*[(\[](?P<body>[^()\[\]\n]*)[)\]]")
_ENUMERATOR_LINE = re.compile(r"[ \t]*(?:[-*+•][ \t]+)?(?:\d+|[a-z])[.)][ \t]+\S", re.I)
_DIVIDER_LINE = re.compile(r"[ \t]*\|?[ \t:|-]*-{3,}[ \t:|-]*$")
_LIST_JOIN = re.compile(r"[ \t]*(?:,[ \t]*(?:and[ \t]+)?|and[ \t]+|&[ \t]*|/[ \t]*|\+[ \t]*)", re.I)
_AGGREGATE_BEFORE = re.compile(
    r"(?:average|mean|sum|total|combination|aggregate)[ \t]+(?:of[ \t]+)?(?:the[ \t]+)?"
    r"(?:scores?[ \t]+(?:for|of)[ \t]+)?(?:the[ \t]+)?$",
    re.I,
)
_LINE_PREFIX = re.compile(
    r"[ \t]*(?:(?:#+|>|\||[-*+•]|\d+[.)]|[a-z][.)]|\(\d+\)|[\"'“”‘’{,])[ \t]*)*", re.I
)
_SCORE_WORD = re.compile(r"(?<![A-Za-z])(?:score|rating|grade|mark)s?(?![A-Za-z])", re.I)
_SECTION_BREAK = re.compile(
    r"(?:overall|total|final|summary|in[ \t]+summary|average|conclusion)(?![A-Za-z])", re.I
)
# A sentence that is only a score with its scale ("... skip lunch. 9/10."), in a section.
_SENTENCE_RATIO = re.compile(
    rf"(?:^|(?<=[.;!?:])[ \t]+|[ \t]-[ \t]+)(?P<n>{_NUM})"
    r"(?=[ \t]*/[ \t]*\d|[ \t]+out[ \t]+of[ \t])",
    re.I,
)
_MAX_STEPS = 14


#: A number found for a criterion (the core's candidate: value or problem, as written).
Reading = Candidate


# --- normalisation ----------------------------------------------------------------------
_BOXED = re.compile(r"\\(?:boxed|textbf|text|mathbf)\{([^{}]*)\}")
_DASHES = str.maketrans({"–": "-", "—": "-", "−": "-", "‑": "-", "：": ":", "\u00a0": " "})


def normalise(text: str) -> str:
    """Drop Markdown/LaTeX emphasis and unify dashes; line structure is kept."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_DASHES)
    text = _BOXED.sub(r"\1", _BOXED.sub(r"\1", text))
    return re.sub(r"\*\*|__|\*|`|~~|\$", "", text)


def _names_regex(criteria: Iterable[str]) -> re.Pattern[str]:
    parts = [f"(?P<{c}>{CRITERION_NAMES[c]})" for c in criteria]
    return re.compile(r"(?<![A-Za-z])(?:" + "|".join(parts) + r")(?![A-Za-z])", re.I)


def _criterion_of(match: re.Match[str]) -> str:
    return next(name for name, value in match.groupdict().items() if value is not None)


# --- one number -------------------------------------------------------------------------
def _as_float(token: str) -> float:
    return float(_WORDS[token.lower()]) if token.lower() in _WORDS else float(token)


def _follows_ok(text: str, pos: int, in_paren: bool = False) -> bool:
    """Whether what follows a number lets it be a score (not a count or an enumerator)."""
    rest = text[pos : pos + 40]
    if re.match(r"[ \t]*\d", rest):
        return False
    if not in_paren and re.match(r"\)[ \t]+[A-Za-z]", rest):  # "1) the minutes ..."
        return False
    word = _NEXT_WORD.match(rest)
    if word is None:
        return True
    first = word.group("word")
    if first.lower() == "and" and re.match(r"[ \t]*and[ \t]+\d", rest):
        return False  # "2 and 3 are missing": two counts, not a score
    return first[0].isupper() or first.lower() in _AFTER_OK


def _denominator(raw: str) -> float:
    return {"ten": 10.0, "five": 5.0, "hundred": 100.0}.get(raw.lower()) or float(raw)


def read_number(
    text: str,
    pos: int,
    scale_hi: float | None = None,
    in_paren: bool = False,
    check_tail: bool = True,
) -> tuple[Reading, int] | None:
    """The score written at ``pos`` and where it ends, or None when no score is there.

    None means "not a score at all" (a count such as "2 topics", an enumerator "1) the",
    no number); a :class:`Reading` without value means "a score, but unusable" (out of
    range, another scale, a range such as "7-8", "8,5").

    Args:
        text: Normalised reply.
        pos: Where the number must start (after separators).
        scale_hi: Upper end of a scale stated before it ("(1-5)"); None if none.
        in_paren: The number is the whole content of a parenthesis.
        check_tail: Check the words after the number (off when the caller checks them).
    """
    match = _NUMBER.match(text, pos)
    if match is None:
        return None
    token = match.group("num")
    end = match.end()
    if re.match(r",\d", text[end : end + 2]):  # "8,5": a decimal comma or a list
        shown = token + text[end : end + 2]
        return Reading(None, "{c} given as " + shown + ", not one number", shown), end + 2
    percent = re.match(r"[ \t]*%", text[end:])
    if percent:
        if check_tail and not _follows_ok(text, end + percent.end(), in_paren):
            return None  # "at 80% of the reference": a description, not a score
        return Reading(None, "{c} given as " + token + "%, not on 0-10", token + "%"), end
    ranged = _RANGE.match(text, end)
    if ranged and _follows_ok(text, ranged.end(), in_paren):
        shown = text[match.start() : ranged.end()].strip()
        return Reading(None, "{c} given as a range " + shown, shown), ranged.end()
    denominator = None
    den = _DENOMINATOR.match(text, end)
    if den:
        denominator = _denominator(den.group("a") or den.group("b"))
        end = den.end()
    points = _POINTS.match(text, end)
    tail = points.end() if points else end
    if den is not None and den.group("a") is not None:
        # "6/10 after all" is a score whatever follows, unless it is a share ("8/10 of").
        if check_tail and re.match(r"[ \t]+of\b", text[tail:], re.I):
            return None
    elif check_tail and not _follows_ok(text, tail, in_paren):
        return None
    shown = text[match.start() : end].strip()
    value = _as_float(token)
    if denominator is not None and denominator != SCALE_HIGH:
        return Reading(None, "{c} given as " + shown + ", not on 0-10", shown), tail
    if denominator is None and scale_hi is not None and scale_hi != SCALE_HIGH:
        problem = "{c} given as " + shown + f" on a scale up to {scale_hi:g}, not 0-10"
        return Reading(None, problem, shown), tail
    if not SCALE_LOW <= value <= SCALE_HIGH:
        return Reading(None, "{c}=" + shown + " outside 0-10", shown), tail
    return Reading(value, "", shown), tail


# "8, 9 and 7", and a revision written as a change: "8/10 -> 7/10" (two values: conflicting).
_LIST_SEP = re.compile(
    r"[ \t]*[,;][ \t]*(?:and[ \t]+)?|[ \t]+and[ \t]+|[ \t]*(?:→|->|=>|⇒)[ \t]*", re.I
)


def _number_list(text: str, first: Reading, pos: int, scale_hi: float | None) -> list[Reading]:
    """``first`` plus any further numbers listed after it ("8, 9 and 7").

    A listed number followed by a noun ("8, 2 topics missing") ends the list without it.
    """
    out = [first]
    while True:
        sep = _LIST_SEP.match(text, pos)
        nxt = read_number(text, sep.end(), scale_hi, check_tail=False) if sep else None
        if nxt is None:
            return out
        more = _LIST_SEP.match(text, nxt[1])
        if not (more and _NUMBER.match(text, more.end())) and not _follows_ok(text, nxt[1]):
            return out
        out.append(nxt[0])
        pos = nxt[1]


# --- a criterion followed by its score --------------------------------------------------
def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _is_table_line(text: str, pos: int) -> bool:
    start = _line_start(text, pos)
    return text[start:pos].lstrip().startswith("|")


def _scale_in(body: str) -> float | None:
    """Upper end of a scale stated in a parenthesis or table header ("0-10", "Score (1-5)")."""
    found = (
        _STATED_SCALE.search(body)
        or re.fullmatch(r"[ \t]*[01][ \t]*(?:-|to)[ \t]*(?P<a>\d+)[ \t]*", body)
        or re.search(r"\([ \t]*[01][ \t]*(?:-|to)[ \t]*(?P<a>\d+)[ \t]*\)", body)
    )
    if found is None:
        return None
    return float(found.group("a") or found.groupdict()["b"])


def _table_scale(text: str, pos: int) -> float | None:
    """The scale stated in the header of the Markdown table holding ``pos``, if any."""
    lines = text[: _line_start(text, pos)].split("\n")[:-1]
    end = text.find("\n", pos)
    header = text[_line_start(text, pos) : len(text) if end < 0 else end]
    for line in reversed(lines):
        if not line.lstrip().startswith("|"):
            break
        header = line
    return _scale_in(header)


def _paren_score(text: str, paren: re.Match[str], scale_hi: float | None) -> Reading | None:
    """The score a parenthesis holds on its own ("(8/10)", "(9)"), if it holds one."""
    body = paren.group("body")
    inner = read_number(body, len(body) - len(body.lstrip()), scale_hi, in_paren=True)
    if inner is None or body[inner[1] :].strip() or not _follows_ok(text, paren.end()):
        return None
    return inner[0]


def _line_at(text: str, pos: int) -> str:
    end = text.find("\n", pos)
    return text[pos : len(text) if end < 0 else end]


def _bound_readings(text: str, pos: int, reply_scale: float | None) -> list[Reading] | None:
    r"""Follow separators from ``pos`` (just after a criterion name) to a number.

    Returns the number(s) bound to the criterion, or None when the words after the name
    are not separators ("Adequacy: The minutes ...", "fluency suffers in bullet 3"). The
    score may be on the next line ("Relevance:\n6"), but never under a table row, across
    a table divider or on a numbered line ("Adequacy:\n1. The decisions ...").
    """
    table_line = _is_table_line(text, pos)
    newlines = 0
    scale_hi = (_table_scale(text, pos) if table_line else None) or reply_scale
    for _ in range(_MAX_STEPS):
        blank = re.match(r"[ \t]*\n", text[pos:])
        if blank:
            pos += blank.end()
            newlines += 1
            line = _line_at(text, pos)
            if table_line or newlines > 2 or _DIVIDER_LINE.match(line):
                return None
            if _ENUMERATOR_LINE.match(line):
                return None
            continue
        paren = _PAREN.match(text, pos)
        if paren:
            stated = _scale_in(paren.group("body"))
            if stated is not None:  # "(0-10)", "(on a scale 0 to 10)": never a score
                scale_hi = stated
                pos = paren.end()
                continue
            if _NUMBER.match(paren.group("body").strip()):
                inside = _paren_score(text, paren, scale_hi)
                return None if inside is None else [inside]
            pos = paren.end()  # "(how well the summary sums up ...)": a qualification
            continue
        start = pos + len(text[pos:]) - len(text[pos:].lstrip(" \t"))
        scale = _SCALE.match(text, start)
        if scale:
            scale_hi = float(scale.group("hi") or scale.group("hi2"))
            pos = scale.end()
            continue
        number = read_number(text, start, scale_hi)
        if number is not None:
            reading, end = number
            return (
                [reading] if reading.value is None else _number_list(text, reading, end, scale_hi)
            )
        step = _SEPARATOR.match(text, pos) or _CHAIN_WORD.match(text, pos)
        if step and step.end() > pos:
            pos = step.end()
            continue
        # "Adequacy: good (8/10)": one word, then the score in parentheses.
        word = re.match(r"[ \t]*[A-Za-z]+(?=[ \t]*\()", text[pos:])
        paren = _PAREN.match(text, pos + word.end()) if word else None
        inside = _paren_score(text, paren, scale_hi) if paren else None
        return None if inside is None else [inside]
    return None


def _inline(
    text: str, criteria: Sequence[str], reply_scale: float | None
) -> list[tuple[str, Reading]]:
    """Criterion (or list of criteria) followed by separators and a number."""
    names = _names_regex(criteria)
    found: list[tuple[str, Reading]] = []
    consumed = -1
    for match in names.finditer(text):
        if match.start() < consumed:
            continue
        before = text[_line_start(text, match.start()) : match.start()]
        group = [_criterion_of(match)]
        end = match.end()
        while True:  # "Fluency and grammar: 9", "Adequacy, relevance, topicality: 8, 9, 7"
            join = _LIST_JOIN.match(text, end)
            nxt = names.match(text, join.end()) if join else None
            if nxt is None:
                break
            group.append(_criterion_of(nxt))
            end = nxt.end()
        consumed = end
        if _AGGREGATE_BEFORE.search(before):
            continue
        readings = _bound_readings(text, end, reply_scale)
        if not readings:
            continue
        if len(readings) == len(group):
            found += list(zip(group, readings, strict=True))
        elif len(readings) == 1:
            found += [(c, readings[0]) for c in group]
        else:
            shown = ", ".join(r.shown for r in readings)
            problem = Reading(
                None, "conflicting {c}: " + f"{len(readings)} numbers ({shown})", shown
            )
            found += [(c, problem) for c in group]
    return found


_REVERSE = re.compile(
    rf"(?<![\w.])(?:an?|of|give|gave|given|assign|assigned|rate|rated|score|scored|it|them|"
    rf"say|said|put|be)"
    rf"[ \t]+(?=(?:{_NUM})(?![A-Za-z0-9_]))",
    re.I,
)
_REVERSE_TAIL = re.compile(
    r"[ \t]+(?:points?[ \t]+)?(?:for|on)[ \t]+(?:the[ \t]+)?(?:minutes'?[ \t]+)?"
    r"(?:its[ \t]+|their[ \t]+)?",
    re.I,
)


def _reverse(
    text: str, criteria: Sequence[str], reply_scale: float | None
) -> list[tuple[str, Reading]]:
    """The score before the criterion: "I would give it an 8 for adequacy"."""
    names = _names_regex(criteria)
    found = []
    for match in _REVERSE.finditer(text):
        number = read_number(text, match.end(), reply_scale, check_tail=False)
        if number is None:
            continue
        reading, end = number
        tail = _REVERSE_TAIL.match(text, end)
        name = names.match(text, tail.end()) if tail else None
        if name is not None:
            found.append((_criterion_of(name), reading))
    return found


# --- sections: "### Adequacy ... Score: 8" ----------------------------------------------
def _criteria_at_line_start(line: str, names: re.Pattern[str]) -> list[str]:
    prefix = _LINE_PREFIX.match(line)
    pos = prefix.end() if prefix else 0
    first = names.match(line, pos)
    if first is None:
        return []
    group = [_criterion_of(first)]
    end = first.end()
    while True:
        join = _LIST_JOIN.match(line, end)
        nxt = names.match(line, join.end()) if join else None
        if nxt is None:
            return group
        group.append(_criterion_of(nxt))
        end = nxt.end()


def _is_heading(raw: str, clean: str) -> bool:
    stripped = raw.strip()
    if stripped.startswith("#") or _DIVIDER_LINE.match(stripped):
        return True
    if re.fullmatch(r"(?:\*\*|__).+(?:\*\*|__):?", stripped):
        return True
    body = clean.strip()
    return body.endswith(":") and len(body.split()) <= 5


def _sections(
    raw: str, text: str, criteria: Sequence[str], reply_scale: float | None
) -> list[tuple[str, Reading]]:
    """``Score: N`` lines bind to the criterion whose line (heading or item) they follow."""
    all_names = _names_regex(list(CRITERION_NAMES))
    raw_lines = normalise_lines_raw(raw)
    found: list[tuple[str, Reading]] = []
    current: list[str] = []
    for raw_line, line in zip(raw_lines, text.split("\n"), strict=True):
        opened = _criteria_at_line_start(line, all_names)
        prefix = _LINE_PREFIX.match(line)
        start = prefix.end() if prefix else 0
        if opened:
            # A line that scores its criterion itself ("Relevance: 8") opens no section: a
            # later "Score: 7.5" is then an overall score, not a second relevance score.
            current = [c for c in opened if c in criteria and not _inline(line, [c], None)]
        elif _SECTION_BREAK.match(line, start) or (_is_heading(raw_line, line) and line.strip()):
            current = []
        if not current:
            continue
        for word in _SCORE_WORD.finditer(line):
            before = line[start : word.start()]
            if before.strip() and not re.search(r"(?:[.;!?(]|\s-|,)\s*$", before):
                continue
            readings = _bound_readings(line, word.end(), reply_scale)
            if readings and len(readings) == 1:
                found += [(c, readings[0]) for c in current]
        for ratio in _SENTENCE_RATIO.finditer(line, start):
            number = read_number(line, ratio.start("n"), reply_scale)
            if number is not None and re.match(r"[ \t]*(?:[.!]|$)", line[number[1] :]):
                found += [(c, number[0]) for c in current]
    return found


def normalise_lines_raw(raw: str) -> list[str]:
    """The reply's lines before normalisation (same count as :func:`normalise`'s)."""
    return raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")


# --- Markdown tables --------------------------------------------------------------------
def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [cell.strip() for cell in body.split("|")]


def _cell_criteria(cell: str, names: re.Pattern[str]) -> list[str]:
    """Criteria a header/first cell names on its own ("Adequacy (0-10)", "Fluency & grammar")."""
    body = _PAREN.sub("", cell).strip().rstrip(":").strip()
    found = []
    pos = 0
    while pos < len(body):
        match = names.match(body, pos)
        if match is None:
            return []
        found.append(_criterion_of(match))
        join = _LIST_JOIN.match(body, match.end())
        pos = join.end() if join else match.end()
        if join is None and pos < len(body):
            return []
    return found


def _cell_reading(cell: str, scale_hi: float | None) -> Reading | None:
    body = cell.strip()
    number = read_number(body, 0, scale_hi)
    if number is None:
        return None
    return number[0]


def _tables(
    text: str, criteria: Sequence[str], reply_scale: float | None
) -> list[tuple[str, Reading]]:
    """Criteria as column headers (values in the rows below) or rows with a Score column."""
    names = _names_regex(criteria)
    lines = text.split("\n")
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip().startswith("|"):
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    found: list[tuple[str, Reading]] = []
    for block in (b for b in blocks if len(b) >= 2):
        rows = [_cells(line) for line in block if not _DIVIDER_LINE.match(line)]
        header, data = rows[0], rows[1:]
        column_criteria = {i: _cell_criteria(cell, names) for i, cell in enumerate(header)}
        column_criteria = {i: c for i, c in column_criteria.items() if c}
        score_columns = [
            i
            for i, cell in enumerate(header)
            if re.fullmatch(
                r"(?:score|rating|grade|points?|value|mark)s?(?:\s*\(.*\))?\s*:?", cell, re.I
            )
        ]
        first_cells = [row and _cell_criteria(row[0], names) for row in data]
        if column_criteria and not any(first_cells):
            for row in data:
                for i, crits in column_criteria.items():
                    if i < len(row):
                        reading = _cell_reading(row[i], _scale_in(header[i]) or reply_scale)
                        if reading is not None:
                            found += [(c, reading) for c in crits]
        for i in score_columns:
            scale = _scale_in(header[i]) or reply_scale
            for row, crits in zip(data, first_cells, strict=True):
                if crits and i < len(row):
                    reading = _cell_reading(row[i], scale)
                    if reading is not None:
                        found += [(c, reading) for c in crits]
    return found


# --- JSON -------------------------------------------------------------------------------
_SCORE_KEYS = ("score", "rating", "value", "grade", "points", "mark")
_NAME_KEYS = ("criterion", "name", "aspect", "metric", "category", "dimension")


def _key_criteria(key: str, criteria: Sequence[str]) -> list[str]:
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", key).replace("_", " ").replace("-", " ")
    words = re.sub(r"\s+(?:score|rating|grade)s?\s*$", "", words.strip(), flags=re.I)
    names = _names_regex(criteria)
    match = names.fullmatch(words.strip())
    return [_criterion_of(match)] if match else []


def _json_reading(value: object, reply_scale: float | None) -> Reading | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return _cell_reading(str(value), reply_scale)
    if isinstance(value, str):
        return _cell_reading(value, reply_scale)
    if isinstance(value, Mapping):
        for key in _SCORE_KEYS:
            for k, v in value.items():
                if str(k).lower() == key:
                    return _json_reading(v, reply_scale)
    return None


def _json(
    values: Sequence[object], criteria: Sequence[str], reply_scale: float | None
) -> list[tuple[str, Reading]]:
    found: list[tuple[str, Reading]] = []

    def walk(obj: object) -> None:
        if isinstance(obj, list):
            for item in obj:
                walk(item)
            return
        if not isinstance(obj, Mapping):
            return
        for key in _NAME_KEYS:
            named = next((v for k, v in obj.items() if str(k).lower() == key), None)
            if isinstance(named, str):
                for crit in _key_criteria(named, criteria):
                    reading = _json_reading(obj, reply_scale)
                    if reading is not None:
                        found.append((crit, reading))
        for key, value in obj.items():
            crits = _key_criteria(str(key), criteria)
            if crits:
                reading = _json_reading(value, reply_scale)
                if reading is not None:
                    found.extend((c, reading) for c in crits)
            else:
                walk(value)

    for value in values:
        walk(value)
    return found


# --- putting it together ----------------------------------------------------------------
def stated_scale(text: str) -> float | None:
    """Upper end of a scale the reply says it uses when that is not 10 ("on a 1-5 scale").

    None when the text also names the asked 0-10 scale: the other scale is then about
    something else ("annotators rated on a 1-5 scale; I use the requested 0-10 scale").
    """
    tops = [float(m.group("a") or m.group("b")) for m in _STATED_SCALE.finditer(text)]
    if SCALE_HIGH in tops:
        return None
    return next((hi for hi in tops if hi != SCALE_HIGH), None)


def read_criteria(
    text: str | Reply, criteria: Sequence[str]
) -> dict[str, tuple[float | None, str]]:
    """Every criterion's score in a reply, or None with the reason.

    Args:
        text: The judge's reply, unchanged, or prepared by the core (quoted material
            blanked: see :class:`~elitr_bench.judges.reading.Reply`).
        criteria: Criterion keys of :data:`CRITERION_NAMES` that the prompt asked for.

    Returns:
        Criterion -> ``(value, reason)``, in the order of ``criteria``.
    """
    reply = text if isinstance(text, Reply) else Reply(text, text, text)
    clean = normalise(reply.prose)
    reply_scale = stated_scale(_preamble(clean, criteria))
    readings: dict[str, list[Reading]] = {c: [] for c in criteria}
    for finder in (_inline, _reverse, _tables):
        for crit, reading in finder(clean, criteria, reply_scale):
            readings[crit].append(reading)
    for crit, reading in _sections(reply.prose, clean, criteria, reply_scale):
        readings[crit].append(reading)
    for crit, reading in _json(json_values(reply.text), criteria, reply_scale):
        readings[crit].append(reading)
    for crit, reading in _initials(clean, criteria):
        readings[crit].append(reading)
    for crit in criteria:  # a reasoning block's draft values must agree too
        spec = Field(crit, SCALE_LOW, SCALE_HIGH)
        readings[crit] += draft_values(reply.thinking, CRITERION_NAMES[crit], spec)
    return {c: decide(c, readings[c]) for c in criteria}


_INITIAL = re.compile(rf"(?<![A-Za-z])(?P<letter>[A-Z])[ \t]*[=:][ \t]*(?P<num>{_NUM})(?![\w.])")


def _initials(clean: str, criteria: Sequence[str]) -> list[tuple[str, Reading]]:
    """A line naming every asked criterion by its initial ("A=7, F=8, G=9, R=7").

    Only a line holding exactly the initials of the asked criteria counts, so a stray
    "A: 3" (a list item) is never read as adequacy.
    """
    initials = {c[0].upper(): c for c in criteria}
    if len(initials) != len(criteria):
        return []
    found: list[tuple[str, Reading]] = []
    for line in clean.split("\n"):
        pairs = [(m.group("letter"), m.group("num")) for m in _INITIAL.finditer(line)]
        if sorted(letter for letter, _ in pairs) != sorted(initials):
            continue
        for letter, num in pairs:
            number = read_number(num, 0, None, check_tail=False)
            if number is not None:
                found.append((initials[letter], number[0]))
    return found


def _preamble(clean: str, criteria: Sequence[str]) -> str:
    """The reply before its first criterion: where a judge says which scale it uses.

    A scale named later, in an explanation ("annotators rate on a 1-5 scale"), is about
    something else and does not void the scores; one stated next to a score is read
    with that score (a parenthesis, a table header, ``4/5``).
    """
    first = _names_regex(criteria).search(clean)
    return clean if first is None else clean[: first.start()]


@dataclass(frozen=True)
class CriteriaGrammar:
    """The AutoMin judges' grammar: each criterion's 0-10 score, wherever it is bound.

    Attributes:
        criteria: Criterion keys of :data:`CRITERION_NAMES`, in the prompt's order.
        metrics: The field name of each criterion in readings (``gpt_art_adequacy``...);
            the criterion keys themselves when empty.
    """

    criteria: tuple[str, ...]
    metrics: tuple[str, ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields of a reading: the metric names, else the criterion keys."""
        return self.metrics or self.criteria

    def read(self, reply: Reply) -> ReplyReading:
        """Every criterion's score under the core's policy."""
        found = read_criteria(reply, self.criteria)
        names = dict(zip(self.criteria, self.fields, strict=True))
        return ReplyReading.of({names[c]: pair for c, pair in found.items()})


def decide(criterion: str, readings: Sequence[Reading]) -> tuple[float | None, str]:
    """One value when every reading agrees on it (the core's rule); else None and why."""
    return decide_candidates(criterion, readings)
