r"""Score statements outside the asked format: they can only veto, never supply a value.

A number is a statement of a field's value only where a cue of :mod:`.cues` ties it to a
score; the rules are looked at in the order of :data:`.cues.PRECEDENCE`. Content numbers
(counts, dates, amounts, another field's value, the prompt's own numbers) never veto.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from elitr_bench.judges.reading import cues
from elitr_bench.judges.reading.numeric_field import Field

_WORD = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
_WORD |= {"nine": 9, "ten": 10, "zero": 0, "one": 1}
NUMBER = r"\d+(?:\.\d+)?|" + "|".join(_WORD)
"""A number in digits or words (zero to ten); :func:`number` gives its value."""
_MENTION = re.compile(
    rf"(?<![\w.\[/:$€£])(?P<a>{NUMBER})(?:[ \t]*(?:-|–|to)[ \t]*(?P<b>{NUMBER}))?(?P<pct>[ \t]*%)?"
    r"(?P<den>[ \t]*(?:/|out[ \t]+of)[ \t]*(?P<top>\d+(?:\.\d+)?|ten|five))?"
    r"(?![\w%]|[.,:]\d|-[A-Za-z])",
    re.I,
)
SENTENCES = re.compile(r"(?<=[.!?;])[ \t]+|\n")
"""Where a reply's sentences end (a cue ties numbers within one sentence only)."""
_ABBREVIATION = re.compile(r"\b(?:i\.e|e\.g|vs|cf|approx)\.", re.I)
_SEP = r"[\s:=|*()\[\]{}\\\-–—>\"'`~,]"
_LINK = re.compile(rf"[ \t]*(?:(?:{cues.LINK})\b|[^\w \t]|$)", re.I)
_FOREIGN = re.compile(rf"(?<![A-Za-z])(?:{cues.FOREIGN})(?:\W+\w+){{0,3}}\W*$", re.I)
_ENUMERATOR = re.compile(r"^[\s>*#|]*$")  # "1. ..." / "2) ...": a list marker, no number
_HYPOTHETICAL = re.compile(cues.HYPOTHETICAL, re.I)
_SCALE = re.compile(cues.SCALE, re.I)
_LABEL_NOUN = re.compile(rf"(?<![A-Za-z])(?:{cues.LABEL_NOUN})[ \t]*[:=]?[ \t]*$", re.I)
_VERDICT_AFTER = re.compile(rf"^[ \t]+(?:{cues.VERDICT_AFTER})\b", re.I)
_REJECTED_BEFORE = re.compile(cues.REJECTED_BEFORE, re.I)
_REJECTED_AFTER = re.compile(cues.REJECTED_AFTER, re.I)
_ATTRIBUTED = re.compile(cues.ATTRIBUTED, re.I)
_AGGREGATE = re.compile(cues.AGGREGATE, re.I)
_DECLARED = re.compile(cues.SCALE_DECLARED, re.I)
#: Where "N/M" is a date or a fraction, not a score on another scale ("vote on 3/4").
_DATE_HEAD = re.compile(r"\b(?:on|by|for|until|before|after|since|from|due)[ \t]+$", re.I)
_SCALE_TOPS = (3.0, 5.0, 10.0, 20.0, 100.0)
_ON_SCALE = re.compile(r"^[ \t]+on[ \t]+(?:a|the|this|that|my|our|its)[ \t]", re.I)
#: A sentence that is only a number ("As it is, 6.", "7"): a statement by itself.
_BARE_HEAD = re.compile(r"[\s\W]*(?:as it (?:is|stands)[\s\W]*)?", re.I)
_BARE_TAIL = re.compile(r"[\s.!]*")
_LAST_WORD = re.compile(r"([A-Za-z']+)\W*$")


def number(token: str) -> float:
    """The value of a :data:`NUMBER`."""
    return float(_WORD[token.lower()]) if token.lower() in _WORD else float(token)


def whole_word(cue: str) -> str:
    """``cue`` as whole words ("rate" is no cue in "accurate", nor "mark" in "market")."""
    return rf"(?<![A-Za-z])(?:{cue})(?![A-Za-z])"


def _before(cue: str) -> re.Pattern[str]:
    """A cue, then at most five filler words, ending where the number starts."""
    filler = cues.FILLER
    return re.compile(rf"{whole_word(cue)}(?:{_SEP}*\b(?:{filler})\b){{0,5}}{_SEP}*$", re.I)


def _after(cue: str) -> re.Pattern[str]:
    """After the number: "for"/"on"/"in" and the cue (two words before), or a dash and it."""
    words = r"(?:[ \t]+[a-z']+){0,2}"  # "6 seems fairer for adequacy"
    link = rf"{words}[ \t]+(?:for|on|in)(?:[ \t]+(?:the|its|my))?[ \t]+|[ \t]*[-–—:|][ \t]*"
    return re.compile(rf"^(?:{link}){whole_word(cue)}", re.I)


