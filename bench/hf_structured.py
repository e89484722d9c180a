"""Cost of decoding an hf judge's restatement under its JSON schema (xgrammar) vs. free.

Sends the same batch of QA restatement turns (the GPT-4 rubric's, after a prose reply) to
an ``hf:`` judge twice, with the schema (``structured=auto``) and without
(``structured=off``), and prints for each the wall time, the decoding steps, the time per
step (prefill included) and how many restatements the strict reader takes, then the
ratios, and the time spent in the logits processor itself per step (its share of the
schema batch). The first schema of a tokenizer pays its one-time tables (printed apart).

    python bench/hf_structured.py [--model DIR] [--batch 8] [--max-tokens 64]

The default model is SmolLM2-135M-Instruct (``make real-model``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from elitr_bench.judges import parse_judge_spec  # noqa: E402
from elitr_bench.judges.asking import policy_of, request_for, restatement_request  # noqa: E402
from elitr_bench.judges.reading import Reading, read_restatement  # noqa: E402
from elitr_bench.judges.rubrics import GPT4  # noqa: E402
from elitr_bench.llm import constrained as structured_module  # noqa: E402
from elitr_bench.llm.cache import Completion  # noqa: E402
from elitr_bench.llm.hf_backend import HFBackend  # noqa: E402

REPLY = "The response names the right project but misses the deadline the reference gives."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    if not args.model:
        from elitr_bench.models.real_model import ensure_checkpoint

        args.model = str(ensure_checkpoint())
    restatement = GPT4.grammar.restatement
    assert restatement is not None
    first = Reading.unscored(GPT4.grammar.fields, "no score in the asked format")

    spec = f"hf:{args.model},max_tokens={args.max_tokens},batch_size={args.batch}"
    config = parse_judge_spec(f"{spec},temperature=0,progress=false")
    assert policy_of(config).structured, "xgrammar does not import: pip install xgrammar"
    backend = HFBackend(config)

    def run(structured: bool) -> tuple[float, list[Completion]]:
        rows = [
            restatement_request(
                request_for(config, f"Judge answer {i}: the meeting is on day {i}.", 0),
                REPLY,
                restatement,
                structured,
            )
            for i in range(args.batch)
        ]

        async def batch() -> list[Completion]:
            outs = await asyncio.gather(*(backend.complete(r) for r in rows))
            await backend.aclose()
            return outs

        start = time.perf_counter()
        outs = asyncio.run(batch())
        return time.perf_counter() - start, outs

    masking: list[float] = []  # seconds of each call of the schema's logits processor
    make = structured_module._row_processor

    def timed_processor(*a: Any) -> Any:
        processor = make(*a)
        call = type(processor).__call__

        def timed(self: Any, input_ids: Any, scores: Any) -> Any:
            start = time.perf_counter()
            out = call(self, input_ids, scores)
            masking.append(time.perf_counter() - start)
            return out

        type(processor).__call__ = timed
        return processor

    structured_module._row_processor = timed_processor
    run(False)  # loads the model
    free_s, free = run(False)
    cold_s, _ = run(True)  # builds the tokenizer's grammar tables, compiles the schema
    masking.clear()
    schema_s, schema = run(True)
    for name, secs, outs in (("free", free_s, free), ("schema", schema_s, schema)):
        steps = max(o.completion_tokens for o in outs)
        read = sum(
            read_restatement(GPT4.grammar, first, o.text, o.finish_reason).complete for o in outs
        )
        print(
            f"{name:>6}: {secs:6.2f} s, {steps} steps, {1000 * secs / steps:6.1f} ms/step, "
            f"{read}/{len(outs)} restatements read; e.g. {outs[0].text[:60]!r}"
        )
    per_step = (schema_s / max(o.completion_tokens for o in schema)) / (
        free_s / max(o.completion_tokens for o in free)
    )
    print(f"schema/free: {schema_s / free_s:.2f}x wall, {per_step:.2f}x per step")
    mask_ms = 1000 * sum(masking) / len(masking)
    print(
        f"the mask: {mask_ms:.2f} ms per step for {args.batch} rows, "
        f"{sum(masking) / schema_s:.1%} of the schema batch's wall time"
    )
    print(
        f"first schema batch (tokenizer tables + compile): {cold_s - schema_s:+.2f} s over the next"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
