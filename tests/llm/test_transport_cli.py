"""The judge transport through the real ``lm_eval`` and ``elitr-bench`` CLIs.

The judge's base URL carries credentials in its user info (``http://alice:SECRET@...``)
in every run here: the loopback server refuses any request without the Basic auth they
make, and no byte of them may reach the output folder, the cache or the console.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli import main
from elitr_bench.judges.metrics import parse_filtered
from tests.conftest import run_lm_eval
from tests.judges.conftest import TEST_KEY, boxed_by_response
from tests.support.openai_server import (
    MALFORMED_SHAPES,
    LoopbackOpenAI,
    RecordedRequest,
    Reply,
    malformed_ok,
    unauthorized,
)

pytestmark = pytest.mark.slow

SECRET = "pw-USERINFO-77e1c0ffee"
BASIC = "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()


def url(server: LoopbackOpenAI) -> str:
    return f"http://alice:{SECRET}@127.0.0.1:{server.port}/v1"


def guarded(script: Any) -> Any:
    """Refuse (401) any request that does not carry the user info's Basic auth."""

    def handler(request: RecordedRequest) -> Reply | str:
        if request.headers.get("authorization") != BASIC:
            return unauthorized(401, "no basic auth")
        result: Reply | str = script(request)
        return result

    return handler


def minutes_reply(request: RecordedRequest) -> str:
    """Filler classification by turn length (short = filler); GPT-ART scores otherwise."""
    prompt = request.prompt
    if prompt.startswith("The following conversational turn"):
        return "Filler" if len(prompt) < 330 else "Content"
    return "Adequacy: 8\nRelevance: 7\nTopicality: 9"


def assert_no_secret(paths: list[Path], *texts: str) -> None:
    """No form of the credentials in any file below ``paths`` or in ``texts``."""
    forms = [SECRET, SECRET[:12], BASIC.split()[1], TEST_KEY]
    files = [f for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()]
    assert files
    for f in files:
        blob = f.read_bytes()
        for form in forms:
            assert form.encode() not in blob, (f, form)
    for text in texts:
        for form in forms:
            assert form not in text, form


def lm_eval_minutes(server: LoopbackOpenAI, out: Path, cache: Path) -> Any:
    # GPT-4-32k, as the AutoMin organisers judged: the meetings do not fit 8k tokens.
    spec = f"openai:gpt-4-32k,base_url={url(server)},rubric=gpt-art"
    return run_lm_eval(
        [
            "--model", "elitr-replay", "--model_args", "system=gpt4",
            "--tasks", "automin23_en", "--limit", "2",
            "--metadata", json.dumps({"judge": spec}),
            "--log_samples", "--output_path", str(out),
        ],
        env={"ELITR_JUDGE_CACHE": str(cache)},
    )  # fmt: skip


def results_of(out: Path) -> dict[str, Any]:
    [path] = [p for p in out.rglob("results_*.json") if "rescored" not in p.name]
    return dict(json.loads(path.read_text()))


def judged_scores(out: Path) -> dict[str, Any]:
    [path] = out.rglob("samples_*.jsonl")
    rows = [json.loads(line) for line in path.read_text().split("\n") if line.strip()]
    judged = {r["doc"]["meeting_id"]: parse_filtered(r["filtered_resps"]) for r in rows}
    return {meeting: (j or {})["judge"]["scores"] for meeting, j in judged.items()}


