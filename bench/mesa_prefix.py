"""MESA's prompt volume on AutoMin 2023 and how much of it a prefix cache can reuse.

For the 12 English test meetings x 9 systems (108 summaries) this builds every prompt a
MESA run sends (8 types x 3 steps, optionally the debate's 5 calls per step) in both
layouts, offline, and prints the calls, the prompt tokens and the share of prompt tokens
that lie in a prefix shared with an earlier call: what a server with prefix caching
(vLLM ``enable_prefix_caching``, OpenAI's prompt caching) need not prefill again.

Assumptions (documented, not measured on a server):
* Calls are issued meeting by meeting, system by system, type by type, step by step, and
  the cache keeps everything (an upper bound for a bounded cache; vLLM caches in blocks of
  16 tokens and OpenAI in 128-token steps after 1,024, which trims each prefix a little).
* Steps 2-3 need the previous step's replies; they are replaced by a fixed synthetic reply
  per summary that quotes its first three lines (real replies differ, but are short next to
  the transcript, so the shares hardly depend on them).
* Tokens are GPT-4o's (o200k) from the ``bpe-openai`` package when it is installed (it
  bundles the vocabulary, no download), counted line by line; without it, characters / 3.7
  (the ratio o200k gives on these transcripts). A shared prefix is counted up to the last
  whole line both prompts share. Chat-template tokens are left out.

Run: ``ELITR_BENCH_DATA_DIR=../shared/data python bench/mesa_prefix.py [--debate]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

from elitr_bench.data.minutes import load_automin_meetings, load_automin_minutes
from elitr_bench.judges.mesa.error_types import load_error_types
from elitr_bench.judges.mesa.prompts import (
    STEPS,
    Layout,
    challenge_prompt,
    step_prompt,
    synthesis_prompt,
)


def make_counter() -> tuple[str, Callable[[str], int]]:
    """Token counter of one line, and its name."""
    try:
        import bpe_openai

        encoding = bpe_openai.get_encoding("o200k_base")

        @cache
        def count(line: str) -> int:
            return len(encoding.encode(line)) if line else 0

        return "o200k_base (bpe-openai, line by line)", count
    except ImportError:

        @cache
        def approx(line: str) -> int:
            return round(len(line) / 3.7)

        return "approximation: characters / 3.7", approx


def synthetic_replies(summary: str, code: str) -> dict[str, str]:
    """Stand-ins for the replies of steps 1 and 2 (quoting the summary's first lines)."""
    lines = [ln.strip() for ln in summary.splitlines() if ln.strip()][:3]
    found = [
        {"instance": ln, "reasoning": f"This line may show a {code} error.", "certainty": 50}
        for ln in lines
    ]
    checked = [
        {**f, "error_exists": i == 0, "severity": 4 if i == 0 else 0} for i, f in enumerate(found)
    ]
    return {
        "identification": json.dumps(found),
        "verification": json.dumps(checked),
        "scoring": json.dumps({"reasoning": "One minor error.", "confidence": 8, "rating": 1}),
    }


def prompts_of(layout: Layout, debate: bool) -> Iterator[str]:
    """Every prompt of a full MESA run, in issue order."""
    types = load_error_types()
    meetings = {m.meeting_id: m for m in load_automin_meetings()}
    for minutes in load_automin_minutes():
        transcript = meetings[minutes.meeting_id].transcript
        for etype in types:
            replies = synthetic_replies(minutes.text, etype.code)
            previous = ""
            for step in STEPS:
                prompt = step_prompt(
                    step,
                    etype,
                    summary=minutes.text,
                    transcript=transcript,
                    list_of_instances=previous,
                    layout=layout,
                )
                yield prompt
                if debate:
                    draft = replies[step]
                    for i in range(3):
                        yield challenge_prompt(prompt, draft, i)
                    yield synthesis_prompt(prompt, draft, [draft] * 3)
                previous = replies[step]


@dataclass
class Tally:
    """Counts of one layout."""

    calls: int = 0
    tokens: int = 0
    shared: int = 0


def tally(layout: Layout, debate: bool, count: Callable[[str], int]) -> Tally:
    """Calls, prompt tokens and tokens in a prefix shared with an earlier prompt.

    Prefixes are compared line by line through a chain of hashes (the hash of a prefix is
    the hash of the previous prefix's hash and the next line), so every earlier prompt is
    compared at once without keeping the prompts.
    """
    out = Tally()
    seen: set[int] = set()
    for prompt in prompts_of(layout, debate):
        out.calls += 1
        chain = 0
        shared = True
        for line in prompt.splitlines(keepends=True):
            tokens = count(line)
            out.tokens += tokens
            chain = hash((chain, line))
            if shared and chain in seen:
                out.shared += tokens
            else:
                shared = False
                seen.add(chain)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--debate", action="store_true", help="also count MADP runs")
    args = parser.parse_args()
    name, count = make_counter()
    print(f"MESA prompts on AutoMin 2023 (12 meetings x 9 systems); tokens: {name}")
    header = (
        f"{'layout':<8} {'debate':<6} {'calls':>7} {'prompt tokens':>15} "
        f"{'in shared prefix':>17} {'share':>7} {'to prefill':>13}"
    )
    print(header)
    print("-" * len(header))
    for debate in (False, True) if args.debate else (False,):
        for layout in ("paper", "prefix"):
            start = time.perf_counter()
            t = tally(layout, debate, count)  # type: ignore[arg-type]
            print(
                f"{layout:<8} {'MADP' if debate else 'none':<6} {t.calls:>7,} {t.tokens:>15,} "
                f"{t.shared:>17,} {t.shared / t.tokens:>7.1%} {t.tokens - t.shared:>13,}"
                f"   ({time.perf_counter() - start:.1f} s)"
            )


if __name__ == "__main__":
    main()
