"""The judge model's context window, the tokens of a judge prompt, and the check before sending.

A judge prompt that does not fit its model's window costs a refused request at best and a
silently truncated transcript at worst (a local server may cut it), so every judge checks
its prompts before any paid call: the commands and the lm-eval filters list every
over-long meeting in one line before spending, and the judge client refuses to send one
that slipped through (:class:`ContextWindowError`, nothing sent).

Where the window comes from, in order: ``context=N`` in the judge spec (any backend; it
overrides everything else), the table :data:`OPENAI_MODELS` for OpenAI's own models, the
model's config for ``hf:`` judges (as lm-eval's ``hf`` model reads it), and for any other
API model the ``max_model_len`` its server names in ``GET /v1/models`` (vLLM does), which
the preflight reads (:func:`note_served_window`). Any other API model is not checked, and
says so once.

How tokens are counted:

* OpenAI models: with the model's own BPE (``cl100k_base`` / ``o200k_base``) from the
  ``bpe-openai`` package. ``tiktoken`` downloads these files at first use, which fails
  offline; ``bpe-openai`` ships the same files (their SHA-256 equals tiktoken's pinned
  hashes) and its counts equal tiktoken's (checked on the 12 AutoMin 2023 transcripts in
  ``tests/judges/test_context_window.py``). Chat framing adds the documented 3 tokens per
  message plus 1 for the role, and 3 that prime the reply.
* ``hf:`` judges: the model's tokenizer over the chat template the backend applies.
* Otherwise (an API model with ``context=`` whose tokenizer we do not have, or
  ``bpe-openai`` missing): a bound of UTF-8 bytes / :data:`BOUND_BYTES_PER_TOKEN`,
  said to be a bound wherever it is used. On the AutoMin transcripts OpenAI's
  tokenizers give 3.3-4.0 bytes per token, so the bound counts 30-60% more tokens than
  they do: it may refuse a prompt that would fit, rarely let one through that does not.

The output is part of the window (OpenAI: "the length of the prompt plus the maximum
number of tokens in the completion"), so a prompt fits when its tokens plus the request's
``max_tokens`` do not exceed the window, and (gpt-5) when the prompt alone stays within
the model's input limit.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from elitr_bench.llm import memory
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.endpoint import EndpointSpec, endpoint_key
from elitr_bench.llm.errors import JudgeError
from elitr_bench.llm.memory import Scope

log = logging.getLogger(__name__)


class ContextWindowError(JudgeError):
    """Judge prompts longer than the judge model's context window (nothing was sent)."""


@dataclass(frozen=True)
class KnownModel:
    """What OpenAI publishes about one model's window.

    Attributes:
        context: Context window in tokens (prompt plus output).
        encoding: Its tokenizer (tiktoken's encoding name).
        max_prompt: Input limit below ``context - output`` where the model has one.
    """

    context: int
    encoding: str
    max_prompt: int | None = None


_CL100K = "cl100k_base"
_O200K = "o200k_base"

