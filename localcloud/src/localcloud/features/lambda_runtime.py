"""Lambda's Invoke: in the function's environment processes (features/lambda_processes.py).

moto's Lambda without Docker (``mock_aws(config={"lambda": {"use_docker": False}})``) is
``moto.awslambda_simple``: a ``LambdaSimpleBackend`` (a ``LambdaBackend`` subclass whose
``invoke`` echoes the payload) kept in the ``BackendDict`` ``lambda_simple_backends``, which
``moto.awslambda.utils.get_backend`` returns for every caller (the Lambda API, CloudFormation,
event source mappings, Step Functions' lambda:invoke). :class:`LocalLambdaBackend`, registered
the same way, runs the invocation instead, with the errors as AWS reports them:

* a handler exception is a function error: ``x-amz-function-error: Unhandled`` and the
  error document of the runtime interface client (errorType, errorMessage, stackTrace), which
  Step Functions turns into Error = errorType (moto: lambda_eval_utils.py,
  LambdaFunctionErrorException);
* a function slower than its Timeout is stopped: ``Sandbox.Timedout``;
* a fault's ``LambdaServiceError`` (faults.py) or a throttle is a Lambda service error
  (``Lambda.ServiceException``, 429, ...), as is ``LambdaTimeout`` a timeout.

A function without code (an image) keeps moto's echo.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from moto.awslambda_simple import models as simple_models
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.base_backend import BackendDict
from moto.core.exceptions import JsonRESTError

from localcloud.environments import TooManyRequests
from localcloud.faults import LambdaServiceError, LambdaTimeout
from localcloud.features.lambda_processes import processes_of
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "REQUEST_ID_HEADER", "TENANT_HEADER", "LocalLambdaBackend", "request_header"]

#: an invocation's request id, given by the local cloud's asynchronous queue (the same for
#: each retry of one event, as on AWS): features/lambda_async.py
REQUEST_ID_HEADER = "x-localcloud-request-id"
#: Invoke's TenantId (botocore: header X-Amz-Tenant-Id), read by features/lambda_tenancy.py
TENANT_HEADER = "X-Amz-Tenant-Id"


def request_header(headers: Any, name: str) -> str | None:
    """An Invoke request's header (any case), or None."""
    items = dict(headers or {}).items()
    return next((str(value) for key, value in items if str(key).lower() == name.lower()), None)


class _ServiceError(JsonRESTError):
    def __init__(self, code: str, message: str, status: int):
        self.code = status
        super().__init__(code, message)


class LocalLambdaBackend(LambdaSimpleBackend):
    runtime: Runtime  # set on the per-cloud subclass made by the patch
    #: set by a stack deploy while it creates the stack: called before a function of it is
    #: invoked (by a custom resource) with its name (stack/custom_resources.py)
    deploying: Callable[[str], None] | None = None

    def durable(  # noqa: PLR0917 - invoke's arguments
        self, fn: Any, function_name: str, qualifier: str | None, body: Any, headers: Any,
        response_headers: Any,
    ) -> bytes | None:  # fmt: skip
        """The answer of a durable function's invocation: its durable execution's
        (features/lambda_durable.py); None for an ordinary invocation."""
        return None

    def tenant_of(self, fn: Any, headers: Any) -> str | None:
        """The tenant an invocation runs for: None unless the function is tenant-isolated
        (features/lambda_tenancy.py, which refuses an invocation without one)."""
        return None

    def _code(self, fn: Any) -> Path | None:
        """The directory of the code an invocation of ``fn`` runs (None: moto's echo)."""
        if self.deploying is not None:
            self.deploying(fn.function_name)
        return processes_of(self.runtime).code(fn)

    def invoke(
        self,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> str | bytes | None:
        fn = self.get_function(function_name, qualifier)  # unknown -> ResourceNotFoundException
        code = self._code(fn)
        if code is None:
            return super().invoke(function_name, qualifier, body, headers, response_headers)
        tenant = self.tenant_of(fn, headers)
        durable = self.durable(fn, function_name, qualifier, body, headers, response_headers)
        if durable is not None:
            return durable
        request_id = request_header(headers, REQUEST_ID_HEADER) or str(uuid.uuid4())
        response_headers["x-amzn-RequestId"] = request_id  # fixes/lambda_invoke_request_id
        rec: dict[str, Any] = {
            "function": fn.function_name,
            "event": json.loads(body) if body else {},
            "thread": threading.current_thread().name,  # the invoker's
            "tenant": tenant,
        }
        number = self.runtime.count_invocation(rec)
        fault = self.runtime.faults.take(fn.function_name, number)
        processes = processes_of(self.runtime)

        def run(event: Any, context: Any) -> bytes:
            try:
                return processes.invoke(fn, code, body, request_id, response_headers, rec, tenant)
            except TooManyRequests as e:  # a service error, as the one a fault raises
                raise LambdaServiceError("TooManyRequestsException", e.message, 429) from e

        handler = run if fault is None else fault.as_handler(run)  # a held one waits outside
        try:
            return handler(rec["event"], None)
        except LambdaServiceError as e:
            rec["outcome"] = e.code
            raise _ServiceError(e.code, str(e), e.status) from e
        except LambdaTimeout:
            error: dict[str, Any] = {
                "errorType": "Sandbox.Timedout",
                "errorMessage": f"RequestId: {request_id} Error: Task timed out after "
                f"{float(fn.timeout or 3):.2f} seconds",
            }
        except Exception as e:  # a fault's function error, as the Python runtime reports it
            if fault is None or e is not fault.error:
                raise  # the local cloud's own failure: not the function's
            error = {"errorMessage": str(e), "errorType": type(e).__name__,
                     "requestId": request_id, "stackTrace": []}  # fmt: skip
        rec["outcome"] = error["errorType"]
        response_headers["x-amz-function-error"] = "Unhandled"
        return json.dumps(error).encode()


def _build(rt: Runtime) -> Targets:
    backend = type("LocalLambdaBackend", (LocalLambdaBackend,), {"runtime": rt})
    backends: BackendDict[Any] = BackendDict(backend, "lambda")

    def forget() -> None:  # BackendDict keeps every instance for moto's reset
        if backends in BackendDict._instances:
            BackendDict._instances.remove(backends)

    rt.on_close(forget)
    return {(simple_models, "lambda_simple_backends"): backends}


PATCHES = [
    Patch(
        name="lambda-invoke-in-environments",
        kind=Kind.FEATURE,
        reason="Lambda Invoke runs the function in its environment processes (no Docker), with "
        "function/service errors as AWS reports them to Step Functions (moto echoes the payload).",
        test="tests/e2e/test_event_graph.py::test_upload_runs_the_happy_path",
        build=_build,
    ),
]
