"""Items lost by a judge at servers that refuse structured output, in each one's words.

A judge scores N QA items (every fifth answered in prose, so restated) at the loopback
server, which refuses the restatement's ``response_format`` as each server does: OpenAI's
API for ``openai:gpt-4-0613`` (issue 39), then every wording of
``tests.support.openai_server.DIALECTS`` (vLLM's xgrammar and guidance backends,
llama.cpp, a 422 validator, Azure OpenAI, OpenAI refusing one schema keyword; issue 45).
Replies land in random order (0-50 ms), as they do from a real server. Each run prints how
many items ended scored, as errors or unscored, the restatements, the requests the server
refused and all requests sent. Before the fallback (issue 39), 18-30 of 100 items were lost
per run at OpenAI's wording; before issue 45, every restated item at the other wordings
(the breaker stopping the run); now 0 under every wording.

    python bench/structured_refusal.py [--items 100] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import time

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.llm import memory
from tests.judges.conftest import response_in
from tests.support.openai_server import (
    DIALECTS,
    LoopbackOpenAI,
    RecordedRequest,
    Reply,
    Rules,
    api_refusal,
    dialect,
)

#: Each wording: (name, the server's rules, the judge model it serves).
WORDINGS: list[tuple[str, Rules, str]] = [
    ("openai", api_refusal, "gpt-4-0613"),
    *((name, dialect(name), "judge-model") for name in sorted(DIALECTS)),
]


def reply(request: RecordedRequest) -> Reply | str:
    """A restatement gets its JSON; every fifth answer gets prose, the others a box."""
    if len(request.body["messages"]) > 1:
        return '{"score": 7}'
    index = int(response_in(request).split()[-1])
    text = "Fine, a 7 out of 10." if index % 5 == 0 else "Feedback: ok.\n\\boxed{7}"
    return Reply(text, delay=random.uniform(0, 0.05))


def main() -> None:
    """Judge ``--items`` items ``--runs`` times, each run a fresh process state."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    items = [JudgeItem(f"Q{i}?", f"answer {i}", "ref") for i in range(args.items)]
    for wording, rules, model in WORDINGS:
        for run in range(args.runs):
            memory.forget()  # as a new process: nothing learnt yet
            with LoopbackOpenAI(reply, model=model, rules=rules) as server:
                spec = f"openai:{model},base_url={server.base_url},cache=memory,progress=false"
                start = time.perf_counter()
                result = judge_items(items, parse_judge_spec(spec), on_error="record")
                status = [j.status for j in result.judgements]
                usage = result.usage
                lost = len(items) - status.count("scored")
                print(
                    f"{wording} run {run}: items lost {lost}; scored {status.count('scored')}, "
                    f"errors {status.count('error')}, unscored {status.count('unscored')}; "
                    f"restated {usage['restated']}, refused by the server {len(server.refused)} "
                    f"(structured_refused {usage['structured_refused']}, unstructured "
                    f"{usage['unstructured']}), requests {usage['requests']}; "
                    f"{time.perf_counter() - start:.1f} s"
                )


if __name__ == "__main__":
    main()
