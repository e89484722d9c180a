"""Stock ``hf`` at its best batch size versus ``hf-prefix``, on a real model, on the CPU.

The figure a model developer without a GPU can reproduce: SmolLM2-135M-Instruct (the
checkpoint of ``make real-model``; ``--checkpoint`` takes any local causal LM) answers
``elitr_qa_dev`` (single-turn) and ``elitr_qa_mt_dev`` (multi-turn, the released answers
as history) through ``lm_eval.simple_evaluate``, with every back end wrapping the same
weights in one process:

* ``hf b1``: lm-eval's stock ``HFLM`` at ``batch_size=1``;
* ``hf bN``: stock ``HFLM`` at each of ``--stock-batch-sizes`` (``auto`` lets lm-eval pick);
  the fastest stock row is **stock's best**, the baseline of every ratio;
* ``hf-prefix serial``: ``HFPrefixLM`` with ``prefix_batch=off``;
* ``hf-prefix batched``: ``HFPrefixLM`` with ``prefix_batch=on``;
* ``vllm apc``: lm-eval's ``vllm`` model (``--model vllm``) with automatic prefix caching,
  float32, no chunked prefill, run by the same script in the venv of ``make install-vllm``
  (``--vllm-venv``; vLLM pins its own torch and transformers). vLLM batches a call's
  requests itself (continuous batching). Its engine is loaded once, its prefix cache is
  emptied before each task, and its load time is printed apart; it runs after the
  in-process rows of each round. Skipped with a line when the venv is missing.

Everything a run with ``lm_eval --model hf|hf-prefix --apply_chat_template --metadata
'{"overlength": "truncate_middle", "judge": "none"}'`` does happens here too: the task
builds its prompts with the model's tokenizer, cuts each meeting's transcript once at a
speaker turn so the prompts fit ``--max-length``, and the model generates greedily with
the task's own settings (``max_gen_toks`` 512, stopping at the end token; ``--max-gen-toks``
overrides). The calls rotate which back end goes first on each task, so a busier moment
of a shared machine hits all alike; the figure is the ratio, not the seconds.

Printed per task and back end: prompt tokens run through the model, wall time of the
``generate_until`` call and of the whole evaluation, how many answers are byte-identical
to ``hf b1``'s, and the ratios against stock's best. Answers that differ are scored with
bench/logit_margin.py (the reference model's top-1 minus top-2 logit at the first
differing token).

Run::

    ELITR_BENCH_DATA_DIR=../shared/data python bench/real_model_cpu.py
    python bench/real_model_cpu.py --meetings 2 --questions 2 --max-length 1024   # a quick look
    python bench/real_model_cpu.py --vllm-args enforce_eager=True   # vLLM without torch.compile
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import vllm_venv

TASKS = ("elitr_qa_dev", "elitr_qa_mt_dev")
VLLM = vllm_venv.ROW


@dataclass
class Tally:
    """What one back end did on one task, summed over rounds."""

    generate_s: float = 0.0
    evaluate_s: float = 0.0
    prompt_tokens: int = 0
    prefilled_tokens: int = 0
    answers: list[list[str]] = field(default_factory=list)
    prompts: list[list[str]] = field(default_factory=list)


def docs_in_meetings(task: str, meetings: int, questions: int) -> list[int]:
    """Indices of the first ``questions`` documents (0: all) of each of the first meetings.

    A multi-turn task's documents of a meeting are its turns in order, so the first N of
    two meetings give calls of two conversations each (what ``prefix_batch`` batches).
    """
    from lm_eval.tasks import TaskManager

    docs = list(TaskManager().load([task])["tasks"][task].eval_docs)
    order: list[str] = []
    per: dict[str, list[int]] = {}
    for i, doc in enumerate(docs):
        if doc["meeting_id"] not in per:
            order.append(doc["meeting_id"])
            per[doc["meeting_id"]] = []
        per[doc["meeting_id"]].append(i)
    return [i for m in order[:meetings] for i in per[m][: questions or None]]


def timed(lm: Any, tally: Tally) -> Callable[..., list[str]]:
    """Wrap ``lm.generate_until`` to time it and keep its answers and prompt lengths."""
    original = lm.generate_until

    def generate_until(requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        tally.prompt_tokens += sum(len(lm.tok_encode(r.args[0])) for r in requests)
        start = time.perf_counter()
        out: list[str] = original(requests, disable_tqdm=True)
        tally.generate_s += time.perf_counter() - start
        tally.answers.append(list(out))
        tally.prompts.append([str(r.args[0]) for r in requests])
        return out

    return generate_until


def evaluate_once(
    lm: Any, task: str, docs: list[int], args: argparse.Namespace, tally: Tally
) -> None:
    """One ``simple_evaluate`` of ``task`` on ``lm``, as the ``lm_eval`` CLI would run it."""
    import lm_eval

    lm.generate_until = timed(lm, tally)
    before = tally.prompt_tokens
    start = time.perf_counter()
    try:
        lm_eval.simple_evaluate(
            model=lm,
            tasks=[task],
            samples={task: docs},
            apply_chat_template=True,
            gen_kwargs=f"max_gen_toks={args.max_gen_toks}" if args.max_gen_toks else None,
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


def stock_sizes(text: str) -> list[int | str]:
    """``--stock-batch-sizes``: positive integers or ``auto``."""
    sizes: list[int | str] = []
    for part in text.split(","):
        part = part.strip()
        if part == "auto" or (part.isdigit() and int(part) > 0):
            sizes.append(part if part == "auto" else int(part))
        elif part:
            raise argparse.ArgumentTypeError(f"{part!r}: use positive integers or auto")
    return sizes


def margins(model: Any, tokenizer: Any, ref: Tally, other: Tally) -> list[str]:
    """One line per answer of ``other`` that differs from ``ref``'s, with its logit margin."""
    from logit_margin import first_divergence

    lines = []
    for prompts, want, got in zip(ref.prompts, ref.answers, other.answers, strict=True):
        for prompt, a, b in zip(prompts, want, got, strict=True):
            if a != b:
                d = first_divergence(model, tokenizer, prompt, a, b)
                lines.append(f"    differs at answer token {d and d.position}: {d}")
    return lines


