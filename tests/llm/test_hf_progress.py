"""A local judge's batch shows its progress while it generates, and the replies do not change."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.llm import hf_backend
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.hf_backend import HFBackend


def test_a_batch_bar_counts_generated_tokens_and_ended_replies(
    tiny_llama: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = HFBackend(parse_judge_spec(f"hf:{tiny_llama},device=cpu,batch_size=2"))
    requests = [CompletionRequest(f"Rate answer {i}.", 0.0, 1.0, 6, None) for i in range(2)]

    monkeypatch.setattr(hf_backend, "PROGRESS_DELAY_S", 3600.0)
    quiet = backend._batch(requests)
    assert "batch of" not in capsys.readouterr().err  # quick batches stay quiet

    bars: list[Any] = []
    make = hf_backend._decode_progress

    def keep(bar: Any, eos: set[int], width: int) -> Any:
        bars.append(bar)
        return make(bar, eos, width)

    monkeypatch.setattr(hf_backend, "_decode_progress", keep)
    monkeypatch.setattr(hf_backend, "PROGRESS_DELAY_S", 0.0)
    shown = backend._batch(requests)
    assert f"judge {tiny_llama.name}: batch of 2 (" in capsys.readouterr().err
    (bar,) = bars
    assert bar.desc.endswith("prompt tokens)") and bar.total == 6
    assert bar.n == 6  # a random model never ends: every step of max_tokens is counted
    assert bar.postfix == "0/2 replies ended"
    assert [c.text for c in shown] == [c.text for c in quiet]  # the bar never stops a reply
    assert all(c.finish_reason == "length" for c in shown)


def test_concurrent_items_share_one_batch_with_the_bar(
    tiny_llama: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hf_backend, "PROGRESS_DELAY_S", 0.0)
    backend = HFBackend(parse_judge_spec(f"hf:{tiny_llama},device=cpu,batch_size=4"))

    async def run() -> list[str]:
        reqs = [CompletionRequest(f"Q{i}", 0.0, 1.0, 3, None) for i in range(3)]
        try:
            done = await asyncio.gather(*(backend.complete(r) for r in reqs))
        finally:
            await backend.aclose()
        return [c.text for c in done]

    assert len(asyncio.run(run())) == 3
    assert backend.batches == [3]
