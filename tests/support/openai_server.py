"""A loopback OpenAI-compatible server for offline tests and benchmarks.

Binds 127.0.0.1 on an ephemeral port and serves from a background thread:
``POST /v1/chat/completions`` and ``POST /v1/completions`` (plus ``GET /v1/models``).
Every request is recorded; replies are scripted by a callable that receives the recorded
request and returns a :class:`Reply` (or just the content string). Faults are replies
too: HTTP 429 with ``Retry-After``, 500, 401/403 (:func:`unauthorized`), slow or hanging
responses (client timeouts), garbage or out-of-range judge outputs, and HTTP 200s without
usable text as OpenAI-compatible servers send them under load (:func:`malformed_ok`: no
``choices``, an empty ``choices`` list, a choice without ``message``, ``content: null``).
OpenAI's Files and Batch API (``/v1/files``, ``/v1/batches``) are served too, each batch
line answered by the same rules and script (:mod:`tests.support.batch_api`).

Usable for lm-eval's ``local-chat-completions`` / ``local-completions`` models by pointing
``base_url`` at :attr:`LoopbackOpenAI.chat_url` / :attr:`LoopbackOpenAI.completions_url`.

By default the server refuses what OpenAI's API refuses, with the API's own HTTP 400 bodies
(:func:`api_refusal`), before the script sees the request: a ``response_format`` the
requested model does not take (``json_schema`` before gpt-4o-2024-08-06, ``json_object``
before gpt-4-1106-preview), a strict ``json_schema`` that breaks the Structured Outputs
rules, a ``json_object`` request whose messages never say "json", and the parameters the
reasoning models refuse (``max_tokens``, a ``temperature`` or ``top_p`` other than 1), and a
``max_tokens`` beyond a model's output cap (``max_tokens is too large``). Other servers'
refusals, in their own words and statuses, are :data:`DIALECTS` (vLLM, llama.cpp, a 422
validator, Azure OpenAI), each a ``rules`` of :func:`dialect`. So
no test passes against a server that accepts anything; ``rules=None`` turns it off for a
test that needs a server of another kind, and names why. ``max_model_len`` makes
``GET /v1/models`` answer as vLLM does. Azure OpenAI's deployment paths
(``/openai/deployments/<name>/chat/completions?api-version=...``) are served as the
``/v1`` ones, so ``AZURE_OPENAI_ENDPOINT`` may point here.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class RecordedRequest:
    """One request as received.

    Attributes:
        method: HTTP method.
        path: Request path (e.g. ``/v1/chat/completions``).
        headers: Request headers, lower-cased names (in memory only; may hold a test key).
        body: Parsed JSON body (None if not JSON).
        received: ``time.monotonic()`` at arrival.
        index: Arrival order (0-based).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received: float
    index: int

    @property
    def prompt(self) -> str:
        """Last user message (chat) or the ``prompt`` field (completions)."""
        if not isinstance(self.body, dict):
            return ""
        messages = self.body.get("messages")
        if isinstance(messages, list) and messages:
            content = messages[-1].get("content", "")
            return content if isinstance(content, str) else json.dumps(content)
        prompt = self.body.get("prompt", "")
        return prompt if isinstance(prompt, str) else json.dumps(prompt)

    @property
    def seed(self) -> Any:
        """The ``seed`` field sent, if any."""
        return self.body.get("seed") if isinstance(self.body, dict) else None


@dataclass
class Reply:
    """A scripted reply.

    Attributes:
        content: Assistant text (chat) or completion text.
        status: HTTP status; non-200 sends an OpenAI-style error body.
        delay: Seconds to wait before replying (slow server / client timeout).
        headers: Extra headers, e.g. ``{"Retry-After": "0.05"}``.
        body: Full JSON body overriding the generated one.
        raw: Raw bytes overriding everything (malformed JSON etc.).
        wait: Block until this event is set (or the server stops) before replying.
        prompt_tokens: Reported prompt usage (default: words in the prompt).
        completion_tokens: Reported completion usage (default: words in the content).
        finish_reason: The choice's ``finish_reason``; ``"length"`` is a reply cut off at
            ``max_tokens``.
        reasoning_tokens: Hidden reasoning a reasoning model spent, reported as OpenAI
            does (``usage.completion_tokens_details.reasoning_tokens``, also counted in
            ``completion_tokens``); None reports no details.
    """

    content: str = ""
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    raw: bytes | None = None
    wait: threading.Event | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    reasoning_tokens: int | None = None