# Context windows of OpenAI's chat models: OpenAI's model documentation
# (platform.openai.com/docs/models, "Context window" of each model page, and the
# deprecations page for retired snapshots), as published up to 2025-08; encodings as
# tiktoken 0.14 maps the model names (tiktoken/model.py). Dated snapshots that share
# their alias's window are found through the alias (``gpt-4o-2024-08-06`` -> ``gpt-4o``);
# snapshots that differ are listed.
OPENAI_MODELS: Mapping[str, KnownModel] = MappingProxyType(
    {
        # GPT-4 (8k): the ELITR-Bench judge (gpt-4-0613); gpt-4 points to it.
        "gpt-4": KnownModel(8_192, _CL100K),
        "gpt-4-0314": KnownModel(8_192, _CL100K),
        "gpt-4-0613": KnownModel(8_192, _CL100K),
        # GPT-4-32k: the AutoMin 2023 GPT judges (Sec. 6.3).
        "gpt-4-32k": KnownModel(32_768, _CL100K),
        "gpt-4-32k-0314": KnownModel(32_768, _CL100K),
        "gpt-4-32k-0613": KnownModel(32_768, _CL100K),
        # GPT-4 Turbo.
        "gpt-4-turbo": KnownModel(128_000, _CL100K),
        "gpt-4-turbo-preview": KnownModel(128_000, _CL100K),
        "gpt-4-1106-preview": KnownModel(128_000, _CL100K),
        "gpt-4-0125-preview": KnownModel(128_000, _CL100K),
        "gpt-4-vision-preview": KnownModel(128_000, _CL100K),
        "gpt-4-1106-vision-preview": KnownModel(128_000, _CL100K),
        # GPT-3.5 Turbo: the alias points to gpt-3.5-turbo-0125 (16,385) since 2024-02.
        "gpt-3.5-turbo": KnownModel(16_385, _CL100K),
        "gpt-3.5-turbo-0125": KnownModel(16_385, _CL100K),
        "gpt-3.5-turbo-1106": KnownModel(16_385, _CL100K),
        "gpt-3.5-turbo-0613": KnownModel(4_096, _CL100K),
        "gpt-3.5-turbo-0301": KnownModel(4_096, _CL100K),
        "gpt-3.5-turbo-16k": KnownModel(16_385, _CL100K),
        "gpt-3.5-turbo-16k-0613": KnownModel(16_385, _CL100K),
        "gpt-3.5-turbo-instruct": KnownModel(4_096, _CL100K),
        # GPT-4o family (gpt-4o-2024-05-13 is the CREAM paper's evaluator).
        "gpt-4o": KnownModel(128_000, _O200K),
        "gpt-4o-mini": KnownModel(128_000, _O200K),
        "chatgpt-4o-latest": KnownModel(128_000, _O200K),
        "gpt-4.5-preview": KnownModel(128_000, _O200K),
        # GPT-4.1 family: 1,047,576 tokens.
        "gpt-4.1": KnownModel(1_047_576, _O200K),
        "gpt-4.1-mini": KnownModel(1_047_576, _O200K),
        "gpt-4.1-nano": KnownModel(1_047_576, _O200K),
        # o-series reasoning models.
        "o1": KnownModel(200_000, _O200K),
        "o1-pro": KnownModel(200_000, _O200K),
        "o1-preview": KnownModel(128_000, _O200K),
        "o1-mini": KnownModel(128_000, _O200K),
        "o3": KnownModel(200_000, _O200K),
        "o3-pro": KnownModel(200_000, _O200K),
        "o3-mini": KnownModel(200_000, _O200K),
        "o4-mini": KnownModel(200_000, _O200K),
        # GPT-5 family: 400,000 in total, of which at most 272,000 input tokens.
        "gpt-5": KnownModel(400_000, _O200K, 272_000),
        "gpt-5-mini": KnownModel(400_000, _O200K, 272_000),
        "gpt-5-nano": KnownModel(400_000, _O200K, 272_000),
    }
)

_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")

#: Bytes per token of the bound used without a tokenizer (see the module docstring).
BOUND_BYTES_PER_TOKEN = 2.5
#: OpenAI chat framing: tokens per message (3, plus 1 for the role name) and the 3 tokens
#: that prime the assistant's reply.
CHAT_TOKENS_PER_MESSAGE = 4
CHAT_TOKENS_PER_REPLY = 3


def known_model(model: str) -> tuple[str, KnownModel] | None:
    """The table entry of an OpenAI model name (dated snapshots and ``ft:`` included)."""
    name = model.strip().lower()
    if name.startswith("ft:"):  # ft:gpt-4o-mini-2024-07-18:org::id
        name = name.split(":")[1]
    if name in OPENAI_MODELS:
        return name, OPENAI_MODELS[name]
    alias = _DATE_SUFFIX.sub("", name)
    if alias != name and alias in OPENAI_MODELS:
        return alias, OPENAI_MODELS[alias]
    return None


@dataclass(frozen=True)
class TokenCounter:
    """How a judge's prompts are counted.

    Attributes:
        name: What counts (``cl100k_base (bpe-openai)``, ``tokenizer of PATH``, the bound).
        exact: Whether this is the model's own tokenizer (else the bound).
        count: Tokens of a piece of text.
        render: The full text a request becomes (hf: the chat template), counted as a
            whole; None for OpenAI's chat framing (per-message overhead).
    """

    name: str
    exact: bool
    count: Callable[[str], int] = field(compare=False)
    render: Callable[[CompletionRequest], str] | None = field(default=None, compare=False)

    def prompt_tokens(self, request: CompletionRequest) -> int:
        """Tokens the request's messages take in the model's context."""
        if self.render is not None:
            return self.count(self.render(request))
        turns = [content for _, content in request.messages] + [request.prompt]
        return sum(self.count(t) + CHAT_TOKENS_PER_MESSAGE for t in turns) + CHAT_TOKENS_PER_REPLY


