"""An hf judge decodes its restatement under the JSON schema (xgrammar), one grammar per row.

A random model is the perfect adversary: left free it writes token soup, so every object
it restates under the schema is the constraint's doing, never the model's.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.judges import JudgeConfigError, parse_judge_spec
from elitr_bench.judges.asking import (
    Asked,
    ask,
    make_client,
    policy_of,
    request_for,
    restatement_request,
)
from elitr_bench.judges.identity import JudgeConfig
from elitr_bench.judges.mesa.parsing import SCORING
from elitr_bench.judges.minutes.prompts import AFGR, ART
from elitr_bench.judges.reading import Grammar, Restatement
from elitr_bench.judges.rubrics import GPT4, RUBRICS
from elitr_bench.llm.cache import Completion
from elitr_bench.llm.client import JudgeClient
from elitr_bench.llm.hf_backend import HFBackend
from elitr_bench.llm.memory import Scope
from elitr_bench.llm.structured import FormatAdapter

#: Every numeric grammar with a restatement: QA's two rubrics, AutoMin's two GPT judges, MESA.
GRAMMARS: dict[str, Grammar] = {
    "gpt4-rubric": GPT4.grammar,
    "prometheus-rubric": RUBRICS["prometheus-rubric"].grammar,
    "gpt-afgr": AFGR.grammar,
    "gpt-art": ART.grammar,
    "mesa-scoring": SCORING,
}
#: A first reply in prose, no value in the asked format: the judge restates it.
PROSE = "The response covers the main points of the reference but misses a detail."


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """``value`` is exactly of ``schema`` (the object/number/integer/array/string subset used)."""
    kind = schema["type"]
    if kind == "object":
        props = schema["properties"]
        return isinstance(value, dict) and set(value) == set(props) == set(schema["required"])
    if kind in ("integer", "number"):
        number = isinstance(value, int if kind == "integer" else (int, float))
        lo, hi = schema.get("minimum", value), schema.get("maximum", value)
        return number and not isinstance(value, bool) and lo <= value <= hi
    if kind == "array":
        return isinstance(value, list) and all(conforms(v, schema["items"]) for v in value)
    return isinstance(value, str) and value in schema.get("enum", [value])


def conforms_all(value: Any, schema: dict[str, Any]) -> bool:
    """:func:`conforms`, down every object's properties."""
    if not conforms(value, schema):
        return False
    if schema["type"] == "object":
        return all(conforms_all(value[k], s) for k, s in schema["properties"].items())
    return True


def test_the_schema_check_tells_a_near_miss() -> None:
    schema = dict(GPT4.grammar.restatement.schema)  # type: ignore[union-attr]
    assert conforms_all({"score": 7}, schema)
    for wrong in ({"score": "7"}, {"Score": 7}, {"score": 11}, {"score": 7.5}, {}, [7]):
        assert not conforms_all(wrong, schema), wrong


async def _restate_all(
    client: JudgeClient, config: JudgeConfig, draws: range
) -> dict[tuple[str, int], Asked]:
    """Ask every grammar at every draw, each first reply already cached (a resumed run)."""
    policy = policy_of(config)

    def attempt(prompt: str, draw: int) -> Any:
        return lambda _: (request_for(config, prompt, draw), draw)

    keys = [(name, draw) for name in GRAMMARS for draw in draws]
    for name, draw in keys:
        request = request_for(config, f"Judge for {name}.", draw)
        done = Completion(text=PROSE, prompt_tokens=9, completion_tokens=13)
        client.cache.put(client.key_for(request, draw), done, {})
    asked = await asyncio.gather(
        *(
            ask(client, attempt(f"Judge for {n}.", d), GRAMMARS[n], 1, policy=policy)
            for n, d in keys
        )
    )
    await client.aclose()
    return dict(zip(keys, asked, strict=True))


def _restatement(name: str) -> Restatement:
    restatement = GRAMMARS[name].restatement
    assert restatement is not None
    return restatement


def _schema(name: str) -> dict[str, Any]:
    return dict(_restatement(name).schema)