@dataclass(frozen=True)
class Mention:
    """A number a reply tied to a field: ``low``-``high`` as ``written``.

    ``scale`` is the top of the scale it was written on when the reply names one
    ("4/5", "on a 5-point scale"), else None (the field's own); ``sentence`` the index of
    its sentence; ``specific``: its label, its sentence (naming this field alone) or a
    one-field grammar ties it to this field (a bare "7/10" in a reply on four criteria, or
    "a 4" in a sentence naming two, is tied to each only loosely, so it can veto but never
    count as that field's value).
    """

    low: float
    high: float
    written: str
    scale: float | None = None
    sentence: int = 0
    specific: bool = True

    def off_scale(self, spec: Field) -> bool:
        """Written on another scale than ``spec``'s."""
        return self.scale is not None and self.scale != spec.high


def named_scales(sentence: str) -> list[float]:
    """The tops of the scales a sentence names ("on a 5-point scale" -> 5)."""
    return [top for top, _, _ in _scales_at(sentence)]


def _scales_at(sentence: str) -> list[tuple[float, int, int]]:
    """Each scale a sentence names: its top, where it starts and ends."""
    tops = {"ten": 10.0, "five": 5.0, "hundred": 100.0}
    out = []
    for m in _SCALE.finditer(sentence):
        top = next(g for g in (m.group("p"), m.group("f"), m.group("r")) if g).lower()
        out.append((tops.get(top) or float(top), *m.span()))
    return out


def _scale_of(scales: list[tuple[float, int, int]], start: int, end: int) -> float | None:
    """A number's scale: one named just after it, else the nearest one before it.

    "4 on the 10-point rubric": 10; "on a 1-5 scale this is a 2": 5; else the sentence's
    first scale, or None.
    """
    after = [top for top, s, _ in scales if 0 <= s - end <= 30]
    before = [top for top, _, e in scales if e <= start]
    found: list[float | None] = [*after, *before[-1:], *(top for top, _, _ in scales), None]
    return found[0]


def declared_scales(text: str) -> list[tuple[float, str]]:
    """The scales the judge says it scores on, with their sentences ("I rate on a 1-5 scale")."""
    return [
        (top, sentence)
        for sentence in SENTENCES.split(text)
        if _DECLARED.search(sentence) and not hypothetical(sentence)
        for top in named_scales(sentence)
    ]


def _percent_label(label: str, head: str, tail: str, near: bool = True) -> bool:
    """A field's label beside a percentage: before it, or right after ("80% confident").

    ``near``: a few words may stand between ("my confidence in this is 80%"); else the
    label is just before it ("score: 80%").
    """
    words = cues.PERCENT_LABEL_WORDS if near else 0
    before = re.search(rf"{whole_word(label)}(?:\W+[\w']+){{0,{words}}}\W*$", head, re.I)
    return bool(before) or bool(re.match(rf"^[ \t]*{whole_word(label)}", tail, re.I))


def hypothetical(sentence: str) -> bool:
    """A sentence that imagines a condition ("if it had ...", "with the date it would ...")."""
    return bool(_HYPOTHETICAL.search(sentence))


def _sentences(text: str) -> list[tuple[int, int]]:
    """Where each sentence of ``text`` starts and ends (as :data:`SENTENCES` cuts it)."""
    cuts = [(m.start(), m.end()) for m in SENTENCES.finditer(text)]
    starts = [0, *(end for _, end in cuts)]
    ends = [*(start for start, _ in cuts), len(text)]
    return list(zip(starts, ends, strict=True))


_OR = re.compile(
    r"^[ \t]*,?[ \t]*or(?:[ \t]+(?:maybe|perhaps|even|possibly))?[ \t]+(?:an?[ \t]+)?$", re.I
)


