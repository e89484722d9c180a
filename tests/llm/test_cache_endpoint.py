"""The judge cache and judge identity tell endpoints apart (a local ``gpt-4o`` is not OpenAI's).

Replies of a loopback or scripted server must never be served as answers of the default
OpenAI API (nor of another server), while keys of the default endpoint stay exactly what
they were, so caches of earlier real runs remain valid.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.cream.arena import ArenaError, ArenaState, merge
from elitr_bench.judges.cream.compare import cream_identity
from elitr_bench.judges.identity import judge_endpoint
from elitr_bench.judges.mesa.method import _member
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.cache import MemoryCache, cache_key
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.endpoint import normalize_endpoint
from elitr_bench.llm.hf_backend import HFBackend
from elitr_bench.llm.openai_backend import OpenAIBackend
from tests.judges.conftest import TEST_KEY
from tests.support.openai_server import LoopbackOpenAI

ITEMS = [
    JudgeItem(question=f"Q{i}?", response=f"answer {i}", reference=f"ref {i}") for i in range(3)
]


def _spec(base_url: str, cache: Path) -> str:
    return f"openai:gpt-4o,base_url={base_url},cache={cache},backoff=0.01,timeout=2,progress=false"


def _key(backend: OpenAIBackend | HFBackend, prompt: str = "judge this") -> str:
    request = CompletionRequest(prompt, 0.6, 0.9, 1024, 2023)
    return JudgeClient(backend, MemoryCache()).key_for(request, 0)


def test_two_servers_with_one_model_name_do_not_share_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    with LoopbackOpenAI() as first, LoopbackOpenAI() as second:
        first.handler = lambda _req: "\\boxed{3}"
        second.handler = lambda _req: "\\boxed{8}"
        run1 = judge_items(ITEMS, parse_judge_spec(_spec(first.base_url, cache)))
        run2 = judge_items(ITEMS, parse_judge_spec(_spec(second.base_url, cache)))
        assert len(first.requests) == 3 and len(second.requests) == 3
        assert [j.score for j in run1.judgements] == [3.0] * 3
        assert [j.score for j in run2.judgements] == [8.0] * 3
        assert run1.identity["endpoint"] == first.base_url
        assert run2.identity["endpoint"] == second.base_url

        # The same server with a trailing slash and an upper-case scheme: all cached.
        shouted = second.base_url.replace("http://", "HTTP://")
        again = judge_items(ITEMS, parse_judge_spec(_spec(shouted + "/", cache)))
        assert len(second.requests) == 3 and len(first.requests) == 3
        assert [j.score for j in again.judgements] == [8.0] * 3
        assert again.identity["endpoint"] == second.base_url

    rows = sqlite3.connect(str(cache)).execute("SELECT * FROM completions").fetchall()
    assert len(rows) == 6
    assert TEST_KEY not in repr(rows)


def test_default_endpoint_keys_are_unchanged() -> None:
    old = cache_key(
        "openai",
        "gpt-4o",
        "judge this",
        {"temperature": 0.6, "top_p": 0.9, "max_tokens": 1024, "seed": 2023, "draw": 0},
    )
    env = {"OPENAI_API_KEY": TEST_KEY}
    default = OpenAIBackend(parse_judge_spec("openai:gpt-4o"), env)
    assert default.endpoint == "" and _key(default) == old
    explicit = OpenAIBackend(
        parse_judge_spec("openai:gpt-4o,base_url=https://API.openai.com/v1/"), env
    )
    assert explicit.endpoint == "" and _key(explicit) == old
    local = OpenAIBackend(parse_judge_spec("openai:gpt-4o,base_url=http://127.0.0.1:9/v1"), env)
    assert _key(local) != old
    via_env = OpenAIBackend(
        parse_judge_spec("openai:gpt-4o"), {**env, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1/"}
    )
    assert _key(via_env) == _key(local)
    hf = HFBackend(parse_judge_spec("hf:/models/judge,device=cpu"))
    assert hf.endpoint == "" and _key(hf) == cache_key(
        "hf",
        "/models/judge",
        "judge this",
        {"temperature": 0.6, "top_p": 0.9, "max_tokens": 1024, "seed": 2023, "draw": 0},
    )


def test_azure_endpoint_counts_and_secrets_never_enter_the_key() -> None:
    config = parse_judge_spec("openai:my-deployment,azure=true")
    env = {"AZURE_OPENAI_ENDPOINT": "https://Res.openai.azure.com/", "OPENAI_API_KEY": TEST_KEY}
    azure = OpenAIBackend(config, env)
    assert azure.endpoint == "azure+https://res.openai.azure.com"
    other = OpenAIBackend(
        config, {**env, "AZURE_OPENAI_ENDPOINT": "https://other.openai.azure.com"}
    )
    assert _key(azure) != _key(other)
    assert _key(azure) != _key(OpenAIBackend(parse_judge_spec("openai:my-deployment"), env))
    leaky = f"http://user:{TEST_KEY}@LOCALHOST:80/v1/?api-key={TEST_KEY}#frag"
    assert normalize_endpoint(leaky) == "http://localhost/v1"
    assert TEST_KEY not in str(parse_judge_spec(f"openai:m,base_url={leaky}").identity())


def test_identities_record_a_non_default_endpoint_only(monkeypatch: pytest.MonkeyPatch) -> None:
    default = parse_judge_spec("openai:gpt-4o")
    local = parse_judge_spec("openai:gpt-4o,base_url=http://127.0.0.1:9/v1/")
    assert "endpoint" not in default.identity() and "endpoint" not in cream_identity(default, 16)
    assert local.identity()["endpoint"] == "http://127.0.0.1:9/v1"
    assert cream_identity(local, 16)["endpoint"] == "http://127.0.0.1:9/v1"
    assert _member(default) == "openai:gpt-4o"
    assert _member(local) == "openai:gpt-4o@http://127.0.0.1:9/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert judge_endpoint(default) == "http://127.0.0.1:9/v1"
    assert judge_endpoint(parse_judge_spec("lexical")) == ""


def test_an_arena_refuses_a_judge_of_another_endpoint(tmp_path: Path) -> None:
    first = cream_identity(parse_judge_spec("openai:gpt-4o,base_url=http://127.0.0.1:9/v1"), 16)
    other = cream_identity(parse_judge_spec("openai:gpt-4o"), 16)
    state = ArenaState(judge=dict(first), comparisons={("m", "a", "b"): object()})  # type: ignore[dict-item]
    with pytest.raises(ArenaError, match="endpoint"):
        merge(state, [], None, other, tmp_path)
