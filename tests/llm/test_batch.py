"""Judging through batches: OpenAI's Batch API (``batch=on``) and offline batch files.

Every test runs the real ``elitr-bench score`` against the loopback server, whose Files
and Batch API (tests/support/batch_api.py) validate, answer and fail batches as the API
does, each line answered by the same script as a one-by-one request. The judge is
gpt-4-0613, the paper's, so the plan and the usage are priced.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.cli import main
from tests.cli.test_qa_budget import write_samples
from tests.conftest import ROOT
from tests.judges.conftest import response_in
from tests.judges.test_restatement_e2e import restating
from tests.support.batch_api import answer_file
from tests.support.openai_server import LoopbackOpenAI, RecordedRequest, Reply

TASK = "elitr_qa_dev"
N = 6


@pytest.fixture(autouse=True)
def _fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Poll at once."""
    monkeypatch.setenv("ELITR_BATCH_POLL_S", "0")


def judge_reply(request: RecordedRequest) -> str:
    r"""Answer ``i``: every third in prose (restated as ``{"score": 5}``), else ``\boxed``."""
    if restating(request):
        return json.dumps({"score": 5})
    index = int(response_in(request).rsplit(" ", 1)[1])
    if index % 3 == 1:
        return "The answer is half right; I would give it a 5 out of 10."
    return f"Feedback: fine. \\boxed{{{index + 2}}}"


def spec(server: LoopbackOpenAI, cache: Path, extra: str = "") -> str:
    return f"openai:gpt-4-0613,base_url={server.base_url},progress=false,cache={cache}{extra}"


def judge_bodies(requests: list[RecordedRequest]) -> list[str]:
    """The judge requests' bodies, canonical JSON, sorted (preflight left out)."""
    return sorted(
        json.dumps(r.body, sort_keys=True)
        for r in requests
        if "### Response to evaluate:" in json.dumps(r.body)
    )


def scored(run: Path) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """(metrics, per-sample judge scores, judge_usage) of the run's rescoring."""
    results = json.loads(next(run.glob("results_rescored_*.json")).read_text())
    rows = sorted(p for p in run.glob(f"samples_{TASK}_*.jsonl") if p.name != SAMPLES_NAME)[-1]
    scores = []
    for line in rows.read_text().splitlines():
        judged = json.loads(json.loads(line)["filtered_resps"][0][0])["judge"]
        scores.append((judged["status"], judged["score"]))
    metrics = {k.split(",")[0]: v for k, v in results["results"][TASK].items() if "judge" in k}
    return metrics, scores, results["judge_usage"][TASK]


SAMPLES_NAME = f"samples_{TASK}_2024-05-01T10-00-00.123456.jsonl"


def score(argv: list[str]) -> int:
    return main(["score", *argv])


def test_batch_scores_equal_one_by_one_scores_at_half_the_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LoopbackOpenAI(judge_reply, model="gpt-4-0613") as server:
        write_samples(tmp_path / "one", N)
        assert score([str(tmp_path / "one"), "--judge", spec(server, tmp_path / "a.sqlite")]) == 0
        # What the server took one by one: the first restatement's json_schema refused (as
        # the API refuses it for gpt-4-0613) is learnt, and this process asks without it.
        one_by_one = judge_bodies(server.taken())
        server.reset()
        write_samples(tmp_path / "batch", N)
        judge = spec(server, tmp_path / "b.sqlite", ",batch=on")
        assert score([str(tmp_path / "batch"), "--judge", judge]) == 0
        err = capsys.readouterr().err
        batches = list(server.batch_api.batches.values())
        # nothing one by one: the prompts in one batch, the two restatements in a second
        assert judge_bodies(server.requests) == []
        assert [b["request_counts"]["total"] for b in batches] == [N, 2]
        assert judge_bodies(server.batch_api.lines) == one_by_one
    metrics_one, scores_one, usage_one = scored(tmp_path / "one")
    metrics_batch, scores_batch, usage_batch = scored(tmp_path / "batch")
    assert scores_batch == scores_one and metrics_batch == metrics_one
    assert ("scored", 5.0) in scores_batch and ("scored", 2.0) in scores_batch
    assert "at the batch price" in err
    assert usage_batch["batched"] == usage_batch["answered"] == N + 2
    assert usage_batch["batch_price_per_1m_tokens"] == {"prompt": 15.0, "completion": 30.0}
    assert usage_one["price_per_1m_tokens"] == {"prompt": 30.0, "completion": 60.0}
    tokens = (usage_batch["prompt_tokens"], usage_batch["completion_tokens"])
    assert tokens == (usage_one["prompt_tokens"], usage_one["completion_tokens"])
    assert usage_batch["estimated_cost_usd"] == pytest.approx(usage_one["estimated_cost_usd"] / 2)