Handler = Callable[[RecordedRequest], "Reply | str"]


def too_many_requests(retry_after: float = 0.05) -> Reply:
    """HTTP 429 with a ``Retry-After`` header (seconds)."""
    return Reply(status=429, headers={"Retry-After": f"{retry_after:g}"})


def server_error() -> Reply:
    """HTTP 500."""
    return Reply(status=500)


def unauthorized(status: int = 401, message: str = "Incorrect API key provided") -> Reply:
    """HTTP 401 (or 403) with OpenAI's error body."""
    return Reply(
        status=status,
        body={"error": {"message": message, "type": "invalid_request_error", "code": status}},
    )


#: The 200 shapes without usable text that :func:`malformed_ok` sends.
MALFORMED_SHAPES = ("no_choices", "empty_choices", "no_message", "null_content")


def malformed_ok(shape: str) -> Reply:
    """An HTTP 200 chat completion that carries no text, in one of :data:`MALFORMED_SHAPES`."""
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "logprobs": None}
    if shape == "null_content":
        choice["message"] = {"role": "assistant", "content": None}
    elif shape != "no_message":
        choice = {}
    body: dict[str, Any] = {
        "id": f"chatcmpl-malformed-{shape}",
        "object": "chat.completion",
        "created": 0,
        "model": "loopback",
        "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1},
    }
    if shape in ("no_message", "null_content"):
        body["choices"] = [choice]
    elif shape == "empty_choices":
        body["choices"] = []
    elif shape != "no_choices":
        raise ValueError(f"unknown malformed shape {shape!r}; one of {MALFORMED_SHAPES}")
    return Reply(body=body)


#: OpenAI models (the requested ``model``, dated snapshots included) and the
#: ``response_format`` types the API refuses for them; any other model takes both.
#: Written out here, not imported from ``elitr_bench.llm.structured``: the server models
#: the API on its own, so a wrong entry in the client's table cannot agree with itself.
#: Structured Outputs came with gpt-4o-2024-08-06 and gpt-4o-mini, JSON mode with
#: gpt-4-1106-preview and gpt-3.5-turbo-1106.
REFUSED_FORMATS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"gpt-4(-0314|-0613)?", ("json_schema", "json_object")),
    (r"gpt-4-32k(-0314|-0613)?", ("json_schema", "json_object")),
    (r"gpt-3\.5-turbo-(0301|0613|16k|16k-0613)", ("json_schema", "json_object")),
    (r"gpt-4-turbo.*|gpt-4-(1106|0125)-preview|gpt-4-.*vision.*", ("json_schema",)),
    (r"gpt-3\.5-turbo(-0125|-1106)?", ("json_schema",)),
    (r"gpt-4o-2024-05-13|chatgpt-4o-latest", ("json_schema",)),
)

#: Reasoning models: no ``max_tokens`` (``max_completion_tokens`` instead), and only the
#: default ``temperature`` and ``top_p`` (1).
REASONING_MODELS = r"o1.*|o3.*|o4.*|gpt-5.*"


def _api_error(message: str, param: str | None, code: str | None = None) -> Reply:
    """HTTP 400 with the body OpenAI's API sends for an invalid request."""
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return Reply(status=400, body={"error": error})