def vetoes(
    text: str,
    specs: Sequence[Field],
    labels: Mapping[str, str],
    generic: str,
    context: str | None = None,
) -> dict[str, list[Mention]]:
    r"""Every score statement outside the asked format, per field, by :data:`.cues.PRECEDENCE`.

    ``labels`` name each field (its label ties a number to it), ``generic`` the score words
    that tie a number to the fields its sentence names, or to every field. ``context``:
    ``text`` before the asked format was blanked from it (same positions), where a
    sentence's labels are looked for ("Adequacy: 7 (maybe 6)" names adequacy).
    """
    out: dict[str, list[Mention]] = {s.name: [] for s in specs}
    text = _ABBREVIATION.sub(lambda m: m.group(0).replace(".", " "), text)
    context = text if context is None or len(context) != len(text) else context
    before = {s.name: _before(labels[s.name]) for s in specs}
    after = {s.name: _after(labels[s.name]) for s in specs}
    before_any = _before(generic)
    after_any = re.compile(r"^[ \t]+(?:rating|score|grade)\b", re.I)
    for index, (start, end) in enumerate(_sentences(text)):
        sentence, around = text[start:end], context[start:end]
        if hypothetical(sentence):
            continue
        scales = _scales_at(sentence)
        sentence = _SCALE.sub(lambda m: " " * len(m.group(0)), sentence)
        quantity_words: set[str] = set()
        tied: list[tuple[re.Match[str], list[Field], bool]] = []
        for m in _MENTION.finditer(sentence):
            head, tail = sentence[max(0, m.start() - 120) : m.start()], sentence[m.end() :]
            if _FOREIGN.search(head):
                continue  # another field's value (MESA's severities and certainties)
            if _REJECTED_BEFORE.search(head) or _REJECTED_AFTER.match(tail):
                continue  # compared with, ruled out, left ("more than Score 3-4")
            aggregate = _AGGREGATE.search(head) and not before_any.search(head)
            if _ATTRIBUTED.search(head) or aggregate:
                continue  # another party's value ("Agent B proposed ..."), an average
            label_noun = bool(_LABEL_NOUN.search(head)) and not m.group("pct")
            word_only = m.group("a").lower() in ("zero", "one") and not m.group("den")
            marker = _ENUMERATOR.match(head) and re.match(r"[.)][ \t]", tail)
            if m.group("pct") and not m.group("b"):
                value, written = number(m.group("a")), m.group(0).strip()
                share = re.match(r"[ \t]+of\b", tail)  # "80% of the reference": a share
                for spec in specs if not share else ():
                    own = labels[spec.name] != generic  # a field's own label, not a score verb
                    label = labels[spec.name] if own else cues.LABEL_NOUN
                    if spec.high != 100 and _percent_label(label, head, tail, own):
                        out[spec.name].append(Mention(value, value, written, 100.0, index))
                continue  # a percentage: content, unless the field's label is beside it
            if not label_noun and (word_only or marker):
                continue  # a list marker, "one"
            if not label_noun and not _LINK.match(tail):
                last = _LAST_WORD.search(head)
                quantity_words |= {last.group(1).lower()} if last else set()
                continue  # a quantity ("2 hours", "gave 5 examples")
            # a label after it ("8 out of 10 for relevance") wins over one before it, which
            # may close the previous statement ("7 for adequacy, 8 for relevance")
            labelled = [s for s in specs if after[s.name].match(tail)] or [
                s for s in specs if before[s.name].search(head)
            ]
            worded = (
                label_noun
                or bool(before_any.search(head))
                or bool(after_any.match(tail))
                or bool(_VERDICT_AFTER.match(tail))
            )
            article = re.search(r"\ban?[ \t]+$", head, re.I)
            named = [s for s in specs if re.search(whole_word(labels[s.name]), around, re.I)]
            fields = labelled or (named or list(specs) if worded or article else [])
            top = number(m.group("top")) if m.group("top") else None
            dated = _DATE_HEAD.search(head) or (top is not None and top not in _SCALE_TOPS)
            scaled = list(named or specs) if top is not None and not dated else []  # "3/5 stars"
            if any(0 <= s - m.end() <= 30 for _, s, _ in scales) and _ON_SCALE.match(tail):
                scaled = scaled or list(named or specs)  # "4 on this 5-point scale"
            if _BARE_HEAD.fullmatch(head) and _BARE_TAIL.fullmatch(tail):
                fields = fields or list(named or specs)  # a sentence that is only a number
            loose = len(specs) > 1 and not labelled and len(named) != 1
            previous = tied[-1] if tied else None
            if (
                previous
                and not (fields or scaled)
                and _OR.match(sentence[previous[0].end() : m.start()])
            ):
                fields, loose = previous[1], not previous[2]  # "6 or 7": both are stated
            if fields or scaled:
                tied.append((m, fields or scaled, not loose))
        for m, fields, specific in tied:
            last = _LAST_WORD.search(sentence[: m.start()])
            if last and last.group(1).lower() in quantity_words and not m.group("den"):
                continue  # the same cue counted something in this sentence: an elided noun
            low = number(m.group("a"))
            high = number(m.group("b")) if m.group("b") else low
            top = number(m.group("top")) if m.group("top") else None
            for spec in fields:
                scale = top if top is not None else _scale_of(scales, m.start(), m.end())
                if m.group("b") and low in (0, 1) and high not in (low, spec.high):  # "1-5"
                    scale = high
                mention = Mention(low, high, m.group(0).strip(), scale, index, specific)
                whole = (low, high) == (spec.low, spec.high)  # "Score (0-10)": the scale
                if mention.off_scale(spec) or (spec.low <= low <= high <= spec.high and not whole):
                    out[spec.name].append(mention)
    return out