def _ledger(cache: Path) -> list[tuple[str, str]]:
    """The batches the cache file records, each with its uploaded input file's id."""
    with sqlite3.connect(cache) as conn:
        rows = conn.execute("SELECT id, state, input_file FROM batches ORDER BY created")
        found = rows.fetchall()
    assert all(batch.startswith("batch_") and file.startswith("file-") for batch, _, file in found)
    return [(batch, state) for batch, state, _ in found]


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["killed", "ctrl-c"])
def test_a_stopped_run_resumes_polling_the_same_batch(tmp_path: Path, stop: signal.Signals) -> None:
    """The run is killed (or Ctrl-C'd) while it polls; the rerun creates no batch."""
    run, cache = tmp_path / "run", tmp_path / "c.sqlite"
    write_samples(run, N)
    with LoopbackOpenAI(lambda r: "\\boxed{8}", model="gpt-4-0613") as server:
        server.batch_api.hold = threading.Event()  # stays in_progress until set
        argv = [str(run), "--judge", spec(server, cache, ",batch=on")]
        code = (  # the console script, named as it is (the CLI's interrupt line needs it)
            "import sys; sys.argv[0] = 'elitr-bench'; from elitr_bench.cli import main; "
            "sys.exit(main(sys.argv[1:]))"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "score", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            # this checkout's package, whatever the interpreter's editable install points at
            env={**os.environ, "ELITR_BATCH_POLL_S": "0.05", "PYTHONPATH": str(ROOT)},
        )
        try:
            deadline = time.monotonic() + 120
            while len(server.batch_api.retrieved) < 2 and proc.poll() is None:
                assert time.monotonic() < deadline, "the run never polled its batch"
                time.sleep(0.05)
            proc.send_signal(stop)
            _, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
        # Ctrl-C: the one interrupt line and status 130, promptly (the batch is not waited for)
        assert proc.returncode == (-9 if stop == signal.SIGKILL else 130), stderr.decode()[-2000:]
        if stop == signal.SIGINT:
            lines = stderr.decode().strip().splitlines()
            assert "Traceback" not in stderr.decode() and "interrupted by SIGINT" in lines[-1]
        assert [state for _, state in _ledger(cache)] == ["live"]  # recorded before polling
        assert not list(run.glob("results_rescored_*.json"))
        server.batch_api.hold.set()
        assert score(argv) == 0
        assert len(server.batch_api.batches) == 1 and len(server.batch_api.lines) == N
        assert judge_bodies(server.requests) == []
    assert [state for _, state in _ledger(cache)] == ["completed"]
    _metrics, scores, usage = scored(run)
    assert scores == [("scored", 8.0)] * N and usage["batched"] == N


