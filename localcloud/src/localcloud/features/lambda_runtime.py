"""Lambda's Invoke: in the function's environment processes (features/lambda_processes.py, the
default where the Lambda runtime is installed), or its real handler run in-process (threads:
``LOCALCLOUD_ENVIRONMENTS=thread``, no .venv-lambda, or a Python callable a test registered).

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

A function runs one invocation at a time here (one environment, see ``_in_environment``); on
AWS a concurrent invocation gets an environment of its own at once. So neither the function's
Timeout nor a Step Functions task's ``TimeoutSeconds`` counts the time an invocation waits for
the environment (:class:`~localcloud.runtime.EnvironmentWaits`, and the
``task-timeout-excludes-environment-wait`` patch).
"""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from collections import defaultdict
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from moto.awslambda_simple import models as simple_models
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.base_backend import BackendDict
from moto.core.exceptions import JsonRESTError
from moto.stepfunctions.parser.asl.component.state.exec import execute_state

from localcloud.environments import TooManyRequests
from localcloud.faults import LambdaServiceError, LambdaTimeout
from localcloud.iam import enforcement as iam
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Handler, Runtime

__all__ = [
    "PATCHES",
    "REQUEST_ID_HEADER",
    "TENANT_HEADER",
    "FakeLambdaContext",
    "InProcessLambdaBackend",
    "InitError",
    "request_header",
]

#: an invocation's request id, given by the local cloud's asynchronous queue (the same for
#: each retry of one event, as on AWS): features/lambda_async.py
REQUEST_ID_HEADER = "x-localcloud-request-id"
#: Invoke's TenantId (botocore: header X-Amz-Tenant-Id), read by features/lambda_tenancy.py
TENANT_HEADER = "X-Amz-Tenant-Id"


class InitError(Exception):
    """The function's environment could not start: its handler cannot be imported or found.
    Raised by every invocation, as the Python runtime reports it (``errorType``
    ``Runtime.ImportModuleError``, ``Runtime.HandlerNotFound``, ...): on Lambda, a function
    whose code does not import is created all the same and fails when invoked."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def request_header(headers: Any, name: str) -> str | None:
    """An Invoke request's header (any case), or None."""
    for key, value in dict(headers or {}).items():
        if str(key).lower() == name.lower():
            return str(value)
    return None


class _ServiceError(JsonRESTError):
    def __init__(self, code: str, message: str, status: int):
        self.code = status
        super().__init__(code, message)


class _Response(bytes):
    """An environment process's response document, returned as it is."""


