"""The functions' real handlers, run in-process when Lambda is invoked.

moto's Lambda without Docker (``mock_aws(config={"lambda": {"use_docker": False}})``) is
``moto.awslambda_simple``: a ``LambdaSimpleBackend`` (a ``LambdaBackend`` subclass whose
``invoke`` echoes the payload) kept in the ``BackendDict`` ``lambda_simple_backends``, which
``moto.awslambda.utils.get_backend`` returns for every caller (the Lambda API, CloudFormation,
event source mappings, Step Functions' lambda:invoke). :class:`InProcessLambdaBackend` is one
more variant registered the same way: a subclass whose ``invoke`` runs the handler registered
for the function (``Runtime.handlers``, filled by the deploy) with a Lambda context, the
function's Timeout, and the errors as AWS reports them:

* a handler exception is a function error: ``x-amz-function-error: Unhandled`` and the
  payload the Python runtime writes (errorType, errorMessage, stackTrace), which Step
  Functions turns into Error = errorType (moto: lambda_eval_utils.py, LambdaFunctionErrorException);
* a handler slower than the function's Timeout (or ``LambdaTimeout``) is ``Sandbox.Timedout``;
* ``LambdaServiceError`` is a Lambda service error (``Lambda.ServiceException``, 429, ...).

A function without a registered handler keeps moto's echo.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from moto.awslambda_simple import models as simple_models
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.base_backend import BackendDict
from moto.core.exceptions import JsonRESTError

from ingest_tools.localcloud.features.faults import LambdaServiceError, LambdaTimeout
from ingest_tools.localcloud.patching import Kind, Patch, Targets

if TYPE_CHECKING:
    from ingest_tools.localcloud.runtime import Handler, Runtime

__all__ = ["PATCHES", "FakeLambdaContext", "InProcessLambdaBackend"]


class _ServiceError(JsonRESTError):
    def __init__(self, code: str, message: str, status: int):
        self.code = status
        super().__init__(code, message)


class FakeLambdaContext:
    def __init__(self, fn: Any) -> None:
        self.function_name = fn.function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = fn.function_arn
        self.memory_limit_in_mb = int(fn.memory_size or 128)
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{fn.function_name}"
        self.log_stream_name = "local"
        self._timeout_ms = int(fn.timeout or 3) * 1000
        self._deadline = time.monotonic() + self._timeout_ms / 1000

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class InProcessLambdaBackend(LambdaSimpleBackend):
    """``LambdaSimpleBackend`` whose ``invoke`` runs the registered handler in-process."""

    runtime: Runtime  # set on the per-cloud subclass made by the patch
    environments: defaultdict[str, threading.Lock]

    def _in_environment(self, function: str, handler: Handler) -> Handler:
        """The handler as one Lambda execution environment runs it: one invocation at a time.

        A function's module state (powertools Logger, Metrics and Tracer, cached clients) is
        shared by every in-process invocation, and AWS never runs two invocations in one
        environment at once; concurrent ones would mix each other's metrics and log keys.
        Threads take turns on the interpreter lock anyway, so nothing runs slower.
        """
        lock, enforce = self.environments[function], self.runtime.enforce_function_timeout

        def run(event: Any, ctx: Any) -> Any:
            with lock:
                started = time.monotonic()
                # The function's time starts when its environment runs it, not while it waits
                # for this one (on AWS another environment would have taken it).
                ctx._deadline = started + ctx._timeout_ms / 1000
                result = handler(event, ctx)
                if enforce and time.monotonic() - started > ctx._timeout_ms / 1000:
                    raise LambdaTimeout()  # ran past the function's Timeout, reported as AWS does
                return result

        return run

    def invoke(
        self,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> str | bytes | None:
        fn = self.get_function(function_name, qualifier)  # unknown -> ResourceNotFoundException
        handler = self.runtime.handlers.get(fn.function_name)
        if handler is None:
            return super().invoke(function_name, qualifier, body, headers, response_headers)
        if isinstance(body, bytes):
            body = body.decode()
        event = json.loads(body) if body else {}
        ctx = FakeLambdaContext(fn)
        rec: dict[str, Any] = {
            "function": fn.function_name,
            "event": event,
            "thread": threading.current_thread().name,
        }
        number = self.runtime.count_invocation(rec)
        fault = self.runtime.faults.take(fn.function_name, number)
        handler = self._in_environment(fn.function_name, handler)
        if fault is not None:
            handler = fault.as_handler(handler)  # a held invocation waits outside the environment
        try:
            result = handler(event, ctx)
        except LambdaServiceError as e:
            rec["outcome"] = e.code
            raise _ServiceError(e.code, str(e), e.status) from e
        except LambdaTimeout:
            rec["outcome"] = "Sandbox.Timedout"
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps(
                {
                    "errorType": "Sandbox.Timedout",
                    "errorMessage": f"RequestId: {ctx.aws_request_id} Error: Task timed out after "
                    f"{ctx._timeout_ms / 1000:.2f} seconds",
                }
            ).encode()
        except Exception as e:  # function error, as the Python runtime reports it
            rec["outcome"] = type(e).__name__
            response_headers["x-amz-function-error"] = "Unhandled"
            tb = e.__traceback__.tb_next if e.__traceback__ else None  # drop this frame
            return json.dumps(
                {
                    "errorMessage": str(e),
                    "errorType": type(e).__name__,
                    "requestId": ctx.aws_request_id,
                    "stackTrace": traceback.format_tb(tb),
                }
            ).encode()
        rec["outcome"] = "ok"
        return json.dumps(result).encode()


def _build(rt: Runtime) -> Targets:
    backend = type(
        "InProcessLambdaBackend",
        (InProcessLambdaBackend,),
        {"runtime": rt, "environments": defaultdict(threading.Lock)},
    )
    backends: BackendDict[Any] = BackendDict(backend, "lambda")

    def forget() -> None:  # BackendDict keeps every instance for moto's reset
        if backends in BackendDict._instances:
            BackendDict._instances.remove(backends)

    rt.on_close(forget)
    return {(simple_models, "lambda_simple_backends"): backends}


PATCHES = [
    Patch(
        name="in-process-lambda",
        kind=Kind.FEATURE,
        reason="Lambda Invoke runs the function's real handler in-process (no Docker), with its "
        "Timeout, a context, and function/service errors as AWS reports them to Step Functions.",
        test="tests/e2e/test_event_graph.py::test_upload_runs_the_happy_path",
        build=_build,
    )
]
