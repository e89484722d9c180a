"""Do the docs' judge examples fit their context windows? Token counts over the real data, offline.

For each judge example of the docs (judges.md, minutes.md) this builds the prompts the judge
would send on the released data (AutoMin 2023's 12 English test meetings and 9 systems'
minutes, the released ELITR-Bench answers) and counts them as the judges' check does
(:mod:`elitr_bench.llm.context_window`): prompt tokens plus the reserved ``max_tokens``
against the window. Nothing is sent.

* Per meeting: the transcript's tokens (cl100k_base for GPT-4, o200k_base for GPT-4o),
  after filler step 1 ("eh" and tags removed, no judge needed), and the least that filler
  compression can leave (every turn reduced to its speaker label; the real value depends on
  the classifier's answers and needs a judge).
* Per judge example: the longest prompt and how many meetings (or answers) do not fit.

Run: ``ELITR_BENCH_DATA_DIR=../shared/data python bench/judge_windows.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from elitr_bench.data import RELEASED_FILES, load_released_responses
from elitr_bench.data.minutes import load_automin_meetings, load_automin_minutes
from elitr_bench.judges.config import parse_judge_spec
from elitr_bench.judges.minutes.filler import cleaned_turns, compress
from elitr_bench.judges.summary.base import MinutesItem
from elitr_bench.judges.summary.registry import get_method
from elitr_bench.judges.summary.run import context_over, context_unsure
from elitr_bench.llm.context_window import openai_counter

#: The docs' judge examples (spec, what it judges).
EXAMPLES: tuple[tuple[str, str], ...] = (
    ("openai:gpt-4-0613,rubric=gpt-afgr", "minutes"),  # the docs' example before this check
    ("openai:gpt-4-0613,rubric=gpt-afgr,filler=false", "minutes"),
    ("openai:gpt-4-32k,rubric=gpt-afgr,filler=false", "minutes"),  # AutoMin's own judge
    ("openai:gpt-4o,rubric=gpt-afgr", "minutes"),
    ("openai:gpt-4o,rubric=gpt-art,filler=false", "minutes"),
    ("openai:gpt-4o,method=mesa", "minutes"),
    ("openai:gpt-4o,method=mesa,debate=same,layout=prefix", "minutes"),
    ("openai:gpt-4-0613,method=mesa", "minutes"),  # `mesa` without --judge
    ("openai:gpt-4-0613", "qa"),  # the QA default
    ("openai:gpt-4o", "qa"),
    # Prometheus-13B (Llama-2, 4,096 positions) is not available offline: its prompts are
    # estimated as for any model without a tokenizer.
    ("openai:prometheus-13b-v1.0,rubric=prometheus-rubric,context=4096", "qa"),
)


def meeting_table() -> None:
    """Tokens per AutoMin 2023 transcript, raw, after step 1, and the compression floor."""
    cl100k, o200k = openai_counter("cl100k_base"), openai_counter("o200k_base")
    print("| meeting | chars | cl100k | o200k | cl100k after step 1 | cl100k floor |")
    print("|---|---:|---:|---:|---:|---:|")
    for meeting in load_automin_meetings():
        text = meeting.transcript
        turns = cleaned_turns(text)
        step1 = compress(text, turns, ["content"] * len(turns)).text
        floor = compress(text, turns, ["filler"] * len(turns)).text
        print(
            f"| {meeting.meeting_id[-3:]} | {len(text):,} | {cl100k.count(text):,} | "
            f"{o200k.count(text):,} | {cl100k.count(step1):,} | {cl100k.count(floor):,} |"
        )


def minutes_items() -> list[MinutesItem]:
    """Every released system's minutes of every meeting, with its transcript."""
    transcripts = {m.meeting_id: m.transcript for m in load_automin_meetings()}
    return [
        MinutesItem(m.meeting_id, m.system, transcripts[m.meeting_id], m.text)
        for m in load_automin_minutes()
    ]


def _summary(spec: str, over: Sequence[object], unsure: Sequence[object], n: int) -> str:
    meetings_over = sorted({o.label for o in over if o is not None})  # type: ignore[attr-defined]
    meetings_unsure = sorted({o.label for o in unsure if o is not None})  # type: ignore[attr-defined]
    return (
        f"{spec}: {sum(o is not None for o in over)} of {n} prompts cannot fit "
        f"({len(meetings_over)} meetings: {', '.join(m[-3:] for m in meetings_over) or '-'}); "
        f"{sum(o is not None for o in unsure)} fit only if compression removes enough "
        f"({', '.join(m[-3:] for m in meetings_unsure) or '-'})"
    )


def qa_check(spec: str) -> str:
    """The QA judge prompts of every released answer."""
    from elitr_bench.judges.asking import request_for
    from elitr_bench.judges.qa.engine import JudgeItem, overlong_items
    from elitr_bench.llm.context_window import judge_window

    config = parse_judge_spec(spec)
    items = [
        JudgeItem.from_released(r)
        for setting, split, mode, source in RELEASED_FILES
        for r in load_released_responses(setting, split, mode, source)
    ]
    over = overlong_items(items, config)
    window = judge_window(config)
    longest = max(
        window.prompt_tokens(
            request_for(
                config, config.rubric_obj.build_prompt(i.question, i.response, i.reference), 0
            )
        )
        for i in items
    )
    counted = "" if window.exact else ", estimated"
    return f"{_summary(spec, over, [], len(items))}; longest prompt {longest:,} tokens{counted}"


def main() -> None:
    """Print the meeting table and one line per docs judge example."""
    meeting_table()
    print()
    items = minutes_items()
    for spec, kind in EXAMPLES:
        if kind == "qa":
            print(qa_check(spec))
            continue
        method = get_method(parse_judge_spec(spec))
        print(
            _summary(spec, context_over(items, method), context_unsure(items, method), len(items))
        )


if __name__ == "__main__":
    main()
