"""``hf-prefix``: lm-eval's ``hf`` model that prefills each shared prompt prefix once.

Every ELITR prompt starts with the same 5k-18k-token transcript. Stock ``hf`` runs it
through the model again for each of a meeting's ~15 questions, and again for every turn
of a conversation. This subclass serves greedy requests one at a time from a KV cache:

* within a ``generate_until`` call, requests are sorted so that those sharing a prefix
  are adjacent; the prefix is prefilled once and the cache is cropped back to it after
  each member (no copies);
* across calls, each finished sequence (prompt + answer) is kept in a byte-bounded LRU
  store, so turn k+1 of a conversation only prefills what turn k did not see. Matching
  is on token ids (longest common prefix), never on strings.

With ``prefix_batch=on`` (``auto``: on CUDA only) the requests sharing a prefix are
decoded together instead (see :meth:`HFPrefixLM._generate_batch`): on a GPU a decode
step reads all weights whether it serves one answer or sixteen.

Outputs equal ``--model hf`` with ``batch_size=1`` token for token on the same dtype:
same tokenization, left truncation, stop sequences, ``max_gen_toks`` and EOS handling,
and results in request order. Sampled or beam-search requests, prompts shorter than
``min_prefix_tokens`` without anything to share, seq2seq models and models with
sliding-window or recurrent layers (their caches cannot be cropped back) take the
stock path unchanged.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from typing import Any

import torch
from lm_eval.api.instance import Instance
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM, stop_sequences_criteria
from lm_eval.models.utils import (
    handle_stop_sequences,
    normalize_gen_kwargs,
    postprocess_generated_text,
)
from tqdm import tqdm
from transformers import StoppingCriteria

from elitr_bench.cli_errors import install_excepthook
from elitr_bench.models.kv_cache import (
    BatchRow,
    PrefillStats,
    PrefixCacheError,
    PrefixStore,
    batch_columns,
    prefix_schedule,
    serve_batched,
    serve_with_prefix_reuse,
)
from elitr_bench.models.memory import MIB, ModelDims, rows_that_fit
from elitr_bench.tokens import eos_ids

log = logging.getLogger(__name__)

#: Default budget of the cross-call cache store (MiB); see docs/performance.md's memory section.
DEFAULT_PREFIX_CACHE_MB = 4096.0
#: Shared prefixes shorter than this are not worth holding a cache for.
DEFAULT_MIN_PREFIX_TOKENS = 256
#: ``prefix_batch`` values: decode the requests sharing a prefix together, or one by one.
PREFIX_BATCH_MODES = ("auto", "on", "off")


def _layer_tensors(cache: Any) -> list[tuple[Any, str]]:
    """(holder, attribute) pairs of a cache's key/value tensors (transformers 4.x and 5.x)."""
    pairs: list[tuple[Any, str]] = []
    for layer in getattr(cache, "layers", None) or []:
        for name in ("keys", "values"):
            if isinstance(getattr(layer, name, None), torch.Tensor):
                pairs.append((layer, name))
    if not pairs:  # transformers 4.x DynamicCache: parallel lists of tensors
        for name in ("key_cache", "value_cache"):
            tensors = getattr(cache, name, None) or []
            pairs.extend((tensors, str(i)) for i in range(len(tensors)))
    return pairs


