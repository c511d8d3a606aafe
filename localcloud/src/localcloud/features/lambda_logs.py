"""Feature: a function's log in CloudWatch Logs, as Lambda writes it.

Lambda sends what a function writes (stdout, stderr), framed by its own ``START``, ``END`` and
``REPORT`` lines, to the function's log group (``LoggingConfig.LogGroup``, else
``/aws/lambda/<function name>``; created at the first invocation when the template does not
create it), in a log stream of the execution environment that ran the invocation (named as
Lambda names them: ``2026/01/31/[$LATEST]<32 hex digits>``), one event per line. So ``aws logs
tail``, ``filter-log-events``, ``sam logs`` read a function's output here as on AWS, whichever
way the cloud runs its functions:

* in environment processes (features/lambda_processes.py): the environment's lines (the
  runtime's output, START / END / REPORT), one stream per environment process;
* on threads of the cloud (features/lambda_runtime.py): what the handler writes to
  ``sys.stdout`` / ``sys.stderr`` on the invocation's thread and on the threads it starts
  during the invocation (they inherit its context: features/iam.py,
  ``threads-inherit-the-caller``, with IAM on), with the error and traceback the Python
  runtime logs for a function error and the line of a timeout; one stream per environment (a
  function version, a tenant's own). The REPORT has no Max Memory Used (not measured
  in-process). The output still reaches the process's stdout too, as before.

The events of an invocation are written when it ends, timestamped then. The context's
``log_group_name`` and ``log_stream_name`` name where they go. Not here: ``LogFormat: JSON``
(the lines are written as text), log levels, the ``INIT_START`` line.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moto.logs.models import logs_backends

from localcloud.environments.spec import log_stream_name
from localcloud.faults import LambdaServiceError, LambdaTimeout
from localcloud.features.lambda_runtime import InitError, InProcessLambdaBackend
from localcloud.patching import Kind, Patch, Targets

if TYPE_CHECKING:
    from localcloud.runtime import Handler, Runtime

__all__ = ["PATCHES", "FunctionLogs", "log_group_of", "uncaptured"]

LOG = logging.getLogger(__name__)

#: the output of the invocation running on this thread (threads mode): chunks as written
_CAPTURE: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "localcloud_function_output", default=None
)
_FORWARDING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "localcloud_function_output_forwarding", default=False
)


def log_group_of(fn: Any) -> str:
    """The function's log group: its LoggingConfig's LogGroup, else Lambda's default."""
    config = getattr(fn, "logging_config", None)
    if config is None:  # a version published before the deploy applied it: $LATEST's
        from moto.awslambda.utils import get_backend

        functions = get_backend(fn.account_id, fn.region)._lambdas._functions
        latest = functions.get(fn.function_name, {}).get("latest")
        config = getattr(latest, "logging_config", None)
    return str((config or {}).get("LogGroup") or f"/aws/lambda/{fn.function_name}")


class _Routed:
    """``sys.stdout`` / ``sys.stderr`` of the process while functions run on its threads:
    what an invocation's thread writes is kept for the function's log, and everything goes
    on to the stream it replaced."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def write(self, text: str) -> int:
        captured = _CAPTURE.get()
        if captured is not None and not _FORWARDING.get():
            captured.append(text)
        token = _FORWARDING.set(True)  # a routed stream behind this one keeps nothing again
        try:
            return int(self.target.write(text))
        finally:
            _FORWARDING.reset(token)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, encoding, isatty, buffer ...
        return getattr(self.target, name)


@contextlib.contextmanager
def uncaptured() -> Iterator[None]:
    """What the local cloud itself writes meanwhile is no function's output (an environment
    process's lines, echoed on the thread of a function that invoked it)."""
    token = _CAPTURE.set(None)
    try:
        yield
    finally:
        _CAPTURE.reset(token)


