"""The package's one token estimate and its one end-of-reply rule (elitr_bench/tokens.py)."""

from __future__ import annotations

from types import SimpleNamespace

from elitr_bench.tokens import CHARS_PER_TOKEN, eos_ids, estimate_tokens


def test_a_reply_ends_at_the_generation_configs_or_the_tokenizers_end_token() -> None:
    """Llama-3 chat: generate stops at <|eot_id|> (128009) as well as <|end_of_text|>."""
    config = SimpleNamespace(eos_token_id=[128001, 128009])
    tokenizer = SimpleNamespace(eos_token_id=128009)
    assert eos_ids(config, tokenizer) == {128001, 128009}
    # a tokenizer whose end token the generation config does not list still ends a reply
    assert eos_ids(SimpleNamespace(eos_token_id=2), SimpleNamespace(eos_token_id=7)) == {2, 7}
    assert eos_ids(None, SimpleNamespace(eos_token_id=None)) == set()


def test_the_estimate_is_characters_over_the_one_ratio() -> None:
    assert CHARS_PER_TOKEN == 4  # the judges' plan tests pin characters / 4
    assert estimate_tokens(0) == 0 and estimate_tokens(7) == 1 and estimate_tokens(800) == 200
