"""The loopback server's Files and Batch API, as OpenAI's API answers them.

``POST /v1/files`` takes a multipart upload (``purpose`` and ``file``); ``GET
/v1/files/{id}`` and ``/v1/files/{id}/content`` give it back. ``POST /v1/batches``
creates a batch over an uploaded file, ``GET /v1/batches/{id}`` retrieves it,
``POST /v1/batches/{id}/cancel`` cancels it, ``GET /v1/batches`` lists them. What the
API refuses is refused with its HTTP 400/404 bodies: a file whose purpose is not
``batch`` or that is not JSONL, a batch over a missing file, another endpoint or
completion window. A batch moves through the API's states each time it is retrieved:
``validating`` (its lines are checked: JSON, ``custom_id`` unique, ``method`` POST, the
batch's ``url``, one ``model``, at most ``max_requests`` lines; a file that breaks
them ends ``failed`` with the first errors), ``in_progress``, then ``completed`` (or
``expired`` after ``expire_after`` lines, or ``cancelling``/``cancelled``). Each line
is answered by the server's own rules and script, as a one-by-one request would be: a
200 goes to the output file, anything else to the error file, and an expired batch
writes its unanswered lines to the error file with ``batch_expired``.

Tests steer it with :attr:`BatchAPI.hold` (batches stay ``in_progress`` until the event
is set), :attr:`BatchAPI.expire_after`, and :attr:`BatchAPI.served` (False: the paths
are unknown, as on a server without a Batch API).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.openai_server import LoopbackOpenAI

ENDPOINTS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses")
PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")


@dataclass
class StoredFile:
    """An uploaded or generated file."""

    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int = field(default_factory=lambda: int(time.time()))

    def obj(self) -> dict[str, Any]:
        """The API's file object."""
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "status_details": None,
        }


