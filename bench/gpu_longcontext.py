"""Long-context speed on a GPU: stock ``hf`` at its best batch versus ``hf-prefix``, 8B shape.

Our users run 7-8B long-context checkpoints on one A100/H100. This script measures what
they need to know on the real ELITR-Bench prompts: wall time, prefill tokens and their
throughput, peak GPU memory, and how close the prefill comes to the hardware's bf16 peak,
in one run, for these back ends (all lm-eval models wrapping the same weights):

* ``hf b1``: lm-eval's stock ``hf`` at ``batch_size=1``;
* ``hf bN``: stock ``hf`` at each of ``--stock-batch-sizes`` (a size that runs out of
  memory is reported as such); the fastest stock row is **stock's best**, the baseline
  of the printed speed ratios;
* ``hf-prefix serial`` (``prefix_batch=off``) and ``hf-prefix batched``
  (``prefix_batch=on``, rows bounded by the free memory);
* ``vllm apc``: vLLM with automatic prefix caching (``enable_prefix_caching=True``; its
  default chunked prefill, CUDA graphs and continuous batching on a GPU), run by this
  script in the venv of ``make install-vllm`` (``--vllm-venv``; vLLM pins its own torch and
  transformers) after the in-process rows, over the same calls. See below.

Generation follows the tasks: greedy, ``max_gen_toks`` 512, each answer ending at the end
token. A random model never writes its end token by itself, so a forward hook ends an
answer where a hash of (last token, position) hits 1 in ``--mean-answer-tokens`` (100,
close to the released answers' mean length): the lengths are geometric, differ per
answer, and are the same under every back end, since both the token and its position
are (0 turns it off: every answer runs to ``max_gen_toks``).

* The model is **randomly initialised** from a published shape (default Llama-3.1-8B:
  32 layers, hidden 4096, 32 heads, 8 KV heads, MLP 14336, vocabulary 128256, RoPE theta
  500000) in bf16. No weights are downloaded: the cost of a forward pass does not depend
  on the weights' values. The output rows of ids the tokenizer lacks are zeroed, so greedy
  answers are decodable text of ``--max-gen-toks`` tokens, as a real model's would be.
* The prompts are the real ones: the ELITR-Bench dev transcripts and questions rendered
  with the task's Fig. 5 prompt and chat template, tokenised with any local tokenizer
  (``--tokenizer``; default: the test suite's BPE trained on the transcripts, whose counts
  are close to Llama's). Only the lengths matter.
* Both back ends are lm-eval models (``lm_eval.models.huggingface.HFLM`` and
  ``elitr_bench.models.hf_prefix.HFPrefixLM``) wrapping the same weights, called with the
  same requests as lm-eval calls them: ``st`` is single-turn QA (every question of the
  split in one ``generate_until`` call), ``mt`` multi-turn QA and ``conv`` multi-turn Conv
  (one call per turn; the history is ``hf b1``'s own answers, fed to every back end so
  that all see the same prompts). Each call rotates which back end goes first, so load
  from elsewhere hits all alike.

The ``vllm apc`` row loads the same shape with random weights of its own (``config.json``
and the tokenizer written to a folder, ``vllm.LLM(load_format="dummy")``, bf16 on a GPU,
float32 on the CPU; no download), once for all modes (its load time is printed apart, not
in the ratios), and empties its prefix cache before each mode. The forward hook that ends
the ``hf`` rows' answers cannot reach into vLLM, so each request gets the exact prompt ids
``hf b1`` fed its model in the same call and ``SamplingParams(max_tokens=n,
ignore_eos=True, temperature=0)`` with ``n`` the tokens ``hf b1`` decoded for it: vLLM
decodes exactly as many tokens per request. vLLM runs one ``generate`` per call, batching
its requests itself. Since its weights differ, its answers are not comparable: "same as
hf b1" reads n/a. Its prefill tokens are the prompt tokens its prefix cache did not hold
(``num_cached_tokens``); prefill time and utilisation are not measured ("-"); its memory
is what it reserves up front (``gpu_memory_utilization``, the GPU memory in use once the
engine loaded, its KV cache), printed on its line above the tables instead of an allocator
peak. It runs when the venv exists (else that line says it was skipped); ``--no-vllm``
leaves it out.

What is measured, per mode and back end:

* prefill tokens and prefill time: every forward pass of more than one new token is a
  prefill; its time is taken with CUDA events around the forward (no extra syncs);
* wall time of the ``generate_until`` calls (prefill and decode);
* peak GPU memory: ``torch.cuda.max_memory_allocated`` (the caching allocator's
  statistics), reset before each call, maximum over the mode's calls;
* prefill compute utilisation: achieved FLOP/s over the GPU's dense bf16 peak (from the
  device name, or ``--peak-tflops``). FLOPs of a forward with ``n`` new tokens after ``p``
  cached ones, batch ``b``, written out in :func:`forward_flops`:

      linear    = 2 * P * n * b                 P = non-embedding weights (Q, K, V, O, MLP)
      attention = 4 * L * H * d * b * (n * p + n * (n + 1) / 2)
                                                QK^T and AV over the causal span, H heads of d
      lm head   = 2 * V * D * b                 logits of the last position only

  (norms, RoPE and softmax are left out: under 0.1% at these sizes).

Run on one GPU, after ``make install-vllm`` in the checkout (the CUDA build of vLLM; the
prepared command of docs/performance-baselines.md, an estimate of 8 minutes of an H100
plus vLLM's engine start; all of dev in three modes takes far longer at batch 1)::

    make install-vllm
    ELITR_BENCH_DATA_DIR=../shared/data python bench/gpu_longcontext.py \
        --modes st,mt --meetings 2 --questions 8

Without a GPU only ``--shape tiny`` runs (the same code on a tiny shape, in float32 on
the CPU, the ``vllm apc`` row included: eager, without chunked prefill, which vLLM 0.32's
CPU engine cannot run here; this keeps the script tested); its numbers say nothing about
speed.
"""

