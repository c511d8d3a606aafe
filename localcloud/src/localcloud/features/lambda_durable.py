"""Lambda durable functions (a function with ``DurableConfig``), as the Lambda service runs
them (Lambda Developer Guide, "Lambda durable functions": "Invoking durable Lambda
functions", "Security and permissions"; API reference: CheckpointDurableExecution,
GetDurableExecutionState, ...; the service side of aws-durable-execution-sdk-python 1.3.0,
``execution.py``, ``lambda_service.py``, ``state.py``):

* invoking a durable function starts a *durable execution*. It must be invoked qualified (a
  version, an alias or ``$LATEST``; unqualified: InvalidParameterValueException); the
  execution is pinned to the version the qualifier resolves to, and its ARN is
  ``<function ARN>:<version>/durable-execution/<name>/<id>`` (the name:
  ``X-Amz-Durable-Execution-Name``, else a new id; the same name with the same input is the
  same execution, with another input DurableExecutionAlreadyStartedException);
* the service invokes the handler with ``{DurableExecutionArn, CheckpointToken,
  InitialExecutionState: {Operations, NextMarker}}``, the first operation being the EXECUTION
  one with the invocation's input (timestamps in epoch milliseconds, as the SDK's
  ``from_json_dict`` reads them). The SDK checkpoints its operations
  (lambda_durable_api.py) and answers ``{"Status": SUCCEEDED|FAILED|PENDING, ...}``;
* PENDING: the service invokes it again (a replay) when a wait's or a step retry's timer
  expires (on the cloud's clock: virtual by default, features/clock.py), a callback is
  completed or times out, or a chained invoke's target has answered (the service invokes the
  target as the function's execution role: lambda:InvokeFunction is checked). A handler that
  fails outside the SDK (an import error, a timeout) is invoked again, three attempts in
  all, then the execution fails with that error;
* the execution ends SUCCEEDED, FAILED, TIMED_OUT (its ``ExecutionTimeout``, counted on the
  cloud's clock for waits and retries, in real time otherwise) or STOPPED
  (StopDurableExecution). "For synchronous invocations, the caller waits for the entire
  durable execution to complete, including any wait operations": a RequestResponse Invoke
  answers the execution's result (a failed execution: ``X-Amz-Function-Error: Unhandled``
  and its error), with ``X-Amz-Durable-Execution-Arn``. An Event invocation (the API, rules,
  schedules) answers 202 and the execution runs in the background; the asynchronous retries,
  destinations and dead-letter queue of features/lambda_async.py are not applied to it.

The function's SDK (in its environment processes: features/lambda_processes.py) calls these
APIs at the served endpoint, with the function's credentials.

A callback's TimeoutSeconds / HeartbeatTimeoutSeconds count real time: what completes a
callback (a test, another process) runs in real time. Executions live as long as the cloud
(RetentionPeriodInDays is not counted).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from typing import Any

from moto.awslambda import urls as lambda_urls
from moto.awslambda.responses import LambdaResponse
from moto.awslambda.utils import get_backend
from moto.core.exceptions import JsonRESTError

from localcloud import clients
from localcloud.features import lambda_durable_api as api
from localcloud.features.lambda_async_config import json_payload
from localcloud.features.lambda_durable_api import DurableError, Execution
from localcloud.features.lambda_runtime import LocalLambdaBackend, request_header
from localcloud.iam import enforcement as iam
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "DurableError", "DurableService", "Execution", "set_durable_config"]

LOG = logging.getLogger(__name__)
#: on the service's own invocations of the handler (a start or a replay)
DURABLE_HEADER = "x-localcloud-durable-execution"
INVOCATION_ATTEMPTS = 3
PAGE = 1000  # operations per page of the invocation's InitialExecutionState
_CONFIG_KEYS = {"ExecutionTimeout", "RetentionPeriodInDays"}


def set_durable_config(fn: Any, config: dict[str, Any]) -> None:
    """Make ``fn`` (moto's model, $LATEST) and its published versions durable (deploy)."""
    extra = sorted(set(config) - _CONFIG_KEYS)
    if extra:  # KMSKeyArn: the local cloud keeps execution data unencrypted
        raise ValueError(f"DurableConfig.{', DurableConfig.'.join(extra)} is not run locally")
    if getattr(fn, "dead_letter_config", None):
        raise ValueError(
            "DeadLetterConfig of a durable function is not run locally (its asynchronous "
            "executions' failures are not sent to the queue)"
        )
    timeout = int(config["ExecutionTimeout"])
    retention = int(config.get("RetentionPeriodInDays", 14))
    if not 1 <= timeout <= 31622400 or not 1 <= retention <= 90:
        raise ValueError("DurableConfig: ExecutionTimeout 1-31622400, RetentionPeriodInDays 1-90")
    durable = {"ExecutionTimeout": timeout, "RetentionPeriodInDays": retention}
    group = get_backend(fn.account_id, fn.region)._lambdas._functions[fn.function_name]
    for each in [fn, group["latest"], *group["versions"]]:
        each.durable_config = dict(durable)


def _error_object(error: Any) -> dict[str, Any]:
    """A function error payload (errorType, errorMessage) as an ErrorObject."""
    if not isinstance(error, dict):
        return {"ErrorType": "Runtime.Unknown", "ErrorMessage": str(error)}
    out = {"ErrorType": error.get("errorType"), "ErrorMessage": error.get("errorMessage")}
    if error.get("stackTrace"):
        out["StackTrace"] = [str(line) for line in error["stackTrace"]]
    return {k: v for k, v in out.items() if v is not None}


class DurableService:
    """One cloud's durable executions."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.lock = threading.Lock()
        self.executions: dict[str, Execution] = {}
        self.callbacks: dict[str, tuple[str, str]] = {}  # callback id -> (execution, op)
        self.closed = False

    # --- starting ----------------------------------------------------------------------
    def invoke(  # noqa: PLR0917 - LocalLambdaBackend.invoke's arguments
        self, backend: Any, fn: Any, function_name: str, qualifier: str | None, body: Any,
        headers: Any, response_headers: Any,
    ) -> bytes | None:  # fmt: skip
        config = getattr(fn, "durable_config", None)
        if not config or request_header(headers, DURABLE_HEADER):
            return None
        kind = request_header(headers, "X-Amz-Invocation-Type") or "RequestResponse"
        if kind == "DryRun":
            return None
        if not api.qualified(function_name, qualifier):
            raise DurableError(
                "InvalidParameterValueException",
                "Durable functions must be invoked with a qualified function name or ARN "
                "(a version number, an alias or $LATEST); this one has no qualifier: "
                f"{function_name}",
            )
        payload = json_payload(body)
        name = request_header(headers, "X-Amz-Durable-Execution-Name") or str(uuid.uuid4())
        execution, new = self.start(backend, fn, name, payload, config)
        response_headers["X-Amz-Durable-Execution-Arn"] = execution.arn
        if kind == "Event":
            if new:
                self._background(execution)
            return b""
        if new:
            self.drive(execution)
        else:
            self.wait(execution)
        return self.answer(execution, response_headers)

    def start(
        self, backend: Any, fn: Any, name: str, payload: str, config: dict[str, Any]
    ) -> tuple[Execution, bool]:
        version = str(fn.version)
        base = fn.function_arn if version == "$LATEST" else fn.function_arn.rsplit(":", 1)[0]
        with self.lock:
            for known in self.executions.values():
                if known.name == name and known.function_name == fn.function_name:
                    if known.input_payload != payload:
                        raise DurableError(
                            "DurableExecutionAlreadyStartedException",
                            f"A durable execution named {name} was already started with "
                            "another input",
                            409,
                        )
                    return known, False
            arn = f"{base}:{version}/durable-execution/{name}/{uuid.uuid4().hex}"
            execution = Execution(
                arn=arn, name=name, function_name=fn.function_name,
                function_arn=f"{base}:{version}", version=version, role=fn.role,
                region=fn.region, input_payload=payload, config=dict(config), backend=backend,
            )  # fmt: skip
            op_id = execution.id  # the EXECUTION operation's id ends the ARN (SDK 3 reads so)
            execution.operations[op_id] = {
                "Id": op_id, "Type": "EXECUTION", "Name": name, "Status": "STARTED",
                "StartTimestamp": execution.started,
                "ExecutionDetails": {"InputPayload": payload},
            }  # fmt: skip
            execution.touch(op_id)
            api.record_event(execution, execution.operations[op_id])
            self.executions[arn] = execution
        return execution, True

    def _background(self, execution: Execution) -> None:
        def run() -> None:
            try:
                with iam.acting_as(None):
                    self.drive(execution)
            except Exception:
                LOG.exception("durable execution %s", execution.arn)

        threading.Thread(target=run, name=f"durable-{execution.id[:8]}", daemon=True).start()

    # --- running -------------------------------------------------------------------------
    def _event(self, execution: Execution) -> dict[str, Any]:
        ops = [api.operation_json(op) for op in execution.operations.values()]
        return {
            "DurableExecutionArn": execution.arn,
            "CheckpointToken": execution.issue_token(),
            "InitialExecutionState": {
                "Operations": ops[:PAGE],
                "NextMarker": str(PAGE) if len(ops) > PAGE else "",
            },
        }

    def drive(self, execution: Execution) -> None:
        """Invoke the handler until the execution ends (or the cloud stops)."""
        failures = 0
        while not self.closed:
            with execution.cond:
                if execution.status != "RUNNING":
                    return
                if execution.elapsed() >= execution.config["ExecutionTimeout"]:
                    self._time_out(execution)
                    return
                event = self._event(execution)
                execution.ready = False
            headers: dict[str, Any] = {}
            try:
                out = execution.backend.invoke(
                    execution.function_name, execution.version, json.dumps(event),
                    {DURABLE_HEADER: execution.arn}, headers,
                )  # fmt: skip
                answer = json.loads(out) if out else None
            except JsonRESTError as exc:  # throttled, service error: a failed invocation
                headers["x-amz-function-error"] = "Unhandled"
                answer = {"errorType": exc.error_type, "errorMessage": exc.message}
            execution.invocations += 1
            with execution.cond:
                execution.token = None  # its checkpoint token ends with the invocation
                if execution.status != "RUNNING":
                    return
                status = answer.get("Status") if isinstance(answer, dict) else None
                if headers.get("x-amz-function-error") or status not in (
                    "SUCCEEDED", "FAILED", "PENDING",
                ):  # fmt: skip
                    failures += 1
                    if failures >= INVOCATION_ATTEMPTS:
                        execution.close("FAILED", error=_error_object(answer))
                    continue  # to the next attempt (or the end: the loop returns once it ended)
                failures = 0
                assert isinstance(answer, dict)
                if status == "SUCCEEDED":
                    execution.close("SUCCEEDED", result=answer.get("Result") or execution.result)
                elif status == "FAILED":
                    execution.close("FAILED", error=answer.get("Error") or execution.error or {})
            self._await(execution)  # returns at once when it has ended

    def _await(self, execution: Execution) -> None:
        """Until something the suspended execution waits for happens (or it ends)."""
        while not self.closed:
            with execution.cond:
                if execution.status != "RUNNING" or execution.ready:
                    return
                remaining = execution.config["ExecutionTimeout"] - execution.elapsed()
                if remaining <= 0:
                    self._time_out(execution)
                    return
                if self._expire_callbacks(execution):
                    return
                timer = min(execution.timers) if execution.timers else None
                if timer is None:
                    deadlines = [d for ends in execution.callbacks.values() for d in ends[:2] if d]
                    pause = min([remaining, 0.5, *(d - time.monotonic() for d in deadlines)])
                    execution.cond.wait(max(pause, 0.001))
                    continue
                delay = max(0.0, timer[0] - execution.elapsed())
            self.rt.clock.sleep(delay)  # the wait or retry delay, on the cloud's clock
            with execution.cond:
                execution.virtual += delay * max(0.0, 1.0 - self.rt.clock.scale)
                self._fire_timers(execution)
                return

    def _fire_timers(self, execution: Execution) -> None:
        due = [t for t in execution.timers if t[0] <= execution.elapsed() + 1e-6]
        execution.timers = [t for t in execution.timers if t not in due]
        for _, op_id in due:
            op = execution.operations[op_id]
            if op["Type"] == "WAIT" and op["Status"] == "STARTED":
                api.set_status(execution, op, "SUCCEEDED")
            elif op["Type"] == "STEP" and op["Status"] == "PENDING":
                api.set_status(execution, op, "READY")
        execution.ready = True

    def _expire_callbacks(self, execution: Execution) -> bool:
        expired = False
        for op_id, (end, heartbeat, _) in list(execution.callbacks.items()):
            kind = "Callback.Timeout" if end and time.monotonic() >= end else None
            if not kind and heartbeat and time.monotonic() >= heartbeat:
                kind = "Callback.Heartbeat"
            if kind:
                op = execution.operations[op_id]
                error = {"ErrorType": kind, "ErrorMessage": f"Callback timed out: {kind}"}
                op["CallbackDetails"]["Error"] = error
                api.set_status(execution, op, "TIMED_OUT")
                del execution.callbacks[op_id]
                execution.ready = expired = True
        return expired

    def _time_out(self, execution: Execution) -> None:
        timeout = execution.config["ExecutionTimeout"]
        execution.close(
            "TIMED_OUT",
            error={"ErrorType": "Execution.TimedOut",
                   "ErrorMessage": f"The durable execution timed out after {timeout} seconds"},
        )  # fmt: skip

    def resume(self, execution: Execution) -> None:
        """Something it waits for has happened: replay it (called with ``cond`` held)."""
        execution.ready = True
        execution.cond.notify_all()

    # --- chained invokes -----------------------------------------------------------------
    def chained_invoke(self, execution: Execution, op_id: str, target: str, payload: str) -> None:
        """Invoke ``target`` for the CHAINED_INVOKE ``op_id`` as the function's role, and
        complete the operation with its answer."""

        def run() -> None:
            caller = iam.role(execution.role, execution.function_name)
            try:
                with iam.acting_as(caller):
                    reply = clients.client("lambda", execution.region, clients.ONE_ATTEMPT).invoke(
                        FunctionName=target, Payload=(payload or "{}").encode()
                    )
                body = reply["Payload"].read().decode()
                if reply.get("FunctionError"):
                    outcome, detail = "FAILED", {"Error": _error_object(json.loads(body or "{}"))}
                else:
                    outcome, detail = "SUCCEEDED", {"Result": body}
            except Exception as exc:  # refused: AccessDenied, not found, ...
                error = {"ErrorType": "ChainedInvoke.FailedToStart", "ErrorMessage": str(exc)}
                outcome, detail = "FAILED", {"Error": error}
            with execution.cond:
                op = execution.operations[op_id]
                if op["Status"] not in api.TERMINAL and execution.status == "RUNNING":
                    op["ChainedInvokeDetails"] = detail
                    api.set_status(execution, op, outcome)
                    self.resume(execution)

        threading.Thread(target=run, name=f"durable-invoke-{op_id[:8]}", daemon=True).start()

    # --- answers -------------------------------------------------------------------------
    def wait(self, execution: Execution, timeout: float | None = None) -> bool:
        return execution.done.wait(timeout)

    def answer(self, execution: Execution, response_headers: Any) -> bytes:
        response_headers["x-amz-executed-version"] = execution.version
        if execution.status == "SUCCEEDED":
            return (execution.result or "null").encode()
        error = execution.error or {}
        response_headers["x-amz-function-error"] = "Unhandled"
        payload: dict[str, Any] = {
            "errorType": error.get("ErrorType") or execution.status,
            "errorMessage": error.get("ErrorMessage")
            or f"The durable execution ended {execution.status}",
        }
        if error.get("StackTrace"):
            payload["stackTrace"] = error["StackTrace"]
        return json.dumps(payload).encode()

    def find(self, arn: str) -> Execution:
        with self.lock:
            execution = self.executions.get(arn)
        if execution is None:
            raise DurableError(
                "ResourceNotFoundException", f"Durable execution not found: {arn}", 404
            )
        return execution

    def of(self, function_name: str) -> list[Execution]:
        with self.lock:
            return [e for e in self.executions.values() if e.function_name == function_name]

    def close(self) -> None:
        self.closed = True
        with self.lock:
            executions = list(self.executions.values())
        for execution in executions:
            with execution.cond:
                execution.cond.notify_all()


# ------------------------------------------------------------------ patches
def _build(rt: Runtime) -> Targets:
    service = DurableService(rt)
    rt.durable_executions = service  # type: ignore[attr-defined]  # tests: durable_service()

    def durable(self: LocalLambdaBackend, *args: Any) -> bytes | None:  # its invoke's arguments
        return service.invoke(self, *args)

    rt.on_close(service.close)
    targets: Targets = {(LocalLambdaBackend, "durable"): durable}
    targets[(lambda_urls, "url_paths")] = {**lambda_urls.url_paths, **api.URL_PATHS}
    for name, method in api.methods(service).items():
        targets[(LambdaResponse, name)] = method
    return targets


def durable_service(rt: Runtime) -> DurableService:
    """The durable executions of the cloud of ``rt``."""
    service: DurableService = rt.durable_executions  # type: ignore[attr-defined]
    return service


PATCHES = [
    Patch(
        name="lambda-durable-functions",
        kind=Kind.FEATURE,
        reason="Lambda durable functions (DurableConfig): a qualified invocation starts a "
        "durable execution, served by CheckpointDurableExecution / GetDurableExecutionState and "
        "replayed after waits, retries, callbacks and chained invokes (moto has none of it).",
        test="localcloud/tests/test_lambda_durable.py::test_a_wait_is_replayed_and_steps_run_once",
        build=_build,
        adds=tuple(api.METHOD_NAMES),
    ),
]
