"""Token facts every layer shares: the estimate without a tokenizer, and where replies end.

A small module at the top of the package (like :mod:`elitr_bench.prompts`): it imports
nothing of the package, so every layer may import it.
"""

from __future__ import annotations

from typing import Any

#: Characters per token of every estimate made where no tokenizer is at hand: the judges'
#: cost plans, the rate limiter's reservation, MESA's prompt allowance and the retrieval
#: budget of an API model. OpenAI's tokenizers give 3.3-4.0 characters per token on the
#: meeting transcripts (o200k: 3.72 on the 12 AutoMin 2023 ones); one ratio keeps the
#: estimates comparable. (A context-window check that must not let an over-long prompt
#: through uses the stricter bound of :mod:`elitr_bench.llm.context_window` instead.)
CHARS_PER_TOKEN = 4


def estimate_tokens(chars: int) -> int:
    """Tokens of ``chars`` characters at :data:`CHARS_PER_TOKEN` (rounded down)."""
    return chars // CHARS_PER_TOKEN


def eos_ids(generation_config: Any, tokenizer: Any) -> set[int]:
    """Every token id that ends a reply: the generation config's and the tokenizer's.

    ``generate`` stops at the generation config's end tokens (several for chat models,
    e.g. Llama-3's ``<|eot_id|>``), lm-eval's ``hf`` at the tokenizer's (its stop text):
    a reply ends at whichever comes first.
    """
    ids: set[int] = set()
    for source in (
        getattr(generation_config, "eos_token_id", None),
        getattr(tokenizer, "eos_token_id", None),
    ):
        if isinstance(source, int):
            ids.add(source)
        elif isinstance(source, list | tuple):
            ids.update(int(i) for i in source)
    return ids