def token_bound(text: str) -> int:
    """At least as many tokens as a tokenizer would count: UTF-8 bytes / 2.5, rounded up.

    A bound, not an estimate (:func:`elitr_bench.tokens.estimate_tokens` is the estimate):
    a window check must not let an over-long prompt through.
    """
    return math.ceil(len(text.encode("utf-8")) / BOUND_BYTES_PER_TOKEN)


BOUND = TokenCounter(
    f"a bound (UTF-8 bytes / {BOUND_BYTES_PER_TOKEN:g}; no tokenizer for this model)",
    False,
    token_bound,
)


@lru_cache(maxsize=4)
def openai_counter(encoding: str) -> TokenCounter:
    """An exact counter for one OpenAI encoding, or :data:`BOUND` without ``bpe-openai``."""
    try:
        import bpe_openai

        enc = bpe_openai.get_encoding(encoding)
    except Exception as exc:  # not installed, or an encoding it lacks
        log.warning("no %s tokenizer (%s); judge prompts are bounded by bytes", encoding, exc)
        return BOUND

    def count(text: str) -> int:
        # Ordinary text: "<|endoftext|>" in a transcript is not a special token here.
        return len(enc.encode_ordinary(text))

    return TokenCounter(f"{encoding} (bpe-openai)", True, count)


#: Config attributes holding a model's maximum sequence length, in lm-eval's order
#: (``HFLM._max_length``), then those of other architectures.
_LENGTH_ATTRS = ("n_positions", "max_position_embeddings", "n_ctx", "seq_length", "max_seq_len")
#: transformers' placeholder for "no limit" in ``tokenizer.model_max_length``.
_NO_LIMIT = 10**12


def hf_max_length(config: Any, tokenizer: Any) -> tuple[int, str]:
    """A transformers model's context length and where it was read (0 when unknown)."""
    for source in (config, getattr(config, "text_config", None)):
        for attr in _LENGTH_ATTRS:
            value = getattr(source, attr, None) if source is not None else None
            if isinstance(value, int) and value > 0:
                return value, f"config {attr}"
    value = getattr(tokenizer, "model_max_length", None)
    if isinstance(value, int) and 0 < value < _NO_LIMIT:
        return value, "tokenizer model_max_length"
    return 0, ""


@lru_cache(maxsize=8)
def hf_window(model: str) -> tuple[int, str, TokenCounter | None, str]:
    """An hf judge's length, its source, a counter, and why it is unknown (local files only)."""
    try:
        from transformers import AutoConfig, AutoTokenizer

        from elitr_bench.llm.hf_backend import chat_text

        tok = AutoTokenizer.from_pretrained(model)
        cfg = AutoConfig.from_pretrained(model)
    except Exception as exc:  # the backend reports a model it cannot load on its own
        return 0, "", None, f"cannot read its tokenizer and config ({type(exc).__name__})"
    length, source = hf_max_length(cfg, tok)

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    def render(request: CompletionRequest) -> str:
        return chat_text(tok, request.prompt, request.messages)

    counter = TokenCounter(f"the tokenizer of {model}", True, count, render)
    return length, source, counter, "" if length else "its config names no maximum length"