class FakeLambdaContext:
    def __init__(self, fn: Any) -> None:
        self.function_name = fn.function_name
        self.function_version = str(fn.version)
        self.invoked_function_arn = fn.function_arn
        self.memory_limit_in_mb = int(fn.memory_size or 128)
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{fn.function_name}"
        self.log_stream_name = "local"
        self.tenant_id: str | None = None  # a tenant-isolated function's (lambda_tenancy.py)
        self._timeout_ms = int(fn.timeout or 3) * 1000
        self._deadline = time.monotonic() + self._timeout_ms / 1000

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class InProcessLambdaBackend(LambdaSimpleBackend):
    """``LambdaSimpleBackend`` whose ``invoke`` runs the registered handler in-process."""

    runtime: Runtime  # set on the per-cloud subclass made by the patch
    environments: defaultdict[str, threading.Lock]
    #: set by a stack deploy while it creates the stack: the handler of a function it has
    #: created but not registered yet (a custom resource's provider is invoked then)
    deploying: Callable[[str], Handler | None] | None = None

    def _in_environment(
        self, function: str, handler: Handler, environment: str | None = None
    ) -> Handler:
        """The handler as one Lambda execution environment runs it: one invocation at a time.

        A function's module state (powertools Logger, Metrics and Tracer, cached clients) is
        shared by every in-process invocation, and AWS never runs two invocations in one
        environment at once; concurrent ones would mix each other's metrics and log keys.
        Threads take turns on the interpreter lock anyway, so nothing runs slower.
        """
        lock = self.environments[environment or function]
        enforce = self.runtime.enforce_function_timeout
        waits = self.runtime.environment_waits

        caller = iam.role(self.get_function(function).role, function)

        def run(event: Any, ctx: Any) -> Any:
            with waits.waiting():
                lock.acquire()
            caller_set = iam.CALLER.set(caller)  # its SDK calls: its execution role
            try:
                started = time.monotonic()
                # The function's time starts when its environment runs it, not while it waits
                # for this one (on AWS another environment would have taken it).
                ctx._deadline = started + ctx._timeout_ms / 1000
                result = handler(event, ctx)
                if enforce and time.monotonic() - started > ctx._timeout_ms / 1000:
                    raise LambdaTimeout()  # ran past the function's Timeout, reported as AWS does
                return result
            finally:
                iam.CALLER.reset(caller_set)
                lock.release()

        return run

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

    def tenant_handler(self, fn: Any, handler: Handler, tenant: str) -> Handler:
        """The handler of ``tenant``'s own environment (features/lambda_tenancy.py)."""
        return handler

    def logged(self, fn: Any, handler: Handler, environment: str | None) -> Handler:
        """The handler, its output written to the function's log (features/lambda_logs.py)."""
        return handler

    def _handler(self, fn: Any) -> Handler | None:
        handler = self.runtime.handlers.get(fn.function_name)
        if str(fn.version) != "$LATEST":  # a published version runs the code it was made from
            handler = self.runtime.code_handlers.get((fn.function_name, fn.code_sha_256), handler)
        if handler is None and self.deploying is not None:
            handler = self.deploying(fn.function_name)
        return handler

    def _in_process_of_its_own(  # noqa: PLR0917 - the invocation's parts
        self, handler: Any, fn: Any, body: Any, response_headers: Any, rec: dict[str, Any],
        tenant: str | None,
    ) -> Handler:  # fmt: skip
        """The invocation in the function's own environment processes
        (features/lambda_processes.py; a tenant's own), as a handler whose result is the
        response's bytes."""

        def run(event: Any, ctx: Any) -> _Response:
            try:
                return _Response(self.runtime.processes.invoke(  # type: ignore[union-attr]
                    handler, fn, body, ctx.aws_request_id, response_headers, rec, tenant
                ))  # fmt: skip
            except TooManyRequests as e:  # a service error, as the one a fault raises
                raise LambdaServiceError("TooManyRequestsException", e.message, 429) from e

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
        handler = self._handler(fn)
        if handler is None:
            return super().invoke(function_name, qualifier, body, headers, response_headers)
        process = self.runtime.processes is not None and hasattr(handler, "processes")
        tenant = self.tenant_of(fn, headers)
        if tenant is not None and not process:  # a process's: an environment pool of its own
            handler = self.tenant_handler(fn, handler, tenant)
        durable = self.durable(fn, function_name, qualifier, body, headers, response_headers)
        if durable is not None:
            return durable
        raw = body
        if isinstance(body, bytes):
            body = body.decode()
        event = json.loads(body) if body else {}
        ctx = FakeLambdaContext(fn)
        ctx.tenant_id = tenant
        ctx.aws_request_id = request_header(headers, REQUEST_ID_HEADER) or ctx.aws_request_id
        response_headers["x-amzn-RequestId"] = ctx.aws_request_id  # fixes/lambda_invoke_request_id
        rec: dict[str, Any] = {
            "function": fn.function_name,
            "event": event,
            "thread": "process" if process else threading.current_thread().name,
            "tenant": tenant,
        }
        number = self.runtime.count_invocation(rec)
        fault = self.runtime.faults.take(fn.function_name, number)
        if process:
            handler = self._in_process_of_its_own(handler, fn, raw, response_headers, rec, tenant)
        else:
            environment = None if tenant is None else f"{fn.function_name}#{tenant}"
            handler = self.logged(
                fn, self._in_environment(fn.function_name, handler, environment), environment
            )
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
            error_type = e.error_type if isinstance(e, InitError) else type(e).__name__
            rec["outcome"] = error_type
            response_headers["x-amz-function-error"] = "Unhandled"
            tb = e.__traceback__.tb_next if e.__traceback__ else None  # drop this frame
            return json.dumps(
                {
                    "errorMessage": str(e),
                    "errorType": error_type,
                    "requestId": ctx.aws_request_id,
                    "stackTrace": traceback.format_tb(tb),
                }
            ).encode()
        if isinstance(result, _Response):  # an environment process's, outcome recorded
            return bytes(result)
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


def _build_task_timeout(rt: Runtime) -> Targets:
    """moto's ``ExecutionState._evaluate_with_timeout`` starts a thread to evaluate the task
    and waits ``TimeoutSeconds`` on an Event for it. Both names are replaced in that module
    only: the thread says, to the thread that starts it, that it is the task's; the Event's
    wait then moves its deadline by the time that task's thread has waited for a function's
    environment, counted again each time the deadline comes (a wait under way included)."""
    waits = rt.environment_waits
    starter = threading.local()  # per thread: the task thread it started last

    class TaskThread(threading.Thread):
        def start(self) -> None:
            starter.task = self
            super().start()

    class TaskDeadline(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            task: threading.Thread | None = getattr(starter, "task", None)
            if timeout is None or task is None:
                return super().wait(timeout)
            began = time.monotonic()
            while True:
                left = began + timeout + waits.of(task) - time.monotonic()
                if left <= 0:
                    return self.is_set()
                if super().wait(left):  # at the deadline: moved on if the task waited since
                    return True

    return {
        (execute_state, "Thread"): TaskThread,
        (execute_state, "threading"): SimpleNamespace(Event=TaskDeadline),
    }


PATCHES = [
    Patch(
        name="in-process-lambda",
        kind=Kind.FEATURE,
        reason="Lambda Invoke runs the function's real handler in-process (no Docker), with its "
        "Timeout, a context, and function/service errors as AWS reports them to Step Functions.",
        test="tests/e2e/test_event_graph.py::test_upload_runs_the_happy_path",
        build=_build,
    ),
    Patch(
        name="task-timeout-excludes-environment-wait",
        kind=Kind.FEATURE,
        reason="A Step Functions task's TimeoutSeconds does not count the time its Lambda "
        "invocation waits for the function's one local environment (on AWS a concurrent "
        "invocation gets its own at once).",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_a_tasks_timeout_does_not_count_the_wait_for_the_functions_environment",
        build=_build_task_timeout,
    ),
]
