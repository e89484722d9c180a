"""Memory estimates for long-context generation with a decoder-only transformer.

ELITR prompts reach 18k tokens, so the KV cache, not the weights, decides whether a
7B model fits and how many conversations the prefix cache can keep. The formulas
below count the tensors a Llama/Mistral-style layer materialises; a test checks them
against the tensors the tiny test model actually creates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MIB = 2**20


@dataclass(frozen=True)
class ModelDims:
    """The dimensions that decide activation and cache sizes.

    Attributes:
        layers: Decoder layers.
        hidden: Hidden size ``d``.
        heads: Query heads.
        kv_heads: Key/value heads (fewer than ``heads`` with grouped-query attention).
        head_dim: Size of one head.
        intermediate: MLP inner size (SwiGLU: gate and up projections).
        vocab: Vocabulary size.
    """

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int

    @classmethod
    def from_config(cls, config: Any) -> ModelDims:
        """Read the dimensions of a Hugging Face Llama/Mistral-style config."""
        heads = int(config.num_attention_heads)
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        return cls(
            layers=int(config.num_hidden_layers),
            hidden=int(config.hidden_size),
            heads=heads,
            kv_heads=int(getattr(config, "num_key_value_heads", None) or heads),
            head_dim=int(head_dim),
            intermediate=int(config.intermediate_size),
            vocab=int(config.vocab_size),
        )


#: Llama-2-7B: 32 layers, d=4096, 32 heads without grouped-query attention.
LLAMA2_7B = ModelDims(32, 4096, 32, 32, 128, 11008, 32000)
#: Mistral-7B: like Llama-2-7B but 8 key/value heads and a wider MLP.
MISTRAL_7B = ModelDims(32, 4096, 32, 8, 128, 14336, 32000)


def kv_bytes_per_token(dims: ModelDims, dtype_bytes: int = 2) -> int:
    """Keys and values of one token in every layer: ``2 * layers * kv_heads * head_dim``."""
    return 2 * dims.layers * dims.kv_heads * dims.head_dim * dtype_bytes


def layer_activation_bytes_per_token(dims: ModelDims, dtype_bytes: int = 2) -> int:
    """Per-token outputs of one decoder layer's sub-modules during prefill.

    Counts the two RMSNorm outputs, the attention output projection and the MLP down
    projection (``4 d``), the query/key/value projections (``(heads + 2 kv_heads) *
    head_dim``) and the SwiGLU gate, up and activation (``3 * intermediate``). Layers
    run one after another, so this is the transient part of a prefill's peak; SDPA's
    fused kernels keep the attention scores out of memory.
    """
    qkv = (dims.heads + 2 * dims.kv_heads) * dims.head_dim
    return (4 * dims.hidden + qkv + 3 * dims.intermediate) * dtype_bytes


def logits_bytes_per_token(dims: ModelDims, logits_bytes: int = 4) -> int:
    """Full-vocabulary logits of one position (float32, as generation upcasts them)."""
    return dims.vocab * logits_bytes


@dataclass(frozen=True)
class MemoryEstimate:
    """Peak memory of prefilling ``tokens`` tokens, on top of the weights.

    Attributes:
        tokens: Prompt length.
        kv_cache: Bytes of the KV cache for the prompt (kept for decoding).
        activations: Transient bytes of one layer's prefill (``min(tokens, chunk)``).
        logits: Bytes of the last position's logits (what ``hf-prefix`` computes).
        avoided_logits: Bytes a full-prompt logits tensor would have taken.
    """

    tokens: int
    kv_cache: int
    activations: int
    logits: int
    avoided_logits: int

    @property
    def peak(self) -> int:
        """KV cache + transient activations + last-position logits."""
        return self.kv_cache + self.activations + self.logits


def estimate(
    dims: ModelDims, tokens: int, *, dtype_bytes: int = 2, prefill_chunk: int = 0
) -> MemoryEstimate:
    """Estimate prefill memory for a prompt of ``tokens`` tokens.

    Args:
        dims: Model dimensions.
        tokens: Prompt length.
        dtype_bytes: Bytes per weight/activation element (2 for bf16/fp16).
        prefill_chunk: Tokens per prefill forward (0: the whole prompt at once).
    """
    chunk = min(tokens, prefill_chunk) if prefill_chunk > 0 else tokens
    return MemoryEstimate(
        tokens=tokens,
        kv_cache=tokens * kv_bytes_per_token(dims, dtype_bytes),
        activations=chunk * layer_activation_bytes_per_token(dims, dtype_bytes),
        logits=logits_bytes_per_token(dims),
        avoided_logits=max(tokens - 1, 0) * logits_bytes_per_token(dims),
    )


def rows_that_fit(
    dims: ModelDims,
    tokens_per_row: int,
    free_bytes: int,
    *,
    dtype_bytes: int = 2,
    fraction: float = 0.8,
    cap: int = 64,
    copies: int = 1,
) -> int:
    """Rows of a batched decode whose KV caches fit in ``fraction`` of ``free_bytes``.

    Each row holds its own copy of the prompt's keys and values plus its answer's
    (``tokens_per_row`` = prompt + ``max_gen_toks``), and a few float32 logit rows for
    the last position. The shared prefix is prefilled once into a one-row cache before
    the batch exists, and a row without a cached prefix prefills alone, so the batched
    forwards only carry the rows' short suffixes: their activations are left out.
    ``copies``: how many copies of a row's cache can exist at once.

    Returns:
        At least 1 (a single row is what serial decoding needs anyway), at most ``cap``.
    """
    per_row = copies * tokens_per_row * kv_bytes_per_token(dims, dtype_bytes)
    per_row += 4 * logits_bytes_per_token(dims)
    return max(1, min(cap, int(free_bytes * fraction) // max(per_row, 1)))
