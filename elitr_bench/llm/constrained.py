"""Schema-constrained decoding for local judges: a ``response_format`` as an xgrammar grammar.

An OpenAI-compatible server constrains a restatement's JSON itself; a local transformers
judge has no server, so its own ``generate`` masks every step's logits to the tokens the
request's JSON schema still allows. xgrammar (the library vLLM uses) compiles the schema
into a grammar over the tokenizer's vocabulary and keeps one matcher per generated row.
A random model under the mask can only write an object of that schema, so a small judge's
``{"score": "7"}`` or ``{"Score": 7}`` cannot happen.

xgrammar is optional (the ``structured`` extra): without it an hf judge's restatement is
asked in words only, and ``structured=on`` is refused with :data:`INSTALL_HINT`. Where
xgrammar fails here (it cannot read the tokenizer, or cannot compile a schema) the
request's format is refused (:class:`~elitr_bench.llm.base.RequestRefused`), exactly as a
server refuses it: the same turn is generated without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from elitr_bench.llm.base import FatalBackendError, RequestRefused, ResponseFormat

#: What to run where schema-constrained decoding of a local judge needs xgrammar.
INSTALL_HINT = 'pip install xgrammar (or, in the clone, the extra: pip install ".[structured]")'


def available() -> bool:
    """Whether xgrammar imports (an installed but broken build counts as missing)."""
    try:
        import xgrammar  # noqa: F401
    except Exception:  # ImportError, or a binary that fails to load against this torch
        return False
    return True


def grammar_source(response_format: ResponseFormat) -> str:
    """The JSON schema text a ``response_format`` constrains to.

    Type ``json_object`` is any JSON object, returned as the schema ``{"type": "object"}``.

    Raises:
        RequestRefused: A type no grammar expresses.
    """
    if response_format.kind == "json_schema":
        return response_format.schema
    if response_format.kind == "json_object":
        return json.dumps({"type": "object"})
    raise _refused(
        f"response_format type {response_format.kind!r} is not json_schema or json_object"
    )


def _refused(why: str) -> RequestRefused:
    return RequestRefused(f"judge hf: {why}", None, "response_format")


class SchemaDecoding:
    """One tokenizer's grammar compiler; each schema is compiled once and kept.

    Args:
        tokenizer: The judge's transformers tokenizer.
        vocab_size: Width of the model's logits (may exceed the tokenizer's vocabulary).
        stop_ids: Every token id ``generate`` stops at: a constrained row may end only
            with one of them, once its object is complete, so a row the grammar ends
            is a row ``generate`` ends.

    Raises:
        RequestRefused: xgrammar does not import (the line names :data:`INSTALL_HINT`) or
            cannot read the tokenizer.
    """

    def __init__(self, tokenizer: Any, vocab_size: int, stop_ids: Iterable[int]) -> None:
        try:
            import xgrammar as xgr
        except Exception as exc:
            raise _refused(f"a response_format needs xgrammar ({exc}): {INSTALL_HINT}") from None
        try:
            info = xgr.TokenizerInfo.from_huggingface(
                tokenizer, vocab_size=vocab_size, stop_token_ids=sorted(stop_ids) or None
            )
            self._compiler = xgr.GrammarCompiler(info, max_threads=1)
        except Exception as exc:  # a tokenizer xgrammar cannot map to text
            raise _refused(f"xgrammar cannot read this tokenizer ({exc})") from None
        self.vocab_size = vocab_size
        self._grammars: dict[str, Any] = {}

    def grammar(self, response_format: ResponseFormat) -> Any:
        """The compiled grammar of one format (compact JSON: no free whitespace).

        Free whitespace would let a weak model pad the object until ``max_tokens`` cuts
        it off; the reader takes compact JSON like any other.

        Raises:
            RequestRefused: xgrammar cannot compile the schema.
        """
        schema = grammar_source(response_format)
        compiled = self._grammars.get(schema)
        if compiled is None:
            try:
                compiled = self._compiler.compile_json_schema(schema, any_whitespace=False)
            except Exception as exc:  # xgrammar refuses a schema it cannot express
                why = f"xgrammar cannot compile the response_format's schema ({exc})"
                raise _refused(why) from None
            self._grammars[schema] = compiled
        return compiled

    def processor(self, grammars: Sequence[Any]) -> Any:
        """A fresh logits processor for one batch: each row's grammar (None: decodes freely).

        Returns:
            A ``transformers.LogitsProcessor``, or None when no row is constrained.
        """
        if all(g is None for g in grammars):
            return None
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
