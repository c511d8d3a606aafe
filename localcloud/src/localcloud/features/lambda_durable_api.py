"""The durable execution APIs of Lambda (API version 2025-12-01), served from the executions
of features/lambda_durable.py, as the Lambda API Reference gives them:

* CheckpointDurableExecution (the SDK's, as the function's role; IAM checks
  lambda:CheckpointDurableExecution on the execution's ARN): "Each checkpoint operation
  consumes the current checkpoint token and returns a new one" (a token that is not the
  current one, or of an invocation that has ended: InvalidParameterValueException). Each
  update moves an operation: STEP START -> STARTED, SUCCEED/FAIL, RETRY -> PENDING (Attempt
  + 1, NextAttemptTimestamp; READY when its timer fires); WAIT START -> STARTED
  (ScheduledEndTimestamp; SUCCEEDED when it fires), CANCEL; CALLBACK START -> STARTED with a
  new CallbackId; CHAINED_INVOKE START -> STARTED (the service invokes the target); CONTEXT
  START/SUCCEED/FAIL; EXECUTION SUCCEED/FAIL (a result too large for the response).
  NewExecutionState carries every operation changed since the consumed token was issued
  (by these updates, or by the service: a timer, a callback, a chained invoke);
* GetDurableExecutionState (pages of the operations, ``Marker`` / ``NextMarker``);
* GetDurableExecution, ListDurableExecutionsByFunction (Qualifier, Statuses,
  DurableExecutionName, ReverseOrder, MaxItems / Marker), GetDurableExecutionHistory
  (one event per status change: ExecutionStarted, StepSucceeded, WaitStarted, ...);
* SendDurableExecutionCallbackSuccess / Failure / Heartbeat (the callback's execution is
  replayed), StopDurableExecution (STOPPED).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote

from moto.awslambda.responses import LambdaResponse
from moto.core.exceptions import JsonRESTError

__all__ = ["METHOD_NAMES", "URL_PATHS", "DurableError", "Execution", "methods", "record_event"]

_ROOT = r"{0}/(?P<api_version>2025-12-01)"
URL_PATHS = {
    _ROOT + r"/durable-executions/(?P<execution>.+)$": LambdaResponse.dispatch,
    _ROOT + r"/durable-execution-callbacks/(?P<callback>.+)$": LambdaResponse.dispatch,
    _ROOT + r"/functions/(?P<function_name>[^/]+)/durable-executions/?$": LambdaResponse.dispatch,
}
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT", "STOPPED"})
_TYPES = {"EXECUTION": "Execution", "CONTEXT": "Context", "STEP": "Step", "WAIT": "Wait",
          "CALLBACK": "Callback", "CHAINED_INVOKE": "ChainedInvoke"}  # fmt: skip
_STATUSES = {"STARTED": "Started", "SUCCEEDED": "Succeeded", "FAILED": "Failed",
             "TIMED_OUT": "TimedOut", "STOPPED": "Stopped", "CANCELLED": "Cancelled"}  # fmt: skip
_TIMESTAMPS = ("StartTimestamp", "EndTimestamp")
_NAMING = ("Name", "SubType", "ParentId")  # an operation's, kept if given


class DurableError(JsonRESTError):
    def __init__(self, error: str, message: str, status: int = 400) -> None:
        self.code = status
        super().__init__(error, message)


def _invalid(message: str) -> DurableError:
    return DurableError("InvalidParameterValueException", message)


def qualified(function_name: str, qualifier: str | None) -> bool:
    return bool(qualifier) or ":" in function_name.split(":function:", 1)[-1]


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# ------------------------------------------------------------------ operations
@dataclass
class Execution:
    """One durable execution: its operations (API shape, datetimes) and its progress."""

    arn: str
    name: str
    function_name: str
    function_arn: str  # qualified with the version it runs
    version: str
    role: str
    region: str
    input_payload: str
    config: dict[str, Any]
    backend: Any = field(repr=False)
    started: dt.datetime = field(default_factory=now)
    status: str = "RUNNING"
    result: str | None = None
    error: dict[str, Any] | None = None
    ended: dt.datetime | None = None
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)  # operation id -> seq
    seq: int = 0
    tokens: dict[str, int] = field(default_factory=dict)  # token -> seq when issued
    token: str | None = None  # the current invocation's (None: no invocation running)
    events: list[dict[str, Any]] = field(default_factory=list)
    timers: list[tuple[float, str]] = field(default_factory=list)  # (virtual due, op id)
    #: open callbacks: op id -> [timeout deadline, heartbeat deadline, heartbeat seconds]
    callbacks: dict[str, list[float]] = field(default_factory=dict)
    virtual: float = 0.0  # seconds this execution slept on the clock
    ready: bool = False  # something it waits for has happened since its last invocation
    invocations: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    done: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def id(self) -> str:
        return self.arn.rsplit("/", 1)[-1]

    def clock(self) -> dt.datetime:
        """The time on its clock, real time plus what it slept on a virtual clock: its events'
        and operations' timestamps (a wait or a retry delay shows between them, as on AWS)."""
        return now() + dt.timedelta(seconds=self.virtual)

    def elapsed(self) -> float:
        """Seconds since it started, on its clock."""
        return (self.clock() - self.started).total_seconds()

    def touch(self, op_id: str) -> None:
        self.seq += 1
        self.changed[op_id] = self.seq

    def issue_token(self) -> str:
        self.token = uuid.uuid4().hex
        self.tokens[self.token] = self.seq
        return self.token

    def close(self, status: str, result: str | None = None, error: Any = None) -> None:
        if self.status != "RUNNING":
            return
        self.status, self.token = status, None
        self.result = result if result is not None else self.result
        self.error = error if error is not None else self.error
        set_status(self, self.operations[self.execution_op], status)  # one of TERMINAL
        self.ended = self.operations[self.execution_op]["EndTimestamp"]
        self.done.set()
        self.cond.notify_all()

    @property
    def execution_op(self) -> str:
        return next(iter(self.operations))


