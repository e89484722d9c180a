"""Cache keys and judge identities written by earlier versions stay valid.

The values below were computed by the code before the transport moved into
``elitr_bench.llm`` (commit be43fbf). An existing judge cache is only worth keeping if
the same request still maps to the same key, and ``elitr-bench score`` reuses a logged
judgement only if the judge's identity is byte-for-byte the one logged; a refactor that
changes either silently re-pays every call or re-judges every item.
"""

from __future__ import annotations

import json

import pytest

from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.cache import Completion, NullCache, open_cache
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.factory import make_backend

SINGLE = CompletionRequest("Rate this answer.", 0.6, 0.9, 256, 2023)
MULTI = CompletionRequest(
    "Key facts?",
    0.0,
    1.0,
    1024,
    2023,
    messages=(("system", "You are a judge."), ("user", "Earlier."), ("assistant", "Reply.")),
)

#: spec -> (key of SINGLE at draw 0, key of MULTI at draw 1), from the code of be43fbf.
KEYS = {
    "openai:gpt-4-0613": (
        "9c6ae70d070d4e176e3523e5a3b97be76dbd3c207913ffde336a8cd90dc0d973",
        "d7b9ce926d6b466b6489b6ce2f7cac6b8c38cb032f37e6e2496355228e532efb",
    ),
    "openai:gpt-4o,base_url=http://User:pw@LocalHost:80/v1/": (
        "0462257130d1ec24fa3113763f7f69ad00df108d842e3f70bffd67924c1fa06c",
        "eb3a9be03f72afbc74c49347ee909790eced10c3e65e9e261d9ee6ec8665ad62",
    ),
    "hf:some/local-model": (
        "8624b4befa88f45de4f3cf1745b462cc521403d2d2573766c64f4f2af8b9aba6",
        "42b0453da23eb599bd9f24cfea7a05ded6224201ac96dd89cf90c83390473b61",
    ),
}

#: spec -> identity() as written into results and samples by the code of be43fbf.
_QA_HASH = "de3807e0d9a78bc1"
_GREEDY = {"max_tokens": 1024, "reask": 1, "samples": 1, "seed": 2023, "temperature": 0.0}
IDENTITIES = {
    "openai:gpt-4-0613": {
        "backend": "openai", "model": "gpt-4-0613", "prompt_hash": _QA_HASH,
        "rubric": "gpt4-rubric",
        "sampling": {**_GREEDY, "temperature": 0.6, "top_p": 0.9},
    },
    "replay": {
        "backend": "replay", "model": "", "prompt_hash": _QA_HASH, "rubric": "gpt4-rubric",
        "source": "released ELITR-Bench judge scores",
    },
    "lexical": {
        "backend": "lexical", "model": "", "prompt_hash": _QA_HASH, "rubric": "gpt4-rubric",
        "note": "non-LLM fallback: token-F1 vs reference mapped to the scale",
    },
    "openai:gpt-4-32k,rubric=gpt-afgr,filler=true,filler_model=gpt-3.5-turbo-0125": {
        "backend": "openai", "filler_model": "gpt-3.5-turbo-0125", "model": "gpt-4-32k",
        "rubric": "gpt-afgr", "sampling": {**_GREEDY, "top_p": 1.0},
    },
    "openai:gpt-4o,method=mesa": {
        "backend": "openai", "method": "mesa", "model": "gpt-4o", "prompt_hash": _QA_HASH,
        "rubric": "gpt4-rubric", "sampling": {**_GREEDY, "top_p": 1.0},
    },
    "openai:gpt-4o,base_url=http://User:pw@LocalHost:80/v1/,concurrency=4": {
        "backend": "openai", "endpoint": "http://localhost/v1", "model": "gpt-4o",
        "prompt_hash": _QA_HASH, "rubric": "gpt4-rubric",
        "sampling": {**_GREEDY, "temperature": 0.6, "top_p": 0.9},
    },
}  # fmt: skip


@pytest.fixture(autouse=True)
def _default_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.parametrize("spec", sorted(KEYS))
def test_cache_keys_are_those_of_earlier_versions(spec: str) -> None:
    client = JudgeClient(make_backend(parse_judge_spec(spec)), NullCache())
    assert (client.key_for(SINGLE, 0), client.key_for(MULTI, 1)) == KEYS[spec]


def test_a_cache_file_written_under_the_old_keys_is_hit(tmp_path: object) -> None:
    """A row stored under an old key is what the client answers, with no request."""
    path = f"{tmp_path}/judge.sqlite"
    spec = "openai:gpt-4-0613"
    writer = open_cache(path)
    writer.put(KEYS[spec][0], Completion("\\boxed{7}", 10, 2), {"model": "gpt-4-0613"})
    writer.close()
    client = JudgeClient(make_backend(parse_judge_spec(spec)), open_cache(path), owns_cache=True)

    async def ask() -> str:
        try:
            return (await client.complete(SINGLE)).text
        finally:
            await client.aclose()

    import asyncio

    assert asyncio.run(ask()) == "\\boxed{7}"
    assert client.usage.cache_hits == 1 and client.usage.requests == 0


@pytest.mark.parametrize("spec", sorted(IDENTITIES))
def test_judge_identities_are_those_of_earlier_versions(spec: str) -> None:
    identity = parse_judge_spec(spec).identity()
    assert json.dumps(identity, sort_keys=True) == json.dumps(IDENTITIES[spec], sort_keys=True)
