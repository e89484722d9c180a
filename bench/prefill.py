"""Prefill work and CPU wall time of stock ``hf`` versus ``hf-prefix`` on ELITR prompts.

(a) Prompt tokens each back end runs through the model, counted exactly on the real
    questions and transcripts with a real tokenizer (default: the test suite's tiny BPE
    tokenizer trained on the transcripts, whose token counts are close to Llama's): stock
    ``hf`` prefills every prompt whole; ``hf-prefix`` runs the very scheduler the model
    runs (``elitr_bench.models.kv_cache``) on the token ids; the ideal computes every
    distinct token position once (positions computed while decoding are not prefill).
(b) Wall time of both back ends, in this one run, on CPU with a small random Llama at the
    real prompt lengths, on the first ``--meetings`` meetings of the split (default 5, a
    documented fraction that keeps the run under ~5 minutes on 2 cores; ``--meetings 0``
    times every meeting). Outputs are compared token for token.

Modes: ``st`` sends every question of the split in one ``generate_until`` call, as lm-eval
does. ``mt`` sends one call per turn: turn k of every meeting, whose prompt is Fig. 5 +
transcript, q1, a1, ..., qk rendered with the chat template (a1.. are fixed dummy
answers of ``--answer-words`` words for the counts, the model's own answers for the timing).

Run: ``ELITR_BENCH_DATA_DIR=../shared/data python bench/prefill.py [--mode st|mt]
[--split dev|test2] [--meetings N] [--tokenizer PATH] [--skip-timing]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elitr_bench import prompts
from elitr_bench.data import load_benchmark
from elitr_bench.models.kv_cache import (
    LengthCache,
    LengthCacheOps,
    PrefillStats,
    PrefixStore,
    distinct_prefix_tokens,
    serve_with_prefix_reuse,
)
from elitr_bench.models.memory import LLAMA2_7B, MIB, MISTRAL_7B, ModelDims, kv_bytes_per_token

#: KV sizes the store budget can be counted at (``--kv-dims``); "timed" = the timed model.
KV_DIMS = {"llama2-7b": (LLAMA2_7B, 2), "mistral-7b": (MISTRAL_7B, 2)}

Conversation = tuple[str, list[str]]  # transcript, questions in turn order


def conversations(split: str, setting: str) -> dict[str, Conversation]:
    """Each meeting's transcript and its questions in released (turn) order."""
    bench = load_benchmark()
    out: dict[str, Conversation] = {}
    for q in sorted(bench.questions(setting, split), key=lambda q: (q.meeting_id, q.turn)):  # type: ignore[arg-type]
        _, questions = out.setdefault(q.meeting_id, (bench.meetings[q.meeting_id].transcript, []))
        questions.append(q.question)
    return out


class Renderer:
    """Builds prompts as ElitrQATask does and tokenizes them as ``hf`` does."""

    def __init__(self, tokenizer: Any, chat: bool) -> None:
        self.tok = tokenizer
        self.chat = chat and tokenizer.chat_template is not None

    def prompt(self, transcript: str, questions: list[str], answers: list[str]) -> str:
        """The prompt asking ``questions[-1]`` after the earlier turns."""
        messages = prompts.conversation(transcript, questions, answers)
        if self.chat:
            return str(
                self.tok.apply_chat_template(
                    [m.as_dict() for m in messages], tokenize=False, add_generation_prompt=True
                )
            )
        return prompts.render_plain(messages)

    def encode(self, text: str) -> list[int]:
        """Token ids as ``hf`` encodes a prompt (no second BOS after a templated one)."""
        bos = self.tok.bos_token
        kwargs = {"add_special_tokens": False} if bos and text.startswith(bos) else {}
        return list(self.tok(text, **kwargs)["input_ids"])


def turn_calls(
    convs: dict[str, Conversation], render: Renderer, mode: str, answer: str
) -> list[list[str]]:
    """The prompts of each ``generate_until`` call (one call in st, one per turn in mt)."""
    if mode == "st":
        return [[render.prompt(t, [q], []) for t, qs in convs.values() for q in qs]]
    turns = max(len(qs) for _, qs in convs.values())
    return [
        [render.prompt(t, qs[: k + 1], [answer] * k) for t, qs in convs.values() if len(qs) > k]
        for k in range(turns)
    ]


