"""The Lambda Runtime API (2018-06-01) of one execution environment, served on 127.0.0.1 at a
port of its own: the runtime interface client reaches it at ``AWS_LAMBDA_RUNTIME_API``
(host:port) under fixed paths.

* ``GET /2018-06-01/runtime/invocation/next``: waits for an invocation; 200 with the event as
  body and the headers Lambda-Runtime-Aws-Request-Id, Lambda-Runtime-Deadline-Ms,
  Lambda-Runtime-Invoked-Function-Arn, Lambda-Runtime-Trace-Id (and Lambda-Runtime-Aws-Tenant-Id
  in an environment of a tenant, ``RuntimeApi.tenant_id``). The first call ends the
  environment's init.
* ``POST /2018-06-01/runtime/invocation/{id}/response``: 202 ``{"status": "OK"}``; 400
  (``InvalidRequestID``) for an id that is not the current invocation's; 413
  (``RequestEntityTooLarge``) past 6 MB, which the invoker gets as
  ``Function.ResponseSizeTooLarge``.
* ``POST /2018-06-01/runtime/invocation/{id}/error``: 202; the body is the error document and
  ``Lambda-Runtime-Function-Error-Type`` its type.
* ``POST /2018-06-01/runtime/init/error``: 202; the environment failed to start.

The Extensions API (``/2020-01-01/extension/``), the Telemetry API
(``/2022-07-01/telemetry``) and the Logs API (``/2020-08-15/logs``) are served at the same
address for the environment's extensions (extensions.py). Anything else is 404. One invocation
at a time, as a Lambda environment runs them.
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localcloud.environments.extensions import Extensions

__all__ = ["MAX_RESPONSE", "Invocation", "RuntimeApi", "document"]

PREFIX = "/2018-06-01/runtime/"
EXTENSION = "/2020-01-01/extension/"
TELEMETRY = "/2022-07-01/telemetry"
LOGS = "/2020-08-15/logs"
#: a synchronous invocation's response limit (6 MB), as the Runtime API enforces it
MAX_RESPONSE = 6 * 1024 * 1024 + 100  # "6291556 bytes", Lambda's own figure


@dataclass
class Invocation:
    request_id: str
    event: bytes
    deadline_ms: int
    function_arn: str
    trace_id: str
    done: threading.Event = field(default_factory=threading.Event)
    payload: bytes = b""
    error_type: str | None = None  # set when the runtime posted an error


class RuntimeApi:
    """The server and the mailbox between the environment and its runtime."""

    def __init__(self) -> None:
        self._pending: queue.Queue[Invocation | None] = queue.Queue()
        self.current: Invocation | None = None
        self.initialized = threading.Event()  # the first /next (or an init error)
        self.init_done_at: float | None = None
        self.init_error: tuple[bytes, str] | None = None
        #: the environment's peak memory (MB), read when its init error arrives (it then exits)
        self.memory: Callable[[], int | None] = lambda: None
        self.init_memory: int | None = None
        #: the tenant whose environment this is (a tenant-isolated function's), else None
        self.tenant_id: str | None = None
        self.extensions: Extensions | None = None  # the environment's, when it has any
        self.changed = threading.Event()  # set on each result, init error, or stop
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.api = self  # type: ignore[attr-defined]
        self.address = f"127.0.0.1:{self._server.server_address[1]}"  # AWS_LAMBDA_RUNTIME_API
        self._stopped = False
        self._thread = threading.Thread(target=self._accept, name="runtime-api", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        sock = self._server.socket
        while not self._stopped:
            try:
                self._server.process_request(*sock.accept())  # a thread per connection
            except OSError:
                return

    def submit(self, invocation: Invocation) -> None:
        self._pending.put(invocation)

    def stop(self) -> None:
        """Close the server (a runtime's pending /next gets 500 and the environment ends)."""
        if self._stopped:
            return
        self._stopped = True
        self._pending.put(None)
        self.changed.set()
        self.initialized.set()
        with contextlib.suppress(OSError):
            self._server.socket.shutdown(socket.SHUT_RDWR)
        self._server.server_close()

    # -- the runtime's calls --------------------------------------------------------------

    def next(self) -> Invocation | None:
        if not self.initialized.is_set():
            self.init_done_at = time.monotonic()
            self.initialized.set()
        self.current = self._pending.get()
        return self.current

    def finish(self, request_id: str, payload: bytes, error_type: str | None) -> bool:
        invocation = self.current
        if invocation is None or invocation.request_id != request_id or invocation.done.is_set():
            return False
        invocation.payload, invocation.error_type = payload, error_type
        invocation.done.set()
        self.changed.set()
        return True

    def fail_init(self, payload: bytes, error_type: str) -> None:
        self.init_memory = self.memory()
        self.init_error = (payload, error_type)
        self.initialized.set()
        self.changed.set()


def document(error_type: str, message: str) -> bytes:
    """An error document of Lambda's own (errorType first, as Lambda writes it)."""
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


class _Server(ThreadingMixIn, HTTPServer):
    daemon_threads, block_on_close = True, False  # stop joins no connection's thread

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a runtime that went away (its environment was stopped)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LocalCloudRuntimeAPI"
    # the headers and the body are written apart: with Nagle (and the client's delayed ACK)
    # each answer would be held back 40 ms
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the environment's logs are its runtime's output only."""

    @property
    def api(self) -> RuntimeApi:
        return self.server.api  # type: ignore[attr-defined,no-any-return]

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        extensions = self.api.extensions
        if self.path == EXTENSION + "event/next" and extensions is not None:
            identifier = self.headers.get("Lambda-Extension-Identifier", "")
            event = extensions.next(identifier)
            if event is None:
                self._reply(403, document("Extension.Forbidden", "unknown extension"))
            else:
                headers = {"Lambda-Extension-Event-Identifier": str(uuid.uuid4())}
                self._reply(200, json.dumps(event).encode(), headers)
            return
        if self.path != PREFIX + "invocation/next":
            self._reply(404, document("NotFound", "Not found"))
            return
        invocation = self.api.next()
        if invocation is None:
            self._reply(500, document("ContainerError", "The environment is shutting down"))
            self.close_connection = True
            return
        headers = {
            "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
            "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_ms),
            "Lambda-Runtime-Invoked-Function-Arn": invocation.function_arn,
            "Lambda-Runtime-Trace-Id": invocation.trace_id,
        }
        if self.api.tenant_id is not None:
            headers["Lambda-Runtime-Aws-Tenant-Id"] = self.api.tenant_id
        self._reply(200, invocation.event, headers)

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        extensions = self.api.extensions
        path = self.path.rstrip("/")
        if path not in {TELEMETRY, LOGS} or extensions is None:
            self._reply(404, document("NotFound", "Not found"))
            return
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        identifier = self.headers.get("Lambda-Extension-Identifier", "")
        self._reply(*extensions.subscribe(identifier, request, logs_api=path == LOGS))

    def _extension(self, body: bytes) -> None:
        """An Extensions API call: register, init/error, exit/error."""
        extensions, path = self.api.extensions, self.path.removeprefix(EXTENSION)
        identifier = self.headers.get("Lambda-Extension-Identifier", "")
        if extensions is None:
            self._reply(404, document("NotFound", "Not found"))
        elif path == "register":
            try:
                events = list(json.loads(body or b"{}").get("events") or [])
            except (ValueError, AttributeError, TypeError):
                events = ["?"]
            status, answer, identifier = extensions.register(
                self.headers.get("Lambda-Extension-Name", ""),
                events,
                self.headers.get("Lambda-Extension-Accept-Feature", ""),
            )
            headers = {"Lambda-Extension-Identifier": identifier} if identifier else {}
            self._reply(status, json.dumps(answer).encode(), headers)
        elif path in {"init/error", "exit/error"} and extensions.error(
            identifier,
            path.split("/")[0],
            self.headers.get("Lambda-Extension-Function-Error-Type", ""),
        ):
            self._reply(202, b'{"status":"OK"}')
        else:
            self._reply(403, document("Extension.Forbidden", "unknown extension"))

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))  # never chunked
        if self.path.startswith(EXTENSION):
            self._extension(body)
            return
        path = self.path.removeprefix(PREFIX)
        error_type = self.headers.get("Lambda-Runtime-Function-Error-Type")
        parts = path.split("/")
        reply = 202, b'{"status":"OK"}'
        if path == "init/error":
            self.api.fail_init(body, error_type or "Unknown")
        elif len(parts) != 3 or parts[0] != "invocation" or parts[2] not in {"response", "error"}:
            reply = 404, document("NotFound", "Not found")
        elif parts[2] == "response" and len(body) > MAX_RESPONSE:
            limit = f"maximum allowed payload size ({MAX_RESPONSE} bytes)."
            too_large = "Function.ResponseSizeTooLarge"
            message = f"Response payload size exceeded {limit}"
            self.api.finish(parts[1], document(too_large, message), too_large)
            reply = 413, document("RequestEntityTooLarge", f"Exceeded {limit}")
        elif not self.api.finish(
            parts[1], body, (error_type or "Unhandled") if parts[2] == "error" else None
        ):
            reply = 400, document("InvalidRequestID", "Invalid request ID")
        self._reply(*reply)