def test_no_wait_submits_exits_and_the_printed_command_collects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, cache = tmp_path / "run", tmp_path / "c.sqlite"
    write_samples(run, N)
    with LoopbackOpenAI(lambda r: "\\boxed{6}", model="gpt-4-0613") as server:
        judge = spec(server, cache, ",batch=on")
        assert score([str(run), "--judge", judge, "--no-wait"]) == 0
        err = capsys.readouterr().err
        assert server.batch_api.retrieved == [] and not list(run.glob("results_rescored_*"))
        collect = err.split("Collect the replies with: ", 1)[1].strip()
        assert collect.split()[:2] == ["elitr-bench", "score"] and "--no-wait" not in collect
        # the same command again submits nothing new either (the batch is live)
        assert score([str(run), "--judge", judge, "--no-wait"]) == 0
        assert len(server.batch_api.batches) == 1
        assert score([str(run), "--judge", judge]) == 0
        assert len(server.batch_api.batches) == 1 and len(server.batch_api.lines) == N
    assert scored(run)[1] == [("scored", 6.0)] * N


@pytest.mark.parametrize("fault", ["line_error", "expired"])
def test_lines_a_batch_fails_are_sent_one_by_one_never_dropped(tmp_path: Path, fault: str) -> None:
    run, cache = tmp_path / "run", tmp_path / "c.sqlite"
    write_samples(run, N)
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def flaky(request: RecordedRequest) -> Reply | str:
        with lock:
            seen[request.prompt] += 1
            first = seen[request.prompt] == 1
        if fault == "line_error" and first and response_in(request).endswith(("1", "4")):
            return Reply(status=500)
        return "\\boxed{9}"

    with LoopbackOpenAI(flaky, model="gpt-4-0613") as server:
        if fault == "expired":
            server.batch_api.expire_after = 4
        assert score([str(run), "--judge", spec(server, cache, ",batch=on")]) == 0
        direct = [r for r in server.requests if "### Response to evaluate:" in json.dumps(r.body)]
        batch = next(iter(server.batch_api.batches.values()))
    assert len(server.batch_api.batches) == 1 and len(direct) == 2
    assert batch["status"] == ("completed" if fault == "line_error" else "expired")
    assert batch["request_counts"] == {"total": N, "completed": 4, "failed": 2}
    _metrics, scores, usage = scored(run)
    assert scores == [("scored", 9.0)] * N
    assert usage["batched"] == 4 and usage["answered"] == N
    # the four batched lines at half the listed price, the two sent alone at the full one
    full = (usage["prompt_tokens"] * 30 + usage["completion_tokens"] * 60) / 1e6
    batched = (usage["batched_prompt_tokens"] * 30 + usage["batched_completion_tokens"] * 60) / 1e6
    assert 0 < batched < full
    assert usage["estimated_cost_usd"] == pytest.approx(full - batched / 2, abs=1e-6)


@pytest.mark.parametrize(
    ("variable", "value", "sizes"),
    [("ELITR_BATCH_MAX_REQUESTS", "4", [4, 2]), ("ELITR_BATCH_MAX_MB", "0.004", [2, 2, 2])],
)
def test_a_batch_is_split_at_the_request_and_byte_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, sizes: list[int]
) -> None:
    monkeypatch.setenv(variable, value)
    run = tmp_path / "run"
    write_samples(run, N)
    with LoopbackOpenAI(lambda r: "\\boxed{7}", model="gpt-4-0613") as server:
        assert score([str(run), "--judge", spec(server, tmp_path / "c.sqlite", ",batch=on")]) == 0
        batches = list(server.batch_api.batches.values())
        uploaded = [server.batch_api.files[b["input_file_id"]].data for b in batches]
    assert [b["request_counts"]["total"] for b in batches] == sizes
    if variable == "ELITR_BATCH_MAX_MB":  # a line is 1.5-2 kB: two fit in 4 kB, three do not
        assert all(len(blob) <= 0.004 * 1024 * 1024 for blob in uploaded)
    assert scored(run)[1] == [("scored", 7.0)] * N


