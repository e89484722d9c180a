"""Credentials in a judge's base URL are used for requests and written nowhere."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import httpx
import pytest

from elitr_bench.cli import main
from elitr_bench.judges import JudgeConfigError, parse_judge_spec
from elitr_bench.judges.conceal import conceal_spec, reveal_spec, scrub
from elitr_bench.judges.qa.engine import JudgeItem, judge_items
from elitr_bench.judges.readiness import check_judge_ready
from elitr_bench.llm.redact import redact_text, split_userinfo
from tests.judges.conftest import TEST_KEY, boxed_by_response
from tests.judges.test_cream_arena import FAST, cream_script, write_run
from tests.support.openai_server import LoopbackOpenAI, Reply

SECRET = "pw-USERINFO-4b1d9e77c0"


def leaky(server: LoopbackOpenAI, user: str = "alice") -> str:
    return f"http://{user}:{SECRET}@127.0.0.1:{server.port}/v1"


def basic_header(user: str, password: str) -> str:
    """The header httpx sends for user info in a URL (what worked before we took it out)."""
    request = httpx.Request("GET", "http://h/")
    return next(httpx.BasicAuth(user, password).auth_flow(request)).headers["Authorization"]


def forms_of(secret: str) -> list[bytes]:
    """Every form in which the secret could be written."""
    token = base64.b64encode(f"alice:{secret}".encode()).decode()
    return [secret.encode(), secret[:12].encode(), token.encode()]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://u:p4ss@host:8/v1", "http://***@host:8/v1"),
        ("https://KEYONLY@host/v1/", "https://***@host/v1/"),
        ("http://u:p%40ss@h/v1?api-key=abc&x=1", "http://***@h/v1?api-key=***&x=1"),
        (
            "openai:m,base_url=http://u:k@h/v1,rubric=gpt-art",
            "openai:m,base_url=http://***@h/v1,rubric=gpt-art",
        ),
        (
            "debate=mixed,pool=openai:a;base_url=http://u:k@h/v1|openai:b",
            "debate=mixed,pool=openai:a;base_url=http://***@h/v1|openai:b",
        ),
        (
            "HTTP 401 from http://127.0.0.1:9/v1: bad key",
            "HTTP 401 from http://127.0.0.1:9/v1: bad key",
        ),
        ("mail me at a@b.c", "mail me at a@b.c"),
    ],
)
def test_redact_text(text: str, shown: str) -> None:
    assert redact_text(text) == shown


def test_conceal_reveal_and_split() -> None:
    real = f"openai:m,base_url=http://alice:{SECRET}@h/v1"
    shown = conceal_spec(real)
    assert SECRET not in shown and reveal_spec(shown) == real
    assert conceal_spec("openai:m,rubric=gpt-art") == "openai:m,rubric=gpt-art"
    assert split_userinfo(f"http://alice:{SECRET}@h:9/v1") == ("http://h:9/v1", ("alice", SECRET))
    assert split_userinfo("http://a%3Ab:c%40d@h/v1")[1] == ("a:b", "c@d")
    assert split_userinfo("http://h/v1") == ("http://h/v1", None)
    assert scrub({"k": [f"http://u:{SECRET}@h"], "n": 1}) == {"k": ["http://***@h"], "n": 1}


def test_parsed_specs_show_no_credentials_but_keep_them_for_requests() -> None:
    url = f"http://alice:{SECRET}@127.0.0.1:9/v1"
    config = parse_judge_spec(f"openai:m,base_url={url},rubric=gpt-art")
    assert config.base_url == url  # used
    assert SECRET not in config.spec and "http://***@127.0.0.1:9/v1" in config.spec
    assert SECRET not in json.dumps(config.to_dict()) and SECRET not in str(config.identity())
    # The concealed spec parses back to the real judge in this process (lm-eval filters).
    assert parse_judge_spec(config.spec).base_url == url
    pool = parse_judge_spec(f"openai:m,method=mesa,debate=mixed,pool=openai:a;base_url={url}")
    assert SECRET not in pool.spec and SECRET not in json.dumps(pool.to_dict())


def test_errors_about_keys_never_print_them() -> None:
    with pytest.raises(JudgeConfigError) as refused:
        parse_judge_spec(f"openai:gpt-4o,api_key={TEST_KEY},temperature=0")
    assert TEST_KEY not in str(refused.value) and "api_key=***" in str(refused.value)
    with pytest.raises(JudgeConfigError) as bad:
        parse_judge_spec(f"openai:gpt-4o,base_url=http://a:{SECRET}@h/v1,temperature=9")
    assert SECRET not in str(bad.value) and "temperature=9.0 must be in [0, 2]" in str(bad.value)
    with pytest.raises(Exception) as not_http:
        check_judge_ready(parse_judge_spec(f"openai:m,base_url=ftp://a:{SECRET}@h/v1"))
    assert SECRET not in str(not_http.value) and "ftp://***@h/v1" in str(not_http.value)


def test_a_concealed_spec_from_a_file_is_refused_with_the_fix() -> None:
    with pytest.raises(JudgeConfigError, match="give the real user:password@ in base_url="):
        parse_judge_spec("openai:m,base_url=http://***@127.0.0.1:1/v1,seed=3")


def test_user_info_is_sent_as_before_and_errors_do_not_show_it(
    loopback: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.handler = boxed_by_response(lambda _r: 6)
    item = [JudgeItem(question="Q?", response="A", reference="R")]
    config = parse_judge_spec(f"openai:m,base_url={leaky(loopback)},cache=memory,progress=false")
    assert judge_items(item, config).judgements[0].score == 6.0
    header = loopback.requests[-1].headers["authorization"]
    assert header == basic_header("alice", SECRET)  # the same Basic auth httpx sent
    assert loopback.requests[-1].path == "/v1/chat/completions"

    # The same through OPENAI_BASE_URL, and a failure whose body quotes the URL.
    monkeypatch.setenv("OPENAI_BASE_URL", leaky(loopback))
    loopback.handler = lambda req: Reply(
        status=400, body={"error": {"message": f"bad request to {leaky(loopback)}"}}
    )
    env_config = parse_judge_spec("openai:m,cache=memory,progress=false,retries=0")
    run = judge_items(item, env_config, on_error="record")
    reason = run.judgements[0].reason
    assert "HTTP 400 from http://***@127.0.0.1" in reason and SECRET not in reason
    assert loopback.requests[-1].headers["authorization"] == basic_header("alice", SECRET)


def test_arena_and_mesa_folders_hold_no_credentials(
    loopback: LoopbackOpenAI,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    loopback.model = "judge-model"
    judge = f"openai:judge-model,base_url={leaky(loopback)},progress=false"
    cache = tmp_path / "cache.sqlite"
    loopback.handler = cream_script()
    full, half = write_run(tmp_path, "a", "full"), write_run(tmp_path, "b", "half")
    arena_out = tmp_path / "arena"
    args = ["arena", str(full), str(half), "--judge", f"{judge},cache={cache}"]
    assert main([*args, "--out", str(arena_out), *FAST]) == 0
    from tests.judges.test_mesa_script import make_script

    loopback.handler = make_script()
    mesa_out = tmp_path / "mesa"
    mesa = ["mesa", "--systems", "gpt4", "--meetings", "1", "--judge", f"{judge},cache={cache}"]
    assert main([*mesa, "--out", str(mesa_out)]) == 0
    # A failing judge: its error lines and the failed items' reasons.
    loopback.handler = lambda _req: Reply(status=404)
    failing = ["mesa", "--systems", "ntr", "--meetings", "1", "--judge", f"{judge},retries=0"]
    assert main([*failing, "--out", str(tmp_path / "mesa-failed")]) != 0
    assert all(
        r.headers["authorization"] == basic_header("alice", SECRET) for r in loopback.requests
    )

    captured = capsys.readouterr()
    blobs = {"stdout": captured.out.encode(), "stderr": captured.err.encode()}
    blobs["logs"] = caplog.text.encode()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) > 10 and cache.exists()
    blobs.update({str(p): p.read_bytes() for p in files})
    assert "http://***@127.0.0.1" in captured.err + captured.out + caplog.text
    for where, blob in blobs.items():
        for form in forms_of(SECRET):
            assert form not in blob, (where, form)
