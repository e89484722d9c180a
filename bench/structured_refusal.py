"""Items lost by the paper's judge at a server that refuses structured output (issue 39).

``openai:gpt-4-0613`` judges N QA items (every fifth answered in prose, so restated) at the
loopback server, which refuses ``response_format`` of type ``json_schema`` for that model
with OpenAI's HTTP 400, as the API does. Replies land in random order (0-50 ms), as they
do from a real server. Each run prints how many items ended scored, as errors or unscored,
the restatements, the requests the server refused and all requests sent. Before the
fallback, 18-30 of 100 items were lost per run (the breaker stopping the rest); with it, 0.

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
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply


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
    for run in range(args.runs):
        memory.forget()  # as a new process: nothing learnt yet
        with LoopbackOpenAI(reply) as server:
            spec = f"openai:gpt-4-0613,base_url={server.base_url},cache=memory,progress=false"
            start = time.perf_counter()
            result = judge_items(items, parse_judge_spec(spec), on_error="record")
            status = [j.status for j in result.judgements]
            usage = result.usage
            print(
                f"run {run}: scored {status.count('scored')}, errors {status.count('error')}, "
                f"unscored {status.count('unscored')}; restated {usage['restated']}, refused "
                f"by the server {len(server.refused)} (structured_refused "
                f"{usage['structured_refused']}, unstructured {usage['unstructured']}), "
                f"requests {usage['requests']}; {time.perf_counter() - start:.1f} s"
            )


if __name__ == "__main__":
    main()