def vllm_child(args: argparse.Namespace, checkpoint: Path, out: Path) -> int:
    """Run only the ``vllm apc`` row (in the vLLM venv) and write its tallies to ``out``."""
    from lm_eval.models.vllm_causallms import VLLM as VLLMLM

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    chosen = {task: docs_in_meetings(task, args.meetings, args.questions) for task in tasks}
    start = time.perf_counter()
    lm = VLLMLM(
        pretrained=str(checkpoint),
        dtype="float32",
        max_model_len=args.max_length,
        enable_prefix_caching=True,
        # vLLM 0.32's CPU engine dies on a seeded request whose prefill is chunked
        enable_chunked_prefill=False,
        max_num_batched_tokens=max(args.max_length, 8192),
        **vllm_venv.extra_args(args.vllm_args),
    )
    load_s = time.perf_counter() - start
    tallies = {task: Tally() for task in tasks}
    for _ in range(args.rounds):
        for task in tasks:
            lm.model.reset_prefix_cache()  # no task is helped by an earlier one's blocks
            evaluate_once(lm, task, chosen[task], args, tallies[task])
            print(f"  {task} ({len(chosen[task])} docs) {VLLM}: {tallies[task].generate_s:.0f} s")
    import vllm

    record = {
        "load_s": load_s,
        "version": vllm.__version__,
        "tallies": {task: vars(t) for task, t in tallies.items()},
    }
    out.write_text(json.dumps(record))
    return 0


