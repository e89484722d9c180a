"""Judge context windows: the table, ``context=``, hf configs, token counts, and the stop line.

Over-long judge prompts must stop before any request: the CLI tests count the requests
at the loopback server (0) and read the one line the command ends with.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
import json
import logging
import re
import shutil
from pathlib import Path

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.qa.engine import JudgeItem, check_items_fit
from elitr_bench.judges.spec import parse_judge_spec
from elitr_bench.llm.base import CompletionRequest
from elitr_bench.llm.context_window import (
    OPENAI_MODELS,
    ContextWindowError,
    JudgeWindow,
    judge_window,
    known_model,
    openai_counter,
    token_bound,
)
from tests.conftest import run_lm_eval
from tests.judges.test_cream_arena import write_run
from tests.support.judge_filter import after_run_errors
from tests.support.lm_eval_runs import replay_args
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest

AUTOMIN_FIRST = "meeting_en_test2023_001"


def _request(prompt: str, max_tokens: int = 100) -> CompletionRequest:
    return CompletionRequest(prompt, 0.0, 1.0, max_tokens, None)


# --- the table and context= --------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "entry", "context", "encoding"),
    [
        ("gpt-4-0613", "gpt-4-0613", 8_192, "cl100k_base"),
        ("gpt-4-32k-0613", "gpt-4-32k-0613", 32_768, "cl100k_base"),
        ("gpt-4o-2024-05-13", "gpt-4o", 128_000, "o200k_base"),  # a dated snapshot
        ("GPT-4o-mini", "gpt-4o-mini", 128_000, "o200k_base"),
        ("gpt-4-turbo-2024-04-09", "gpt-4-turbo", 128_000, "cl100k_base"),
        ("gpt-4-1106-preview", "gpt-4-1106-preview", 128_000, "cl100k_base"),  # not gpt-4's 8k
        ("gpt-3.5-turbo-0613", "gpt-3.5-turbo-0613", 4_096, "cl100k_base"),  # not the alias's
        ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano", 1_047_576, "o200k_base"),
        ("o3-mini", "o3-mini", 200_000, "o200k_base"),
        ("ft:gpt-4o-mini-2024-07-18:org::abc", "gpt-4o-mini", 128_000, "o200k_base"),
    ],
)
def test_known_openai_models_come_from_the_table(
    model: str, entry: str, context: int, encoding: str
) -> None:
    found = known_model(model)
    assert found is not None and found[0] == entry
    assert (found[1].context, found[1].encoding) == (context, encoding)
    window = judge_window(parse_judge_spec(f"openai:{model}"))
    assert window.checked and window.exact and window.limit == context
    assert window.source == f"OpenAI model table: {entry}"


def test_unknown_names_are_not_guessed() -> None:
    for model in ("gpt-4-0999", "my-llama", "gpt-4o-latest-preview", "gpt-4x"):
        assert known_model(model) is None, model
    # gpt-5's input limit is below its window minus the output.
    assert judge_window(parse_judge_spec("openai:gpt-5")).prompt_budget(1024) == 272_000


def test_context_option_overrides_and_unknown_models_are_noted_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    table = judge_window(parse_judge_spec("openai:gpt-4o,context=9000"))
    assert (table.limit, table.source, table.exact) == (9000, "context=9000", True)
    guessed = judge_window(parse_judge_spec("openai:my-served-model,context=4096"))
    assert guessed.limit == 4096 and not guessed.exact  # no tokenizer: an estimate, said so
    assert "counted as a bound" in guessed.describe(100)
    with caplog.at_level(logging.WARNING):
        first = judge_window(parse_judge_spec("openai:unknown-model-for-note"))
        again = judge_window(parse_judge_spec("openai:unknown-model-for-note,temperature=0"))
    assert not first.checked and not again.checked
    assert first.over(_request("x" * 10**6)) is None  # not checked: nothing refused
    notes = [r.getMessage() for r in caplog.records if "unknown-model-for-note" in r.getMessage()]
    assert len(notes) == 1 and "add context=N" in notes[0]
    with pytest.raises(ValueError, match="context=-1 must be >= 0"):
        parse_judge_spec("openai:gpt-4o,context=-1")


def test_fits_means_prompt_plus_output_within_the_window() -> None:
    window = judge_window(parse_judge_spec("openai:gpt-4o,context=1000"))
    text = "word " * 300
    tokens = window.prompt_tokens(_request(text))
    # OpenAI chat framing: 3 tokens + 1 for the role per message, 3 priming the reply.
    assert tokens == openai_counter("o200k_base").count(text) + 7
    assert window.over(_request(text, max_tokens=1000 - tokens)) is None
    assert window.over(_request(text, max_tokens=1000 - tokens + 1)) == tokens
    with pytest.raises(ContextWindowError, match=r"exceeds the 1,000-token window"):
        window.require(_request(text, max_tokens=1000))


# --- counting ----------------------------------------------------------------------------
def _tiktoken_encoding(name: str, expected: str) -> object:
    """Tiktoken's own encoding, built from the BPE file bpe-openai ships (hash-checked)."""
    import tiktoken  # lm-eval[api] installs it: a failure, never a skip
    from tiktoken_ext import openai_public

    data = gzip.decompress(
        (importlib.resources.files("bpe_openai") / "data" / f"{name}.tiktoken.gz").read_bytes()
    )
    assert hashlib.sha256(data).hexdigest() == expected  # the file tiktoken would download
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: ranks
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**spec)


