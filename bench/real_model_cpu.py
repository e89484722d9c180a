"""Stock ``hf`` versus ``hf-prefix`` on a real instruction model, on the CPU, through lm-eval.

The figure a model developer without a GPU can reproduce: SmolLM2-135M-Instruct (the
checkpoint of ``make real-model``; ``--checkpoint`` takes any local causal LM) answers the
first ``--meetings`` meetings of ``elitr_qa_dev`` (single-turn) and ``elitr_qa_mt_dev``
(multi-turn, the released answers as history) through ``lm_eval.simple_evaluate``, once
with lm-eval's stock ``HFLM`` and once with our ``HFPrefixLM``, both wrapping the same
weights in one process. Everything a run with ``lm_eval --model hf|hf-prefix
--apply_chat_template --metadata '{"overlength": "truncate_middle", "judge": "none"}'``
does happens here too: the task builds its prompts with the model's tokenizer, cuts each
meeting's transcript once at a speaker turn so the prompts fit ``--max-length``, and the
model generates greedily.

Printed per task and back end: wall time of the ``generate_until`` call (where the two
differ) and of the whole evaluation, prompt tokens run through the model (stock: every
prompt whole; ``hf-prefix``: its own count of prefilled tokens), and whether every answer
is byte-identical. The calls alternate between the back ends (stock first on one task,
``hf-prefix`` first on the next, ``--rounds`` times), so a slower or busier moment of a
shared machine hits both alike; the figure is the ratio, not the seconds.

Run (about 20 minutes on 2 CPU cores at the defaults)::

    ELITR_BENCH_DATA_DIR=../shared/data python bench/real_model_cpu.py
    python bench/real_model_cpu.py --meetings 1 --max-length 2048     # a quicker look
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TASKS = ("elitr_qa_dev", "elitr_qa_mt_dev")


@dataclass
class Tally:
    """What one back end did on one task, summed over rounds."""

    generate_s: float = 0.0
    evaluate_s: float = 0.0
    prompt_tokens: int = 0
    prefilled_tokens: int = 0
    answers: list[list[str]] = field(default_factory=list)


def docs_in_meetings(task: str, meetings: int) -> int:
    """How many of the task's documents (ordered by meeting) the first meetings hold."""
    from lm_eval.tasks import TaskManager

    docs = list(TaskManager().load([task])["tasks"][task].eval_docs)
    wanted: list[str] = []
    for doc in docs:
        if doc["meeting_id"] not in wanted:
            wanted.append(doc["meeting_id"])
    keep = set(wanted[:meetings])
    count = 0
    for doc in docs:  # a prefix of the list: --limit takes the first N
        if doc["meeting_id"] not in keep:
            break
        count += 1
    return count