def test_a_random_hf_judge_restates_exactly_the_schema(tiny_llama: Path) -> None:
    spec = f"hf:{tiny_llama},temperature=1,top_p=1,max_tokens=160,cache=memory,progress=false"
    config = parse_judge_spec(spec)
    assert policy_of(config).structured  # structured=auto: on where xgrammar imports
    client = make_client(config)
    restated = asyncio.run(_restate_all(client, config, range(3)))

    for (name, draw), asked in restated.items():
        assert asked.restated and asked.raws[0] == PROSE, (name, draw)
        obj = json.loads(asked.restatement)
        assert conforms_all(obj, _schema(name)), asked.restatement
        for field, value in asked.reading.values.items():
            # Every value is read as restated, but for the reader's own veto: on a 0-10
            # scale the schema allows 0.35, which the reader takes for a 0-1 value.
            fraction = "looks like a 0-1 value" in asked.reading.reasons.get(field, "")
            assert value == obj[field] or (value is None and fraction), (asked.restatement, field)
    assert sum(client.backend.batches) == len(restated)  # type: ignore[attr-defined]


def test_unconstrained_the_random_judge_restates_garbage(tiny_llama: Path) -> None:
    """The control: with ``structured=off`` the same restatements are not objects."""
    spec = f"hf:{tiny_llama},temperature=1,top_p=1,max_tokens=24,cache=memory,structured=off"
    config = parse_judge_spec(spec + ",progress=false")
    assert not policy_of(config).structured
    restated = asyncio.run(_restate_all(make_client(config), config, range(1)))
    assert all(a.restated and not a.reading.complete for a in restated.values())


def test_one_batch_keeps_one_grammar_per_row(tiny_llama: Path) -> None:
    """Five schemas and a free prompt with the same sampling decode as one batch of six."""
    config = parse_judge_spec(f"hf:{tiny_llama},temperature=1,top_p=1,max_tokens=160")
    backend = HFBackend(config)
    first = request_for(config, "Judge this.", 0)
    rows = [restatement_request(first, PROSE, _restatement(n), True) for n in GRAMMARS]

    async def run() -> list[Completion]:
        return await asyncio.gather(*(backend.complete(r) for r in (*rows, first)))

    *constrained, free = asyncio.run(run())
    assert backend.batches == [len(GRAMMARS) + 1]
    for name, completion in zip(GRAMMARS, constrained, strict=True):
        assert completion.finish_reason == "stop", completion
        assert conforms_all(json.loads(completion.text), _schema(name)), completion.text
    assert free.finish_reason == "length" and not free.text.lstrip().startswith("{"), free


def test_structured_on_for_hf_needs_xgrammar(monkeypatch: pytest.MonkeyPatch) -> None:
    assert policy_of(parse_judge_spec("hf:gpt2,structured=on")).structured
    monkeypatch.setitem(sys.modules, "xgrammar", None)  # import xgrammar now fails
    assert not policy_of(parse_judge_spec("hf:gpt2")).structured  # auto: asked in words only
    with pytest.raises(JudgeConfigError) as err:
        parse_judge_spec("hf:gpt2,structured=on")
    assert "pip install xgrammar" in str(err.value) and "\n" not in str(err.value)
    assert '".[structured]"' in str(err.value)


@pytest.mark.parametrize("failing", ["compile", "tokenizer"])
def test_a_grammar_that_fails_costs_no_restatement_and_keeps_the_batch(
    tiny_llama: Path,
    failing: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A failing xgrammar refuses an hf judge's format: the same turns, batched, without it."""
    import xgrammar

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("xgrammar says no")

    target = xgrammar.GrammarCompiler if failing == "compile" else xgrammar.TokenizerInfo
    monkeypatch.setattr(
        target, "compile_json_schema" if failing == "compile" else "from_huggingface", broken
    )
    spec = f"hf:{tiny_llama},temperature=1,top_p=1,max_tokens=24,cache=memory,progress=false"
    config = parse_judge_spec(spec + ",structured=on")
    client = make_client(config)
    restated = asyncio.run(_restate_all(client, config, range(1)))
    # every grammar's restatement was generated, each without its schema, batched: no probe
    # goes alone first (nothing is paid for a local refusal), unlike at a server
    assert all(a.restated and a.raws[0] == PROSE for a in restated.values())
    batches = client.backend.batches  # type: ignore[attr-defined]
    assert sum(batches) == len(GRAMMARS) and len(batches) < len(GRAMMARS)
    fmt = restatement_request(
        request_for(config, "Judge.", 0), PROSE, _restatement("gpt-art"), True
    )
    assert FormatAdapter().unknown(fmt, Scope("hf", "", config.model)) is None
    assert FormatAdapter().unknown(fmt, Scope("openai", "http://x/v1", "m")) is not None
    assert client.usage.structured_refused == len(GRAMMARS) == client.usage.unstructured
    err = capsys.readouterr().err
    assert err.count("refuses response_format json_schema") == 1 and "xgrammar says no" in err