@pytest.mark.parametrize(
    ("encoding", "sha256"),
    [
        ("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
        ("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    ],
)
def test_counts_equal_tiktoken_on_the_automin_transcripts(encoding: str, sha256: str) -> None:
    from elitr_bench.data.minutes import load_automin_meetings

    reference = _tiktoken_encoding(encoding, sha256)
    ours = openai_counter(encoding)
    assert ours.exact
    for meeting in load_automin_meetings():
        text = meeting.transcript
        expected = len(reference.encode_ordinary(text))  # type: ignore[attr-defined]
        assert ours.count(text) == expected, meeting.meeting_id
        # The estimate used without a tokenizer counts more tokens, never fewer.
        assert token_bound(text) > expected, meeting.meeting_id


def test_hf_window_comes_from_the_model_config(tiny_llama: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from elitr_bench.llm.hf_backend import chat_text

    window = judge_window(parse_judge_spec(f"hf:{tiny_llama}"))
    assert (window.limit, window.source) == (32768, "config max_position_embeddings")
    request = CompletionRequest("Rate this answer.", 0.0, 1.0, 8, None, (("system", "Be fair."),))
    tok = AutoTokenizer.from_pretrained(str(tiny_llama))
    rendered = chat_text(tok, request.prompt, request.messages)
    assert "<|system|>" in rendered  # the chat template is counted, as the backend sends it
    expected = len(tok(rendered, add_special_tokens=False)["input_ids"])
    assert window.prompt_tokens(request) == expected and window.exact

    small = tmp_path / "small"
    shutil.copytree(tiny_llama, small)
    config = json.loads((small / "config.json").read_text())
    config["max_position_embeddings"] = 1024
    (small / "config.json").write_text(json.dumps(config))
    assert judge_window(parse_judge_spec(f"hf:{small}")).limit == 1024
    assert judge_window(parse_judge_spec(f"hf:{small},context=512")).limit == 512


def test_hf_length_falls_back_to_nested_config_and_tokenizer() -> None:
    from types import SimpleNamespace

    from elitr_bench.llm.context_window import hf_max_length

    nested = SimpleNamespace(text_config=SimpleNamespace(max_position_embeddings=4096))
    assert hf_max_length(nested, None) == (4096, "config max_position_embeddings")
    bare = SimpleNamespace()
    assert hf_max_length(bare, SimpleNamespace(model_max_length=512)) == (
        512,
        "tokenizer model_max_length",
    )
    # transformers' "no limit" placeholder is no limit we can check against.
    assert hf_max_length(bare, SimpleNamespace(model_max_length=int(1e30))) == (0, "")


def test_hf_judge_never_generates_from_an_over_long_prompt(
    tiny_llama: Path, tmp_path: Path
) -> None:
    from elitr_bench.judges.qa.engine import judge_items, make_judge

    config = parse_judge_spec(
        f"hf:{tiny_llama},context=700,max_tokens=4,samples=1,reask=0,progress=false,"
        f"cache={tmp_path / 'c.sqlite'}"
    )
    short = JudgeItem("Who?", "Alice.", "Alice", "m1", "q1")
    long = JudgeItem("Who?", "Alice said " * 400, "Alice", "m1", "q2")
    judge = make_judge(config)
    run = judge_items([short, long], config, judge=judge, on_error="record")
    statuses = [j.status for j in run.judgements]
    assert statuses[0] != "error" and statuses[1] == "error"
    assert "m1/q2" not in run.judgements[1].reason  # the per-item reason: tokens and limit
    assert "700-token window of judge hf:" in run.judgements[1].reason
    backend = judge.client.backend  # type: ignore[attr-defined]
    assert backend.batches == [1]  # only the short prompt was generated from
    with pytest.raises(ContextWindowError, match=r"m1/q2 \([\d,]+ tokens\)"):
        check_items_fit([short, long], config, "score")


# --- the judges through their entry points, counted at the server ------------------------
def _lines(server: LoopbackOpenAI) -> list[RecordedRequest]:
    return server.snapshot()


def test_qa_filter_keeps_an_over_long_answer_unjudged_and_says_what_to_do(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from elitr_bench.judges.metrics import parse_filtered

    lines = after_run_errors(monkeypatch)
    loopback.handler = lambda request: "Feedback: fine. \\boxed{7}"
    config = parse_judge_spec(
        f"openai:gpt-4o-mini,base_url={loopback.base_url},context=1500,progress=false"
    )
    docs = [
        {"question": "Who?", "answer": "Alice", "meeting_id": "m1", "question_id": "q1"},
        {"question": "Who?", "answer": "Alice", "meeting_id": "m1", "question_id": "q2"},
    ]
    from elitr_bench.judges.qa.lm_eval_filter import judge_responses

    out = judge_responses(["Alice.", "Alice said " * 300], docs, config)
    judged = [parse_filtered(entry) for entry in out]
    assert [j["judge"]["status"] for j in judged if j] == ["scored", "error"]
    assert judged[1] is not None and judged[1]["response"] == "Alice said " * 300  # kept
    assert "it was not sent" in judged[1]["judge"]["reason"]
    assert len(_lines(loopback)) == 1  # only the answer that fits was sent
    [line] = lines
    assert "use a judge model with a larger context window" in line
    assert line.endswith("finish with: elitr-bench score out --judge A_JUDGE_WITH_A_LARGER_WINDOW")


def test_minutes_filter_keeps_over_long_minutes_unjudged(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from elitr_bench.judges.summary.lm_eval_filter import assessment_of, judge_minutes

    lines = after_run_errors(monkeypatch)
    loopback.handler = lambda request: (
        "Adequacy: 8\nFluency: 9\nGrammatical correctness: 9\nRelevance: 7"
    )
    transcript = "\n".join(f"(PERSON{i % 3}) We discuss item {i} of the plan." for i in range(60))
    config = parse_judge_spec(
        f"openai:gpt-4-0613,rubric=gpt-afgr,base_url={loopback.base_url},filler=false,"
        "context=2500,progress=false"
    )
    docs = [{"meeting_id": f"meeting_en_test2023_99{i}", "transcript": transcript} for i in (1, 2)]
    long_minutes = "- The team discussed the plan in great detail.\n" * 120
    out = judge_minutes(["- Plan agreed.", long_minutes], docs, config, system="sys")
    found = [assessment_of(entry) for entry in out]
    assert [f[1].status for f in found if f] == ["ok", "error"]
    assert found[1] is not None and found[1][0] == long_minutes  # the minutes are kept
    assert found[1][1].reason.startswith("meeting_en_test2023_992: the judge prompt has")
    assert len(_lines(loopback)) == 1
    [line] = lines
    assert "2,500-token window of judge openai:gpt-4-0613" in line
    assert "filler=true in the judge spec" in line and "finish with: elitr-bench score out" in line


def test_the_window_a_vllm_server_names_checks_the_prompts(
    loopback: LoopbackOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """The window vLLM's /v1/models names (``max_model_len``) is read by the preflight."""
    from elitr_bench.judges.readiness import check_judge_ready

    loopback.model, loopback.max_model_len = "smol-judge", 1500
    config = parse_judge_spec(
        f"openai:smol-judge,base_url={loopback.base_url},max_tokens=200,progress=false"
    )
    with caplog.at_level(logging.WARNING):
        check_judge_ready(config, network=True)
        window = judge_window(config)
    assert loopback.listings == ["/v1/models"] and loopback.snapshot() == []
    assert window.limit == 1500 and window.source == "max_model_len of the server's /v1/models"
    assert not window.exact  # no tokenizer of the served model: counted as an estimate
    assert "context window is unknown" not in caplog.text
    fits = JudgeItem("Who?", "Alice.", "Alice.")
    check_items_fit([fits], config, "judge")  # no error: it fits
    with pytest.raises(ContextWindowError, match=r"1,500-token window of judge openai:smol-judge"):
        check_items_fit([fits, JudgeItem("Who?", "Alice said " * 500, "Alice.")], config, "judge")
    assert loopback.snapshot() == []  # nothing was sent


def test_a_server_that_names_no_window_is_still_unknown(
    loopback: LoopbackOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    from elitr_bench.judges.readiness import check_judge_ready

    loopback.model = "plain-judge"  # OpenAI's listing shape: no max_model_len
    config = parse_judge_spec(f"openai:plain-judge,base_url={loopback.base_url}")
    with caplog.at_level(logging.WARNING):
        check_judge_ready(config, network=True)
        assert not judge_window(config).checked
    assert "context window is unknown" in caplog.text


@pytest.mark.slow
def test_lm_eval_minutes_task_stops_before_generation(
    loopback: LoopbackOpenAI, tmp_path: Path
) -> None:
    """The real CLI: a judge window too small for every meeting stops before generating."""
    loopback.model = "loop-judge"  # listed by GET /v1/models: the preflight sends nothing
    spec = f"openai:loop-judge,rubric=gpt-afgr,base_url={loopback.base_url},context=2000"
    out = tmp_path / "run"
    proc = run_lm_eval(replay_args("gpt4", "automin23_en", limit=2, out=out, judge=spec))
    assert proc.returncode != 0
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("elitr-bench: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    line = errors[0]
    assert "automin23_en: the minutes judge (with empty minutes, before generation" in line
    assert re.search(rf"{AUTOMIN_FIRST} \([\d,]+ tokens\)", line)
    assert re.search(r"meeting_en_test2023_002 \([\d,]+ tokens\)", line)
    assert "2,000-token window of judge openai:loop-judge (context=2000" in line
    assert "counted as a bound" in line and "larger context window" in line
    assert loopback.snapshot() == []
    assert not list(out.rglob("samples_*.jsonl"))  # nothing was generated


def test_arena_stops_before_any_request(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [write_run(tmp_path, name, style) for name, style in (("a", "full"), ("b", "half"))]
    loopback.model = "gpt-4-0613"
    judge = f"openai:gpt-4-0613,base_url={loopback.base_url},context=1500"
    out = tmp_path / "arena"
    args = ["arena", *map(str, runs), "--judge", judge, "--out", str(out), "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert re.search(r"meeting_en_dev_001 \([\d,]+ tokens\), meeting_en_dev_002 \(", err)
    assert "1,500-token window of judge openai:gpt-4-0613 (context=1500" in err
    assert "counted with cl100k_base" in err and "smaller max_tokens=" in err
    assert loopback.snapshot() == [] and not (out / "arena.json").exists()
    # The table's 8k holds these short minutes: the same arena goes ahead.
    assert judge_window(parse_judge_spec("openai:gpt-4-0613")).limit == 8192


def test_mesa_uses_the_table_and_stops_before_any_request(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback.model = "gpt-4-0613"
    args = ["mesa", "--systems", "gpt4", "--meetings", "1,4"]
    judge = f"openai:gpt-4-0613,base_url={loopback.base_url}"
    assert main([*args, "--judge", judge, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert re.search(rf"{AUTOMIN_FIRST} \(\d\d,\d\d\d tokens\)", err)
    assert re.search(r"meeting_en_test2023_004 \(\d\d,\d\d\d tokens\)", err)
    assert "8,192-token window of judge openai:gpt-4-0613 (OpenAI model table" in err
    assert "counted with cl100k_base (bpe-openai)" in err and "overlength=skip" in err
    assert loopback.snapshot() == []
    # mesa-train checks its feedback meetings the same way.
    train = ["mesa-train", "--feedback-meetings", "2", "--judge", judge, "--out", str(tmp_path)]
    assert main(train) == 2
    assert "meeting_en_test2023_002 (" in capsys.readouterr().err
    assert loopback.snapshot() == []


def test_score_stops_before_any_request(
    loopback: LoopbackOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path, "a", "full")
    loopback.model = "gpt-4-0613"
    judge = f"openai:gpt-4-0613,rubric=gpt-afgr,filler=false,base_url={loopback.base_url}"
    assert main(["score", str(run), "--judge", judge]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("elitr-bench: error: score: 2 judge prompts")
    assert "meeting_en_dev_001 (" in err and "filler=true in the judge spec" in err
    assert loopback.snapshot() == []


def test_unchecked_window_is_not_a_window() -> None:
    window = JudgeWindow("openai:x", 0)
    assert not window.checked and window.over(_request("x")) is None
    assert OPENAI_MODELS["gpt-4-0613"].context == 8_192