class Service(Protocol):
    """What these APIs use of features/lambda_durable.py's DurableService."""

    lock: threading.Lock
    callbacks: dict[str, tuple[str, str]]  # callback id -> (execution, op)

    def find(self, arn: str) -> Execution: ...
    def of(self, function_name: str) -> list[Execution]: ...
    def resume(self, execution: Execution) -> None: ...
    def chained_invoke(
        self, execution: Execution, op_id: str, target: str, payload: str
    ) -> None: ...


def _convert(op: dict[str, Any], stamp: Callable[[dt.datetime], float]) -> dict[str, Any]:
    out = {k: (stamp(v) if k in _TIMESTAMPS else v) for k, v in op.items()}
    for key, inner in (("StepDetails", "NextAttemptTimestamp"),
                       ("WaitDetails", "ScheduledEndTimestamp")):  # fmt: skip
        if key in op and inner in op[key]:
            out[key] = {**op[key], inner: stamp(op[key][inner])}
    return out


def operation_json(op: dict[str, Any]) -> dict[str, Any]:
    """The operation in an invocation's event: timestamps in epoch milliseconds."""
    return _convert(op, lambda t: int(t.timestamp() * 1000))


def operation_api(op: dict[str, Any]) -> dict[str, Any]:
    """The operation in an API answer (rest-json: epoch seconds)."""
    return _convert(op, lambda t: t.timestamp())


def record_event(execution: Execution, op: dict[str, Any]) -> None:
    """GetDurableExecutionHistory's event for ``op``'s new status."""
    status = op["Status"]
    retry = op["Type"] == "STEP" and status == "PENDING"
    if status not in _STATUSES and not retry:
        return
    kind = _TYPES[op["Type"]] + ("Failed" if retry else _STATUSES[status])
    event: dict[str, Any] = {
        "EventType": kind, "EventId": len(execution.events) + 1, "Id": op["Id"],
        "EventTimestamp": execution.clock().timestamp(),
    }  # fmt: skip
    event.update({k: op[k] for k in _NAMING if op.get(k)})
    details: dict[str, Any] = {}
    found: dict[str, Any] = next((op[k] for k in op if k.endswith("Details")), {})
    if kind == "ExecutionStarted":
        details = {"Input": {"Payload": execution.input_payload, "Truncated": False},
                   "ExecutionTimeout": execution.config["ExecutionTimeout"]}  # fmt: skip
    elif kind.startswith("Execution") and execution.error and status != "SUCCEEDED":
        details = {"Error": {"Payload": execution.error, "Truncated": False}}
    elif kind == "ExecutionSucceeded":
        details = {"Result": {"Payload": execution.result or "", "Truncated": False}}
    elif status == "SUCCEEDED" and found.get("Result") is not None:
        details = {"Result": {"Payload": found["Result"], "Truncated": False}}
    elif found.get("Error"):
        details = {"Error": {"Payload": found["Error"], "Truncated": False}}
    if kind == "CallbackStarted":
        details = {"CallbackId": found["CallbackId"]}
    if retry:
        details["RetryDetails"] = {"CurrentAttempt": found.get("Attempt", 0)}
    event[f"{kind}Details"] = details
    execution.events.append(event)