@pytest.mark.parametrize(
    ("server_has", "says"),
    [
        # a provider with a lower cap than the API's: the batch fails validation
        ("a lower cap", ["failed validation", "the limit is 3", "batch=off"]),
        ("no batch api", ["no Batch API there", "use batch=off in the judge spec"]),
    ],
)
def test_a_batch_the_api_refuses_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server_has: str, says: list[str]
) -> None:
    run = tmp_path / "run"
    write_samples(run, N)
    with LoopbackOpenAI(lambda r: "\\boxed{7}", model="gpt-4-0613") as server:
        server.batch_api.max_requests = 3
        server.batch_api.served = server_has != "no batch api"
        assert score([str(run), "--judge", spec(server, tmp_path / "c.sqlite", ",batch=on")]) == 2
        assert judge_bodies(server.requests) == []
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error" in line]
    assert len(lines) == 1 and all(part in lines[0] for part in says), err


def test_batch_files_offline_write_answer_read_until_nothing_waits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--batch-write sends nothing; --batch-read of the answers writes what still waits.

    Round 1 holds the six prompts, round 2 the two restatements with their json_schema,
    which the server refuses for gpt-4-0613 as the API does: the refusal inside the file
    is learnt as one sent alone would be, and round 3 asks them without it.
    """
    run, cache = tmp_path / "run", tmp_path / "c.sqlite"
    write_samples(run, N)
    with LoopbackOpenAI(judge_reply, model="gpt-4-0613") as server:
        judge = spec(server, cache)
        first = tmp_path / "in1.jsonl"
        assert score([str(run), "--judge", judge, "--batch-write", str(first)]) == 0
        assert server.requests == [] and server.listings == []  # offline: not even a preflight
        lines = [json.loads(line) for line in first.read_text().splitlines()]
        assert len(lines) == N and {line["url"] for line in lines} == {"/v1/chat/completions"}
        assert all(len(line["custom_id"]) == 64 for line in lines)  # the cache keys
        sizes, written = [], first
        for round_ in range(2, 6):
            answered = tmp_path / f"out{round_ - 1}.jsonl"
            answered.write_text(answer_file(server.batch_api, written.read_text()))
            sizes.append(len(written.read_text().splitlines()))
            written = tmp_path / f"in{round_}.jsonl"
            argv = ["--batch-read", str(answered), "--batch-write", str(written)]
            assert score([str(run), "--judge", judge, *argv]) == 0
            if not written.exists():
                break
        assert server.requests == []
    assert sizes == [N, 2, 2]
    _metrics, scores, _usage = scored(run)
    assert [s for s, _ in scores] == ["scored"] * N and ("scored", 5.0) in scores
    assert "then: elitr-bench score" in capsys.readouterr().err


def test_the_lm_eval_filter_with_batch_on_submits_waits_and_scores_alike(tmp_path: Path) -> None:
    """``--metadata judge=...,batch=on``: the filter's judging goes through batches too."""
    from elitr_bench.judges import parse_judge_spec
    from elitr_bench.judges.qa.lm_eval_filter import judge_responses, last_run
    from tests.judges.test_lm_eval_integration import _docs

    docs = _docs(N)
    resps = [[f"answer {i}"] for i in range(N)]
    with LoopbackOpenAI(judge_reply, model="gpt-4-0613") as server:
        one = judge_responses(resps, docs, parse_judge_spec(spec(server, tmp_path / "a.sqlite")))
        server.reset()
        config = parse_judge_spec(spec(server, tmp_path / "b.sqlite", ",batch=on"))
        batched = judge_responses(resps, docs, config)
        assert judge_bodies(server.requests) == [] and len(server.batch_api.batches) == 2
    run = last_run()
    assert run is not None and run.usage["batched"] == N + 2
    scores = [json.loads(row[0])["judge"]["score"] for row in batched]
    assert scores == [json.loads(row[0])["judge"]["score"] for row in one] and 5.0 in scores


