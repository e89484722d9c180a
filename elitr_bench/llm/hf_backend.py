"""Local transformers judge (e.g. Prometheus-13B-v1.0, Sec. 6.1) with batched generation.

Concurrent ``complete`` calls are gathered into batches of up to ``batch_size`` prompts
with the same sampling parameters and generated together in a worker thread, so the
engine's per-item concurrency turns into GPU/CPU batching without a second code path.

A batch of a local judge can run for minutes on a CPU before any item is judged, so each
batch that lasts longer than :data:`PROGRESS_DELAY_S` shows its own bar: the batch's
size and prompt tokens, one step per generated token, and how many of its replies have
ended.

A request with a ``response_format`` (a restatement turn's JSON schema) is decoded under
that schema (:mod:`.constrained`, xgrammar): the rows of one batch each keep their own
grammar, and rows without one decode freely. A row whose grammar xgrammar cannot build is
refused before anything is generated (:class:`~elitr_bench.llm.base.RequestRefused`, as a
server refuses a format), while the rest of its batch goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from elitr_bench.llm.base import CompletionRequest, FatalBackendError, RequestRefused
from elitr_bench.llm.cache import Completion
from elitr_bench.llm.constrained import SchemaDecoding
from elitr_bench.llm.endpoint import EndpointSpec
from elitr_bench.tokens import eos_ids

#: A batch's bar appears only once it has run this long (quick batches stay quiet).
PROGRESS_DELAY_S = 2.0
#: How long a batch waits for one more request before it is cut (a fraction of any batch).
GATHER_S = 0.05


def chat_text(tok: Any, prompt: str, messages: tuple[tuple[str, str], ...] = ()) -> str:
    """The text a chat becomes for a tokenizer (its chat template, else blank-line joined).

    Shared by the backend and the judge's context-window check, which must count exactly
    what is generated from.
    """
    chat = [{"role": role, "content": content} for role, content in messages]
    chat.append({"role": "user", "content": prompt})
    if getattr(tok, "chat_template", None):
        text: str = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        return text
    return "\n\n".join(turn["content"] for turn in chat)


def _decode_progress(bar: Any, eos: set[int], width: int) -> Any:
    """A stopping criterion that never stops: it advances ``bar`` by one generated token.

    transformers calls stopping criteria once per decoding step with every row's ids,
    which is the one hook that sees a batch's progress while ``generate`` runs.
    """
    import torch
    from transformers import StoppingCriteria

    ends = torch.tensor(sorted(eos) or [-1])

    class DecodeProgress(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            new = input_ids[:, width:]
            ended = int(torch.isin(new, ends.to(new.device)).any(dim=1).sum())
            bar.set_postfix_str(f"{ended}/{input_ids.shape[0]} replies ended", refresh=False)
            bar.update(1)
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    return DecodeProgress()


class HFBackend:
    """Batched ``model.generate`` over a causal LM loaded with transformers."""

    kind = "hf"
    #: A local model path or hub id is already the model; the device does not change it.
    endpoint = ""

    def __init__(self, config: EndpointSpec) -> None:
        self.model = config.model
        self._config = config
        self._batch_size = config.batch_size
        self._lm: Any = None
        self._tok: Any = None
        self._schemas: SchemaDecoding | None = None  # built on the first response_format
        self._queue: asyncio.Queue[tuple[CompletionRequest, asyncio.Future[Completion]]] | None = (
            None
        )
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batches: list[int] = []  # sizes of generated batches (observability, tests)

    def _load(self) -> None:
        if self._lm is not None:
            return
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(self.model)
            lm = AutoModelForCausalLM.from_pretrained(self.model)
        except OSError as exc:
            raise FatalBackendError(f"judge hf: cannot load {self.model!r}: {exc}") from None
        if self._config.device:
            lm = lm.to(self._config.device)  # type: ignore[arg-type]
        lm.eval()
        tok.padding_side = "left"  # decoder-only batching needs left padding
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        self._tok, self._lm = tok, lm

    def _grammar(self, request: CompletionRequest) -> Any:
        """A row's compiled grammar (None: decodes freely).

        Raises:
            RequestRefused: xgrammar is missing, cannot read the tokenizer or the schema.
        """
        if request.response_format is None:
            return None
        if self._schemas is None:  # once per tokenizer: its vocabulary's grammar tables
            out = self._lm.get_output_embeddings()
            width = out.weight.shape[0] if out is not None else self._lm.config.vocab_size
            eos = eos_ids(getattr(self._lm, "generation_config", None), self._tok)
            self._schemas = SchemaDecoding(self._tok, int(width), eos)
        return self._schemas.grammar(request.response_format)

    def _batch(self, requests: list[CompletionRequest]) -> list[Completion | Exception]:
        """Generate one batch; a row whose grammar fails is refused, the others go on."""
        self._load()
        refused: list[Exception | None] = []  # None: the row is generated
        grammars: list[Any] = []
        for request in requests:
            try:
                grammars.append(self._grammar(request))
                refused.append(None)
            except RequestRefused as exc:
                refused.append(exc)
        kept = [r for r, why in zip(requests, refused, strict=True) if why is None]
        done = iter(self._generate(kept, grammars) if kept else [])
        return [next(done) if why is None else why for why in refused]

    def _generate(self, requests: list[CompletionRequest], grammars: list[Any]) -> list[Completion]:
        import torch

        first = requests[0]
        texts = [chat_text(self._tok, r.prompt, r.messages) for r in requests]
        enc = self._tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self._lm.device) for k, v in enc.items()}
        gen: dict[str, Any] = {
            "max_new_tokens": first.max_tokens,
            "pad_token_id": self._tok.pad_token_id,
        }
        if first.temperature > 0:
            gen.update(do_sample=True, temperature=first.temperature, top_p=first.top_p)
        else:
            gen.update(do_sample=False)
        if first.seed is not None:
            torch.manual_seed(first.seed)
        width = enc["input_ids"].shape[1]
        eos = eos_ids(getattr(self._lm, "generation_config", None), self._tok)
        from tqdm.auto import tqdm
        from transformers import LogitsProcessorList, StoppingCriteriaList

        processor = self._schemas.processor(grammars) if self._schemas is not None else None
        constrain = LogitsProcessorList([] if processor is None else [processor])

        prompt_tokens = int(enc["attention_mask"].sum())
        name = Path(self.model).name
        with (
            tqdm(
                total=first.max_tokens,
                desc=f"judge {name}: batch of {len(requests)} ({prompt_tokens:,} prompt tokens)",
                unit="token",
                delay=PROGRESS_DELAY_S,
                leave=False,
            ) as bar,
            torch.no_grad(),
        ):
            progress = StoppingCriteriaList([_decode_progress(bar, eos, width)])
            out = self._lm.generate(
                **enc, **gen, stopping_criteria=progress, logits_processor=constrain
            )
        results = []
        for row, mask in zip(out, enc["attention_mask"], strict=True):
            new = row[width:]
            text = self._tok.decode(new, skip_special_tokens=True)
            n_new = int((new != self._tok.pad_token_id).sum())
            ended = any(int(t) in eos for t in new.tolist())
            results.append(
                Completion(
                    text=text,
                    prompt_tokens=int(mask.sum()),
                    completion_tokens=n_new,
                    # max_new_tokens reached without an end token: cut off, never scored.
                    finish_reason="stop" if ended or len(new) < first.max_tokens else "length",
                )
            )
        self.batches.append(len(requests))
        return results

    async def _run(self) -> None:
        assert self._queue is not None
        while True:
            item = await self._queue.get()
            batch = [item]
            # Let the other concurrent callers enqueue before cutting the batch: they come
            # through the cache's threads, so a few milliseconds apart, not in one loop turn.
            while len(batch) < self._batch_size:
                if self._queue.empty():
                    await asyncio.sleep(GATHER_S)
                    if self._queue.empty():
                        break
                batch.append(self._queue.get_nowait())
            groups: dict[
                tuple[Any, ...], list[tuple[CompletionRequest, asyncio.Future[Completion]]]
            ] = {}
            for req, fut in batch:
                key = (req.temperature, req.top_p, req.max_tokens, req.seed)
                groups.setdefault(key, []).append((req, fut))
            for members in groups.values():
                try:
                    outs = await asyncio.to_thread(self._batch, [r for r, _ in members])
                except Exception as exc:  # hand the failure to every waiting caller
                    for _, fut in members:
                        if not fut.done():
                            fut.set_exception(exc)
                    continue
                for (_, fut), out in zip(members, outs, strict=True):
                    if fut.done():
                        continue
                    if isinstance(out, Exception):
                        fut.set_exception(out)
                    else:
                        fut.set_result(out)

    async def complete(self, request: CompletionRequest) -> Completion:
        """Queue the prompt for the next batch and wait for its completion."""
        loop = asyncio.get_running_loop()
        if self._queue is None or self._loop is not loop:
            # A worker belongs to one event loop; a judge reused by a later run starts anew.
            self._queue, self._loop = asyncio.Queue(), loop
            self._worker = asyncio.create_task(self._run())
        fut: asyncio.Future[Completion] = loop.create_future()
        await self._queue.put((request, fut))
        return await fut

    async def aclose(self) -> None:
        """Stop the batching worker (the model stays loaded for reuse)."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker
            self._worker = None
            self._queue = None