def test_minutes_run_with_filler_sends_each_request_once_and_faults_change_nothing(
    tmp_path: Path,
) -> None:
    with LoopbackOpenAI(guarded(minutes_reply)) as server:
        clean_out = tmp_path / "clean"
        proc = lm_eval_minutes(server, clean_out, tmp_path / "clean.sqlite")
        assert proc.returncode == 0, proc.stderr[-3000:]
        bodies = Counter(json.dumps(r.body, sort_keys=True) for r in server.requests)
        assert len(bodies) > 400  # every turn of two meetings classified, then judged
        repeated = {body: n for body, n in bodies.items() if n > 1}
        assert repeated == {}  # no identical request twice
        assert all(r.headers["authorization"] == BASIC for r in server.requests)
        clean = results_of(clean_out)
        usage = clean["configs"]["automin23_en"]["metadata"]["judge_usage"]
        assert usage["deduplicated"] > 0 and usage["refused"] == usage["failed"] == 0
        assert usage["requests"] == usage["answered"] == len(server.requests) - 1  # - preflight
        assert_no_secret([clean_out, tmp_path / "clean.sqlite"], proc.stdout, proc.stderr)

        # The same run against a server that answers some first requests with a 200
        # that carries no text (every shape): retried, and the results are the same.
        shapes = itertools.cycle(MALFORMED_SHAPES)
        seen: Counter[str] = Counter()
        lock = threading.Lock()

        def flaky(request: RecordedRequest) -> Reply | str:
            body = json.dumps(request.body, sort_keys=True)
            with lock:
                seen[body] += 1
                first = seen[body] == 1 and len(seen) % 7 == 0
                shape = next(shapes)
            return malformed_ok(shape) if first else minutes_reply(request)

        server.reset()
        server.handler = guarded(flaky)
        faulted_out = tmp_path / "faulted"
        proc = lm_eval_minutes(server, faulted_out, tmp_path / "faulted.sqlite")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr
        faulted = results_of(faulted_out)
        assert faulted["results"] == clean["results"]
        assert judged_scores(faulted_out) == judged_scores(clean_out)
        usage = faulted["configs"]["automin23_en"]["metadata"]["judge_usage"]
        assert usage["failed"] == usage["retries"] > 50
        assert (
            usage["answered"]
            == clean["configs"]["automin23_en"]["metadata"]["judge_usage"]["answered"]
        )


def test_after_a_401_nothing_more_is_sent_and_the_run_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = itertools.count()

    def revoked_after_two(request: RecordedRequest) -> Reply | str:
        if next(served) < 2:
            return boxed_by_response(lambda _r: 7)(request)
        return unauthorized(401, "Incorrect API key provided")

    with LoopbackOpenAI(guarded(revoked_after_two), model="gpt-4-0613") as server:
        out = tmp_path / "qa"
        cache = tmp_path / "cache.sqlite"
        spec = f"openai:gpt-4-0613,base_url={url(server)},concurrency=1"
        proc = run_lm_eval(
            [
                "--model", "elitr-replay", "--model_args", "system=GPT-4",
                "--tasks", "elitr_qa_dev", "--limit", "5",
                "--metadata", json.dumps({"judge": spec}),
                "--log_samples", "--output_path", str(out),
            ],
            env={"ELITR_JUDGE_CACHE": str(cache)},
        )  # fmt: skip
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        # The refused request was the last one: the two queued after it were never sent.
        assert len(server.requests) == 3
        usage = results_of(out)["configs"]["elitr_qa_dev"]["metadata"]["judge_usage"]
        assert (usage["requests"], usage["answered"], usage["refused"]) == (3, 2, 1)
        assert usage["not_sent"] == 2 and usage["retries"] == 0
        last = proc.stderr.strip().splitlines()[-1]
        assert "HTTP 401 from http://***@127.0.0.1" in last and "elitr-bench score" in last
        assert "nothing more is sent with these credentials" in last
        assert "with the real user info in place of ***" in last

        # The key is fixed: `elitr-bench score` judges exactly the three failed answers.
        server.reset()
        server.handler = guarded(boxed_by_response(lambda _r: 7))
        capsys.readouterr()
        assert main(["score", str(out), "--judge", f"{spec},cache={cache}"]) == 0
        assert len(server.requests) == 3
        rescored = results_of_rescored(out)["results"]["elitr_qa_dev"]
        assert rescored["judge_errors,openai:gpt-4-0613"] == 0
        assert rescored["judge_score,openai:gpt-4-0613"] == 7.0
        printed = capsys.readouterr()
        assert_no_secret([out, cache], proc.stdout, proc.stderr, printed.out, printed.err)


def results_of_rescored(out: Path) -> dict[str, Any]:
    [path] = out.rglob("results_rescored_*.json")
    return dict(json.loads(path.read_text()))
