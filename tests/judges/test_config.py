import json

import pytest

from elitr_bench.judges import (
    JudgeConfigError,
    JudgeNotReadyError,
    check_judge_ready,
    get_run_judge,
    parse_judge_spec,
    set_run_judge,
)
from elitr_bench.judges.config import DEFAULT_JUDGE_SPEC, resolve_run_judge


def test_parse_full_spec() -> None:
    cfg = parse_judge_spec(
        "openai:gpt-4o-mini,rubric=prometheus-rubric,temperature=0,samples=3,concurrency=4,rpm=500,tpm=90000,price=0.15:0.6"
    )
    assert (cfg.backend, cfg.model, cfg.rubric) == ("openai", "gpt-4o-mini", "prometheus-rubric")
    assert (cfg.temperature, cfg.samples, cfg.concurrency, cfg.rpm, cfg.tpm) == (
        0.0,
        3,
        4,
        500.0,
        90000.0,
    )
    assert (cfg.price_in, cfg.price_out) == (0.15, 0.6)


def test_paper_defaults() -> None:
    cfg = parse_judge_spec(DEFAULT_JUDGE_SPEC)
    assert (cfg.model, cfg.rubric, cfg.temperature, cfg.top_p, cfg.concurrency) == (
        "gpt-4-0613",
        "gpt4-rubric",
        0.6,
        0.9,
        16,
    )
    assert parse_judge_spec("hf:/some/path:with-colon").model == "/some/path:with-colon"
    assert parse_judge_spec("replay").backend == "replay"
    assert parse_judge_spec("lexical").identity()["note"].startswith("non-LLM")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("gemini:pro", "unknown backend 'gemini'"),
        ("openai", "needs a model name"),
        ("openai:gpt-4,temprature=0", "unknown option 'temprature'"),
        ("openai:gpt-4,temperature=hot", "not a valid float"),
        ("openai:gpt-4,rubric=likert", "unknown rubric 'likert'"),
        ("openai:gpt-4,samples=0", "samples=0 must be >= 1"),
        ("openai:gpt-4,api_key=sk-123", "never put API keys"),
        ("openai:gpt-4,seed", "must be key=value"),
        ("replay:gpt-4", "takes no model"),
        ("lexical,system=GPT-4", "replay backend only"),
        ("openai:gpt-4,price=3", "price must be IN:OUT"),
        ("", "empty judge spec"),
        ("lexical,structured=on", "structured=on needs an openai or hf judge"),
        ("replay,structured=on", "replay backend has no schema-constrained decoding"),
    ],
)
def test_spec_errors_are_one_clear_line(spec: str, fragment: str) -> None:
    with pytest.raises(JudgeConfigError) as err:
        parse_judge_spec(spec)
    message = str(err.value)
    assert fragment in message
    assert "\n" not in message
    assert "sk-123" not in message or fragment == "never put API keys"


def test_missing_key_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    # Without network=True nothing leaves the machine: a missing key is found locally.
    with pytest.raises(JudgeNotReadyError, match="export OPENAI_API_KEY"):
        check_judge_ready(parse_judge_spec("openai:gpt-4-0613"))
    # A loopback endpoint needs no key; a bad base URL is caught.
    check_judge_ready(parse_judge_spec("openai:m,base_url=http://127.0.0.1:9/v1"))
    with pytest.raises(JudgeNotReadyError, match="not an http"):
        check_judge_ready(parse_judge_spec("openai:m,base_url=ftp//x"))
    with pytest.raises(JudgeNotReadyError, match="AZURE_OPENAI_ENDPOINT"):
        check_judge_ready(parse_judge_spec("openai:gpt-4,azure=true"))
    with pytest.raises(JudgeNotReadyError, match="does not exist"):
        check_judge_ready(parse_judge_spec("hf:/no/such/model"))
    check_judge_ready(None)
    check_judge_ready(parse_judge_spec("lexical"))


def test_run_judge_setting_and_env_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_run_judge() == parse_judge_spec(DEFAULT_JUDGE_SPEC)
    monkeypatch.setenv("ELITR_JUDGE", "lexical")
    assert get_run_judge() == parse_judge_spec("lexical")
    assert resolve_run_judge("none") is None
    assert set_run_judge("none") is None
    assert get_run_judge() is None
    set_run_judge("replay,rubric=prometheus-rubric")
    cfg = get_run_judge()
    assert cfg is not None and cfg.rubric == "prometheus-rubric"


def test_a_misspelt_backend_gets_a_suggestion() -> None:
    with pytest.raises(JudgeConfigError, match="unknown backend 'opnai'; did you mean 'openai'"):
        parse_judge_spec("opnai:gpt-4o")
    with pytest.raises(JudgeConfigError) as err:
        parse_judge_spec("vllm:some-model")
    assert "did you mean" not in str(err.value) and "use one of openai" in str(err.value)


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf", ""])
def test_max_cost_must_be_dollars_above_zero(value: str) -> None:
    with pytest.raises(JudgeConfigError) as err:
        parse_judge_spec(f"openai:gpt-4-0613,max_cost={value}")
    assert str(err.value) == (
        f"judge spec 'openai:gpt-4-0613,max_cost={value}': max_cost={value} must be a number "
        "of US dollars above 0, e.g. max_cost=5; drop the option for no cap"
    )


def test_max_cost_is_no_part_of_the_judge_identity() -> None:
    from elitr_bench.judges.config import with_options

    capped = parse_judge_spec("openai:gpt-4-0613,max_cost=2.5")
    plain = parse_judge_spec("openai:gpt-4-0613")
    assert (capped.max_cost, plain.max_cost) == (2.5, None)
    assert capped.identity() == plain.identity()
    assert "max_cost" not in json.dumps(capped.identity())
    # Every family takes it (a shared option), and with_options keeps the same rule.
    minutes = parse_judge_spec("openai:gpt-4o,rubric=gpt-art,max_cost=1")
    assert minutes.identity() == parse_judge_spec("openai:gpt-4o,rubric=gpt-art").identity()
    assert parse_judge_spec("openai:gpt-4o,method=mesa,max_cost=1").max_cost == 1.0
    with pytest.raises(JudgeConfigError, match=r"max_cost=-2\.0 must be a number"):
        with_options(plain, max_cost=-2.0)


def test_without_option_drops_the_cap_as_the_parser_reads_it() -> None:
    from elitr_bench.judges.config import without_option

    spec = "openai:gpt-4-0613,base_url=http://127.0.0.1:9/v1, Max-Cost=5,price=1:2"
    assert (
        without_option(spec, "max_cost")
        == "openai:gpt-4-0613,base_url=http://127.0.0.1:9/v1,price=1:2"
    )
    assert parse_judge_spec(without_option(spec, "max_cost")).max_cost is None