def _kv_pairs(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(keys, values) of each layer, in layer order (transformers 4.x and 5.x)."""
    layers = getattr(cache, "layers", None)
    if layers:
        return [(layer.keys, layer.values) for layer in layers]
    return list(zip(cache.key_cache, cache.value_cache, strict=True))


class RowStop(StoppingCriteria):
    """Stops each row of a batched ``generate`` at its own stop sequence, as ``hf`` would alone.

    lm-eval's own criteria (``stop_sequences_criteria``, the ones its ``hf`` model passes
    to ``generate``) already track, row by row, whether the decoded tail of an answer holds
    a stop sequence, but answer for the whole batch: stop when every row is done. This
    wraps them and answers per row instead, so ``generate`` pads a finished row while the
    others go on; ``lengths`` keeps where each row stopped.
    """

    def __init__(self, tokenizer: Any, stops: list[str], start: int, rows: int) -> None:
        self.start = start
        self.criteria = list(stop_sequences_criteria(tokenizer, stops, start, rows))
        self.lengths: list[int | None] = [None] * rows

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        """Per-row done flags after the latest token."""
        for criterion in self.criteria:
            criterion(input_ids, scores)
        for row, length in enumerate(self.lengths):
            if length is None and any(c.done_tracker[row] for c in self.criteria):
                self.lengths[row] = int(input_ids.shape[1]) - self.start
        done = [length is not None for length in self.lengths]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def _get(holder: Any, name: str) -> torch.Tensor:
    return holder[int(name)] if isinstance(holder, list) else getattr(holder, name)


def _set(holder: Any, name: str, value: torch.Tensor) -> None:
    if isinstance(holder, list):
        holder[int(name)] = value
    else:
        setattr(holder, name, value)


class TorchCacheOps:
    """:class:`~elitr_bench.models.kv_cache.CacheOps` over transformers' ``DynamicCache``."""

    def __init__(self, config: Any, device: torch.device, park_device: torch.device) -> None:
        self.config = config
        self.device = device
        self.park_device = park_device

    def empty(self) -> Any:
        """A new ``DynamicCache`` laid out for the model's config."""
        from transformers import DynamicCache

        try:
            return DynamicCache(config=self.config)
        except TypeError:  # transformers 4.x
            return DynamicCache()

    def length(self, cache: Any) -> int:
        """Tokens held."""
        return int(cache.get_seq_length())

    def crop(self, cache: Any, length: int) -> None:
        """Drop tokens after ``length`` (a negative argument to ``crop`` counts from the end)."""
        current = self.length(cache)
        if length < current:
            cache.crop(length - current)

    def nbytes(self, cache: Any) -> int:
        """Bytes of the storage behind the keys and values (cropped views keep theirs)."""
        seen: set[int] = set()
        total = 0
        for holder, name in _layer_tensors(cache):
            storage = _get(holder, name).untyped_storage()
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                total += storage.nbytes()
        return total

    def _move(self, cache: Any, device: torch.device) -> Any:
        for holder, name in _layer_tensors(cache):
            tensor = _get(holder, name)
            if tensor.device != device:
                _set(holder, name, tensor.to(device))
        for layer in getattr(cache, "layers", None) or []:
            if hasattr(layer, "device"):
                layer.device = device
        return cache

    def stack(self, rows: list[tuple[Any, int]], width: int) -> Any:
        """One batch cache from ``(cache, length)`` rows, each right-aligned in ``width``.

        Columns left of a row's tokens are zeros that the attention mask hides. Rows that
        all share one cache of one length are an expanded view (the first update copies).
        """
        out = self.empty()
        first, length = rows[0]
        shared = all(c is first and n == length == width for c, n in rows)
        for layer, pairs in enumerate(zip(*(_kv_pairs(c) for c, _ in rows), strict=True)):
            kv = []
            for which in (0, 1):
                sample = pairs[0][which]
                if shared:
                    kv.append(sample[:, :, :width].expand(len(rows), -1, -1, -1))
                    continue
                batch = sample.new_zeros((len(rows), sample.shape[1], width, sample.shape[3]))
                for b, ((_, n), pair) in enumerate(zip(rows, pairs, strict=True)):
                    if n:
                        batch[b, :, width - n :] = pair[which][0, :, :n]
                kv.append(batch)
            out.update(kv[0], kv[1], layer)
        return out

    def row(self, cache: Any, index: int, columns: torch.Tensor) -> Any:
        """A one-row cache of ``columns`` of row ``index`` of a batch cache (a copy)."""
        out = self.empty()
        for layer, (keys, values) in enumerate(_kv_pairs(cache)):
            out.update(
                keys[index : index + 1, :, columns], values[index : index + 1, :, columns], layer
            )
        return out

    def park(self, cache: Any) -> Any:
        """Move a finished cache to the store's device."""
        return self._move(cache, self.park_device) if self.park_device != self.device else cache

    def unpark(self, cache: Any) -> Any:
        """Bring a stored cache back to the model's device."""
        return self._move(cache, self.device) if self.park_device != self.device else cache