@dataclass
class Counts:
    """Prompt tokens prefilled by each back end over a whole run."""

    stock: int
    ours: int
    ideal: int
    requests: int
    peak_store_tokens: int


def count_prefill(
    calls: list[list[list[int]]], answer_ids: list[int], bytes_per_token: int, budget_mb: float
) -> Counts:
    """Run the model's scheduler on token ids with a stand-in cache and dummy answers."""
    ops = LengthCacheOps(bytes_per_token)
    store: PrefixStore[LengthCache] = PrefixStore(ops, int(budget_mb * MIB))
    stats = PrefillStats()
    fed: list[list[int]] = []
    peak = 0

    def generate(index: int, ids: list[int], cache: LengthCache, cached: int) -> list[int]:
        cache.tokens = len(ids) + len(answer_ids) - 1  # the last generated token is never fed
        fed.append(ids + answer_ids[:-1])
        return list(answer_ids)

    for call in calls:
        serve_with_prefix_reuse(call, ops, store, generate, min_prefix_tokens=256, stats=stats)
        peak = max(peak, sum(len(s) for s in store.sequences()))
    prompts_all = [ids for call in calls for ids in call]
    decode = len(fed) * (len(answer_ids) - 1)
    ideal = distinct_prefix_tokens([*prompts_all, *fed]) - decode
    return Counts(sum(map(len, prompts_all)), stats.prefilled_tokens, ideal, len(prompts_all), peak)


