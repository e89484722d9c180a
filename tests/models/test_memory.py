"""The memory formulas against tensors the tiny model really creates on CPU."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from elitr_bench.models.hf_prefix import TorchCacheOps
from elitr_bench.models.memory import (
    LLAMA2_7B,
    MIB,
    MISTRAL_7B,
    ModelDims,
    estimate,
    kv_bytes_per_token,
    layer_activation_bytes_per_token,
    rows_that_fit,
)

N_TOKENS = 300


def _model(tiny: Path, dtype: torch.dtype, **overrides: Any) -> Any:
    from transformers import AutoConfig, LlamaForCausalLM

    config = AutoConfig.from_pretrained(tiny)
    for key, value in overrides.items():
        setattr(config, key, value)
    torch.manual_seed(0)
    model: Any = LlamaForCausalLM(config)
    return model.to(dtype).eval()


@pytest.mark.parametrize(
    ("dtype", "overrides"),
    [
        (torch.float32, {}),
        (torch.bfloat16, {}),
        # grouped-query attention and a different depth/width, like Mistral vs Llama-2
        (
            torch.float32,
            {"num_key_value_heads": 1, "num_hidden_layers": 3, "intermediate_size": 96},
        ),
    ],
)
def test_kv_and_activation_formulas_match_measurement(
    tiny_llama: Path, dtype: torch.dtype, overrides: dict[str, Any]
) -> None:
    model = _model(tiny_llama, dtype, **overrides)
    dims = ModelDims.from_config(model.config)
    size = torch.finfo(dtype).bits // 8
    ops = TorchCacheOps(model.config, torch.device("cpu"), torch.device("cpu"))
    cache = ops.empty()

    ids = torch.randint(10, dims.vocab, (1, N_TOKENS))
    with _layer_outputs(model) as measured, torch.no_grad():
        out = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)

    assert _tensor_bytes(cache) == ops.nbytes(cache) == N_TOKENS * kv_bytes_per_token(dims, size)
    assert sum(measured) == N_TOKENS * layer_activation_bytes_per_token(dims, size)
    assert out.logits.shape == (1, 1, dims.vocab)  # no full-prompt logits
    est = estimate(dims, N_TOKENS, dtype_bytes=size, prefill_chunk=100)
    assert est.kv_cache == _tensor_bytes(cache)
    assert est.activations == 100 * layer_activation_bytes_per_token(dims, size)


@contextlib.contextmanager
def _layer_outputs(model: Any) -> Iterator[list[int]]:
    """Bytes of the outputs of the first decoder layer's sub-modules, while in the block."""
    layer = model.model.layers[0]
    measured: list[int] = []
    watched = [
        layer.input_layernorm, layer.self_attn.q_proj, layer.self_attn.k_proj,
        layer.self_attn.v_proj, layer.self_attn.o_proj, layer.post_attention_layernorm,
        layer.mlp.gate_proj, layer.mlp.up_proj, layer.mlp.act_fn, layer.mlp.down_proj,
    ]  # fmt: skip
    handles = [
        m.register_forward_hook(lambda _m, _i, out: measured.append(out.nbytes)) for m in watched
    ]
    try:
        yield measured
    finally:
        for h in handles:
            h.remove()