@functools.cache
def _cache_kwarg(method: Any) -> str:
    """The keyword of ``method`` (``generate``, a decoder's ``forward``) for a KV cache.

    Recent transformers renamed ``past_key_values`` to ``cache`` (the old name still works
    with a FutureWarning on every call); older releases know only ``past_key_values``.
    The rename is read off the method's ``deprecate_kwarg`` decorator.
    """
    import inspect

    try:
        source = inspect.getsource(method)
    except (OSError, TypeError):
        return "past_key_values"
    renamed = '"past_key_values"' in source and 'new_name="cache"' in source
    return "cache" if renamed else "past_key_values"


def _wants_gpu(device: Any) -> bool:
    return torch.cuda.is_available() and str(device or "cuda").startswith("cuda")


@register_model("hf-prefix")
class HFPrefixLM(HFLM):
    """lm-eval's ``hf`` model with prefix KV-cache reuse for greedy ``generate_until``.

    Accepts every ``hf`` argument. Differences in defaults: ``dtype`` is ``bfloat16``
    on GPU when not given (``auto`` elsewhere, as ``hf``); attention is SDPA whenever
    transformers supports it for the model (its default; ``attn_implementation=`` is
    passed through).

    Args:
        pretrained: Model name or path, as for ``hf``.
        prefix_cache_mb: Budget of the cross-call store in MiB (0 disables reuse
            across calls; reuse within a call needs no store).
        prefix_cache_device: Where stored caches live, e.g. ``cpu`` to keep GPU memory
            for the model (default: the model's device).
        min_prefix_tokens: Shortest shared prefix worth reusing.
        prefill_chunk: Prefill long uncached spans in forwards of this many tokens to
            bound activation memory (0: one forward, exactly like ``hf``).
        prefix_batch: ``on`` decodes the requests that share a prefix (a meeting's
            questions; turn k of the conversations) as one batch over that prefix,
            ``off`` one at a time; ``auto`` batches on CUDA only: on a CPU the copied
            prefix caches cost more than the weights a batch saves re-reading (measured
            in bench/real_model_cpu.py). Rows per batch are bounded by ``hf``'s
            ``max_batch_size`` (default 64) and by the free memory divided by one row's
            KV cache (models/memory.py).
        **kwargs: Every other ``hf`` argument.
    """

    def __init__(
        self,
        pretrained: Any,
        prefix_cache_mb: float = DEFAULT_PREFIX_CACHE_MB,
        prefix_cache_device: str | None = None,
        min_prefix_tokens: int = DEFAULT_MIN_PREFIX_TOKENS,
        prefill_chunk: int = 0,
        prefix_batch: str = "auto",
        **kwargs: Any,
    ) -> None:
        if float(prefix_cache_mb) < 0:
            raise PrefixCacheError(
                f"--model_args prefix_cache_mb={prefix_cache_mb}: must be >= 0 (0 disables "
                "keeping caches between calls)"
            )
        if int(min_prefix_tokens) < 1:
            raise PrefixCacheError(
                f"--model_args min_prefix_tokens={min_prefix_tokens}: must be >= 1"
            )
        if int(prefill_chunk) < 0:
            raise PrefixCacheError(
                f"--model_args prefill_chunk={prefill_chunk}: must be >= 0 (0 = no chunking)"
            )
        if str(prefix_batch).lower() not in PREFIX_BATCH_MODES:
            raise PrefixCacheError(f"--model_args prefix_batch={prefix_batch}: use auto, on or off")
        if "dtype" not in kwargs and _wants_gpu(kwargs.get("device", "cuda")):
            kwargs["dtype"] = "bfloat16"
        super().__init__(pretrained, **kwargs)
        self.min_prefix_tokens = int(min_prefix_tokens)
        self.prefill_chunk = int(prefill_chunk)
        mode = str(prefix_batch).lower()
        self.prefix_batch = mode == "on" or (mode == "auto" and self.device.type == "cuda")
        self.prefix_stats = PrefillStats()
        self._said_requests = 0
        device = torch.device(self.device)
        park = torch.device(prefix_cache_device) if prefix_cache_device else device
        self._cache_ops = TorchCacheOps(self.model.config, device, park)
        self.prefix_store: PrefixStore[Any] = PrefixStore(
            self._cache_ops, int(float(prefix_cache_mb) * MIB)
        )
        attention = getattr(self.model.config, "_attn_implementation", None)
        if attention == "eager":
            log.warning(
                "hf-prefix: eager attention materialises a tokens x tokens score matrix per "
                "head; pass --model_args attn_implementation=sdpa if the model supports it"
            )
        self._prefix_reason = self._unsupported_reason()
        if self._prefix_reason:
            log.warning(
                "hf-prefix: prefix reuse disabled (%s); using hf's path", self._prefix_reason
            )

    # ------------------------------------------------------------- capability
    def _unsupported_reason(self) -> str | None:
        if self.backend != "causal":
            return f"backend {self.backend!r} is not decoder-only"
        probe = self._cache_ops.empty()
        if any(getattr(probe, "is_sliding", None) or []):
            return "the model has sliding-window layers, whose caches cannot be cropped"
        if getattr(self.model.config, "sliding_window", None) and not getattr(
            probe, "layers", None
        ):
            return "the model has a sliding window"
        if not getattr(probe, "is_croppable", True):
            return "the model's cache cannot be cropped"
        return None

    @staticmethod
    def _greedy(kwargs: dict[str, Any]) -> bool:
        return kwargs.get("do_sample") is False and int(kwargs.get("num_beams", 1) or 1) == 1

    # --------------------------------------------------------------- helpers
    def _encode_like_hf(self, context: str, max_ctx_len: int) -> list[int]:
        """Token ids exactly as ``hf`` builds them for a batch of one (incl. left truncation)."""
        ids, _ = self.tok_batch_encode(
            [context], left_truncate_len=max_ctx_len, truncation=self.truncation
        )
        return [int(t) for t in ids[0].tolist()]

    def _generate_one(
        self,
        ids: list[int],
        cache: Any,
        cached: int,
        until: list[str],
        max_gen_toks: int,
        kwargs: dict[str, Any],
    ) -> list[int]:
        """Generate one continuation; ``cache`` holds ``ids[:cached]`` and grows in place.

        ``generate`` prefills only the uncached tokens (computing logits for the last
        position only, via ``logits_to_keep``) before decoding.
        """
        if self.prefill_chunk and len(ids) - 1 - cached > self.prefill_chunk:
            self._extend(ids[:-1], cache, cached)  # in chunks, leaving the last for generate
        gen_kwargs = dict(kwargs)
        max_length = gen_kwargs.pop("max_length", len(ids) + max_gen_toks)
        context = torch.tensor([ids], device=self.device)
        out = self._model_generate(
            context=context,
            attention_mask=torch.ones_like(context),
            stop=until,
            max_length=max_length,
            **{_cache_kwarg(type(self.model).generate): cache},
            **gen_kwargs,
        )
        return [int(t) for t in out[0, len(ids) :].tolist()]

    def _extend(self, ids: list[int], cache: Any, cached: int) -> None:
        """Prefill ``ids[cached:]`` into a one-row cache through the decoder body (no logits).

        In chunks of ``prefill_chunk`` tokens when set, so a long prompt never needs its
        whole attention at once.
        """
        if cached >= len(ids):
            return
        body = self.model.get_decoder()
        key = _cache_kwarg(type(body).forward)
        step = self.prefill_chunk or len(ids)
        with (
            torch.no_grad(),
            torch.autocast(
                device_type=self.device.type,
                dtype=self.mixed_precision_dtype,
                enabled=self.mixed_precision_dtype is not None,
            ),
        ):
            for start in range(cached, len(ids), step):
                chunk = torch.tensor([ids[start : start + step]], device=self.device)
                body(input_ids=chunk, use_cache=True, **{key: cache})

    def max_rows(self, tokens_per_row: int) -> int:
        """Rows per batch: ``max_batch_size``, and what the free memory holds (models/memory.py)."""
        if self.device.type == "cuda":
            free = int(torch.cuda.mem_get_info(self.device)[0])
        else:
            import os

            free = int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        cap = int(self.max_batch_size or 64)
        dims = ModelDims.from_config(self.model.config)
        size = self.model.dtype.itemsize
        # a multi-turn row's cache can exist three times at once: taken from the store,
        # in the batch, and copied out of it for the store
        return rows_that_fit(dims, tokens_per_row, free, dtype_bytes=size, cap=cap, copies=3)

    def _serve_batched(
        self,
        sequences: list[list[int]],
        until: list[str],
        max_gen_toks: int,
        kwargs: dict[str, Any],
        stats: PrefillStats,
        pbar: Any,
    ) -> list[list[int]]:
        def generate_batch(rows: list[BatchRow[Any]]) -> tuple[list[list[int]], list[Any | None]]:
            out = self._generate_batch(rows, until, max_gen_toks, kwargs)
            pbar.update(len(rows))
            return out

        return serve_batched(
            sequences,
            self._cache_ops,
            self.prefix_store,
            self._extend,
            generate_batch,
            min_prefix_tokens=self.min_prefix_tokens,
            max_batch=self.max_rows(max(map(len, sequences)) + max_gen_toks),
            # a batch's cache is wider than its longest prompt when one row has a long
            # cached span and another a long suffix: bound it by its real width
            rows_fit=lambda columns: self.max_rows(columns + max_gen_toks),
            stats=stats,
        )

    def _generate_batch(
        self,
        rows: list[BatchRow[Any]],
        until: list[str],
        max_gen_toks: int,
        kwargs: dict[str, Any],
    ) -> tuple[list[list[int]], list[Any | None]]:
        """Decode rows together, each from its cache (rows may share one cache object).

        Row ``b``'s cached tokens sit right-aligned in the first ``W`` columns (the longest
        cached span), its uncached suffix right-aligned in the next ``S`` (the longest
        suffix); the left padding and the gap between a short cache and its suffix are
        zeros in the attention mask, and ``generate`` takes the position ids from the
        mask's running count, so every row sees its own positions ``0..len-1``. Each row
        stops at its own stop sequence or EOS (:class:`RowStop`); the batch stops when all
        rows have or after ``max_gen_toks``. Each row's answer is cut where it stopped, so
        it is the token list serial decoding returns; a row marked ``keep`` has its own
        cache (prompt + answer) copied out for the store.
        """
        width = max(r.cached for r in rows)
        span = batch_columns(rows) - width
        pad = self.tokenizer.pad_token_id
        pad = int(pad if pad is not None else self.eot_token_id)
        context = torch.full((len(rows), width + span), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width + span), dtype=torch.long)
        for b, r in enumerate(rows):
            suffix = r.ids[r.cached :]
            if r.cached:
                context[b, width - r.cached : width] = torch.tensor(r.ids[: r.cached])
                mask[b, width - r.cached : width] = 1
            context[b, width + span - len(suffix) :] = torch.tensor(suffix)
            mask[b, width + span - len(suffix) :] = 1
        cache = self._cache_ops.stack([(r.cache, r.cached) for r in rows], width)
        stop = RowStop(self.tokenizer, until, width + span, len(rows))
        gen_kwargs = dict(kwargs)
        gen_kwargs.pop("max_length", None)
        gen_kwargs["temperature"] = gen_kwargs.get("temperature", 0.0)
        if gen_kwargs.get("do_sample") is False and gen_kwargs["temperature"] == 0.0:
            gen_kwargs.pop("temperature")
        with torch.autocast(
            device_type=self.device.type,
            dtype=self.mixed_precision_dtype,
            enabled=self.mixed_precision_dtype is not None,
        ):
            out = self.model.generate(
                input_ids=context.to(self.device),
                attention_mask=mask.to(self.device),
                max_length=width + span + max_gen_toks,
                stopping_criteria=[stop],
                pad_token_id=pad,
                use_cache=True,
                **{_cache_kwarg(type(self.model).generate): cache},
                **gen_kwargs,
            )
        answers = out[:, width + span :].tolist()
        eos = eos_ids(self.model.generation_config, self.tokenizer)
        generated: list[list[int]] = []
        caches: list[Any | None] = []
        for b, (r, answer) in enumerate(zip(rows, answers, strict=True)):
            end = stop.lengths[b] or len(answer)
            ends_at_eos = [i + 1 for i, tok in enumerate(answer[:end]) if tok in eos]
            end = min([end, *ends_at_eos[:1]])
            answer = [int(t) for t in answer[:end]]
            generated.append(answer)
            if not r.keep:
                caches.append(None)
                continue
            fed = min(len(answer), len(out[b]) - 1 - (width + span))  # the last is not fed
            fresh = len(r.ids) - r.cached
            columns = torch.cat(
                [
                    torch.arange(width - r.cached, width),
                    torch.arange(width + span - fresh, width + span + fed),
                ]
            ).to(self.device)
            caches.append(self._cache_ops.row(cache, b, columns))
        return generated, caches

    def _finish(self, cont_toks: list[int], until: list[str]) -> str:
        """Decode and post-process a continuation as ``hf`` does."""
        if isinstance(self.think_end_token, int):
            marks = [i for i, tok in enumerate(cont_toks) if tok == self.think_end_token]
            if marks:
                cont_toks = cont_toks[marks[-1] + 1 :]
        text = str(self.tok_decode(cont_toks))
        if isinstance(self.think_end_token, int):
            text = text.lstrip()
        return str(
            postprocess_generated_text(
                generation=text,
                stop=until,
                think_end_token=self.think_end_token
                if isinstance(self.think_end_token, str)
                else None,
            )
        )

    # ------------------------------------------------------------ lm-eval API
    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """Greedy generation with prefix reuse; everything else goes to ``hf``'s path."""
        if self._prefix_reason or not requests:
            return list(super().generate_until(requests, disable_tqdm=disable_tqdm))
        eos = self.tok_decode(self.eot_token_id, skip_special_tokens=False)
        groups: dict[str, list[int]] = {}
        for i, req in enumerate(requests):
            key = json.dumps(req.args[1], sort_keys=True, default=str)
            groups.setdefault(key, []).append(i)

        results: list[str | None] = [None] * len(requests)
        stock: list[int] = []
        call_stats = PrefillStats()
        pbar = tqdm(
            total=len(requests),
            disable=(disable_tqdm or self.rank != 0),
            desc="Running generate_until requests (hf-prefix)",
        )
        for indices in groups.values():
            self._serve_group(requests, indices, eos, results, stock, call_stats, pbar)
        pbar.close()

        if stock:
            stock_out = super().generate_until(
                [requests[i] for i in stock], disable_tqdm=disable_tqdm
            )
            for i, text in zip(stock, stock_out, strict=True):
                results[i] = text
        self._record(call_stats, len(stock))
        return [r if r is not None else "" for r in results]

    def _serve_group(
        self,
        requests: list[Instance],
        indices: list[int],
        eos: str,
        results: list[str | None],
        stock: list[int],
        call_stats: PrefillStats,
        pbar: Any,
    ) -> None:
        """Answer the requests of one set of generation settings, with prefix reuse.

        Fills ``results`` at the answered indices; the requests this path does not take
        (sampling, a short prompt sharing nothing) are appended to ``stock`` for ``hf``.
        """
        gen_kwargs = requests[indices[0]].args[1]
        if not isinstance(gen_kwargs, dict):
            raise TypeError(f"Expected `kwargs` to be of type `dict` but got {type(gen_kwargs)}")
        kwargs: dict[str, Any] = dict(normalize_gen_kwargs(gen_kwargs, self.max_gen_toks))
        if not self._greedy(kwargs):
            stock.extend(indices)
            return
        until = handle_stop_sequences(kwargs.pop("until", None), eos=eos)
        max_gen_toks = int(kwargs.pop("max_gen_toks"))
        max_ctx_len = self.max_length - max_gen_toks
        if max_ctx_len <= 0:
            raise PrefixCacheError(
                f"max_gen_toks={max_gen_toks} must be less than the model's max_length "
                f"({self.max_length}); lower max_gen_toks or raise max_length"
            )
        contexts = [str(requests[i].args[0]) for i in indices]
        ids = [self._encode_like_hf(c, max_ctx_len) for c in contexts]
        neighbours = prefix_schedule(ids, self.min_prefix_tokens).shares_with_neighbour()
        keep_across = self.prefix_store.budget_bytes > 0
        chosen = [
            k
            for k in range(len(indices))
            if len(ids[k]) >= self.min_prefix_tokens and (neighbours[k] or keep_across)
        ]
        picked = set(chosen)
        stock.extend(indices[k] for k in range(len(indices)) if k not in picked)
        if not chosen:
            return

        def run(
            pos: int,
            seq: list[int],
            cache: Any,
            cached: int,
            _until: list[str] = until,
            _max_gen: int = max_gen_toks,
            _kw: dict[str, Any] = kwargs,
        ) -> list[int]:
            out = self._generate_one(seq, cache, cached, _until, _max_gen, _kw)
            pbar.update(1)
            return out

        if self.prefix_batch:
            generated = self._serve_batched(
                [ids[k] for k in chosen], until, max_gen_toks, kwargs, call_stats, pbar
            )
        else:
            generated = serve_with_prefix_reuse(
                [ids[k] for k in chosen],
                self._cache_ops,
                self.prefix_store,
                run,
                min_prefix_tokens=self.min_prefix_tokens,
                stats=call_stats,
            )
        for k, cont in zip(chosen, generated, strict=True):
            text = self._finish(cont, until)
            results[indices[k]] = text
            self.cache_hook.add_partial("generate_until", (contexts[k], gen_kwargs), text)

    def get_model_info(self) -> dict[str, Any]:
        """``hf``'s model info plus prefix-cache counters (lm-eval logs it after the run)."""
        info = dict(super().get_model_info())
        stats = self.prefix_stats
        info["prefix_cache"] = {
            "enabled": self._prefix_reason is None,
            "batched_decode": self.prefix_batch,
            "requests": stats.requests,
            "prompt_tokens": stats.prompt_tokens,
            "prefilled_tokens": stats.prefilled_tokens,
            "reused_tokens": stats.reused_tokens,
            "reused_from_earlier_calls": stats.reused_from_store,
            "budget_mb": self.prefix_store.budget_bytes / MIB,
            "stored_sequences": len(self.prefix_store),
            "evicted": self.prefix_store.evicted,
        }
        self._say_savings()
        return info

    def _say_savings(self) -> None:
        """Print the run's prefill tokens, ours against stock ``hf``'s, once per new total.

        lm-eval asks for the model info when the run ends, so this is the last word of
        the model; the same counters are in the results JSON (``config.prefix_cache``).
        """
        stats = self.prefix_stats
        if not stats.requests or stats.requests == self._said_requests:
            return
        self._said_requests = stats.requests
        print(
            f"hf-prefix: prefilled {stats.prefilled_tokens:,} of {stats.prompt_tokens:,} "
            f"prompt tokens (stock hf prefills all {stats.prompt_tokens:,}); "
            f"{stats.reused_tokens:,} reused over {stats.requests} request(s)",
            file=sys.stderr,
        )

    def _record(self, call: PrefillStats, stock: int) -> None:
        total = self.prefix_stats
        total.requests += call.requests
        total.prompt_tokens += call.prompt_tokens
        total.prefilled_tokens += call.prefilled_tokens
        total.reused_from_group += call.reused_from_group
        total.reused_from_store += call.reused_from_store
        log.info(
            "hf-prefix: %d request(s) from cache, %d via hf's path; prompt tokens %d, "
            "prefilled %d, reused %d (%d kept from earlier calls); store: %d sequence(s), "
            "%.1f MiB of %.0f MiB",
            call.requests,
            stock,
            call.prompt_tokens,
            call.prefilled_tokens,
            call.reused_tokens,
            call.reused_from_store,
            len(self.prefix_store),
            self.prefix_store.nbytes / MIB,
            self.prefix_store.budget_bytes / MIB,
        )


# Model construction (bad --model_args, missing data) runs before any task module loads:
# our errors raised there are one line too.
install_excepthook()