def test_a_batch_cancelled_while_polled_is_judged_one_by_one(tmp_path: Path) -> None:
    """Someone cancels the batch (the dashboard, another tool): no line is lost."""
    import openai

    run = tmp_path / "run"
    write_samples(run, N)
    with LoopbackOpenAI(lambda r: "\\boxed{4}", model="gpt-4-0613") as server:
        server.batch_api.hold = threading.Event()  # in_progress until cancelled

        def cancel_when_polled() -> None:
            while not server.batch_api.retrieved:
                time.sleep(0.01)
            sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
            sdk.batches.cancel(server.batch_api.retrieved[0])

        canceller = threading.Thread(target=cancel_when_polled, daemon=True)
        canceller.start()
        assert score([str(run), "--judge", spec(server, tmp_path / "c.sqlite", ",batch=on")]) == 0
        canceller.join(5)
        batch = next(iter(server.batch_api.batches.values()))
        direct = judge_bodies(server.requests)
    assert batch["status"] == "cancelled" and len(server.batch_api.batches) == 1
    assert len(direct) == N  # every line of the cancelled batch, sent one by one
    assert scored(run)[1] == [("scored", 4.0)] * N


def test_the_loopback_files_and_batch_api_refuse_what_the_api_refuses() -> None:
    """The loopback's Files and Batch API, driven by the SDK as our batch layer drives it."""
    import openai

    def line(custom_id: str, model: str = "m", url: str = "/v1/chat/completions") -> str:
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
        return json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body})

    with LoopbackOpenAI(lambda r: "ok") as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        good = "\n".join(line(f"k{i}") for i in range(3)).encode()
        with pytest.raises(openai.BadRequestError, match=r"Must be \.jsonl"):
            sdk.files.create(file=("in.txt", good), purpose="batch")
        with pytest.raises(openai.BadRequestError, match="'purpose'"):
            sdk.files.create(file=("in.jsonl", good), purpose="nonsense")  # type: ignore[arg-type]
        uploaded = sdk.files.create(file=("in.jsonl", good), purpose="batch")
        assert sdk.files.retrieve(uploaded.id).bytes == len(good)
        assert sdk.files.content(uploaded.id).content == good
        with pytest.raises(openai.NotFoundError):
            sdk.files.retrieve("file-missing")
        with pytest.raises(openai.BadRequestError, match="Supported values are: '24h'"):
            sdk.batches.create(
                input_file_id=uploaded.id,
                endpoint="/v1/chat/completions",
                completion_window="1h",  # type: ignore[arg-type]
            )
        with pytest.raises(openai.NotFoundError):
            sdk.batches.create(
                input_file_id="file-missing",
                endpoint="/v1/chat/completions",
                completion_window="24h",
            )
        mixed = "\n".join([line("a"), line("a"), line("b", model="other")]).encode()
        bad = sdk.files.create(file=("mixed.jsonl", mixed), purpose="batch")
        states: list[list[str]] = []
        codes: list[str | None] = []
        for source in (uploaded, bad, uploaded):
            batch = sdk.batches.create(
                input_file_id=source.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            states.append([batch.status])
            if len(states) == 3:  # the third is cancelled while it is in progress
                server.batch_api.hold = threading.Event()
                states[-1].append(sdk.batches.retrieve(batch.id).status)
                states[-1].append(sdk.batches.cancel(batch.id).status)
            for _ in range(2):
                states[-1].append(sdk.batches.retrieve(batch.id).status)
            if len(states) == 2:
                failed = sdk.batches.retrieve(batch.id).errors
                codes = [e.code for e in (failed.data if failed and failed.data else [])]
        assert states == [
            ["validating", "in_progress", "completed"],
            ["validating", "failed", "failed"],
            ["validating", "in_progress", "cancelling", "cancelled", "cancelled"],
        ]
        assert codes == ["duplicate_custom_id", "mismatched_model"]
        done = sdk.batches.list().data
        assert [b.status for b in done] == ["cancelled", "failed", "completed"]
        output = sdk.files.content(str(done[2].output_file_id)).text.splitlines()
        assert [json.loads(o)["custom_id"] for o in output] == ["k0", "k1", "k2"]
        with pytest.raises(openai.BadRequestError, match="Cannot cancel"):
            sdk.batches.cancel(done[2].id)