def set_status(execution: Execution, op: dict[str, Any], status: str) -> None:
    op["Status"] = status
    if status in TERMINAL:
        op["EndTimestamp"] = execution.clock()
    execution.touch(op["Id"])
    record_event(execution, op)


def _start(service: Service, execution: Execution, u: dict[str, Any]) -> None:
    op_id, kind = u["Id"], u["Type"]
    previous = execution.operations.get(op_id)  # a step's next attempt: started then
    started = previous["StartTimestamp"] if previous else execution.clock()
    op: dict[str, Any] = {"Id": op_id, "Type": kind, "StartTimestamp": started, "Status": "STARTED"}
    op.update({k: u[k] for k in _NAMING if u.get(k)})
    if kind == "STEP":
        op["StepDetails"] = {"Attempt": (previous or {}).get("StepDetails", {}).get("Attempt", 0)}
    elif kind == "WAIT":
        seconds = int((u.get("WaitOptions") or {}).get("WaitSeconds", 1))
        due = execution.clock() + dt.timedelta(seconds=seconds)
        op["WaitDetails"] = {"ScheduledEndTimestamp": due}
        execution.timers.append((execution.elapsed() + seconds, op_id))
    elif kind == "CALLBACK":
        callback_id = uuid.uuid4().hex
        op["CallbackDetails"] = {"CallbackId": callback_id}
        options = u.get("CallbackOptions") or {}
        limits = [int(options.get(k) or 0) for k in ("TimeoutSeconds", "HeartbeatTimeoutSeconds")]
        clock = time.monotonic()
        execution.callbacks[op_id] = [*(clock + s if s else 0.0 for s in limits), limits[1]]
        with service.lock:
            service.callbacks[callback_id] = (execution.arn, op_id)
    elif kind == "CHAINED_INVOKE":
        target = (u.get("ChainedInvokeOptions") or {}).get("FunctionName")
        if not target:
            raise _invalid("ChainedInvokeOptions.FunctionName is required for CHAINED_INVOKE")
        op["ChainedInvokeDetails"] = {}
        service.chained_invoke(execution, op_id, str(target), str(u.get("Payload") or ""))
    elif kind == "CONTEXT":
        op["ContextDetails"] = {}
    execution.operations[op_id] = op
    execution.touch(op_id)
    record_event(execution, op)


def _apply(  # noqa: PLR0912 - one branch per type and action
    service: Service, execution: Execution, u: dict[str, Any]
) -> None:
    kind, action, op_id = u.get("Type"), u.get("Action"), u.get("Id")
    if kind not in _TYPES or not op_id:
        raise _invalid(f"Invalid operation update: Type {kind}, Id {op_id}")
    if kind == "EXECUTION":
        if action == "SUCCEED":
            execution.close("SUCCEEDED", result=str(u.get("Payload") or ""))
        elif action == "FAIL":
            execution.close("FAILED", error=u.get("Error") or {})
        else:
            raise _invalid(f"Invalid action {action} for an EXECUTION operation")
        return
    op = execution.operations.get(op_id)
    if action == "START" or op is None:
        if op is not None and not (kind == "STEP" and op["Status"] == "READY"):
            raise _invalid(f"Operation {op_id} was already started")
        _start(service, execution, {**u, "Action": "START"})
        op = execution.operations[op_id]
        if action == "START":
            return
    details = f"{_TYPES[kind]}Details"
    if op["Status"] in TERMINAL:
        raise _invalid(f"Operation {op_id} has already ended ({op['Status']})")
    target = op.setdefault(details, {})
    if action == "SUCCEED" and kind in ("STEP", "CONTEXT"):
        target["Result"] = u.get("Payload")
        if kind == "CONTEXT":
            target["ReplayChildren"] = bool((u.get("ContextOptions") or {}).get("ReplayChildren"))
        set_status(execution, op, "SUCCEEDED")
    elif action == "FAIL" and kind in ("STEP", "CONTEXT"):
        target["Error"] = u.get("Error") or {}
        set_status(execution, op, "FAILED")
    elif action == "RETRY" and kind == "STEP":
        delay = int((u.get("StepOptions") or {}).get("NextAttemptDelaySeconds", 0))
        target["Attempt"] = int(target.get("Attempt", 0)) + 1
        target["NextAttemptTimestamp"] = execution.clock() + dt.timedelta(seconds=delay)
        if u.get("Error"):
            target["Error"] = u["Error"]
        execution.timers.append((execution.elapsed() + delay, op_id))
        set_status(execution, op, "PENDING")
    elif action == "CANCEL" and kind in ("WAIT", "CALLBACK", "CHAINED_INVOKE"):
        execution.timers = [t for t in execution.timers if t[1] != op_id]
        execution.callbacks.pop(op_id, None)
        set_status(execution, op, "CANCELLED")
    else:
        raise _invalid(f"Invalid action {action} for a {kind} operation")