def timed(lm: Any, tally: Tally) -> Callable[..., list[str]]:
    """Wrap ``lm.generate_until`` to time it and keep its answers and prompt lengths."""
    original = lm.generate_until

    def generate_until(requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        tally.prompt_tokens += sum(len(lm.tok_encode(r.args[0])) for r in requests)
        start = time.perf_counter()
        out: list[str] = original(requests, disable_tqdm=True)
        tally.generate_s += time.perf_counter() - start
        tally.answers.append(list(out))
        return out

    return generate_until


def evaluate_once(lm: Any, task: str, limit: int, args: argparse.Namespace, tally: Tally) -> None:
    """One ``simple_evaluate`` of ``task`` on ``lm``, as the ``lm_eval`` CLI would run it."""
    import lm_eval

    lm.generate_until = timed(lm, tally)
    before = tally.prompt_tokens
    start = time.perf_counter()
    try:
        lm_eval.simple_evaluate(
            model=lm,
            tasks=[task],
            limit=limit,
            apply_chat_template=True,
            gen_kwargs=f"max_gen_toks={args.max_gen_toks}",
            metadata={"overlength": "truncate_middle", "judge": "none"},
            bootstrap_iters=0,
            verbosity="ERROR",
        )
    finally:
        del lm.generate_until  # the class's method again for the next task
    tally.evaluate_s += time.perf_counter() - start
    stats = getattr(lm, "prefix_stats", None)
    # stock hf prefills every prompt whole: this call's prompt tokens, not the running total
    prompted = tally.prompt_tokens - before
    tally.prefilled_tokens += stats.prefilled_tokens if stats is not None else prompted


def ratio(a: float, b: float) -> str:
    """``a/b`` as ``4.21x``, or ``-`` when undefined."""
    return f"{a / b:.2f}x" if b else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="local model folder (default: make real-model's)")
    parser.add_argument("--meetings", type=int, default=2, help="first N meetings per task")
    parser.add_argument("--max-length", type=int, default=4096, help="the model's window")
    parser.add_argument("--max-gen-toks", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=1, help="repeat, alternating the order")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma list of our QA tasks")
    args = parser.parse_args(argv)
    if args.meetings < 1 or args.rounds < 1:
        parser.error("--meetings and --rounds must be at least 1")
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import torch
    import transformers
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from elitr_bench.models.hf_prefix import HFPrefixLM

    transformers.logging.set_verbosity_error()
    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    if args.checkpoint:
        checkpoint = Path(args.checkpoint)
    else:
        from elitr_bench.models.real_model import RealModelError, ensure_checkpoint

        try:
            checkpoint = ensure_checkpoint()
        except RealModelError as exc:
            print(f"skipped: the real model is unavailable ({exc})", file=sys.stderr)
            return 0  # `make bench` stays green offline without the cached model
    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    common = {"pretrained": model, "tokenizer": tokenizer, "batch_size": 1}
    common["max_length"] = args.max_length
    stock = HFLM(**common)
    print(
        f"model: {checkpoint.name} ({model.num_parameters() / 1e6:.0f} M parameters, float32, "
        f"{model.config._attn_implementation} attention), CPU with {torch.get_num_threads()} "
        f"threads; max_length={args.max_length}, max_gen_toks={args.max_gen_toks}, batch_size=1, "
        f"greedy; torch {torch.__version__}, transformers {transformers.__version__}"
    )
    limits = {task: docs_in_meetings(task, args.meetings) for task in tasks}
    tallies = {(task, name): Tally() for task in tasks for name in ("hf", "hf-prefix")}
    step = 0
    for _ in range(args.rounds):
        for task in tasks:
            order = ("hf", "hf-prefix") if step % 2 == 0 else ("hf-prefix", "hf")
            step += 1
            for name in order:
                # a fresh hf-prefix per call: no run is helped by an earlier run's store
                lm = stock if name == "hf" else HFPrefixLM(**common)
                evaluate_once(lm, task, limits[task], args, tallies[task, name])
                t = tallies[task, name]
                print(f"  {task} --limit {limits[task]} {name}: {t.generate_s:.0f} s", flush=True)
    for task in tasks:
        ref, ours = tallies[task, "hf"], tallies[task, "hf-prefix"]
        same = sum(
            a == b
            for x, y in zip(ref.answers, ours.answers, strict=True)
            for a, b in zip(x, y, strict=True)
        )
        total = sum(len(x) for x in ref.answers)
        print(
            f"\n[{task}] first {args.meetings} meeting(s), {limits[task]} questions x "
            f"{args.rounds} round(s); answers identical hf vs hf-prefix: {same}/{total}"
        )
        print(f"  {'back end':<10} {'prefill tok':>12} {'generate s':>11} {'evaluate s':>11}")
        for name, t in (("hf", ref), ("hf-prefix", ours)):
            print(
                f"  {name:<10} {t.prefilled_tokens:>12,} {t.generate_s:>11.1f} "
                f"{t.evaluate_s:>11.1f}"
            )
        print(
            f"  stock/ours: prefill tokens {ratio(ref.prefilled_tokens, ours.prefilled_tokens)}, "
            f"generate time {ratio(ref.generate_s, ours.generate_s)}, whole evaluation "
            f"{ratio(ref.evaluate_s, ours.evaluate_s)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