def build_model(tokenizer: str | None, out: Path) -> Path:
    """A random Llama with the tiny fixture's dimensions and the chosen tokenizer."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support
    from tests.support.tiny_model import build_tiny_llama

    build_tiny_llama(out)
    if tokenizer:
        import torch
        from transformers import AutoConfig, AutoTokenizer, LlamaForCausalLM

        tok = AutoTokenizer.from_pretrained(tokenizer)
        tok.save_pretrained(out)
        config = AutoConfig.from_pretrained(out)
        config.vocab_size = len(tok)
        config.bos_token_id, config.eos_token_id = tok.bos_token_id, tok.eos_token_id
        config.pad_token_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        torch.manual_seed(0)
        LlamaForCausalLM(config).save_pretrained(out, safe_serialization=True)
    return out


def timed(fn: Callable[..., list[str]], reqs: list[Any]) -> tuple[list[str], float]:
    start = time.perf_counter()
    out = fn(reqs, disable_tqdm=True)
    return out, time.perf_counter() - start


def time_backends(
    model_dir: Path, convs: dict[str, Conversation], mode: str, max_gen_toks: int
) -> None:
    """Run hf and hf-prefix on the same requests, turn by turn in mt, and print the ratio."""
    import torch
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    from elitr_bench.models.hf_prefix import HFPrefixLM

    args: dict[str, Any] = {
        "pretrained": str(model_dir),
        "dtype": "float32",
        "device": "cpu",
        "batch_size": 1,
    }
    stock, ours = HFLM(**args), HFPrefixLM(**args)
    render = Renderer(ours.tokenizer, chat=True)
    gen = {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": max_gen_toks}
    answers: dict[str, list[str]] = {m: [] for m in convs}
    turns = 1 if mode == "st" else max(len(qs) for _, qs in convs.values())
    t_stock = t_ours = 0.0
    same = total = 0
    for k in range(turns):
        # st: one call per meeting, mt: one call per turn; hf and hf-prefix alternate call by
        # call so that load from other processes hits both alike
        batches: list[list[tuple[str, str]]] = []
        for meeting, (transcript, qs) in convs.items():
            if mode == "st":
                batches.append([(meeting, render.prompt(transcript, [q], [])) for q in qs])
            elif len(qs) > k:
                if not batches:
                    batches.append([])
                batches[0].append(
                    (meeting, render.prompt(transcript, qs[: k + 1], answers[meeting]))
                )
        for batch in batches:
            reqs = [
                Instance("generate_until", {}, (c, dict(gen)), i) for i, (_, c) in enumerate(batch)
            ]
            with torch.no_grad():
                want, dt_stock = timed(stock.generate_until, reqs)
                got, dt_ours = timed(ours.generate_until, reqs)
            t_stock += dt_stock
            t_ours += dt_ours
            same += sum(a == b for a, b in zip(want, got, strict=True))
            total += len(reqs)
            for (meeting, _), text in zip(batch, got, strict=True):
                answers[meeting].append(text)
    s = ours.prefix_stats
    print(
        f"(b) wall time, CPU {torch.get_num_threads()} threads, random Llama "
        f"d={ours.model.config.hidden_size} L={ours.model.config.num_hidden_layers}, "
        f"{len(convs)} meeting(s), {total} requests, max_gen_toks={max_gen_toks}:"
    )
    print(f"    hf {t_stock:8.1f} s | hf-prefix {t_ours:8.1f} s | ratio {t_stock / t_ours:5.2f}x")
    print(
        f"    outputs identical: {same}/{total}; hf-prefix prefilled {s.prefilled_tokens:,} of "
        f"{s.prompt_tokens:,} prompt tokens ({s.reused_from_store:,} reused from earlier calls)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=["dev", "test2"])
    parser.add_argument("--setting", default="qa", choices=["qa", "conv"])
    parser.add_argument("--mode", default="st", choices=["st", "mt"])
    parser.add_argument("--tokenizer", help="tokenizer path/name (default: the tiny test BPE)")
    parser.add_argument("--plain", action="store_true", help="plain prompts, no chat template")
    parser.add_argument(
        "--answer-words", type=int, default=30, help="dummy answer length (mt counts)"
    )
    parser.add_argument("--cache-mb", type=float, default=4096.0, help="hf-prefix prefix_cache_mb")
    parser.add_argument(
        "--kv-dims",
        default="timed",
        choices=["timed", *KV_DIMS],
        help="count the store budget in KV bytes of this model (bf16) instead of the timed one",
    )
    parser.add_argument("--meetings", type=int, default=5, help="meetings timed (0 = all)")
    parser.add_argument("--max-gen-toks", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the timing")
    parser.add_argument("--skip-timing", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    from transformers import AutoConfig, AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_model(args.tokenizer, Path(tmp) / "model")
        tok = AutoTokenizer.from_pretrained(model_dir)
        dims = ModelDims.from_config(AutoConfig.from_pretrained(model_dir))
        render = Renderer(tok, chat=not args.plain)
        convs = conversations(args.split, args.setting)
        answer = " ".join(["answer"] * args.answer_words)
        answer_ids = list(tok(answer, add_special_tokens=False)["input_ids"])
        if render.chat and tok.eos_token_id is not None:
            answer_ids = [*answer_ids, tok.eos_token_id]  # the model ends its turn with EOS
        calls = [
            [render.encode(p) for p in call]
            for call in turn_calls(convs, render, args.mode, answer)
        ]
        kv_dims, kv_size = KV_DIMS.get(args.kv_dims, (dims, 4))
        counts = count_prefill(
            calls, answer_ids, kv_bytes_per_token(kv_dims, kv_size), args.cache_mb
        )

        name = args.tokenizer or f"tiny test BPE ({len(tok)} tokens)"
        print(
            f"ELITR-Bench {args.setting}/{args.split}, mode={args.mode}, {len(convs)} meetings, "
            f"{counts.requests} requests in {len(calls)} call(s), tokenizer: {name}, "
            f"{'chat template' if render.chat else 'plain prompts'}, prefix_cache_mb="
            f"{args.cache_mb:g} counted at {args.kv_dims} KV size"
        )
        print(
            f"(a) prefill tokens: hf {counts.stock:,} | hf-prefix {counts.ours:,} | "
            f"ideal {counts.ideal:,}"
        )
        print(
            f"    stock/ours {counts.stock / counts.ours:5.2f}x, stock/ideal "
            f"{counts.stock / counts.ideal:5.2f}x, ours/ideal {counts.ours / counts.ideal:5.3f}x"
        )
        gib = counts.peak_store_tokens * kv_bytes_per_token(MISTRAL_7B) / 2**30
        print(
            f"    the store held at most {counts.peak_store_tokens:,} tokens between calls "
            f"(= {gib:.1f} GiB of KV at Mistral-7B bf16)"
        )
        if args.skip_timing:
            return
        import torch

        torch.set_num_threads(args.threads)
        chosen = dict(list(convs.items())[: args.meetings or None])
        time_backends(model_dir, chosen, args.mode, args.max_gen_toks)


if __name__ == "__main__":
    main()