def checkpoint(service: Service, arn: str, body: dict[str, Any]) -> dict[str, Any]:
    execution = service.find(arn)
    with execution.cond:
        token = body.get("CheckpointToken")
        if execution.status != "RUNNING":
            raise _invalid(f"The durable execution has ended ({execution.status})")
        if not token or token != execution.token:
            raise _invalid("Invalid Checkpoint Token")
        since = execution.tokens[token]
        for update in body.get("Updates") or []:
            _apply(service, execution, update)
        changed = [operation_api(op) for op_id, op in execution.operations.items()
                   if execution.changed.get(op_id, 0) > since]  # fmt: skip
        new_token = execution.issue_token() if execution.status == "RUNNING" else token
        return {"CheckpointToken": new_token, "NewExecutionState": {"Operations": changed}}


# ------------------------------------------------------------------ reads
def _execution(execution: Execution) -> dict[str, Any]:
    out: dict[str, Any] = {
        "DurableExecutionArn": execution.arn, "DurableExecutionName": execution.name,
        "FunctionArn": execution.function_arn, "Status": execution.status,
        "StartTimestamp": execution.started.timestamp(),
    }  # fmt: skip
    if execution.ended:
        out["EndTimestamp"] = execution.ended.timestamp()
    return out


def _describe(execution: Execution, include: bool) -> dict[str, Any]:
    out = _execution(execution)
    out.update(Version=execution.version, ExecutionDataIncluded=include)
    out["DurableConfig"] = dict(execution.config)
    if include:
        out["InputPayload"] = execution.input_payload
        if execution.status == "SUCCEEDED":
            out["Result"] = execution.result or ""
        elif execution.error:
            out["Error"] = execution.error
    return out


def _page(items: list[Any], query: dict[str, list[str]], key: str) -> dict[str, Any]:
    start = int((query.get("Marker") or ["0"])[0] or 0)
    size = int((query.get("MaxItems") or ["1000"])[0] or 1000)
    out: dict[str, Any] = {key: items[start : start + size]}
    if start + size < len(items):
        out["NextMarker"] = str(start + size)
    return out


def _flag(query: dict[str, list[str]], name: str, default: bool) -> bool:
    values = query.get(name)
    return default if not values else values[0].lower() == "true"


def _list(service: Service, backend: Any, name: str, query: dict[str, list[str]]) -> Any:
    qualifier = (query.get("Qualifier") or [""])[0] or None
    fn = backend.get_function(name, qualifier)  # unknown -> ResourceNotFoundException
    found = service.of(fn.function_name)
    if qualified(name, qualifier):
        found = [e for e in found if e.version == str(fn.version)]
    statuses = set(query.get("Statuses") or [])
    wanted = (query.get("DurableExecutionName") or [""])[0]
    found = [e for e in found if (not statuses or e.status in statuses)
             and (not wanted or e.name == wanted)]  # fmt: skip
    found.sort(key=lambda e: e.started, reverse=not _flag(query, "ReverseOrder", False))
    return _page([_execution(e) for e in found], query, "DurableExecutions")