@dataclass(frozen=True)
class JudgeWindow:
    """A judge's context window and how its prompts are counted.

    Attributes:
        judge: The judge as named in messages (``openai:gpt-4-0613``).
        limit: Window in tokens, prompt plus output (0: not checked).
        source: Where ``limit`` comes from (``OpenAI model table``, ``context=8000``, ...).
        counter: How prompts are counted (None: not checked).
        max_prompt: Input limit of the model, if it has one below the window.
        note: Why the window is not checked ("" when it is).
    """

    judge: str
    limit: int
    source: str = ""
    counter: TokenCounter | None = None
    max_prompt: int | None = None
    note: str = ""

    @property
    def checked(self) -> bool:
        """Whether prompts are checked against a window."""
        return self.limit > 0 and self.counter is not None

    @property
    def exact(self) -> bool:
        """Whether counts come from the model's own tokenizer."""
        return self.counter is not None and self.counter.exact

    def prompt_budget(self, max_tokens: int) -> int:
        """Tokens left for the prompt once ``max_tokens`` of output are reserved."""
        budget = self.limit - max_tokens
        return min(budget, self.max_prompt) if self.max_prompt else budget

    def prompt_tokens(self, request: CompletionRequest) -> int:
        """Tokens of a request's prompt (0 when not checked)."""
        return self.counter.prompt_tokens(request) if self.counter is not None else 0

    def count(self, text: str) -> int:
        """Tokens of a piece of text (0 when not checked)."""
        return self.counter.count(text) if self.counter is not None else 0

    def over(self, request: CompletionRequest) -> int | None:
        """The request's prompt tokens when it does not fit, else None."""
        if not self.checked:
            return None
        tokens = self.prompt_tokens(request)
        return tokens if tokens > self.prompt_budget(request.max_tokens) else None

    def describe(self, max_tokens: int) -> str:
        """The limit in words: window, source, output reserved, how tokens were counted."""
        assert self.counter is not None
        counted = "counted with" if self.counter.exact else "counted as"
        budget = self.prompt_budget(max_tokens)
        left = (
            f"{budget:,} for the prompt (the model's input limit)"
            if budget == self.max_prompt
            else f"{budget:,} for the prompt after max_tokens={max_tokens}"
        )
        return (
            f"the {self.limit:,}-token window of judge {self.judge} ({self.source}; {left}; "
            f"{counted} {self.counter.name})"
        )

    def require(self, request: CompletionRequest) -> None:
        """Refuse a request that does not fit (the client's last check before sending).

        Raises:
            ContextWindowError: The prompt plus ``max_tokens`` exceed the window.
        """
        tokens = self.over(request)
        if tokens is not None:
            raise ContextWindowError(
                f"a judge prompt of {tokens:,} tokens exceeds {self.describe(request.max_tokens)}"
                "; nothing was sent; use a judge with a larger context window"
            )


#: The topic under which a server's named window is kept (:mod:`elitr_bench.llm.memory`).
SERVED_WINDOW = "served window"


def note_served_window(endpoint: str, model: str, tokens: Any) -> None:
    """Remember the window a server names for a model (vLLM's ``max_model_len``).

    Anything but a positive integer is ignored (OpenAI's listing names none).
    """
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
        memory.replace_fact(Scope("openai", endpoint, model), SERVED_WINDOW, tokens)


def judge_window(config: EndpointSpec) -> JudgeWindow:
    """The context window of a judge config (see the module docstring for the order).

    An API model that is neither in the table nor given ``context=`` nor named with a
    window by its server is not checked; a warning says so once per process and model.
    """
    served = memory.recall(Scope("openai", endpoint_key(config), config.model), SERVED_WINDOW)
    return _window(config.backend, config.model, config.context, served or 0)


@lru_cache(maxsize=64)
def _window(backend: str, model: str, context: int, served: int = 0) -> JudgeWindow:
    label = f"{backend}:{model}" if model else backend
    given = f"context={context}"
    if backend == "openai":
        known = known_model(model)
        if known is not None:
            name, entry = known
            counter = openai_counter(entry.encoding)
            if context:
                return JudgeWindow(label, context, given, counter, entry.max_prompt)
            return JudgeWindow(
                label, entry.context, f"OpenAI model table: {name}", counter, entry.max_prompt
            )
        if context:
            return JudgeWindow(label, context, given, BOUND)
        if served:
            return JudgeWindow(label, served, "max_model_len of the server's /v1/models", BOUND)
        return _unchecked(
            label,
            "its context window is unknown (not an OpenAI model in our table); add "
            "context=N (tokens) to the judge spec to check prompts before they are sent",
        )
    if backend == "hf":
        length, source, hf_counter, why = hf_window(model)
        if hf_counter is None:
            if context:
                return JudgeWindow(label, context, given, BOUND)
            return _unchecked(label, f"{why}; prompts are not checked before generation")
        if context:
            return JudgeWindow(label, context, given, hf_counter)
        if not length:
            return _unchecked(label, f"{why}; add context=N (tokens) to the judge spec")
        return JudgeWindow(label, length, source, hf_counter)
    return JudgeWindow(label, 0)  # replay and lexical send no prompts


def _unchecked(label: str, why: str) -> JudgeWindow:
    if memory.first_time(Scope("", "", label), "unchecked window"):
        log.warning("note: judge %s: %s", label, why)
    return JudgeWindow(label, 0, note=why)
