"""Schema-constrained decoding for local judges: a ``response_format`` as an xgrammar grammar.

An OpenAI-compatible server constrains a restatement's JSON itself; a local transformers
judge has no server, so its own ``generate`` masks every step's logits to the tokens the
request's JSON schema still allows. xgrammar (the library vLLM uses) compiles the schema
into a grammar over the tokenizer's vocabulary and keeps one matcher per generated row.
A random model under the mask can only write an object of that schema, so a small judge's
``{"score": "7"}`` or ``{"Score": 7}`` cannot happen.

xgrammar is optional (the ``structured`` extra): without it an hf judge's restatement is
asked in words only, and ``structured=on`` is refused with :data:`INSTALL_HINT`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from elitr_bench.llm.base import FatalBackendError

#: What to run where schema-constrained decoding of a local judge needs xgrammar.
INSTALL_HINT = 'pip install xgrammar (or, in the clone, the extra: pip install ".[structured]")'


def available() -> bool:
    """Whether xgrammar imports (an installed but broken build counts as missing)."""
    try:
        import xgrammar  # noqa: F401
    except Exception:  # ImportError, or a binary that fails to load against this torch
        return False
    return True


def grammar_source(response_format: str) -> str | None:
    """The JSON schema text a ``response_format`` constrains to.

    ``""`` (or type ``text``) constrains nothing: None. Type ``json_object`` is any JSON
    object, returned as the schema ``{"type": "object"}``.

    Raises:
        FatalBackendError: Not OpenAI's ``response_format`` shape.
    """
    if not response_format:
        return None
    try:
        spec = json.loads(response_format)
        kind = spec["type"]
        if kind == "json_schema":
            return json.dumps(spec["json_schema"]["schema"], sort_keys=True)
    except (ValueError, TypeError, KeyError) as exc:
        raise FatalBackendError(f"judge hf: unreadable response_format ({exc!r})") from None
    if kind == "json_object":
        return json.dumps({"type": "object"})
    if kind == "text":
        return None
    raise FatalBackendError(
        f"judge hf: response_format type {kind!r} is not one of json_schema, json_object, text"
    )


class SchemaDecoding:
    """One tokenizer's grammar compiler; each schema is compiled once and kept.

    Args:
        tokenizer: The judge's transformers tokenizer.
        vocab_size: Width of the model's logits (may exceed the tokenizer's vocabulary).
        stop_ids: Every token id ``generate`` stops at: a constrained row may end only
            with one of them, once its object is complete, so a row the grammar ends
            is a row ``generate`` ends.

    Raises:
        FatalBackendError: xgrammar does not import (the line names :data:`INSTALL_HINT`).
    """

    def __init__(self, tokenizer: Any, vocab_size: int, stop_ids: Iterable[int]) -> None:
        try:
            import xgrammar as xgr
        except Exception as exc:
            raise FatalBackendError(
                f"judge hf: a response_format needs xgrammar ({exc}): {INSTALL_HINT}"
            ) from None
        try:
            info = xgr.TokenizerInfo.from_huggingface(
                tokenizer, vocab_size=vocab_size, stop_token_ids=sorted(stop_ids) or None
            )
            self._compiler = xgr.GrammarCompiler(info, max_threads=1)
        except Exception as exc:  # a tokenizer xgrammar cannot map to text
            raise FatalBackendError(
                f"judge hf: xgrammar cannot read this tokenizer ({exc}); use structured=off"
            ) from None
        self.vocab_size = vocab_size
        self._grammars: dict[str, Any] = {}

    def grammar(self, schema: str) -> Any:
        """The compiled grammar of one JSON schema (compact JSON: no free whitespace).

        Free whitespace would let a weak model pad the object until ``max_tokens`` cuts
        it off; the reader takes compact JSON like any other.
        """
        compiled = self._grammars.get(schema)
        if compiled is None:
            try:
                compiled = self._compiler.compile_json_schema(schema, any_whitespace=False)
            except Exception as exc:  # xgrammar refuses a schema it cannot express
                raise FatalBackendError(
                    f"judge hf: cannot constrain decoding to the response_format's schema: {exc}"
                ) from None
            self._grammars[schema] = compiled
        return compiled

    def processor(self, response_formats: Sequence[str]) -> Any:
        """A fresh logits processor for one batch, one matcher per constrained row.

        Args:
            response_formats: Each row's ``response_format`` (``""``: the row decodes
                freely), in batch order.

        Returns:
            A ``transformers.LogitsProcessor``, or None when no row is constrained.
        """
        sources = [grammar_source(f) for f in response_formats]
        if all(s is None for s in sources):
            return None
        grammars = [None if s is None else self.grammar(s) for s in sources]
        return _row_processor(grammars, self.vocab_size)


def _row_processor(grammars: Sequence[Any], vocab_size: int) -> Any:
    """A transformers logits processor that masks row ``i`` by ``grammars[i]`` (None: free).

    transformers calls it once per decoding step, before the first sampled token too; from
    the second call on it first feeds each constrained row's last token to its matcher. A
    row whose matcher has ended took a stop token, so ``generate`` pads it from then on.
    Use it for one ``generate`` call only (the matchers hold the rows' state).
    """
    import xgrammar as xgr
    from transformers import LogitsProcessor

    class RowGrammars(LogitsProcessor):
        def __init__(self) -> None:
            self.matchers = {i: xgr.GrammarMatcher(g) for i, g in enumerate(grammars) if g}
            self.bitmask = xgr.allocate_token_bitmask(len(grammars), vocab_size)
            self.started = False

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            live = [i for i, m in self.matchers.items() if not m.is_terminated()]
            if self.started:
                last = input_ids[:, -1].tolist()
                for i in live:
                    if not self.matchers[i].accept_token(int(last[i])):  # nothing was allowed
                        raise FatalBackendError(
                            f"judge hf: token {last[i]} breaks the response_format's schema "
                            "(a vocabulary that cannot spell it?); use structured=off"
                        )
                live = [i for i in live if not self.matchers[i].is_terminated()]
            self.started = True
            if not live:
                return scores
            for i in live:
                self.matchers[i].fill_next_token_bitmask(self.bitmask, i)
            masked = scores if scores.device.type in ("cpu", "cuda") else scores.cpu()
            xgr.apply_token_bitmask_inplace(
                masked, self.bitmask.to(masked.device), vocab_size=vocab_size, indices=live
            )
            return masked.to(scores.device) if masked is not scores else scores

    return RowGrammars()
