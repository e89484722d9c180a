"""Filler compression of meeting transcripts (AutoMin 2023 Sec. 6.3, Fig. 19).

The AutoMin organisers could not fit whole transcripts into GPT-4-32k, so before judging
they (1) removed every "eh" and the non-speech tags of the curated transcripts
(``<unintelligible/>``, ``<laugh/>``, ...), (2) asked GPT to classify each conversational
turn as Filler or Content with the Fig. 19 prompt, and (3) kept only the speaker label of
the filler turns. Steps 1 and 3 are pure functions here; step 2 goes through the shared
judge client, so every turn's classification is cached and a re-run pays nothing.

Choices where the paper is silent: a turn is a speaker-labelled line (``(PERSON7) ...``)
plus the unlabelled lines that follow it; the classifier sees the cleaned turn with its
label; a turn that is empty after cleaning is treated as filler without asking. An answer
that is neither "Filler" nor "Content" is asked again (the judge's ``reask``, each a
distinct cached draw); a turn still unreadable after that keeps its text (compression must
never drop information because a reply was unreadable) and is counted as
*unclassified*. Such a transcript differs from what a clean classification would give,
so the compression reports the count and is *flagged*; the judge's scores are kept, and
the flag travels with them (sample logs, results, ``score`` and ``minutes-check``).
Classification is greedy (temperature 0) so that the compressed transcript is
reproducible, whatever sampling the judge itself uses. The classifier is the judge's own
model unless ``filler_model=`` names another (AutoMin classified with text-davinci-003
and judged with GPT-4-32k). Token counts are whitespace-separated tokens (no tokenizer
download is possible offline); the judge's billed prompt tokens are in the usage block.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from elitr_bench.judges.asking import Sampling, ask, draws
from elitr_bench.judges.minutes.prompts import FILLER, build_filler_prompt
from elitr_bench.llm.client import gather_settled

if TYPE_CHECKING:
    from elitr_bench.llm.client import JudgeClient

# Speaker labels of the ELITR / AutoMin transcripts: "(PERSON7)", "(?PERSON10?)",
# "(OTHER PERSONS)". Parenthesised speech such as "(Oh really?)" is not a label.
_SPEAKER = re.compile(r"^\s*\((\??(?:PERSON\d+|OTHER PERSONS?|PERSON)\??)\)\s*")
# Non-speech items: XML-like tags ("<laugh/>", "<parallel_talk>", "</parallel_talk>") and
# the bare unintelligible mark "(??)".
_TAGS = re.compile(r"</?[a-z_]+/?>|\(\?\?\)", re.IGNORECASE)
# The hesitation "eh" with a comma or full stop glued to it ("Eh, I think" -> "I think").
_EH = re.compile(r"(?<![\w'])eh\b[,.]?", re.IGNORECASE)
_SPACES = re.compile(r"[ \t]{2,}")

FILLER_MAX_TOKENS = 8
"""Output limit of a classification ("Filler" / "Content" are one or two tokens)."""


def _greedy(seed: int | None) -> Sampling:
    """The classifier's sampling, whatever the judge's: greedy, :data:`FILLER_MAX_TOKENS`."""
    return Sampling(temperature=0.0, top_p=1.0, max_tokens=FILLER_MAX_TOKENS, seed=seed)


@dataclass(frozen=True)
class Turn:
    """One conversational turn.

    Attributes:
        speaker: Label without parentheses ("" for lines before the first label).
        text: The turn's text (lines joined by newlines), label removed.
    """

    speaker: str
    text: str

    def render(self, text: str | None = None) -> str:
        """The turn as a transcript line: ``(SPEAKER) text`` (just the label if no text)."""
        body = self.text if text is None else text
        label = f"({self.speaker})" if self.speaker else ""
        return " ".join(part for part in (label, body) if part)


def split_turns(transcript: str) -> list[Turn]:
    """Split a transcript into turns at speaker labels (continuation lines join the turn)."""
    turns: list[Turn] = []
    speaker, lines = "", list[str]()
    started = False
    for raw in transcript.split("\n"):  # not splitlines: keep U+2028 etc. inside turns
        match = _SPEAKER.match(raw)
        if match:
            if started or lines:
                turns.append(Turn(speaker, "\n".join(lines)))
            speaker, lines, started = match.group(1), [raw[match.end() :].strip()], True
        elif raw.strip():
            lines.append(raw.strip())
    if started or lines:
        turns.append(Turn(speaker, "\n".join(lines)))
    return turns


def clean_text(text: str) -> str:
    """Remove "eh" and non-speech tags; drop lines left empty (Sec. 6.3, step 1)."""
    out = []
    for line in text.split("\n"):
        line = _SPACES.sub(" ", _EH.sub("", _TAGS.sub("", line))).strip()
        line = re.sub(r"^[,.;]\s*", "", line)
        if line:
            out.append(line)
    return "\n".join(out)


def count_tokens(text: str) -> int:
    """Whitespace-separated tokens (the unit of the reported savings)."""
    return len(text.split())


@dataclass(frozen=True)
class Compression:
    """A compressed transcript and what it saved.

    Attributes:
        text: The transcript sent to the judge.
        turns: Number of turns.
        filler_turns: Turns reduced to their speaker label (incl. empty after cleaning).
        empty_turns: Turns with no words left after cleaning (not sent to the classifier).
        unclassified_turns: Turns whose classification stayed unreadable after every
            re-ask (kept whole).
        tokens_before: Tokens of the original transcript.
        tokens_cleaned: Tokens after removing "eh" and tags.
        tokens_after: Tokens of the compressed transcript.
        reasked_turns: Turns whose first answer was unreadable (asked again).
        unclassified_at: 1-based positions of the unclassified turns.
        classifier: Model that classified the turns ("" when not recorded).
    """

    text: str
    turns: int
    filler_turns: int
    empty_turns: int
    unclassified_turns: int
    tokens_before: int
    tokens_cleaned: int
    tokens_after: int
    reasked_turns: int = 0
    unclassified_at: tuple[int, ...] = ()
    classifier: str = ""

    @property
    def tokens_saved(self) -> int:
        """Tokens removed by cleaning and compression together."""
        return self.tokens_before - self.tokens_after

    @property
    def flagged(self) -> bool:
        """Whether some turn could not be classified (the judged text is not a clean run's)."""
        return self.unclassified_turns > 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (logged in assessment details)."""
        return {
            "turns": self.turns,
            "filler_turns": self.filler_turns,
            "empty_turns": self.empty_turns,
            "unclassified_turns": self.unclassified_turns,
            "unclassified_at": list(self.unclassified_at),
            "reasked_turns": self.reasked_turns,
            "flagged": self.flagged,
            "classifier": self.classifier,
            "tokens_before": self.tokens_before,
            "tokens_cleaned": self.tokens_cleaned,
            "tokens_after": self.tokens_after,
            "tokens_saved": self.tokens_saved,
            "saved_fraction": (
                round(self.tokens_saved / self.tokens_before, 4) if self.tokens_before else 0.0
            ),
        }


def filler_flag(stats: Mapping[str, Any]) -> str:
    """The note for a compression with unclassified turns ("" when every turn was read).

    Args:
        stats: A compression's :meth:`Compression.to_dict` (as logged in a sample).
    """
    unclassified = stats.get("unclassified_turns")
    if not isinstance(unclassified, int) or unclassified <= 0:
        return ""
    return (
        f"{unclassified} of {stats.get('turns', '?')} turns unclassified by the filler "
        "classifier (kept whole)"
    )


def cleaned_turns(transcript: str) -> list[Turn]:
    """Turns with "eh" and tags removed (text may be empty)."""
    return [Turn(t.speaker, clean_text(t.text)) for t in split_turns(transcript)]


def compress(
    transcript: str,
    turns: Sequence[Turn],
    labels: Sequence[str | None],
    *,
    reasked: int = 0,
    classifier: str = "",
) -> Compression:
    """Assemble the compressed transcript from cleaned turns and their labels.

    Args:
        transcript: The original transcript (for the "before" count).
        turns: Cleaned turns (from :func:`cleaned_turns`).
        labels: Per turn ``filler``, ``content`` or None (unreadable answer: kept).
        reasked: Turns that needed more than one classification request.
        classifier: Model that classified the turns.
    """
    lines: list[str] = []
    filler, empty, unclassified = 0, 0, 0
    unclassified_at: list[int] = []
    for position, (turn, label) in enumerate(zip(turns, labels, strict=True), start=1):
        if not turn.text:
            empty += 1
            filler += 1
            if turn.speaker:
                lines.append(turn.render(""))
            continue
        if label == "filler":
            filler += 1
            lines.append(turn.render(""))
        else:
            if label is None:
                unclassified += 1
                unclassified_at.append(position)
            lines.append(turn.render())
    text = "\n".join(lines)
    return Compression(
        text=text,
        turns=len(turns),
        filler_turns=filler,
        empty_turns=empty,
        unclassified_turns=unclassified,
        tokens_before=count_tokens(transcript),
        tokens_cleaned=count_tokens("\n".join(t.render() for t in turns)),
        tokens_after=count_tokens(text),
        reasked_turns=reasked,
        unclassified_at=tuple(unclassified_at),
        classifier=classifier,
    )


async def compress_transcript(
    transcript: str, client: JudgeClient, seed: int | None = None, reask: int = 0
) -> Compression:
    """Clean, classify every non-empty turn through the client (cached), and compress.

    Args:
        transcript: The transcript to compress.
        client: The classifier's client (the judge's own, or one for ``filler_model``).
        seed: Seed of the first request; re-ask ``j`` uses ``seed + j``.
        reask: Extra requests for a turn whose answer is neither label (each is its own
            cached draw, so a resumed run repeats none).
    """
    turns = cleaned_turns(transcript)

    async def label(turn: Turn) -> tuple[str | None, int]:
        if not turn.text:
            return "filler", 1
        asked = await ask(
            client,
            draws(_greedy(seed), build_filler_prompt(turn.render())),
            FILLER,
            reask + 1,
        )
        label = asked.reading.value("label")
        return (str(label) if label is not None else None), asked.attempts

    answers = await gather_settled(*(label(t) for t in turns))
    return compress(
        transcript,
        turns,
        [found for found, _ in answers],
        reasked=sum(tries > 1 for _, tries in answers),
        classifier=str(getattr(client.backend, "model", "")),
    )


def classification_calls(transcript: str, reask: int = 0) -> int:
    """Classifier calls a transcript needs at most (non-empty cleaned turns, re-asks)."""
    return (reask + 1) * sum(1 for t in cleaned_turns(transcript) if t.text)


def classification_chars(transcript: str, reask: int = 0) -> int:
    """Characters of all classifier prompts of a transcript at most (cost preview)."""
    one = sum(len(build_filler_prompt(t.render())) for t in cleaned_turns(transcript) if t.text)
    return (reask + 1) * one
