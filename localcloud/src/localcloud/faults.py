"""Faults injected at the boundaries of the local cloud.

* functions: the Nth invocation of a function (by physical name) raises an error, times out
  (``Sandbox.Timedout``), or runs ``before`` first (to hold it: ``gate``);
* operations: ``(service, operation)`` answered with an AWS error code N times, for any caller:
  the handlers, the state machine's service integrations, the AWS CLI through the server.
  Every moto request except S3's passes through ``BaseResponse.call_action``
  (moto/core/responses.py); S3 enters through ``S3Response.key_response`` / ``bucket_response``
  (moto/s3/responses.py). moto has no hook there, hence the ``operation-faults`` patch
  (features/faults.py);
* deliveries: an EventBridge rule target delivery fails with an EventBridge error code;
* put-events entries: PutEvents entries rejected per entry (every Nth, or a ratio).

The faults-file format (``Faults.load``) is documented in the README ("The local cloud").
"""

from __future__ import annotations

import random
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any

__all__ = [
    "ERROR_STATUS",
    "Faults",
    "FunctionFault",
    "Gate",
    "LambdaServiceError",
    "LambdaTimeout",
    "OperationFault",
    "named_error",
]


class LambdaServiceError(Exception):
    """Raise from a handler to simulate a Lambda *service* error (not a function error).
    code: ServiceException (500), TooManyRequestsException (429), AWSLambdaException ..."""

    def __init__(self, code: str = "ServiceException", message: str = "boom", status: int = 500):
        super().__init__(message)
        self.code, self.status = code, status


class LambdaTimeout(Exception):
    """Raise from a handler to simulate the function hitting its own timeout
    (AWS reports errorType 'Sandbox.Timedout' to Step Functions)."""