def _tensor_bytes(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes of every tensor reachable from ``obj``: a count that knows no formula of ours."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return int(obj.nbytes)
    if isinstance(obj, list | tuple):
        return sum(_tensor_bytes(o, seen) for o in obj)
    if isinstance(obj, dict):
        return sum(_tensor_bytes(o, seen) for o in obj.values())
    if hasattr(obj, "__dict__"):
        return sum(_tensor_bytes(o, seen) for o in vars(obj).values())
    return 0


def _meta_7b(dims: ModelDims) -> Any:
    """A 7B-shaped Llama on PyTorch's meta device: real shapes and dtypes, no memory."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=dims.hidden,
        intermediate_size=dims.intermediate,
        num_attention_heads=dims.heads,
        num_key_value_heads=dims.kv_heads,
        num_hidden_layers=dims.layers,
        vocab_size=dims.vocab,
    )
    with torch.device("meta"):
        model: Any = LlamaForCausalLM(config)
    return model.to(torch.bfloat16).eval()


def _measure(model: Any, tokens: int) -> tuple[int, int, int]:
    """(KV cache, one layer's prefill activations, full-prompt fp32 logits) in bytes."""
    from transformers import DynamicCache

    cache = DynamicCache()
    ids = torch.zeros((1, tokens), dtype=torch.long, device="meta")
    with _layer_outputs(model) as measured, torch.no_grad():
        out = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=0)
    return _tensor_bytes(cache), sum(measured), int(out.logits.float().nbytes)


@pytest.mark.parametrize("dims", [LLAMA2_7B, MISTRAL_7B], ids=["llama2-7b", "mistral-7b"])
def test_7b_figures_are_the_tensors_a_7b_model_creates(dims: ModelDims) -> None:
    """The estimates for 1,000 tokens against a real 7B-shaped model run on the meta device.

    The meta device gives every tensor its real shape and dtype without allocating it, so
    a Llama-2-7B or Mistral-7B prefill (bf16, SDPA) is measured on any machine: the KV
    cache from the ``DynamicCache``'s own tensors, one layer's activations from forward
    hooks, the logits a full-prompt forward would upcast to float32.
    """
    kv, activations, logits = _measure(_meta_7b(dims), 1000)
    est = estimate(dims, 1000)
    assert est.kv_cache == kv
    assert est.activations == activations
    assert est.avoided_logits == logits * 999 // 1000  # the last position is still computed
    assert est.logits == logits // 1000


def test_documented_7b_figures_per_1k_tokens() -> None:
    """docs/performance.md's memory figures (bf16, per 1,000 tokens), by hand.

    Llama-2-7B's KV cache is 2 (K, V) x 32 layers x 4096 x 2 bytes = 0.5 MiB a token,
    500 MiB per 1,000 and 18,000 x 0.5 / 1024 = 8.79 GiB for an 18k-token meeting;
    Mistral-7B's 8 KV heads of 32 make it a quarter (125 MiB); the fp32 logits are
    1,000 x 32,000 x 4 bytes = 122.07 MiB.
    """
    assert 1000 * kv_bytes_per_token(LLAMA2_7B) / MIB == pytest.approx(500.0)
    assert 1000 * kv_bytes_per_token(MISTRAL_7B) / MIB == pytest.approx(125.0)
    assert estimate(LLAMA2_7B, 1000).avoided_logits / MIB == pytest.approx(122.0, abs=0.1)
    assert estimate(LLAMA2_7B, 18000).kv_cache / 2**30 == pytest.approx(8.79, abs=0.01)


def test_rows_that_fit_divide_free_memory_by_one_rows_measured_cache() -> None:
    """Rows of an 18k-token Mistral-7B decode: free memory over a row's measured tensors.

    A row is its KV cache (measured on the meta device at prompt + answer tokens) and four
    float32 logit rows of one position; ``fraction`` (0.8) of the free memory is used.
    """
    model = _meta_7b(MISTRAL_7B)
    kv, _, logits = _measure(model, 18_000)
    row = kv + 4 * (logits // 18_000)
    assert kv == 18_000 * 128 * 1024  # by hand: 2 x 32 layers x 8 heads x 128 x 2 bytes
    free = 40 * 2**30  # what an 80 GB card has left after the weights and the store
    want = int(free * 0.8) // row
    assert want == 14
    assert rows_that_fit(MISTRAL_7B, 18_000, free) == want
    assert rows_that_fit(MISTRAL_7B, 18_000, free, cap=8) == 8
    assert rows_that_fit(MISTRAL_7B, 18_000, free, copies=3) == int(free * 0.8) // (
        3 * kv + 4 * (logits // 18_000)
    )
    assert rows_that_fit(MISTRAL_7B, 18_000, 0) == 1  # serial decoding needs one row anyway