def _route_output() -> None:
    """Route the process's stdout and stderr (again: a test or pytest may have replaced them)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _Routed):
            setattr(sys, name, _Routed(stream))


class FunctionLogs:
    """The log groups and streams a cloud's functions write to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[tuple[Any, ...], str] = {}

    def stream(self, fn: Any, *environment: Any) -> str:
        """The log stream of one environment of ``fn`` (the same for the same key)."""
        key = (fn.account_id, fn.region, fn.function_name, str(fn.version), *environment)
        with self._lock:
            return self._streams.setdefault(key, log_stream_name(str(fn.version)))

    def write(self, fn: Any, stream: str, lines: list[str]) -> None:
        """``lines`` as events of ``stream`` in the function's log group."""
        if not lines:
            return
        group = log_group_of(fn)
        backend = logs_backends[fn.account_id][fn.region]
        stamp = int(time.time() * 1000)
        events = [{"timestamp": stamp, "message": line} for line in lines]
        with self._lock:  # moto's log streams are not thread-safe
            try:
                if group not in backend.groups:  # Lambda creates it at the first invocation
                    backend.create_log_group(group, {})
                backend.ensure_log_stream(group, stream)
                backend.put_log_events(group, stream, events)
            except Exception:  # delivered apart from the invocation: it never fails it
                LOG.warning("%s: its log could not be written to %s", fn.function_name, group,
                            exc_info=True)  # fmt: skip


def _error_lines(error: BaseException) -> list[str]:
    """What the Python runtime logs for a function error: ``[ERROR] Type: message`` and the
    traceback (without the local cloud's own frame)."""
    error_type = error.error_type if isinstance(error, InitError) else type(error).__name__
    lines = [f"[ERROR] {error_type}: {error}"]
    tb = error.__traceback__.tb_next if error.__traceback__ else None
    if tb is not None:
        lines.append("Traceback (most recent call last):")
        lines += [x for frame in traceback.format_tb(tb) for x in frame.rstrip("\n").split("\n")]
    return lines


def _build(rt: Runtime) -> Targets:
    logs = FunctionLogs()
    rt.function_logs = logs

    def logged(
        self: InProcessLambdaBackend, fn: Any, handler: Handler, environment: str | None
    ) -> Handler:
        stream = logs.stream(fn, environment)

        def run(event: Any, ctx: Any) -> Any:
            ctx.log_group_name, ctx.log_stream_name = log_group_of(fn), stream
            _route_output()
            output: list[str] = []
            token = _CAPTURE.set(output)
            began, status, tail, ran = time.monotonic(), "", [], True
            try:
                return handler(event, ctx)
            except LambdaServiceError:
                ran = False  # Lambda refused it: no environment ran it, nothing is logged
                raise
            except LambdaTimeout:
                seconds, now = ctx._timeout_ms / 1000, time.time()
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
                stamp += f".{int(now * 1000) % 1000:03d}Z"
                tail = [f"{stamp} {ctx.aws_request_id} Task timed out after {seconds:.2f} seconds"]
                status = "\tStatus: timeout"
                raise
            except Exception as e:  # the REPORT says so when the environment could not start
                tail = _error_lines(e)
                if isinstance(e, InitError):
                    status = f"\tStatus: error\tError Type: {e.error_type}"
                raise
            finally:
                _CAPTURE.reset(token)
                if ran:
                    _write(fn, ctx, stream, "".join(output).splitlines() + tail, began, status)

        return run

    def _write(  # noqa: PLR0917 - one invocation's report
        fn: Any, ctx: Any, stream: str, lines: list[str], began: float, status: str
    ) -> None:
        # the function's time starts when its environment runs it (_in_environment)
        started = max(began, ctx._deadline - ctx._timeout_ms / 1000)
        duration = (time.monotonic() - started) * 1000
        request = ctx.aws_request_id
        report = (
            f"REPORT RequestId: {request}\tDuration: {duration:.2f} ms\t"
            f"Billed Duration: {max(1, int(duration + 0.999))} ms\t"
            f"Memory Size: {ctx.memory_limit_in_mb} MB{status}"
        )
        logs.write(fn, stream, [
            f"START RequestId: {request} Version: {ctx.function_version}",
            *lines,
            f"END RequestId: {request}",
            report,
        ])  # fmt: skip

    def forget() -> None:
        rt.function_logs = None
        for name in ("stdout", "stderr"):  # the streams _route_output replaced, back
            stream = getattr(sys, name)
            while isinstance(stream, _Routed):
                stream = stream.target
            setattr(sys, name, stream)

    rt.on_close(forget)
    return {(InProcessLambdaBackend, "logged"): logged}


PATCHES = [
    Patch(
        name="lambda-function-logs",
        kind=Kind.FEATURE,
        reason="A function's output, framed by START / END / REPORT, goes to its CloudWatch "
        "log group (a stream per execution environment), as Lambda writes it (moto writes no "
        "function log).",
        test="localcloud/tests/test_lambda_logs.py::test_a_functions_output_is_in_its_log_group",
        build=_build,
    ),
]