def _schema_problem(schema: Any, context: tuple[str, ...] = ()) -> str | None:
    """The first strict-mode rule a JSON schema breaks (OpenAI's wording), else None."""
    if not isinstance(schema, dict):
        return None
    where = f"In context=({', '.join(repr(c) for c in context)}{',' if len(context) == 1 else ''})"
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return f"{where}, 'additionalProperties' is required to be supplied and to be false."
        missing = [k for k in props if k not in (schema.get("required") or [])]
        if missing:
            return (
                f"{where}, 'required' is required to be supplied and to be an array "
                f"including every key in properties. Missing '{missing[0]}'."
            )
        for name, sub in props.items():
            problem = _schema_problem(sub, (*context, "properties", name))
            if problem:
                return problem
    if isinstance(schema.get("items"), dict):
        return _schema_problem(schema["items"], (*context, "items"))
    return None


def api_refusal(request: RecordedRequest) -> Reply | None:
    """OpenAI's HTTP 400 for a chat request its API refuses (None: it would be taken)."""
    body = request.body if isinstance(request.body, dict) else {}
    model = str(body.get("model", ""))
    name = model.split(":")[1] if model.startswith("ft:") else model
    over = _over_output_cap(body, name)
    if over is not None:
        return over
    if re.fullmatch(REASONING_MODELS, name):
        if "max_tokens" in body:
            return _api_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "max_tokens",
                "unsupported_parameter",
            )
        for param in ("temperature", "top_p"):
            if param in body and body[param] != 1:
                return _api_error(
                    f"Unsupported value: '{param}' does not support {body[param]} with this "
                    "model. Only the default (1) value is supported.",
                    param,
                    "unsupported_value",
                )
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return None
    kind = str(fmt.get("type", ""))
    refused = any(kind in types and re.fullmatch(p, name) for p, types in REFUSED_FORMATS)
    if refused:
        return _api_error(
            f"Invalid parameter: 'response_format' of type '{kind}' is not supported with "
            "this model. Learn more about supported models at the Structured Outputs guide: "
            "https://platform.openai.com/docs/guides/structured-outputs",
            "response_format",
        )
    if kind == "json_object":
        said = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
        if "json" not in said.lower():
            return _api_error(
                "'messages' must contain the word 'json' in some form, to use "
                "'response_format' of type 'json_object'.",
                "messages",
            )
    if kind == "json_schema":
        spec = fmt.get("json_schema") or {}
        problem = _schema_problem(spec.get("schema")) if spec.get("strict") else None
        if problem:
            return _api_error(
                f"Invalid schema for response_format '{spec.get('name', '')}': {problem}",
                "response_format",
            )
    return None


#: What a server refuses before its script sees a request: a refusal, or None.
Rules = Callable[[RecordedRequest], "Reply | None"]


class _Server(ThreadingHTTPServer):
    """Threaded server with a listen backlog large enough for concurrent clients."""

    request_queue_size = 256
    daemon_threads = True
    block_on_close = False


