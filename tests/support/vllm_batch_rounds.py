"""vLLM's batch runner over several rounds of batch files, with one engine start.

Run with the Python of the vLLM venv (``make install-vllm``), never imported by the
suite's own interpreter::

    .venv-vllm/bin/python tests/support/vllm_batch_rounds.py PLAN.json -- VLLM_ARGS...

``PLAN.json`` names the first input file, a folder for the next ones, the ``score``
command (argv) and the most rounds. Each round hands one input file to vLLM's own
``run_batch`` (the function ``python -m vllm.entrypoints.openai.run_batch`` runs, on the
same engine), then runs ``score ... --batch-read OUT --batch-write NEXT``; the rounds end
when ``score`` writes no next file. Starting the engine costs a minute or two on a CPU;
the restatements need a second round, so one start for all rounds halves the test.
The last line printed is a JSON summary: the files of each round and score's statuses.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path


async def _rounds(plan: dict, vllm_args: list[str]) -> list[dict]:
    from vllm.entrypoints.launchers.api_server.entry import build_async_engine_client
    from vllm.entrypoints.launchers.run_batch import make_arg_parser, run_batch
    from vllm.usage.usage_lib import UsageContext
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    folder = Path(plan["folder"])
    given = Path(plan["first"])
    parser = make_arg_parser(FlexibleArgumentParser(description="batch rounds"))
    args = parser.parse_args(["-i", str(given), "-o", str(folder / "out1.jsonl"), *vllm_args])
    done: list[dict] = []
    async with build_async_engine_client(
        args, usage_context=UsageContext.OPENAI_BATCH_RUNNER
    ) as engine:
        for number in range(1, int(plan["rounds"]) + 1):
            answered = folder / f"out{number}.jsonl"
            args.input_file, args.output_file = str(given), str(answered)
            await run_batch(engine, args)
            following = folder / f"in{number + 1}.jsonl"
            argv = [*plan["score"], "--batch-read", str(answered), "--batch-write", str(following)]
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
            done.append(
                {
                    "input": str(given),
                    "output": str(answered),
                    "score_status": proc.returncode,
                    "score_stderr": proc.stderr[-2000:],
                }
            )
            if proc.returncode != 0 or not following.exists():
                break
            given = following
    return done


def main() -> int:
    """Run the rounds of the plan in ``argv[1]`` with the vLLM arguments after ``--``."""
    split = sys.argv.index("--")
    plan = json.loads(Path(sys.argv[1]).read_text())
    done = asyncio.run(_rounds(plan, sys.argv[split + 1 :]))
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