def _error(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


class BatchAPI:
    """Files and batches of one loopback server (see the module docstring).

    Args:
        server: The server whose rules and script answer the batch lines.
        max_requests: Lines one batch may hold (the API's 50,000).
        max_bytes: Bytes one batch input file may hold (the API's 200 MB).
    """

    def __init__(
        self, server: LoopbackOpenAI, max_requests: int = 50_000, max_bytes: int = 200 * 2**20
    ) -> None:
        self.server = server
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.served = True
        self.hold: threading.Event | None = None
        self.expire_after: int | None = None
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        #: Every batch line answered, as the script saw it.
        self.lines: list[Any] = []
        #: Batch ids in the order they were retrieved (each poll).
        self.retrieved: list[str] = []
        self._lock = threading.RLock()
        self._ids = 0

    def _new_id(self, prefix: str) -> str:
        self._ids += 1
        return (
            f"{prefix}-loop{self._ids:04d}" if prefix == "file" else f"{prefix}_loop{self._ids:04d}"
        )

    # routing ------------------------------------------------------------------------
    @staticmethod
    def claims(path: str) -> bool:
        """Whether a path is the Files or Batch API's."""
        bare = path.split("?")[0]
        return bare.startswith("/v1/files") or bare.startswith("/v1/batches")

    def handle(
        self, method: str, path: str, headers: Any, data: bytes
    ) -> tuple[int, Any, bytes | None]:
        """(status, JSON payload, raw bytes) of one request to these paths."""
        bare = path.split("?")[0].rstrip("/")
        if not self.served:
            return 404, _error(f"Invalid URL ({method} {bare})"), None
        parts = bare.split("/")[2:]  # ["files", id, "content"] / ["batches", id, "cancel"]
        with self._lock:
            if parts == ["files"] and method == "POST":
                return self._upload(headers, data)
            if parts[0] == "files" and len(parts) >= 2 and method == "GET":
                found = self.files.get(parts[1])
                if found is None:
                    return 404, _error(f"No such File object: {parts[1]}", "id"), None
                if parts[2:] == ["content"]:
                    return 200, None, found.data
                return 200, found.obj(), None
            if parts == ["batches"] and method == "POST":
                return self._create(data)
            if parts == ["batches"] and method == "GET":
                listed = [self._view(b) for b in reversed(list(self.batches.values()))]
                first = listed[0]["id"] if listed else None
                last = listed[-1]["id"] if listed else None
                page = {"object": "list", "data": listed, "first_id": first, "last_id": last}
                return 200, {**page, "has_more": False}, None
            if parts[0] == "batches" and len(parts) >= 2:
                batch = self.batches.get(parts[1])
                if batch is None:
                    return 404, _error(f"No batch found with id '{parts[1]}'.", "batch_id"), None
                if parts[2:] == ["cancel"] and method == "POST":
                    return self._cancel(batch)
                if len(parts) == 2 and method == "GET":
                    self.retrieved.append(batch["id"])
                    self._advance(batch)
                    return 200, self._view(batch), None
        return 404, _error(f"Invalid URL ({method} {bare})"), None

    # files --------------------------------------------------------------------------
    def _upload(self, headers: Any, data: bytes) -> tuple[int, Any, bytes | None]:
        kind = str(headers.get("Content-Type", ""))
        if not kind.startswith("multipart/form-data"):
            return 400, _error("Expected a multipart/form-data upload.", "file"), None
        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {kind}\r\n\r\n".encode() + data
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            fields[str(name)] = (
                part.get_filename(),
                payload if isinstance(payload, bytes) else b"",
            )
        if "purpose" not in fields:
            return 400, _error("'purpose' is a required property", "purpose"), None
        purpose = fields["purpose"][1].decode()
        if purpose not in PURPOSES:
            allowed = ", ".join(repr(p) for p in PURPOSES)
            return (
                400,
                _error(f"'{purpose}' is not one of [{allowed}] - 'purpose'", "purpose"),
                None,
            )
        if "file" not in fields:
            return 400, _error("'file' is a required property", "file"), None
        filename, blob = fields["file"]
        if purpose == "batch":
            if not str(filename or "").endswith(".jsonl"):
                return (
                    400,
                    _error("Invalid file format for Batch API. Must be .jsonl", "file"),
                    None,
                )
            if len(blob) > self.max_bytes:
                return (
                    400,
                    _error(
                        f"File is too large for Batch API: {len(blob)} bytes, the limit is "
                        f"{self.max_bytes} bytes.",
                        "file",
                    ),
                    None,
                )
        stored = StoredFile(self._new_id("file"), str(filename), purpose, blob)
        self.files[stored.id] = stored
        return 200, stored.obj(), None

    # batches ------------------------------------------------------------------------
    def _create(self, data: bytes) -> tuple[int, Any, bytes | None]:
        try:
            body = json.loads(data)
        except ValueError:
            return 400, _error("We could not parse the JSON body of your request."), None
        for name in ("input_file_id", "endpoint", "completion_window"):
            if name not in body:
                return 400, _error(f"Missing required parameter: '{name}'.", name), None
        if body["endpoint"] not in ENDPOINTS:
            allowed = ", ".join(repr(e) for e in ENDPOINTS)
            return (
                400,
                _error(
                    f"Invalid value: '{body['endpoint']}'. Supported values are: {allowed}.",
                    "endpoint",
                    "invalid_value",
                ),
                None,
            )
        if body["completion_window"] != "24h":
            return (
                400,
                _error(
                    f"Invalid value: '{body['completion_window']}'. Supported values are: '24h'.",
                    "completion_window",
                    "invalid_value",
                ),
                None,
            )
        source = self.files.get(body["input_file_id"])
        if source is None:
            return (
                404,
                _error(f"No such File object: {body['input_file_id']}", "input_file_id"),
                None,
            )
        if source.purpose != "batch":
            return (
                400,
                _error(
                    f"File {source.id} has purpose '{source.purpose}'; a batch needs "
                    "purpose 'batch'.",
                    "input_file_id",
                ),
                None,
            )
        now = int(time.time())
        batch: dict[str, Any] = {
            "id": self._new_id("batch"),
            "object": "batch",
            "endpoint": body["endpoint"],
            "errors": None,
            "input_file_id": source.id,
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "in_progress_at": None,
            "expires_at": now + 86400,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        self.batches[batch["id"]] = batch
        return 200, self._view(batch), None

    @staticmethod
    def _view(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _cancel(self, batch: dict[str, Any]) -> tuple[int, Any, bytes | None]:
        if batch["status"] not in ("validating", "in_progress"):
            return (
                400,
                _error(f"Cannot cancel a batch with status '{batch['status']}'.", "batch_id"),
                None,
            )
        batch.update(status="cancelling", cancelling_at=int(time.time()))
        return 200, self._view(batch), None

    def _advance(self, batch: dict[str, Any]) -> None:
        """One step of the batch's life, taken when it is retrieved."""
        now = int(time.time())
        status = batch["status"]
        if status == "validating":
            lines, errors = self._validate(batch)
            if errors:
                batch.update(status="failed", failed_at=now)
                batch["errors"] = {"object": "list", "data": errors[:10]}
                return
            batch["_lines"] = lines
            batch["request_counts"]["total"] = len(lines)
            batch.update(status="in_progress", in_progress_at=now)
            return
        if status == "cancelling":
            self._finish(batch, batch.get("_answered", []), [], "cancelled")
            return
        if status != "in_progress" or (self.hold is not None and not self.hold.is_set()):
            return
        answered = [self._answer(line, n) for n, line in enumerate(batch["_lines"])]
        if self.expire_after is not None and self.expire_after < len(answered):
            done, left = answered[: self.expire_after], batch["_lines"][self.expire_after :]
            expired = [
                {
                    "id": f"batch_req_expired_{n}",
                    "custom_id": line["custom_id"],
                    "response": None,
                    "error": {
                        "code": "batch_expired",
                        "message": "This request could not be executed before the "
                        "completion window expired.",
                    },
                }
                for n, line in enumerate(left)
            ]
            self._finish(batch, done, expired, "expired")
            return
        self._finish(batch, answered, [], "completed")

    def _validate(self, batch: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The batch's lines, and the API's validation errors (line numbers from 1)."""
        text = self.files[batch["input_file_id"]].data.decode("utf-8", "replace")
        lines: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        model: str | None = None

        def error(code: str, message: str, n: int, param: str | None = None) -> None:
            errors.append({"code": code, "message": message, "param": param, "line": n})

        raw_lines = [raw for raw in text.splitlines() if raw.strip()]
        if len(raw_lines) > self.max_requests:
            error(
                "too_many_requests",
                f"The batch input file has {len(raw_lines)} requests; the limit is "
                f"{self.max_requests}.",
                len(raw_lines),
            )
            return [], errors
        for n, raw in enumerate(raw_lines, 1):
            try:
                line = json.loads(raw)
            except ValueError:
                error("invalid_json_line", "This line is not parseable as valid JSON.", n)
                continue
            missing = [k for k in ("custom_id", "method", "url", "body") if k not in line]
            if missing:
                error(
                    "missing_required_parameter",
                    f"Missing required parameter: '{missing[0]}'.",
                    n,
                    missing[0],
                )
                continue
            if line["custom_id"] in seen:
                error(
                    "duplicate_custom_id",
                    "The custom_id for this request is a duplicate of another request.",
                    n,
                    "custom_id",
                )
                continue
            seen.add(line["custom_id"])
            if line["method"] != "POST":
                error("invalid_method", "The method must be 'POST'.", n, "method")
                continue
            if line["url"] != batch["endpoint"]:
                error(
                    "mismatched_endpoint",
                    f"The url provided for this request does not match the batch endpoint "
                    f"'{batch['endpoint']}'.",
                    n,
                    "url",
                )
                continue
            this = str(line["body"].get("model", ""))
            if model is not None and this != model:
                error(
                    "mismatched_model",
                    "The provided model does not match the model of the batch's other "
                    f"requests ('{model}').",
                    n,
                    "body.model",
                )
                continue
            model = this
            lines.append(line)
        return lines, errors

    def _answer(self, line: dict[str, Any], n: int) -> dict[str, Any]:
        """One line answered as the server answers the same one-by-one request."""
        from tests.support.openai_server import RecordedRequest, Reply

        server = self.server
        rec = RecordedRequest(
            "POST", batch_path(line["url"]), {}, line["body"], time.monotonic(), n
        )
        self.lines.append(rec)
        reply: Any = server.rules(rec) if server.rules is not None else None
        if reply is None:
            try:
                reply = server.handler(rec)
            except Exception as exc:
                reply = Reply(status=500, body={"error": {"message": f"handler error: {exc!r}"}})
        if isinstance(reply, str):
            reply = Reply(content=reply)
        if reply.status == 200:
            body = reply.body or server._ok_body(rec, reply, rec.path)
        else:
            body = reply.body or {
                "error": {"message": f"scripted HTTP {reply.status}", "type": "loopback"}
            }
        return {
            "id": f"batch_req_{n}",
            "custom_id": line["custom_id"],
            "response": {"status_code": reply.status, "request_id": f"req_{n}", "body": body},
            "error": None,
        }

    def _finish(
        self,
        batch: dict[str, Any],
        answered: list[dict[str, Any]],
        extra_errors: list[dict[str, Any]],
        status: str,
    ) -> None:
        """Write the output and error files and end the batch in ``status``."""
        ok = [a for a in answered if a["response"]["status_code"] == 200]
        bad = [a for a in answered if a["response"]["status_code"] != 200] + extra_errors
        for name, rows in (("output_file_id", ok), ("error_file_id", bad)):
            if rows:
                data = "".join(json.dumps(r) + "\n" for r in rows).encode()
                stored = StoredFile(
                    self._new_id("file"), f"{batch['id']}_{name}.jsonl", "batch_output", data
                )
                self.files[stored.id] = stored
                batch[name] = stored.id
        batch["request_counts"].update(completed=len(ok), failed=len(bad))
        now = int(time.time())
        batch.update(status=status, finalizing_at=now)
        batch[
            {"completed": "completed_at", "expired": "expired_at", "cancelled": "cancelled_at"}[
                status
            ]
        ] = now


def batch_path(url: str) -> str:
    """The path a batch line's ``url`` names (as a one-by-one request's)."""
    return url.split("?")[0]


def answer_file(api: BatchAPI, text: str, endpoint: str = "/v1/chat/completions") -> str:
    """Answer a batch input file as a completed batch would (an offline ``run_batch``).

    Returns:
        The output file's text (answered lines) followed by the error lines.
    """
    with api._lock:
        stored = StoredFile(api._new_id("file"), "offline.jsonl", "batch", text.encode())
        api.files[stored.id] = stored
        _, batch, _ = api._create(
            json.dumps(
                {"input_file_id": stored.id, "endpoint": endpoint, "completion_window": "24h"}
            ).encode()
        )
        live = api.batches[batch["id"]]
        api._advance(live)
        api._advance(live)
        out = b""
        for name in ("output_file_id", "error_file_id"):
            if live.get(name):
                out += api.files[live[name]].data
        return out.decode()
