"""Fixtures for the model tests: a tiny Llama whose answers depend on its whole prompt.

The shared ``tiny_llama`` is initialised with transformers' default (std 0.02) and tied
embeddings, so greedy decoding just repeats one token whatever the prompt says; two
back ends would "agree" even if one ignored the transcript. ``sharp_llama`` keeps the
fixture's tokenizer and dimensions but draws weights with std 0.5 and unties the output
layer, so answers change when any part of the prompt (or of a reused cache) changes.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def build_sharp_llama(tiny: Path, out: Path, *, seed: int = 0) -> Path:
    """Save the tiny model's tokenizer with a context-sensitive random model into ``out``."""
    import torch
    from transformers import AutoConfig, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    AutoTokenizer.from_pretrained(tiny).save_pretrained(out)
    base = AutoConfig.from_pretrained(tiny).to_dict()
    base.update(initializer_range=0.5, tie_word_embeddings=False)
    torch.manual_seed(seed)
    LlamaForCausalLM(LlamaConfig(**base)).save_pretrained(out, safe_serialization=True)
    return out


@pytest.fixture(scope="session")
def sharp_llama(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tiny Llama (tokenizer + chat template of ``tiny_llama``) with context-sensitive outputs."""
    return build_sharp_llama(tiny_llama, tmp_path_factory.mktemp("sharp-llama"))