def _callback(service: Service, response: LambdaResponse, outcome: str) -> Any:
    callback_id, body = _param(response, "CallbackId"), _body(response)
    with service.lock:
        where = service.callbacks.get(callback_id)
    if where is None:
        raise DurableError("ResourceNotFoundException", f"Callback not found: {callback_id}", 404)
    execution = service.find(where[0])
    with execution.cond:
        op = execution.operations[where[1]]
        if op["Status"] == "TIMED_OUT":
            raise DurableError("CallbackTimeoutException", f"Callback timed out: {callback_id}")
        if op["Status"] != "STARTED" or execution.status != "RUNNING":
            raise _invalid(f"Callback {callback_id} is no longer open ({op['Status']})")
        if outcome == "HEARTBEAT":
            ends = execution.callbacks.get(op["Id"])
            if ends and ends[2]:
                ends[1] = time.monotonic() + ends[2]
            return _ok({})
        execution.callbacks.pop(op["Id"], None)
        if outcome == "SUCCEEDED":
            op["CallbackDetails"]["Result"] = body
        else:
            op["CallbackDetails"]["Error"] = json.loads(body) if body else {}
        set_status(execution, op, outcome)
        service.resume(execution)
    return _ok({})


# ------------------------------------------------------------------ moto response methods
def _param(response: LambdaResponse, name: str) -> str:
    value = str((getattr(response, "uri_match", None) or {}).get(name) or "")
    return unquote(value) if "%" in value else value


def _body(response: LambdaResponse) -> Any:
    raw = response.body
    return raw.decode() if isinstance(raw, bytes) else (raw or "")


def _ok(answer: Any) -> tuple[int, dict[str, str], str]:
    return 200, {"content-type": "application/json"}, json.dumps(answer)


def methods(service: Service) -> dict[str, Callable[[LambdaResponse], Any]]:
    def checkpoint_durable_execution(self: LambdaResponse) -> Any:
        arn = _param(self, "DurableExecutionArn")
        return _ok(checkpoint(service, arn, json.loads(_body(self) or "{}")))

    def get_durable_execution_state(self: LambdaResponse) -> Any:
        execution = service.find(_param(self, "DurableExecutionArn"))
        with execution.cond:
            if (self.querystring.get("CheckpointToken") or [""])[0] not in execution.tokens:
                raise _invalid("Invalid Checkpoint Token")
            ops = [operation_api(op) for op in execution.operations.values()]
        return _ok(_page(ops, self.querystring, "Operations"))

    def get_durable_execution(self: LambdaResponse) -> Any:
        execution = service.find(_param(self, "DurableExecutionArn"))
        with execution.cond:
            return _ok(_describe(execution, _flag(self.querystring, "IncludeExecutionData", True)))

    def get_durable_execution_history(self: LambdaResponse) -> Any:
        execution = service.find(_param(self, "DurableExecutionArn"))
        with execution.cond:
            events = [dict(e) for e in execution.events]
        if not _flag(self.querystring, "IncludeExecutionData", True):
            for event in events:
                for key, details in list(event.items()):
                    if key.endswith("Details") and isinstance(details, dict):
                        event[key] = {k: v for k, v in details.items()
                                      if k not in ("Input", "Result", "Error")}  # fmt: skip
        if _flag(self.querystring, "ReverseOrder", False):
            events.reverse()
        return _ok(_page(events, self.querystring, "Events"))

    def list_durable_executions_by_function(self: LambdaResponse) -> Any:
        name = _param(self, "FunctionName")
        return _ok(_list(service, self.backend, name, self.querystring))

    def send_durable_execution_callback_success(self: LambdaResponse) -> Any:
        return _callback(service, self, "SUCCEEDED")

    def send_durable_execution_callback_failure(self: LambdaResponse) -> Any:
        return _callback(service, self, "FAILED")

    def send_durable_execution_callback_heartbeat(self: LambdaResponse) -> Any:
        return _callback(service, self, "HEARTBEAT")

    def stop_durable_execution(self: LambdaResponse) -> Any:
        execution = service.find(_param(self, "DurableExecutionArn"))
        body = _body(self)
        with execution.cond:
            if execution.status != "RUNNING":
                raise _invalid(f"The durable execution has already ended ({execution.status})")
            execution.close("STOPPED", error=json.loads(body) if body else None)
            assert execution.ended is not None
            return _ok({"StopTimestamp": execution.ended.timestamp()})

    return {
        method.__name__: method
        for method in (
            checkpoint_durable_execution, get_durable_execution_state, get_durable_execution,
            get_durable_execution_history, list_durable_executions_by_function,
            send_durable_execution_callback_success, send_durable_execution_callback_failure,
            send_durable_execution_callback_heartbeat, stop_durable_execution,
        )
    }  # fmt: skip


METHOD_NAMES = tuple(methods(None))  # type: ignore[arg-type]  # their names only
