"""Judge throughput against a loopback OpenAI-compatible server with 200 ms latency.

Judges the benchmark's size (271 items) sequentially (concurrency=1) and with the default
concurrency, prints both times and their ratio in one run, then re-runs on the warm cache
and checks that it sends zero requests. Then it judges new items at the default
concurrency (16) into one cache file twice, alone and while another process writes to the
same file (transactions holding SQLite's write lock ``--hold`` s each, half of the time), and
prints the ratio of their throughputs: the cache's work runs in worker threads and lookups
have a connection of their own, so the event loop keeps every request in flight.
Offline: the server binds 127.0.0.1 only.

    python bench/judge_throughput.py [--items 271] [--latency 0.2] [--hold 0.05]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from elitr_bench.judges import parse_judge_spec  # noqa: E402
from elitr_bench.judges.config import JudgeConfig  # noqa: E402
from elitr_bench.judges.qa.engine import JudgeItem, judge_items  # noqa: E402
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=271)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--hold", type=float, default=0.05, help="writer's lock hold (s)")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")

    def handler(req: RecordedRequest) -> Reply:
        return Reply(content="Feedback: fine. \\boxed{7}", delay=args.latency)

    items = [
        JudgeItem(f"Question {i}?", f"Response {i}", f"Reference {i}") for i in range(args.items)
    ]
    with LoopbackOpenAI(handler) as server, tempfile.TemporaryDirectory() as tmp:
        base = f"openai:gpt-4-0613,base_url={server.base_url},progress=false"

        def timed(config: JudgeConfig) -> tuple[float, int]:
            before = len(server.requests)
            start = time.perf_counter()
            run = judge_items(items, config)
            assert run.summary["judge_scored"] == args.items
            return time.perf_counter() - start, len(server.requests) - before

        seq_s, seq_n = timed(parse_judge_spec(f"{base},concurrency=1,cache={tmp}/seq.sqlite"))
        default = parse_judge_spec(f"{base},cache={tmp}/par.sqlite")
        par_s, par_n = timed(default)
        cached_s, cached_n = timed(default)

        shared = f"{tmp}/shared.sqlite"
        alone = parse_judge_spec(f"{base},cache={shared}")
        alone_s, _ = timed(alone)
        items[:] = [JudgeItem(f"Other {i}?", f"R {i}", f"F {i}") for i in range(args.items)]
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, shared, str(args.hold)], stdout=subprocess.PIPE
        )
        try:
            assert writer.stdout is not None and writer.stdout.readline() == b"writing\n"
            busy_s, busy_n = timed(parse_judge_spec(f"{base},cache={shared}"))
        finally:
            writer.terminate()
            writer.wait()
    print(f"items={args.items} latency={args.latency * 1000:.0f}ms")
    print(f"sequential (concurrency=1): {seq_s:7.2f} s  requests={seq_n}")
    print(f"default (concurrency={default.concurrency}):   {par_s:7.2f} s  requests={par_n}")
    print(f"speed-up: {seq_s / par_s:.1f}x (target >= 10x)")
    print(f"cached re-run: {cached_s:7.2f} s  requests={cached_n} (target 0)")
    ratio = alone_s / busy_s
    print(
        f"concurrency {alone.concurrency}, cache alone:                  {alone_s:7.2f} s\n"
        f"concurrency {alone.concurrency}, another process writing "
        f"(locks {args.hold * 1000:.0f} ms): {busy_s:7.2f} s  requests={busy_n}\n"
        f"throughput kept with a writer beside it: {ratio:.2f}x of alone (target >= 0.8)"
    )
    return 0 if cached_n == 0 and seq_s / par_s >= 10 and ratio >= 0.8 else 1


#: Another process writing the same cache: each transaction holds the write lock ``hold`` s.
_WRITER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
hold, n = float(sys.argv[2]), 0
print("writing", flush=True)
while True:
    conn.execute("BEGIN IMMEDIATE")
    for _ in range(20):
        n += 1
        conn.execute(
            "INSERT OR IGNORE INTO completions (key, model, text, created) VALUES (?, ?, ?, ?)",
            (f"writer-{n}", "other", "x" * 1000, time.time()),
        )
    time.sleep(hold)
    conn.execute("COMMIT")
    time.sleep(hold)
"""


if __name__ == "__main__":
    sys.exit(main())