def vllm_row(
    args: argparse.Namespace, argv: Sequence[str], checkpoint: Path
) -> tuple[dict[str, Tally], str]:
    """The ``vllm apc`` tallies from a run of this script in the vLLM venv, and a note."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "vllm.json"
        child = [*argv, "--checkpoint", str(checkpoint), "--vllm-child", str(out)]
        failed = vllm_venv.run_child(__file__, child, args.vllm_venv, out, kv_cache_gib="2")
        if failed:
            return {}, failed
        record = json.loads(out.read_text())
    tallies = {task: Tally(**fields) for task, fields in record["tallies"].items()}
    note = f"vllm apc: vLLM {record['version']}, engine loaded in {record['load_s']:.0f} s"
    return tallies, note


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="local model folder (default: make real-model's)")
    parser.add_argument("--meetings", type=int, default=2, help="first N meetings per task")
    parser.add_argument("--questions", type=int, default=0, help="first N per meeting (0: all)")
    parser.add_argument("--max-length", type=int, default=4096, help="the model's window")
    parser.add_argument(
        "--max-gen-toks", type=int, default=0, help="override the task's 512 (0: the task's)"
    )
    parser.add_argument(
        "--stock-batch-sizes",
        type=stock_sizes,
        default=stock_sizes("8"),
        help="stock hf batch sizes besides 1 (comma list; auto: lm-eval detects)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="repeat, rotating the order")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma list of our QA tasks")
    vllm_venv.add_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.meetings < 1 or args.rounds < 1:
        parser.error("--meetings and --rounds must be at least 1")
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # logit_margin

    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    if args.vllm_child:
        return vllm_child(args, Path(args.checkpoint), args.vllm_child)

    import torch
    import transformers
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from elitr_bench.models.hf_prefix import HFPrefixLM

    transformers.logging.set_verbosity_error()
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
    common = {"pretrained": model, "tokenizer": tokenizer, "max_length": args.max_length}
    stock: dict[str, Callable[[], Any]] = {"hf b1": partial(HFLM, **common, batch_size=1)}
    for size in args.stock_batch_sizes:
        if size != 1:
            stock[f"hf b{size}"] = partial(HFLM, **common, batch_size=size)
    ours: dict[str, Callable[[], Any]] = {
        "hf-prefix serial": partial(HFPrefixLM, **common, prefix_batch="off"),
        "hf-prefix batched": partial(HFPrefixLM, **common, prefix_batch="on"),
    }
    backends = {**stock, **ours}
    gen = f"max_gen_toks={args.max_gen_toks}" if args.max_gen_toks else "the task's (512, to EOS)"
    print(
        f"model: {checkpoint.name} ({model.num_parameters() / 1e6:.0f} M parameters, float32, "
        f"{model.config._attn_implementation} attention), CPU with {torch.get_num_threads()} "
        f"threads; max_length={args.max_length}, generation: {gen}, greedy; "
        f"torch {torch.__version__}, transformers {transformers.__version__}"
    )
    chosen = {task: docs_in_meetings(task, args.meetings, args.questions) for task in tasks}
    names = list(backends)
    tallies = {(task, name): Tally() for task in tasks for name in names}
    step = 0
    for _ in range(args.rounds):
        for task in tasks:
            order = names[step % len(names) :] + names[: step % len(names)]
            step += 1
            for name in order:
                # a fresh model object per call: no run is helped by an earlier run's store
                evaluate_once(backends[name](), task, chosen[task], args, tallies[task, name])
                t = tallies[task, name]
                print(
                    f"  {task} ({len(chosen[task])} docs) {name}: {t.generate_s:.0f} s", flush=True
                )
    notes = []
    if not args.no_vllm:
        child_argv = [a for a in argv if a != "--no-vllm"]
        found, note = vllm_row(args, child_argv, checkpoint)
        notes.append(note)
        if found:
            names.append(VLLM)
            tallies.update({(task, VLLM): found[task] for task in tasks})
    for note in notes:
        print(note)
    for task in tasks:
        ref = tallies[task, "hf b1"]
        best = min(stock, key=lambda name: tallies[task, name].generate_s)
        base = tallies[task, best]
        total = sum(len(x) for x in ref.answers)
        print(
            f"\n[{task}] first {args.meetings} meeting(s), {len(chosen[task])} questions x "
            f"{args.rounds} round(s); stock's best: {best}"
        )
        fastest = min(names, key=lambda name: tallies[task, name].generate_s)
        print(
            f"  {'back end':<18} {'prefill tok':>12} {'generate s':>11} {'evaluate s':>11} "
            f"{'same as hf b1':>13} {'speed vs best':>13} {'vs fastest':>10}"
        )
        for name in names:
            t = tallies[task, name]
            same = sum(
                a == b
                for x, y in zip(ref.answers, t.answers, strict=True)
                for a, b in zip(x, y, strict=True)
            )
            # vLLM's prefix-cache hits are not exposed by lm-eval's model: "-"
            prefill = "-" if name == VLLM else f"{t.prefilled_tokens:,}"
            print(
                f"  {name:<18} {prefill:>12} {t.generate_s:>11.1f} "
                f"{t.evaluate_s:>11.1f} {f'{same}/{total}':>13} "
                f"{ratio(base.generate_s, t.generate_s):>13} "
                f"{ratio(tallies[task, fastest].generate_s, t.generate_s):>10}"
            )
        if (task, VLLM) in tallies:
            prompts_same = ref.prompts == tallies[task, VLLM].prompts
            print(f"  {VLLM} prompts identical to hf b1's: {'yes' if prompts_same else 'NO'}")
        for name in names[1:]:
            for line in margins(model, tokenizer, ref, tallies[task, name]):
                print(f"  {name} vs hf b1:{line.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