from __future__ import annotations

import argparse
import gc
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support (the tokenizer) and bench/prefill.py
sys.path.insert(0, str(REPO / "bench"))

import vllm_venv  # noqa: E402
from prefill import Conversation, Renderer, conversations  # noqa: E402

GIB = 2**30


@dataclass(frozen=True)
class Shape:
    """A decoder's dimensions: all that the cost of a forward pass depends on.

    Attributes:
        name: Label printed with the results.
        layers: Transformer blocks.
        hidden: Model width.
        heads: Query heads.
        kv_heads: Key/value heads (grouped-query attention).
        mlp: Width of the gated MLP.
        vocab: Output vocabulary (0: the tokenizer's size).
        rope_theta: RoPE base.
        max_positions: Longest sequence the config allows.
        tie_embeddings: Whether the LM head shares the input embedding.
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    mlp: int
    vocab: int
    rope_theta: float
    max_positions: int
    tie_embeddings: bool = False

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden // self.heads

    def non_embedding_params(self) -> int:
        """Weights every token passes through: attention projections and the MLP."""
        q_o = 2 * self.hidden * self.heads * self.head_dim
        k_v = 2 * self.hidden * self.kv_heads * self.head_dim
        return self.layers * (q_o + k_v + 3 * self.hidden * self.mlp)

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """KV cache one token takes: a key and a value per layer and KV head."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


SHAPES = {
    # meta-llama/Llama-3.1-8B config.json (public model card).
    "llama-3.1-8b": Shape("Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256, 500000.0, 131072),
    # The same code path in seconds on a CPU; its numbers say nothing about speed. Heads of
    # 32: vLLM's CPU attention takes no smaller head size.
    "tiny": Shape("tiny", 2, 64, 2, 1, 128, 0, 500000.0, 32768, tie_embeddings=True),
}

#: Dense bf16 tensor-core peak (TFLOP/s, no sparsity) from the vendors' data sheets,
#: matched on ``torch.cuda.get_device_name()``; first match wins.
PEAK_BF16_TFLOPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("H100", "PCIE"), 756.0),
    (("H100", "NVL"), 835.0),
    (("H100",), 989.0),  # SXM5 / "80GB HBM3"
    (("H200",), 989.0),
    (("GH200",), 989.0),
    (("A100",), 312.0),
    (("L40S",), 362.0),
    (("L4",), 121.0),
    (("A10",), 125.0),
)


def peak_tflops(device_name: str) -> float | None:
    """The dense bf16 peak of a GPU named ``device_name``, or None when unknown."""
    upper = device_name.upper()
    for needles, tflops in PEAK_BF16_TFLOPS:
        if all(n in upper for n in needles):
            return tflops
    return None


def forward_flops(shape: Shape, new: int, cached: int, batch: int = 1) -> float:
    """FLOPs of one forward pass of ``new`` tokens after ``cached`` ones (module docstring)."""
    linear = 2.0 * shape.non_embedding_params() * new * batch
    causal_span = new * cached + new * (new + 1) / 2
    attention = 4.0 * shape.layers * shape.heads * shape.head_dim * batch * causal_span
    head = 2.0 * shape.vocab * shape.hidden * batch
    return linear + attention + head


