"""The memory formulas against tensors the tiny model really creates on CPU."""

from __future__ import annotations

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
    logits_bytes_per_token,
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
    ids = torch.randint(10, dims.vocab, (1, N_TOKENS))
    with torch.no_grad():
        out = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
    for h in handles:
        h.remove()

    assert ops.nbytes(cache) == N_TOKENS * kv_bytes_per_token(dims, size)
    assert sum(measured) == N_TOKENS * layer_activation_bytes_per_token(dims, size)
    assert out.logits.shape == (1, 1, dims.vocab)  # no full-prompt logits
    est = estimate(dims, N_TOKENS, dtype_bytes=size, prefill_chunk=100)
    assert est.kv_cache == ops.nbytes(cache)
    assert est.activations == 100 * layer_activation_bytes_per_token(dims, size)


def test_documented_7b_figures_per_1k_tokens() -> None:
    """docs/performance.md's memory figures (bf16, per 1,000 tokens) comes from these formulas.

    By hand: Llama-2-7B's KV cache is 2 (K, V) x 32 layers x 4096 x 2 bytes = 0.5 MiB a
    token, 500 MiB per 1,000 and 18,000 x 0.5 / 1024 = 8.79 GiB for an 18k-token meeting;
    Mistral-7B's 8 KV heads of 32 make it a quarter (125 MiB); the fp32 logits are
    1,000 x 32,000 x 4 bytes = 122.07 MiB. The activation figures (117.7 and 125.0 MiB,
    not in the docs) are golden: the formulas' own output, kept to pin them.
    """
    assert 1000 * kv_bytes_per_token(LLAMA2_7B) / MIB == pytest.approx(500.0)
    assert 1000 * kv_bytes_per_token(MISTRAL_7B) / MIB == pytest.approx(125.0)
    llama = estimate(LLAMA2_7B, 1000)
    mistral = estimate(MISTRAL_7B, 1000)
    assert llama.activations / MIB == pytest.approx(117.7, abs=0.1)
    assert mistral.activations / MIB == pytest.approx(125.0, abs=0.1)
    assert llama.avoided_logits / MIB == pytest.approx(122.0, abs=0.1)
    assert estimate(LLAMA2_7B, 18000).kv_cache / 2**30 == pytest.approx(8.79, abs=0.01)


def test_rows_that_fit_divide_free_memory_by_one_rows_cache() -> None:
    # Mistral-7B in bf16: 128 KiB of keys and values per token
    row = 18_000 * kv_bytes_per_token(MISTRAL_7B) + 4 * logits_bytes_per_token(MISTRAL_7B)
    assert kv_bytes_per_token(MISTRAL_7B) == 128 * 1024
    free = 40 * 2**30  # what an 80 GB card has left after the weights and the store
    assert rows_that_fit(MISTRAL_7B, 18_000, free) == int(free * 0.8) // row == 14
    assert rows_that_fit(MISTRAL_7B, 18_000, free, cap=8) == 8
    assert rows_that_fit(MISTRAL_7B, 18_000, free, copies=3) == 4
    assert rows_that_fit(MISTRAL_7B, 18_000, 0) == 1  # serial decoding needs one row anyway