class FunctionFault:
    """Replace one invocation of a function: raise ``error`` (as the runtime would report it),
    or call ``before`` (e.g. block on an event) and then run the real handler."""

    def __init__(
        self, error: BaseException | None = None, before: Callable[[], None] | None = None
    ):
        self.error, self.before = error, before

    def as_handler(self, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def faulty(event: Any, context: Any) -> Any:
            if self.before is not None:
                self.before()
            if self.error is not None:
                raise self.error
            return handler(event, context)

        return faulty


class OperationFault:
    """Answer ``times`` calls of one AWS operation with an error (as the service would)."""

    def __init__(self, code: str, message: str, status: int, times: int) -> None:
        self.code, self.message, self.status, self.remaining = code, message, status, times


# HTTP status AWS answers with for the error codes a fault is likely to name.
ERROR_STATUS = {
    "ThrottlingException": 400,
    "Throttling": 400,
    "ProvisionedThroughputExceededException": 400,
    "RequestLimitExceeded": 400,
    "TooManyRequestsException": 429,
    "SlowDown": 503,
    "ServiceUnavailable": 503,
    "InternalError": 500,
    "InternalFailure": 500,
    "InternalServerError": 500,
    "ServiceException": 500,
    "AccessDenied": 403,
    "AccessDeniedException": 400,
    "NoSuchKey": 404,
    "NoSuchBucket": 404,
    "ResourceNotFoundException": 400,
}


def named_error(type_name: str, message: str = "") -> Exception:
    """An exception whose class name is ``type_name`` (what the Python runtime reports as
    ``errorType``, and Step Functions matches in ``ErrorEquals``)."""
    if type_name == "LambdaTimeout":
        return LambdaTimeout()
    return type(type_name, (Exception,), {})(message or type_name)


class Gate:
    """A held invocation: ``entered`` is set when it starts, it runs on after ``release()``."""

    def __init__(self, timeout: float) -> None:
        self.entered, self._released, self._timeout = threading.Event(), threading.Event(), timeout

    def hold(self) -> None:
        self.entered.set()
        self._released.wait(self._timeout)

    def release(self) -> None:
        self._released.set()


class Faults:
    """The faults of the module docstring, injected and taken (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_function: dict[str, dict[int, FunctionFault]] = defaultdict(dict)
        self._operations: dict[tuple[str, str], list[OperationFault]] = defaultdict(list)
        self._deliveries: list[dict[str, Any]] = []
        self._entries: dict[str, Any] | None = None
        self._entry_count = 0

    # --- functions ------------------------------------------------------------------
    def fail(self, function: str, error: BaseException, *, times: int = 1, start: int = 1) -> None:
        """Make invocations ``start`` .. ``start + times - 1`` of ``function`` raise ``error``."""
        with self._lock:
            for n in range(start, start + times):
                self._by_function[function][n] = FunctionFault(error=error)

    def timeout(self, function: str, *, times: int = 1, start: int = 1) -> None:
        """Make those invocations run past the function's Timeout (``Sandbox.Timedout``)."""
        self.fail(function, LambdaTimeout(), times=times, start=start)

    def hold(self, function: str, before: Callable[[], None], *, invocation: int = 1) -> None:
        """Run ``before`` (e.g. wait on a threading.Event) before that invocation's handler."""
        with self._lock:
            self._by_function[function][invocation] = FunctionFault(before=before)

    def gate(self, function: str, *, invocation: int = 1, timeout: float = 10.0) -> Gate:
        """Hold that invocation at its start until ``Gate.release()`` (or ``timeout``)."""
        gate = Gate(timeout)
        self.hold(function, gate.hold, invocation=invocation)
        return gate

    def take(self, function: str, number: int) -> FunctionFault | None:
        with self._lock:
            return self._by_function.get(function, {}).pop(number, None)

    # --- AWS operations -------------------------------------------------------------
    def fail_operation(
        self,
        service: str,
        operation: str,
        code: str,
        *,
        times: int = 1,
        message: str = "",
        status: int | None = None,
    ) -> None:
        """Answer the next ``times`` calls of ``service`` ``operation`` (e.g. "dynamodb",
        "UpdateItem") with error ``code``."""
        fault = OperationFault(
            code, message or f"Injected fault: {code}", status or ERROR_STATUS.get(code, 400), times
        )
        with self._lock:
            self._operations[(service.lower(), operation)].append(fault)

    def take_operation(self, service: str, operation: str) -> OperationFault | None:
        key = (service.lower(), operation)
        with self._lock:
            queue = self._operations.get(key)
            if not queue:
                return None
            fault = queue[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                queue.pop(0)
            return fault

    # --- EventBridge deliveries -----------------------------------------------------
    def fail_delivery(
        self, code: str, *, times: int = 1, target: str = "", rule: str = "", message: str = ""
    ) -> None:
        """Make the next ``times`` deliveries (to ``target`` / of ``rule``, ARN substrings;
        any when empty) fail with EventBridge error ``code`` (NO_PERMISSIONS, NO_RESOURCE,
        THROTTLING, TIMEOUT, ...)."""
        fault: dict[str, Any] = {"code": code, "remaining": times, "target": target, "rule": rule}
        fault["message"] = message or f"Injected delivery failure: {code}"
        with self._lock:
            self._deliveries.append(fault)

    def take_delivery(self, rule_arn: str, target_arn: str) -> tuple[str, str] | None:
        with self._lock:
            for fault in self._deliveries:
                if fault["target"] in target_arn and fault["rule"] in rule_arn:
                    fault["remaining"] -= 1
                    if fault["remaining"] <= 0:
                        self._deliveries.remove(fault)
                    return fault["code"], fault["message"]
        return None

    def fail_put_events_entries(
        self, code: str = "InternalFailure", *, every: int = 0, ratio: float = 0.0, seed: int = 0
    ) -> None:
        """Reject PutEvents entries: every ``every``-th entry, or a ``ratio`` of them (seeded)."""
        pattern = random.Random(seed)  # noqa: S311 - reproducible fault pattern
        with self._lock:
            self._entries = {"code": code, "every": every, "ratio": ratio, "random": pattern}
            self._entry_count = 0

    def take_entry(self) -> str | None:
        with self._lock:
            spec = self._entries
            if spec is None:
                return None
            self._entry_count += 1
            if spec["every"] and self._entry_count % spec["every"] == 0:
                return str(spec["code"])
            if spec["ratio"] and spec["random"].random() < spec["ratio"]:
                return str(spec["code"])
            return None

    # --- as data (faults file / admin endpoint) -------------------------------------
    def load(self, spec: dict[str, Any], functions: dict[str, str] | None = None) -> None:
        """Add the faults described by ``spec`` (the faults-file format, README "The local cloud").
        ``functions`` maps logical ids to physical names so a file can say "MyFunction"."""
        functions = functions or {}
        for f in spec.get("functions", []):
            name = functions.get(f["function"], f["function"])
            times, start = int(f.get("times", 1)), int(f.get("invocation", 1))
            if f.get("timeout"):
                self.timeout(name, times=times, start=start)
            else:
                self.fail(
                    name, named_error(f["error"], f.get("message", "")), times=times, start=start
                )
        for o in spec.get("operations", []):
            self.fail_operation(
                o["service"],
                o["operation"],
                o["code"],
                times=int(o.get("times", 1)),
                message=o.get("message", ""),
                status=o.get("status"),
            )
        for d in spec.get("deliveries", []):
            self.fail_delivery(
                d["code"],
                times=int(d.get("times", 1)),
                target=d.get("target", ""),
                rule=d.get("rule", ""),
                message=d.get("message", ""),
            )
        if "put_events_entries" in spec:
            e = spec["put_events_entries"]
            self.fail_put_events_entries(
                e.get("code", "InternalFailure"),
                every=int(e.get("every", 0)),
                ratio=float(e.get("ratio", 0.0)),
                seed=int(e.get("seed", 0)),
            )

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "functions": [
                    {
                        "function": fn,
                        "invocation": n,
                        "error": type(f.error).__name__ if f.error else None,
                        "hold": f.before is not None,
                    }
                    for fn, by_n in self._by_function.items()
                    for n, f in sorted(by_n.items())
                ],
                "operations": [
                    {"service": s, "operation": o, "code": f.code, "times": f.remaining}
                    for (s, o), faults in self._operations.items()
                    for f in faults
                ],
                "deliveries": [dict(d) for d in self._deliveries],
                "put_events_entries": None
                if self._entries is None
                else {k: v for k, v in self._entries.items() if k != "random"},
            }

    def clear(self) -> None:
        with self._lock:
            self._by_function.clear()
            self._operations.clear()
            self._deliveries.clear()
            self._entries = None
            self._entry_count = 0