@dataclass
class PathStats:
    """What one back end did in one mode."""

    wall_s: float = 0.0
    prefill_tokens: int = 0
    prefill_flops: float = 0.0
    prefill_s: float = 0.0
    peak_bytes: int = 0
    requests: int = 0
    oom: bool = False
    #: Timed by vLLM's child process: wall time and prefill tokens only (-1: unknown).
    outside: bool = False

    def add(self, other: PathStats) -> None:
        """Accumulate a call's numbers (peak memory is a maximum, the rest sums)."""
        self.wall_s += other.wall_s
        self.prefill_tokens += other.prefill_tokens
        self.prefill_flops += other.prefill_flops
        self.prefill_s += other.prefill_s
        self.peak_bytes = max(self.peak_bytes, other.peak_bytes)
        self.requests += other.requests


@dataclass
class ForwardMeter:
    """Times and counts the prefill forwards of a model through forward hooks.

    A forward of more than one new token is a prefill (a decode step feeds one). On a
    GPU the time comes from CUDA events recorded around the forward, read after the
    call's final synchronisation, so the measurement adds no sync of its own.
    """

    shape: Shape
    cuda: bool
    pending: list[tuple[int, int, int, Any, Any]] = field(default_factory=list)
    _open: tuple[int, int, int, Any] | None = None

    def attach(self, model: Any) -> None:
        """Register the hooks on the decoder body, which ``hf-prefix`` also prefills through."""
        body = model.get_decoder()
        body.register_forward_pre_hook(self._before, with_kwargs=True)
        body.register_forward_hook(self._after, with_kwargs=True)

    def _before(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:  # inputs_embeds: not used by either back end
            return
        batch, new = int(ids.shape[0]), int(ids.shape[-1])
        if new <= 1:
            return
        cache = kwargs.get("cache", kwargs.get("past_key_values"))
        cached = int(cache.get_seq_length()) if cache is not None else 0
        self._open = (batch, new, cached, self._stamp())

    def _after(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        if self._open is not None:
            batch, new, cached, start = self._open
            self.pending.append((batch, new, cached, start, self._stamp()))
            self._open = None

    def _stamp(self) -> Any:
        if self.cuda:
            import torch

            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def drain(self, stats: PathStats) -> None:
        """Move the recorded forwards into ``stats`` (call after a synchronisation)."""
        for batch, new, cached, start, end in self.pending:
            stats.prefill_tokens += batch * new
            stats.prefill_flops += forward_flops(self.shape, new, cached, batch)
            stats.prefill_s += start.elapsed_time(end) / 1000 if self.cuda else end - start
        self.pending.clear()


def llama_config(shape: Shape, vocab_in_tokenizer: int) -> Any:
    """The ``LlamaConfig`` of ``shape`` (its vocabulary: the tokenizer's when 0)."""
    from transformers import LlamaConfig

    vocab = shape.vocab or vocab_in_tokenizer
    if vocab < vocab_in_tokenizer:
        raise SystemExit(
            f"--tokenizer has {vocab_in_tokenizer} tokens, more than the shape's vocabulary "
            f"of {vocab}; use a tokenizer of at most {vocab} tokens"
        )
    return LlamaConfig(
        vocab_size=vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.mlp,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        rope_theta=shape.rope_theta,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=shape.tie_embeddings,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )


def build_model(shape: Shape, vocab_in_tokenizer: int, device: str, dtype: Any) -> Any:
    """A randomly initialised Llama of ``shape`` on ``device`` (no download, no disk).

    The output rows of ids beyond the tokenizer are zeroed: random logits elsewhere are
    positive at their maximum, so greedy decoding picks ids the tokenizer can decode,
    and answers have the length a real model's would.
    """
    import torch
    from transformers import LlamaForCausalLM

    config = llama_config(shape, vocab_in_tokenizer)
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM._from_config(config, dtype=dtype, attn_implementation="sdpa")
    with torch.no_grad():
        model.get_output_embeddings().weight[vocab_in_tokenizer:].zero_()
    return model.eval()


def load_tokenizer(path: str | None, scratch: Path) -> Any:
    """The tokenizer whose lengths the prompts take: ``path``, else the tests' BPE."""
    from transformers import AutoTokenizer

    if path:
        return AutoTokenizer.from_pretrained(path)
    from tests.support.tiny_model import build_tiny_llama

    build_tiny_llama(scratch)  # a tokenizer trained on the transcripts (and a tiny model)
    return AutoTokenizer.from_pretrained(scratch)


def select(
    convs: dict[str, Conversation], meetings: int, questions: int, ids: Sequence[str] = ()
) -> dict[str, Any]:
    """The first ``meetings`` meetings, each with its first ``questions`` questions (0: all).

    ``ids`` (when given) are the meetings to take, in the split's order, before the first
    ``meetings`` of them are kept.
    """
    unknown = sorted(set(ids) - set(convs))
    if unknown:
        raise SystemExit(
            f"--meeting-ids: no meeting {', '.join(unknown)} in this split; "
            f"its meetings are {', '.join(convs)}"
        )
    chosen = [(m, c) for m, c in convs.items() if not ids or m in ids][: meetings or None]
    return {m: (t, qs[: questions or None]) for m, (t, qs) in chosen}


def run_call(
    generate: Callable[..., list[str]], prompts: Sequence[str], gen: dict[str, Any], meter: Any
) -> tuple[list[str], PathStats]:
    """One ``generate_until`` call, as lm-eval makes it, with its time, prefill and memory."""
    import torch
    from lm_eval.api.instance import Instance

    reqs = [Instance("generate_until", {}, (p, dict(gen)), i) for i, p in enumerate(prompts)]
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    with torch.no_grad():
        out = generate(reqs, disable_tqdm=True)
    if cuda:
        torch.cuda.synchronize()
    stats = PathStats(wall_s=time.perf_counter() - start, requests=len(reqs))
    if cuda:
        stats.peak_bytes = torch.cuda.max_memory_allocated()
    meter.drain(stats)
    return out, stats


class AnswerEnd:
    """Ends a random model's answers like a real model's: at its end token, at varied lengths.

    A forward hook on the causal LM: where ``hash(last input token, its position)`` is 0
    modulo ``mean``, the last position's logits are set so that the end token wins. The
    token and its position (from ``position_ids``, which ``generate`` takes from the
    attention mask, so padding does not shift it) are the same for an answer under every
    back end and batch size, so all back ends end each answer at the same token.
    """

    def __init__(self, mean: int, eos: int) -> None:
        self.mean = mean
        self.eos = eos

    def attach(self, model: Any) -> None:
        """Register the hook (nothing when ``mean`` is 0)."""
        if self.mean > 0:
            model.register_forward_hook(self._after, with_kwargs=True)

    def _after(self, module: Any, args: Any, kwargs: dict[str, Any], output: Any) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        positions = kwargs.get("position_ids")
        if ids is None or positions is None:
            return
        token = ids[:, -1].long()
        where = positions[..., -1].long().expand_as(token)
        ends = (token * 1_000_003 + where * 7_919) % self.mean == 0
        if bool(ends.any()):
            logits = output.logits
            top = logits[:, -1].max(dim=-1).values
            logits[ends, -1, self.eos] = top[ends] + 1.0


class DecodeLengths:
    """The ids ``hf b1`` fed its model per prompt, and how many tokens it decoded for it.

    What the ``vllm apc`` row sends: the same prompt ids (after lm-eval's left truncation)
    and ``max_tokens`` of the tokens ``hf b1`` decoded, its end token included. Wraps two
    methods of one ``HFLM`` at batch size 1: ``tok_batch_encode`` (the ids, from the CPU
    tensor before it moves to the GPU) and ``_model_generate`` (the output's length past
    the context: a shape, so no sync; at batch size 1 an answer has no padding). lm-eval
    sorts a call's requests by length, so they are matched by prompt text, not order.
    """

    def __init__(self, lm: Any) -> None:
        self.found: dict[str, tuple[list[int], int]] = {}
        self._encoded: list[tuple[str, list[int]]] = []
        encode, generate = lm.tok_batch_encode, lm._model_generate

        def tok_batch_encode(strings: list[str], *args: Any, **kwargs: Any) -> Any:
            ids, mask = encode(strings, *args, **kwargs)
            rows = zip(strings, ids, mask, strict=True)
            self._encoded = [(text, row[keep.bool()].tolist()) for text, row, keep in rows]
            return ids, mask

        def model_generate(context: Any, *args: Any, **kwargs: Any) -> Any:
            out = generate(context, *args, **kwargs)
            if len(self._encoded) != 1:
                raise RuntimeError("DecodeLengths counts the answers of batch size 1 only")
            ((text, ids),) = self._encoded
            self.found[text] = (ids, int(out.shape[1] - context.shape[1]))
            return out

        lm.tok_batch_encode = tok_batch_encode
        lm._model_generate = model_generate

    def call(self, prompts: Sequence[str]) -> dict[str, list[Any]]:
        """One call's prompt ids and decoded token counts, in the call's order."""
        found = [self.found[p] for p in prompts]
        return {"prompts": [ids for ids, _ in found], "counts": [n for _, n in found]}


@dataclass
class ModeRun:
    """One mode's in-process rows, and the calls the ``vllm apc`` row repeats."""

    stats: dict[str, PathStats]
    same: dict[str, int]
    total: int
    #: Per call, ``hf b1``'s prompt ids and decoded token counts (None: not recorded).
    calls: list[dict[str, list[Any]]] | None


def run_mode(
    mode: str, backends: dict[str, Callable[[], Any]], convs: dict[str, Any], args: Any
) -> ModeRun:
    """Every back end over one mode; their stats and answers identical to ``hf b1``'s.

    Each back end is built fresh for the mode (``hf-prefix`` starts with an empty store,
    so no mode is helped by another's caches). A back end that runs out of GPU memory is
    marked and left out of the mode's remaining calls. With ``args.record_vllm``, every
    call's prompt ids and answer lengths under ``hf b1`` are kept for the vLLM row (not
    when ``hf b1`` ran out of memory: the row then leaves the mode out).
    """
    import torch

    names = list(backends)
    lms = {name: make() for name, make in backends.items()}
    render = Renderer(lms["hf b1"].tokenizer, chat=True)
    gen = {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": args.max_gen_toks}
    stats = {name: PathStats() for name in names}
    same = dict.fromkeys(names, 0)
    total = 0
    turns = 1 if mode == "st" else max(len(qs) for _, qs in convs.values())
    answers: dict[str, list[str]] = {m: [] for m in convs}
    lengths = DecodeLengths(lms["hf b1"]) if args.record_vllm else None
    calls: list[dict[str, list[Any]]] | None = [] if lengths else None
    for k in range(turns):
        if mode == "st":
            prompts = [render.prompt(t, [q], []) for t, qs in convs.values() for q in qs]
            live: list[str] = []
        else:
            live = [m for m, (_, qs) in convs.items() if len(qs) > k]
            prompts = [render.prompt(convs[m][0], convs[m][1][: k + 1], answers[m]) for m in live]
        got: dict[str, list[str]] = {}
        for name in names[k % len(names) :] + names[: k % len(names)]:
            if stats[name].oom:
                continue
            try:
                got[name], call = run_call(lms[name].generate_until, prompts, gen, args.meter)
            except torch.OutOfMemoryError:
                stats[name].oom = True
                args.meter.pending.clear()
                torch.cuda.empty_cache()
                continue
            stats[name].add(call)
        want = got.get("hf b1", [])
        for name, out in got.items():
            same[name] += sum(x == y for x, y in zip(want, out, strict=True))
        total += len(prompts)
        for m, text in zip(live, want, strict=False):
            answers[m].append(text)
        if calls is not None and lengths is not None:
            calls = [*calls, lengths.call(prompts)] if "hf b1" in got else None
    return ModeRun(stats, same, total, calls)


def ratio(a: float, b: float) -> str:
    """``a/b`` as ``12.34x``, or ``-`` when undefined."""
    return f"{a / b:.2f}x" if b else "-"


def report(mode: str, run: ModeRun, peak: float | None, weights_gib: float) -> None:
    """Print one mode's table: a row per back end, speed against stock's best."""
    stats = run.stats
    stock = [n for n in stats if n.startswith("hf b") and not stats[n].oom]
    best = min(stock, key=lambda n: stats[n].wall_s) if stock else "none (all out of memory)"
    base = stats[best] if stock else PathStats()
    print(f"\n[{mode}] {run.total} requests; stock's best: {best}")
    head = (
        f"  {'back end':<18} {'prefill tok':>12} {'wall s':>8} {'prefill s':>9} "
        f"{'prefill tok/s':>13} {'peak GiB':>8} {'TFLOP/s':>8} {'util':>6} "
        f"{'same as hf b1':>13} {'speed vs best':>13}"
    )
    print(head)
    for name, s in stats.items():
        if s.oom:
            print(f"  {name:<18} out of GPU memory")
            continue
        if s.outside:  # vLLM: wall time and prefill tokens; other weights, other answers
            prefill = f"{s.prefill_tokens:,}" if s.prefill_tokens >= 0 else "-"
            print(
                f"  {name:<18} {prefill:>12} {s.wall_s:>8.1f} {'-':>9} {'-':>13} {'-':>8} "
                f"{'-':>8} {'-':>6} {'n/a':>13} {ratio(base.wall_s, s.wall_s):>13}"
            )
            continue
        rate = s.prefill_flops / s.prefill_s / 1e12 if s.prefill_s else 0.0
        util = f"{100 * rate / peak:5.1f}%" if peak else "   n/a"
        tok_s = s.prefill_tokens / s.prefill_s if s.prefill_s else 0.0
        mem = f"{s.peak_bytes / GIB:8.2f}" if s.peak_bytes else "     n/a"
        print(
            f"  {name:<18} {s.prefill_tokens:>12,} {s.wall_s:>8.1f} {s.prefill_s:>9.1f} "
            f"{tok_s:>13,.0f} {mem} {rate:>8.1f} {util} {f'{run.same[name]}/{run.total}':>13} "
            f"{ratio(base.wall_s, s.wall_s):>13}"
        )
    if weights_gib:
        print(f"  (weights: {weights_gib:.1f} GiB of each peak)")


def vllm_child(requests: Path) -> int:
    """Run the ``vllm apc`` row over the calls in ``requests`` (in the vLLM venv).

    One engine for all modes; its prefix cache is emptied before each. Writes per call the
    wall time, the tokens decoded per request and the prompt tokens not taken from the
    prefix cache, and the engine's load time, version and memory, to the spec's ``out``.
    """
    from vllm import LLM, SamplingParams

    spec = json.loads(requests.read_text())
    options: dict[str, Any] = {"enable_prefix_caching": True, "max_model_len": spec["window"]}
    if spec["cuda"]:
        options["gpu_memory_utilization"] = 0.9
    else:
        # vLLM 0.32's CPU engine dies on a seeded request whose prefill is chunked; eager
        # mode spares a torch.compile that says nothing about speed here.
        options.update(
            enforce_eager=True,
            enable_chunked_prefill=False,
            max_num_batched_tokens=max(spec["window"], 8192),
        )
    options.update(spec["vllm_args"])
    start = time.perf_counter()
    llm = LLM(model=spec["model"], load_format="dummy", dtype=spec["dtype"], **options)
    load_s = time.perf_counter() - start

    def params(n: int) -> Any:
        return SamplingParams(max_tokens=n, ignore_eos=True, temperature=0.0, detokenize=False)

    llm.generate([{"prompt_token_ids": spec["warmup"]}] * 2, params(2), use_tqdm=False)
    modes: dict[str, list[dict[str, Any]]] = {}
    for mode, calls in spec["modes"].items():
        llm.reset_prefix_cache()  # no mode is helped by another's blocks (nor the warm-up's)
        modes[mode] = []
        for call in calls:
            prompts = [{"prompt_token_ids": ids} for ids in call["prompts"]]
            start = time.perf_counter()
            outs = llm.generate(prompts, [params(n) for n in call["counts"]], use_tqdm=False)
            wall_s = time.perf_counter() - start
            cached = [o.num_cached_tokens for o in outs]
            computed = [len(ids) - (c or 0) for ids, c in zip(call["prompts"], cached, strict=True)]
            modes[mode].append(
                {
                    "wall_s": wall_s,
                    "generated": [len(o.outputs[0].token_ids) for o in outs],
                    "prefill_tokens": None if None in cached else sum(computed),
                }
            )
    import vllm

    cache = llm.llm_engine.vllm_config.cache_config
    memory = None
    if spec["cuda"]:
        import torch

        free, total = torch.cuda.mem_get_info()
        memory = [total - free, total]
    record = {
        "version": vllm.__version__,
        "load_s": load_s,
        "modes": modes,
        "gpu_memory_utilization": cache.gpu_memory_utilization,
        "kv_cache_tokens": (cache.num_gpu_blocks or 0) * cache.block_size,
        "memory": memory,
    }
    Path(spec["out"]).write_text(json.dumps(record))
    return 0


def vllm_rows(
    args: Any, shape: Shape, tok: Any, runs: dict[str, ModeRun], window: int, work: Path
) -> tuple[dict[str, PathStats], str]:
    """The ``vllm apc`` stats per mode, from one run of this script in the vLLM venv.

    Writes the model folder (the shape's ``config.json`` and the tokenizer) and the
    requests (per mode and call: ``hf b1``'s prompt ids and decoded token counts) under
    ``work``; the child writes its replies there. Returns the stats and the line printed
    above the tables (what vLLM reserved, its load time, whether it decoded the counts).
    """
    import torch

    cuda = torch.cuda.is_available()
    model = work / "model"
    llama_config(shape, len(tok)).save_pretrained(model)
    tok.save_pretrained(model)
    sent = {mode: run.calls for mode, run in runs.items() if run.calls is not None}
    requests, replies = work / "requests.json", work / "replies.json"
    replies.unlink(missing_ok=True)
    spec = {
        "model": str(model),
        "window": window,
        "cuda": cuda,
        "dtype": "bfloat16" if cuda else "float32",
        "vllm_args": vllm_venv.extra_args(args.vllm_args),
        "warmup": tok("warm-up " * 300, add_special_tokens=False)["input_ids"],
        "modes": sent,
        "out": str(replies),
    }
    requests.write_text(json.dumps(spec))
    before = torch.cuda.mem_get_info() if cuda else None
    argv = ["--vllm-child", str(requests)]
    failed = vllm_venv.run_child(__file__, argv, args.vllm_venv, replies, kv_cache_gib="1")
    if failed:
        return {}, failed
    got = json.loads(replies.read_text())
    stats: dict[str, PathStats] = {}
    decoded = mismatched = 0
    for mode, calls in got["modes"].items():
        row = stats[mode] = PathStats(outside=True)
        for call, reply in zip(sent[mode], calls, strict=True):
            row.wall_s += reply["wall_s"]
            row.requests += len(call["counts"])
            known = reply["prefill_tokens"] is not None and row.prefill_tokens >= 0
            row.prefill_tokens = row.prefill_tokens + reply["prefill_tokens"] if known else -1
            decoded += len(call["counts"])
            mismatched += sum(
                a != b for a, b in zip(call["counts"], reply["generated"], strict=True)
            )
    kv_gib = got["kv_cache_tokens"] * shape.kv_bytes_per_token(2 if cuda else 4) / GIB
    if got["memory"] and before is not None:
        used, total = got["memory"]
        earlier = (before[1] - before[0]) / GIB
        memory = (
            f"gpu_memory_utilization={got['gpu_memory_utilization']:g}: {used / GIB:.1f} of the "
            f"card's {total / GIB:.1f} GiB in use with it loaded ({earlier:.1f} before it started)"
        )
    else:
        memory = f"VLLM_CPU_KVCACHE_SPACE={vllm_venv.child_env('1')['VLLM_CPU_KVCACHE_SPACE']} GiB"
    line = (
        f"{vllm_venv.ROW}: vLLM {got['version']}, engine loaded in {got['load_s']:.0f} s (not in "
        f"the ratios); {memory}; KV cache {got['kv_cache_tokens']:,} tokens ({kv_gib:.1f} GiB); "
        f"decoded hf b1's token count for {decoded - mismatched}/{decoded} requests; answers "
        "not compared (other random weights)"
    )
    return stats, line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="llama-3.1-8b", choices=sorted(SHAPES))
    parser.add_argument("--modes", default="st,mt,conv", help="comma list of st, mt, conv")
    parser.add_argument("--split", default="dev", choices=["dev", "test2"])
    parser.add_argument("--meetings", type=int, default=0, help="first N meetings (0 = all)")
    parser.add_argument(
        "--meeting-ids",
        default="",
        help="comma list of meeting ids to run (default: every meeting of the split)",
    )
    parser.add_argument("--questions", type=int, default=0, help="first N per meeting (0 = all)")
    parser.add_argument("--max-gen-toks", type=int, default=512, help="the tasks' 512")
    parser.add_argument(
        "--mean-answer-tokens",
        type=int,
        default=100,
        help="end an answer with probability 1/N per token (0: never, run to --max-gen-toks)",
    )
    parser.add_argument(
        "--stock-batch-sizes",
        default="8,16",
        help="stock hf batch sizes besides 1 (comma list); the fastest that fits is its best",
    )
    parser.add_argument("--tokenizer", help="local tokenizer path (default: the tests' BPE)")
    parser.add_argument(
        "--prefix-cache-mb",
        type=float,
        default=None,
        help="hf-prefix store budget (default: 32768 on a GPU, 4096 on the CPU)",
    )
    parser.add_argument("--peak-tflops", type=float, help="the GPU's dense bf16 peak")
    vllm_venv.add_arguments(parser)
    parser.add_argument(
        "--vllm-keep",
        type=Path,
        help="keep the vllm apc row's model folder, requests and replies (JSON) in this folder",
    )
    args = parser.parse_args(argv)
    if args.vllm_child:
        return vllm_child(args.vllm_child)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - {"st", "mt", "conv"})
    if unknown or not modes:
        parser.error(f"--modes {args.modes!r}: use a comma list of st, mt, conv")
    try:
        sizes = sorted({int(x) for x in args.stock_batch_sizes.split(",") if x.strip()} - {1})
    except ValueError:
        parser.error(f"--stock-batch-sizes {args.stock_batch_sizes!r}: use positive integers")
    if any(size < 1 for size in sizes):
        parser.error(f"--stock-batch-sizes {args.stock_batch_sizes!r}: use positive integers")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import torch
    import transformers
    from lm_eval.models.huggingface import HFLM

    from elitr_bench.models.hf_prefix import HFPrefixLM

    transformers.logging.set_verbosity_error()
    # lm-eval warns that a model object was passed instead of a name: that is the point here.
    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    cuda = torch.cuda.is_available()
    shape = SHAPES[args.shape]
    if not cuda and args.shape != "tiny":
        print(
            f"skipped: no CUDA GPU here, and --shape {args.shape} needs one; --shape tiny runs "
            "the same code on the CPU (its numbers say nothing about speed)",
            file=sys.stderr,
        )
        return 0  # like lm_eval_suite.py without its tests: `make bench` stays green
    device = "cuda" if cuda else "cpu"
    dtype = torch.bfloat16 if cuda else torch.float32
    gpu = torch.cuda.get_device_name() if cuda else ""
    peak = args.peak_tflops or (peak_tflops(gpu) if cuda else None)
    budget = args.prefix_cache_mb if args.prefix_cache_mb is not None else (32768 if cuda else 4096)
    vllm_skipped = None if args.no_vllm else vllm_venv.missing(args.vllm_venv)
    args.record_vllm = not args.no_vllm and vllm_skipped is None

    with tempfile.TemporaryDirectory() as scratch:
        tok = load_tokenizer(args.tokenizer, Path(scratch) / "tokenizer")
        model = build_model(shape, len(tok), device, dtype)
    weights_gib = sum(p.numel() * p.element_size() for p in model.parameters()) / GIB
    shape = shape if shape.vocab else _with_vocab(shape, len(tok))
    meter = ForwardMeter(shape, cuda)
    meter.attach(model)
    AnswerEnd(args.mean_answer_tokens, int(tok.eos_token_id)).attach(model)
    args.meter = meter
    # stock hf pads a batch to its longest prompt: a window of prompt + answer is enough
    window = min(shape.max_positions, 32768)
    common = {"pretrained": model, "tokenizer": tok, "max_length": window}
    backends: dict[str, Callable[[], Any]] = {"hf b1": partial(HFLM, **common, batch_size=1)}
    for size in sizes:
        backends[f"hf b{size}"] = partial(HFLM, **common, batch_size=size)
    for name, mode in (("hf-prefix serial", "off"), ("hf-prefix batched", "on")):
        backends[name] = partial(
            HFPrefixLM, **common, batch_size=1, prefix_cache_mb=budget, prefix_batch=mode
        )

    print(
        f"model: random {shape.name} shape, {dtype_name(dtype)}, "
        f"{model.num_parameters() / 1e9:.2f} B parameters ({weights_gib:.1f} GiB), "
        f"SDPA attention, greedy, max_gen_toks={args.max_gen_toks}, answers end at the end "
        + (
            f"token after ~{args.mean_answer_tokens} tokens on average"
            if args.mean_answer_tokens
            else "token never (every answer runs to max_gen_toks)"
        )
    )
    print(
        f"device: {gpu or 'CPU'}"
        + (f", dense bf16 peak {peak:g} TFLOP/s" if peak else "")
        + (", peak unknown: pass --peak-tflops for utilisation" if cuda and not peak else "")
        + f"; torch {torch.__version__}, transformers {transformers.__version__}"
    )
    vllm_named = f", {vllm_venv.ROW} (in {args.vllm_venv}, after the others)"
    print(
        f"prompts: ELITR-Bench {args.split}, tokenizer "
        f"{args.tokenizer or f'tests BPE ({len(tok)} tokens)'}, hf-prefix prefix_cache_mb="
        f"{budget:g}; back ends: {', '.join(backends)}" + (vllm_named if args.record_vllm else "")
    )
    if not cuda:
        print(
            "NOTE: CPU run of a tiny shape in float32: it checks that the benchmark works; "
            "its numbers say nothing about speed on a GPU."
        )
    # One short request through each back end first: kernels, cuBLAS handles, allocator.
    warm = {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": 2}
    for make in backends.values():
        run_call(make().generate_until, ["warm-up " * 300] * 2, warm, meter)
    runs: dict[str, ModeRun] = {}
    ids = [m.strip() for m in args.meeting_ids.split(",") if m.strip()]
    for mode in modes:
        setting = "conv" if mode == "conv" else "qa"
        convs = select(conversations(args.split, setting), args.meetings, args.questions, ids)
        runs[mode] = run_mode(mode, backends, convs, args)
    # vLLM reserves a share of the whole card up front: free this process's memory first.
    del model, common, backends, make
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    if args.record_vllm:
        with tempfile.TemporaryDirectory() as scratch:
            work = args.vllm_keep or Path(scratch)
            work.mkdir(parents=True, exist_ok=True)
            found, line = vllm_rows(args, shape, tok, runs, window, work)
        print(line)
        for mode, row in found.items():
            runs[mode].stats[vllm_venv.ROW] = row
    elif vllm_skipped:
        print(vllm_skipped)
    for mode in modes:
        report(mode, runs[mode], peak=peak, weights_gib=weights_gib if cuda else 0.0)
    return 0


def _with_vocab(shape: Shape, vocab: int) -> Shape:
    from dataclasses import replace

    return replace(shape, vocab=vocab)


def dtype_name(dtype: Any) -> str:
    """``bfloat16`` for ``torch.bfloat16``."""
    return str(dtype).removeprefix("torch.")


if __name__ == "__main__":
    sys.exit(main())