class LoopbackOpenAI:
    """The server; use as a context manager or call :meth:`start` / :meth:`stop`.

    Args:
        handler: Script for replies (default: content ``"ok"``).
        model: Model name echoed in responses.
        max_requests: Hard bound on requests served (later ones get HTTP 503), so a
            runaway client loop cannot spin forever.
        rules: What the server refuses before the script sees a request (default: what
            OpenAI's API refuses, :func:`api_refusal`); None takes anything.
        max_model_len: Context window ``GET /v1/models`` reports for ``model``, as vLLM
            does (None: OpenAI's listing, which has none).
    """

    def __init__(
        self,
        handler: Handler | None = None,
        model: str = "loopback",
        max_requests: int = 100_000,
        rules: Rules | None = api_refusal,
        max_model_len: int | None = None,
    ) -> None:
        self.handler: Handler = handler or (lambda req: "ok")
        self.model = model
        self.max_requests = max_requests
        self.rules = rules
        self.max_model_len = max_model_len
        #: Requests refused by ``rules`` (also in ``requests``).
        self.refused: list[RecordedRequest] = []
        self.requests: list[RecordedRequest] = []
        self.completed: list[RecordedRequest] = []
        #: Paths of GET requests (the preflight's model listing); not in ``requests``.
        self.listings: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # --- Files and Batch API (tests/support/batch_api.py) ---
        from tests.support.batch_api import BatchAPI

        #: ``/v1/files`` and ``/v1/batches``, answered by this server's rules and script.
        self.batch_api = BatchAPI(self)
        # --- end Files and Batch API ---

    # lifecycle ---------------------------------------------------------------------
    def start(self) -> LoopbackOpenAI:
        """Bind 127.0.0.1:0 and serve in a daemon thread."""
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # silence stderr
                return

            def do_GET(self) -> None:
                if owner.batch_api.claims(self.path):  # Files and Batch API
                    status, payload, raw = owner.batch_api.handle(
                        "GET", self.path, self.headers, b""
                    )
                    self._send(status, payload, None, raw)
                    return
                with owner._lock:
                    owner.listings.append(self.path)
                if self.path.rstrip("/") == "/v1/models":
                    entry: dict[str, Any] = {"id": owner.model, "object": "model"}
                    if owner.max_model_len is not None:  # vLLM's listing
                        entry.update(owned_by="vllm", root=owner.model, parent=None)
                        entry["max_model_len"] = owner.max_model_len
                    self._send(200, {"object": "list", "data": [entry]}, {})
                else:
                    self._send(404, {"error": {"message": "not found"}}, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                if owner.batch_api.claims(self.path):  # Files and Batch API
                    status, payload, raw = owner.batch_api.handle(
                        "POST", self.path, self.headers, data
                    )
                    self._send(status, payload, None, raw)
                    return
                try:
                    body = json.loads(data) if data else None
                except ValueError:
                    body = None
                owner._serve(self, body)

            def _send(
                self,
                status: int,
                payload: Any,
                headers: dict[str, str] | None = None,
                raw: bytes | None = None,
            ) -> bool:
                blob = raw if raw is not None else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(blob)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(blob)
                    self.wfile.flush()
                    return True
                except (BrokenPipeError, ConnectionResetError, OSError):
                    return False

        server = _Server(("127.0.0.1", 0), _Handler)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging replies, stop serving and close the socket."""
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # addresses ---------------------------------------------------------------------
    @property
    def port(self) -> int:
        """Bound port."""
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (for the openai SDK's ``base_url``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_url(self) -> str:
        """Full chat-completions URL (lm-eval ``local-chat-completions`` base_url)."""
        return f"{self.base_url}/chat/completions"

    @property
    def completions_url(self) -> str:
        """Full completions URL (lm-eval ``local-completions`` base_url)."""
        return f"{self.base_url}/completions"

    # request log -------------------------------------------------------------------
    def snapshot(self) -> list[RecordedRequest]:
        """Copy of the request log."""
        with self._lock:
            return list(self.requests)

    def taken(self) -> list[RecordedRequest]:
        """Requests the rules let through to the script (those it refused left out)."""
        with self._lock:
            refused = {r.index for r in self.refused}
            return [r for r in self.requests if r.index not in refused]

    def completed_snapshot(self) -> list[RecordedRequest]:
        """Requests whose 200 reply was fully written to the client."""
        with self._lock:
            return list(self.completed)

    def reset(self) -> None:
        """Clear the request logs."""
        with self._lock:
            self.requests.clear()
            self.completed.clear()
            self.listings.clear()
            self.refused.clear()

    # serving -----------------------------------------------------------------------
    def _serve(self, http: Any, body: Any) -> None:
        with self._lock:
            rec = RecordedRequest(
                "POST",
                http.path,
                {k.lower(): v for k, v in http.headers.items()},
                body,
                time.monotonic(),
                len(self.requests),
            )
            self.requests.append(rec)
            over = len(self.requests) > self.max_requests
        if over:
            http._send(503, {"error": {"message": "loopback request bound reached"}}, {})
            return
        path = http.path.split("?")[0].rstrip("/")
        # Azure OpenAI: /openai/deployments/<deployment>/chat/completions?api-version=...
        azure = re.fullmatch(r"/openai/deployments/[^/]+(/chat/completions|/completions)", path)
        if azure:
            path = f"/v1{azure.group(1)}"
        if path not in ("/v1/chat/completions", "/v1/completions"):
            http._send(404, {"error": {"message": f"unknown path {http.path}"}}, {})
            return
        refusal = self.rules(rec) if self.rules is not None else None
        if refusal is not None:
            with self._lock:
                self.refused.append(rec)
            http._send(refusal.status, refusal.body, refusal.headers)
            return
        try:
            reply = self.handler(rec)
        except Exception as exc:  # a broken script should be visible, not hang
            reply = Reply(status=500, body={"error": {"message": f"handler error: {exc!r}"}})
        if isinstance(reply, str):
            reply = Reply(content=reply)
        if reply.wait is not None:
            while not reply.wait.is_set() and not self._stop.is_set():
                reply.wait.wait(0.05)
        if reply.delay > 0 and self._stop.wait(reply.delay):
            return
        if reply.raw is not None:
            ok = http._send(reply.status, None, reply.headers, raw=reply.raw)
        elif reply.status != 200:
            payload = reply.body or {
                "error": {"message": f"scripted HTTP {reply.status}", "type": "loopback"}
            }
            ok = http._send(reply.status, payload, reply.headers)
        else:
            ok = http._send(200, reply.body or self._ok_body(rec, reply, path), reply.headers)
        if ok and reply.status == 200:
            with self._lock:
                self.completed.append(rec)

    def _ok_body(self, rec: RecordedRequest, reply: Reply, path: str) -> dict[str, Any]:
        p_tok = reply.prompt_tokens if reply.prompt_tokens is not None else len(rec.prompt.split())
        c_tok = (
            reply.completion_tokens
            if reply.completion_tokens is not None
            else len(reply.content.split())
        )
        usage: dict[str, Any] = {"prompt_tokens": p_tok}
        if reply.reasoning_tokens is not None:
            c_tok += reply.reasoning_tokens
            usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        usage.update(completion_tokens=c_tok, total_tokens=p_tok + c_tok)
        if path.endswith("/chat/completions"):
            return {
                "id": f"chatcmpl-loop-{rec.index}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": reply.finish_reason,
                        "logprobs": None,
                    }
                ],
                "usage": usage,
            }
        return {
            "id": f"cmpl-loop-{rec.index}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "text": reply.content,
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": usage,
        }


# --- server dialects: how servers other than OpenAI's refuse a request -----------------------
# Each refuses what it cannot take in its own words and status, as the real server does, so
# a client that recognised only OpenAI's wording of a refusal fails here. A dialect refuses
# a request carrying a ``response_format``; ``schemas`` limits that to requests whose schema
# holds one of the given keywords (a server that cannot compile one keyword takes others).


def _error_body(message: str, kind: str, code: Any, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


#: Refusal bodies of a ``response_format``, by dialect: (status, body).
DIALECTS: dict[str, tuple[int, Any]] = {
    # vLLM with its xgrammar backend: a schema feature xgrammar lacks (HTTP 400, no param).
    "vllm-xgrammar": (
        400,
        _error_body(
            "The provided JSON schema contains features not supported by xgrammar.",
            "BadRequestError",
            400,
        ),
    ),
    # vLLM with the guidance backend (llguidance's own validation), older error shape.
    "vllm-guidance": (
        400,
        {
            "object": "error",
            "message": 'Grammar error: Unimplemented keys: ["minimum", "maximum"]',
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    # llama.cpp's server: its JSON-schema-to-grammar converter gives up.
    "llama.cpp": (
        400,
        {
            "error": {
                "code": 400,
                "message": 'JSON schema conversion failed:\nUnrecognized schema: {"minimum":1}',
                "type": "invalid_request_error",
            }
        },
    ),
    # A server validating the request body (FastAPI/pydantic): 422 naming a keyword only.
    "validator-422": (
        422,
        {
            "detail": [
                {
                    "type": "extra_forbidden",
                    "loc": ["body", "minimum"],
                    "msg": "Extra inputs are not permitted",
                    "input": 1,
                }
            ]
        },
    ),
    # OpenAI refusing one keyword of a strict schema (refuse only schemas that hold it).
    "openai-keyword": (
        400,
        _error_body(
            "Invalid schema for response_format 'final_values': In context=('properties', "
            "'score'), 'minimum' is not permitted.",
            "invalid_request_error",
            None,
            "response_format",
        ),
    ),
    # Azure OpenAI: a deployment whose API version predates structured outputs.
    "azure": (
        400,
        {
            "error": {
                "code": "BadRequest",
                "message": "Structured output is enabled only for api versions "
                "2024-08-01-preview and later",
                "param": None,
                "type": None,
            }
        },
    ),
}


def dialect(name: str, *, schemas: tuple[str, ...] = ()) -> Rules:
    """Rules refusing a ``response_format`` as server ``name`` of :data:`DIALECTS` does.

    Anything else goes on to OpenAI's rules (:func:`api_refusal`), which hold for any model.
    """
    status, body = DIALECTS[name]

    def rules(request: RecordedRequest) -> Reply | None:
        fmt = request.body.get("response_format") if isinstance(request.body, dict) else None
        if isinstance(fmt, dict) and (not schemas or any(k in json.dumps(fmt) for k in schemas)):
            return Reply(status=status, body=body)
        return api_refusal(request)

    return rules


#: OpenAI models and the completion tokens they generate at most (``max_tokens`` above is
#: refused in the API's words, the user's setting out of range).
OUTPUT_CAPS: tuple[tuple[str, int], ...] = (
    (r"gpt-4-turbo.*|gpt-4-(1106|0125)-preview|gpt-4o-2024-05-13|gpt-3\.5-turbo.*", 4096),
    (r"gpt-4o|gpt-4o-mini|gpt-4o-2024-(08-06|11-20)|chatgpt-4o-latest", 16384),
)


def _over_output_cap(body: dict[str, Any], name: str) -> Reply | None:
    """OpenAI's 400 for a ``max_tokens`` beyond the model's output cap (None: within it)."""
    asked = body.get("max_tokens")
    for pattern, cap in OUTPUT_CAPS:
        if isinstance(asked, int) and asked > cap and re.fullmatch(pattern, name):
            return _api_error(
                f"max_tokens is too large: {asked}. This model supports at most {cap} completion "
                f"tokens, whereas you provided {asked}.",
                "max_tokens",
            )
    return None


# --- judge behaviours for the reading policy (issue 46) -----------------------------------
# Kept apart from the server itself: scripted judges that test what a restatement may do.
RESTATE_MESSAGE = "Restate your final"
"""How the restatement turn's fixed message begins (judges/reading: ``Restatement``)."""


def is_restatement(request: RecordedRequest) -> bool:
    """Whether ``request`` is a restatement turn: prompt, the judge's reply, the message."""
    messages = request.body.get("messages") if isinstance(request.body, dict) else None
    return (
        isinstance(messages, list)
        and len(messages) >= 3
        and str(messages[-1].get("content", "")).startswith(RESTATE_MESSAGE)
    )


def restates_the_prose(first: Handler, prose_value: Callable[[RecordedRequest], str]) -> Handler:
    """A judge that, asked to restate, gives the value of its prose, not of its box.

    ``first`` answers every other request; ``prose_value`` gives the restated JSON of a
    restatement turn (it sees the whole chat, the judge's own reply included).
    """

    def handler(request: RecordedRequest) -> Reply | str:
        return prose_value(request) if is_restatement(request) else first(request)

    return handler


def fails_every_restatement(first: Handler) -> Handler:
    """A server that answers first prompts with ``first`` and fails every restatement (500)."""

    def handler(request: RecordedRequest) -> Reply | str:
        return server_error() if is_restatement(request) else first(request)

    return handler
