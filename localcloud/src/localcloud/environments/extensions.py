"""An environment's external extensions (each layer's ``extensions/``, Lambda's /opt/extensions)
and the APIs they call on its Runtime API address: the Extensions API (2020-01-01) and the
Telemetry API (2022-07-01).

* Lambda starts each executable of /opt/extensions (a later layer's file of the same name
  wins), waits for every one to register, then starts the runtime; the init ends once the
  runtime and every extension wait for their next event. A file that cannot be executed
  fails the init with ``Extension.LaunchError`` (``fork/exec ...: permission denied``, as a
  zip without the file's execute bit gives on Lambda); one that exits before registering,
  with ``Extension.Crash``.
* ``POST /2020-01-01/extension/register`` (``Lambda-Extension-Name``, the file's name; body
  ``{"events": ["INVOKE", "SHUTDOWN"]}``): 200 with ``Lambda-Extension-Identifier``.
* ``GET /2020-01-01/extension/event/next``: waits for the next INVOKE (each invocation, sent
  as the runtime gets it) or SHUTDOWN (the environment ends: its extensions get 2 s to exit,
  then they are killed). An invocation waits for every extension to be waiting again.
* ``POST /2020-01-01/extension/{init,exit}/error``: 202; an init error fails the init.
* ``PUT /2022-07-01/telemetry``: subscribes the extension's HTTP destination to ``platform``,
  ``function`` and ``extension`` events, posted as JSON arrays as its ``buffering`` says
  (the init's events first, when it subscribes during the init). ``PUT /2020-08-15/logs``,
  the Logs API it supersedes, the same with that API's events (``platform.end``, no init
  events, log lines ending in a newline).

Lambda's sandbox names itself ``sandbox`` (``sandbox.localdomain``): an extension listens on
``sandbox:<port>`` and subscribes that address. Here each environment has a loopback address
of its own (127.x.y.z at random on Linux, where all of 127/8 is the machine's: no two
environments' fixed ports meet), which the telemetry is posted to and which ``sandbox`` means to the
extension's Python (``sandbox/sitecustomize.py``, on its PYTHONPATH; an extension in another
language gets no such name).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from localcloud.environments.launcher import LogPipe
from localcloud.environments.spec import Done, timestamp

__all__ = ["Extensions", "extension_files"]

#: how long the extensions have to exit after SHUTDOWN (Lambda: 2,000 ms with external ones)
SHUTDOWN_SECONDS = 2.0
_SITE = Path(__file__).with_name("sandbox")
_SANDBOX_NAMES = frozenset({"sandbox", "sandbox.localdomain"})
_LOGS_API = {"platform.runtimeDone": "platform.end",
             "platform.telemetrySubscription": "platform.logsSubscription"}  # fmt: skip


def extension_files(layers: Sequence[Path]) -> list[Path]:
    """The files of /opt/extensions: each layer's ``extensions/``, a later one's winning."""
    files: dict[str, Path] = {}
    for layer in layers:
        with contextlib.suppress(OSError):
            files.update((f.name, f) for f in (layer / "extensions").iterdir() if f.is_file())
    return [files[name] for name in sorted(files)]


def _sandbox_address() -> str:
    """An address of the loopback network at random (12 million: any two environments of the
    machine's clouds, in any process, are all but sure to differ), away from 127.0.x.x."""
    if not sys.platform.startswith("linux"):
        return "127.0.0.1"  # other systems answer on 127.0.0.1 alone
    pick = secrets.randbelow
    return f"127.{64 + pick(191)}.{1 + pick(254)}.{1 + pick(254)}"


@dataclass
class _Extension:
    name: str
    process: subprocess.Popen[bytes]
    id: str = ""
    events: list[str] = field(default_factory=list)
    inbox: queue.Queue[dict[str, Any]] = field(default_factory=queue.Queue)
    waiting: bool = False  # in /next with nothing to hand out


class _Subscription(threading.Thread):
    """Posts the events of its types to an extension's destination, in batches."""

    def __init__(
        self, destination: str, address: str, types: list[str], buffering: Any, logs_api: bool
    ) -> None:
        super().__init__(name="telemetry", daemon=True)
        self.logs_api = logs_api  # the Logs API's (2020-08-15) events, not the Telemetry API's
        url = urlsplit(destination)
        host = address if url.hostname in _SANDBOX_NAMES else (url.hostname or "")
        self.where = (host, url.port or 80, url.path or "/")
        self.types = set(types)
        self.max_items = int(buffering.get("maxItems", 10000))
        self.timeout = int(buffering.get("timeoutMs", 1000)) / 1000
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def offer(self, event: dict[str, Any]) -> None:
        """``event``, when it is of the subscribed types (as the Logs API has it, for one of
        its subscribers: no init events; platform.end; records of the 2020 schema)."""
        kind, record = event["type"], event["record"]
        if kind.partition(".")[0] not in self.types:
            return
        if self.logs_api:
            if kind.startswith("platform.init"):
                return
            if kind in {"function", "extension"}:
                record = f"{record}\n"
            elif kind in {"platform.start", "platform.runtimeDone", "platform.report"}:
                kept = ("requestId", "version", *(["metrics"] * (kind == "platform.report")))
                record = {name: record[name] for name in kept if name in record}
            kind = _LOGS_API.get(kind, kind)
        self.events.put({**event, "type": kind, "record": record})

    def run(self) -> None:
        """A batch from its first event: until ``timeoutMs`` later or ``maxItems`` events."""
        while (first := self.events.get()) is not None:
            batch, until = [first], time.monotonic() + self.timeout
            while len(batch) < self.max_items and (left := until - time.monotonic()) > 0:
                try:
                    event = self.events.get(timeout=left)
                except queue.Empty:
                    break
                if event is None:
                    self._post(json.dumps(batch).encode())
                    return
                batch.append(event)
            self._post(json.dumps(batch).encode())

    def _post(self, body: bytes) -> None:
        host, port, path = self.where
        # a batch its listener does not take is dropped (Lambda retries, with a backoff)
        with contextlib.suppress(OSError, http.client.HTTPException):
            connection = http.client.HTTPConnection(host, port, timeout=5)
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            connection.getresponse().read()
            connection.close()


class Extensions:
    """The extensions of one environment (``files``), started with its variables (``env``)
    and its Python path (``path``, after the sandbox's names); their output goes to a pipe
    of their own (``take_logs``)."""

    def __init__(
        self, files: Sequence[Path], env: Mapping[str, str], path: Sequence[str], account: str
    ) -> None:
        self.address, self.account = _sandbox_address(), account
        self.function = {
            "functionName": env.get("AWS_LAMBDA_FUNCTION_NAME", ""),
            "functionVersion": env.get("AWS_LAMBDA_FUNCTION_VERSION", ""),
            "handler": env.get("_HANDLER", ""),
        }
        self.changed = threading.Condition()
        self.all: list[_Extension] = []
        self.init_error: tuple[str, str] | None = None  # (errorType, message)
        self.initializing = True
        self._history: list[dict[str, Any]] = []  # the init's events, for a late subscriber
        self._subscriptions: list[_Subscription] = []
        self._lines: list[str] = []
        variables = {
            **env,
            "PYTHONPATH": os.pathsep.join([str(_SITE), *path, env.get("PYTHONPATH", "")]),
            "LOCALCLOUD_SANDBOX_ADDRESS": self.address,
        }
        self._output = LogPipe()
        try:
            for file in files:
                try:
                    process = subprocess.Popen(  # noqa: S603 - the layer's extension, as Lambda
                        [str(file)], env=variables, cwd=env.get("LAMBDA_TASK_ROOT"),
                        stdin=subprocess.DEVNULL, stdout=self._output.write_fd,
                        stderr=self._output.write_fd, start_new_session=True,
                    )  # fmt: skip
                except OSError as exc:
                    reason = exc.strerror.lower() if exc.strerror else type(exc).__name__
                    kind = (
                        "PermissionDenied" if isinstance(exc, PermissionError) else "UnknownError"
                    )
                    self._lines.append(
                        f"EXTENSION\tName: {file.name}\tState: LaunchError\tEvents: []\t"
                        f"Error Type: {kind}"
                    )
                    self.init_error = (
                        "Extension.LaunchError",
                        f"Error: fork/exec /opt/extensions/{file.name}: {reason}",
                    )
                    break
                self.all.append(_Extension(file.name, process))
        finally:
            os.close(self._output.write_fd)  # theirs
        self._output.thread.start()

    # -- the environment's calls ----------------------------------------------------------

    def begin(self, timeout: float) -> tuple[str, str] | None:
        """The init's start: until every extension has registered; its error, if any."""
        self.emit("platform.initStart", {"initializationType": "on-demand", "phase": "init",
                                         **self.function})  # fmt: skip
        self.wait_registered(timeout)
        return self.init_error

    def initialized(self, init_ms: float, ok: bool) -> None:
        init = {"initializationType": "on-demand", "phase": "init"}
        init["status"] = "success" if ok else "error"
        self.emit("platform.initRuntimeDone", init)
        self.emit("platform.initReport", {**init, "metrics": {"durationMs": init_ms}})
        self.initializing = False

    def invoke(self, request_id: str, deadline_ms: int, arn: str, trace: str, version: str) -> None:
        """Once every extension waits for its next event: INVOKE to those registered for it."""
        self.wait_idle(max(0.0, deadline_ms / 1000 - time.time()))
        self.emit("platform.start", {"requestId": request_id, "version": version})
        self.dispatch("INVOKE", {
            "deadlineMs": deadline_ms, "requestId": request_id, "invokedFunctionArn": arn,
            "tracing": {"type": "X-Amzn-Trace-Id", "value": trace},
        })  # fmt: skip

    def invoked(self, done: Done, lines: list[str]) -> list[str]:
        """An invocation's telemetry: the function's ``lines``, platform.runtimeDone and
        .report; the extensions' output since the last invocation, for the function's log."""
        for line in lines:
            self.emit("function", line)
        records = done.records()
        for kind in ("platform.runtimeDone", "platform.report"):
            self.emit(kind, records[kind])
        return self.take_logs()

    def wait_registered(self, timeout: float) -> None:
        """Until every extension has registered (an init error for one that exited first)."""
        until = time.monotonic() + timeout
        with self.changed:
            while self.init_error is None and (left := until - time.monotonic()) > 0:
                crashed = [e for e in self.all if not e.id and e.process.poll() is not None]
                if crashed:
                    code = crashed[0].process.returncode
                    self.init_error = ("Extension.Crash", f"Error: exit status {code}")
                elif all(e.id for e in self.all):
                    return
                self.changed.wait(min(left, 0.05))  # (an exit notifies nobody)

    def wait_idle(self, timeout: float) -> None:
        """Until every registered extension waits for its next event, or has exited (the
        init's end, and each invocation's)."""
        until = time.monotonic() + timeout
        with self.changed:
            while (left := until - time.monotonic()) > 0 and not all(
                e.waiting or e.process.poll() is not None for e in self.all if e.id
            ):
                self.changed.wait(min(left, 0.05))

    def dispatch(self, kind: str, event: dict[str, Any]) -> list[_Extension]:
        """Hand ``event`` (INVOKE or SHUTDOWN) to the extensions registered for it."""
        with self.changed:
            targets = [e for e in self.all if kind in e.events]
            for extension in targets:
                extension.waiting = False
                extension.inbox.put({"eventType": kind, **event})
        return targets

    def emit(self, kind: str, record: Any) -> None:
        """A telemetry event (``platform.*``, ``function``, ``extension``) to its subscribers."""
        event = {"time": timestamp(), "type": kind, "record": record}
        with self.changed:
            if self.initializing:
                self._history.append(event)
            for subscription in self._subscriptions:
                subscription.offer(event)

    def take_logs(self) -> list[str]:
        """Their output so far (and Lambda's lines on them), sent to their ``extension``
        subscribers."""
        output = self._output.take()
        for line in output:
            self.emit("extension", line)
        with self.changed:
            lines, self._lines = self._lines, []
        return lines + output

    def shutdown(self, reason: str = "spindown") -> None:
        """SHUTDOWN to the extensions registered for it; each is killed after 2 s at most."""
        deadline = time.time() + SHUTDOWN_SECONDS
        told = self.dispatch(
            "SHUTDOWN", {"shutdownReason": reason, "deadlineMs": int(deadline * 1000)}
        )
        for extension in self.all:
            if extension in told:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    extension.process.wait(max(0.0, deadline - time.time()))
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(extension.process.pid, signal.SIGKILL)
            extension.process.wait()
        for subscription in self._subscriptions:
            subscription.events.put(None)
        with self.changed:
            self.changed.notify_all()

    # -- the extensions' calls (runtime_api.py) -------------------------------------------

    def register(
        self, name: str, events: list[str], features: str
    ) -> tuple[int, dict[str, Any], str]:
        with self.changed:
            extension = next((e for e in self.all if e.name == name and not e.id), None)
            if extension is None or not self.initializing:
                return 403, _error("Extension.Forbidden", f"{name!r} cannot register"), ""
            unknown = set(events) - {"INVOKE", "SHUTDOWN"}
            if unknown:
                return 400, _error("InvalidEventType", f"unknown events {sorted(unknown)}"), ""
            extension.id, extension.events = str(uuid.uuid4()), list(events)
            self._lines.append(
                f"EXTENSION\tName: {name}\tState: Ready\tEvents: [{','.join(events)}]"
            )
            self.changed.notify_all()
        body = dict(self.function)
        if "accountId" in features:
            body["accountId"] = self.account
        return 200, body, extension.id

    def next(self, extension_id: str) -> dict[str, Any] | None:
        extension = self._of(extension_id)
        if extension is None:
            return None
        with self.changed:
            extension.waiting = extension.inbox.empty()
            self.changed.notify_all()
        event = extension.inbox.get()
        with self.changed:
            extension.waiting = False
        return event

    def error(self, extension_id: str, phase: str, error_type: str) -> bool:
        extension = self._of(extension_id)
        if extension is not None and phase == "init":
            with self.changed:
                self.init_error = (f"Extension.{error_type or 'Unknown'}", f"Error: {error_type}")
                self.changed.notify_all()
        return extension is not None

    def subscribe(self, extension_id: str, request: Any, logs_api: bool) -> tuple[int, bytes]:
        """A Telemetry API subscription (``logs_api``: a Logs API one)."""
        extension = self._of(extension_id)
        if extension is None:
            return 403, json.dumps(_error("Extension.Forbidden", "unknown extension")).encode()
        problem = _invalid(request, logs_api)
        if problem:
            return 400, json.dumps(_error("ValidationError", problem)).encode()
        types = list(request["types"])
        subscription = _Subscription(
            str(request["destination"].get("URI", "")), self.address, types,
            request.get("buffering") or {}, logs_api,
        )  # fmt: skip
        subscription.start()
        with self.changed:
            self._subscriptions.append(subscription)
            backlog = list(self._history)
        for event in backlog:
            subscription.offer(event)
        record = {"name": extension.name, "state": "Subscribed", "types": types}
        self.emit("platform.telemetrySubscription", record)
        return 200, b"OK"

    def _of(self, extension_id: str) -> _Extension | None:
        return next((e for e in self.all if extension_id and e.id == extension_id), None)


#: the Telemetry API's buffering bounds (and defaults): maxItems, maxBytes, timeoutMs
_BUFFERING = {"maxItems": (1000, 10000), "maxBytes": (262144, 1048576), "timeoutMs": (25, 30000)}
_SCHEMAS = frozenset({"2022-07-01", "2022-12-13", "2025-01-29"})


def _invalid(request: Any, logs_api: bool) -> str:
    """What is wrong with a subscription request ("" when nothing is)."""
    if not isinstance(request, dict):
        return "the request is not a JSON object"
    destination, types = request.get("destination"), request.get("types")
    if not logs_api and request.get("schemaVersion") not in _SCHEMAS:
        return f"schemaVersion must be one of {sorted(_SCHEMAS)}"
    if not isinstance(destination, dict) or destination.get("protocol") != "HTTP":
        return "destination must be {protocol: HTTP, URI} (TCP is not served here)"
    if not isinstance(types, list) or not types or not set(types) <= {
        "platform", "function", "extension"
    }:  # fmt: skip
        return "types must be some of platform, function, extension"
    buffering = request.get("buffering") or {}
    for name, (low, high) in _BUFFERING.items():
        value = buffering.get(name, low) if isinstance(buffering, dict) else None
        if type(value) is not int or not low <= value <= high:
            return f"buffering.{name} must be an integer from {low} to {high}"
    return ""


def _error(error_type: str, message: str) -> dict[str, str]:
    return {"errorType": error_type, "errorMessage": message}
