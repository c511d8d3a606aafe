"""Hooks that make moto's Step Functions engine behave like AWS for this project.

moto (pinned in pyproject.toml) runs real ASL with an interpreter ported from LocalStack
(``mock_aws(config={"stepfunctions": {"execute_state_machine": True}})``). These hooks add
what it lacks. Line numbers below refer to moto 5.2.x.

Hooks (all installed by `install()` and undone by `uninstall()`):

1. In-process Lambda handlers
   moto.awslambda_simple.models.LambdaSimpleBackend.invoke (awslambda_simple/models.py:17)
   is replaced. moto.awslambda.responses.LambdaResponse.invoke (awslambda/responses.py:51)
   passes `response_headers` into it; setting "x-amz-function-error" there makes boto3's
   Invoke response carry FunctionError, which moto's SFN engine
   (stepfunctions/parser/asl/component/state/exec/state_task/lambda_eval_utils.py:101)
   turns into LambdaFunctionErrorException and StateTaskServiceLambda._from_error
   (service/state_task_service_lambda.py:72) turns into Error = payload["errorType"],
   Cause = the payload JSON string.  Raising a moto JsonRESTError from the backend gives
   a ClientError -> Error "Lambda.<Code>" (state_task_service_lambda.py:56).

2. Virtual retry backoff
   JitterStrategyDecl._eval_body (common/retry/jitter_strategy_decl.py) is the last step
   before RetrierDecl._eval_body calls time.sleep(interval) (retrier_decl.py:106-107).
   The wrapper records the computed interval (after BackoffRate, MaxDelaySeconds and
   FULL jitter) and replaces it with interval*SLEEP_SCALE (default 0).
   botocore's own retry backoff (botocore/endpoint.py:381 time.sleep) goes through
   clock_sleep too, so in-process clients retry at once on the virtual clock.

3. Virtual Wait states
   WaitFunction._wait_interval (state/wait/wait_function/wait_function.py:15) is
   replaced: records the seconds and returns at once.

4. MockConfigFile (Step Functions Local format)
   stepfunctions/parser/models.py:159 StepFunctionsParserBackend.start_execution and
   backend/execution.py:277 Execution._get_start_execution_worker are wrapped so that
   start_execution(stateMachineArn="<arn>#<TestCase>") builds a MockTestCase
   (mocking/mock_config.py:75) from MOCK_CONFIG and passes it to ExecutionWorker
   (backend/execution_worker.py:45, mock_test_case=...).

Workarounds for moto bugs/divergences (sections 0, 5-8 below):
0. moto#10077 (2nd StartExecution of a state machine -> TypeError RLock), fixed in moto 5.2.3.
5. $$.State.EnteredTime / $$.Execution.StartTime formatted like AWS ("...123Z").
6. aws-sdk S3 error names "S3.<X>Exception" (moto: "s3.<X>Exception").
7. Mocked Throw on non-Lambda tasks keeps its Error; missing JSONPath in Parameters -> States.Runtime.
8. CloudFormation AWS::StepFunctions::StateMachine lands in the executing backend, with
   DefinitionSubstitutions and Definition (object) applied.

All of them are one table (``_patches``, applied and undone by ``patching.Patches``), like
the SQS, DynamoDB and request-path replacements in sqs.py, ddb.py and wire.py.

Usage (LocalCloud does this):
    from ingest_tools.localcloud import engine
    engine.install()
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True},
                          "lambda": {"use_docker": False}}):
        engine.HANDLERS["my-fn"] = app.handler  # key: FunctionName as created in moto
        ...
    engine.uninstall()
"""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import botocore.endpoint as _botocore_endpoint
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.exceptions import JsonRESTError
from moto.stepfunctions.parser import models as sfn_parser_models
from moto.stepfunctions.parser.asl.component.common.retry import jitter_strategy_decl
from moto.stepfunctions.parser.asl.component.state.wait.wait_function import (
    wait_function,
)
from moto.stepfunctions.parser.backend import execution as sfn_execution
from moto.stepfunctions.parser.mocking import mock_config

from ingest_tools.localcloud.patching import Patches

# ---------------------------------------------------------------- 1. Lambda handlers
HANDLERS: dict[str, Callable[[Any, Any], Any]] = {}  # function name -> handler(event, ctx)
ENFORCE_FUNCTION_TIMEOUT = True  # handler slower than the function's Timeout -> Sandbox.Timedout
INVOCATIONS: list[dict] = []  # log of in-process invocations (thread-safe append)
_INVOKED: Counter[str] = Counter()  # invocations per function
_LOCK = threading.Lock()


class LambdaServiceError(Exception):
    """Raise from a handler to simulate a Lambda *service* error (not a function error).
    code: ServiceException (500), TooManyRequestsException (429), AWSLambdaException ..."""

    def __init__(self, code: str = "ServiceException", message: str = "boom", status: int = 500):
        super().__init__(message)
        self.code, self.status = code, status


class LambdaTimeout(Exception):
    """Raise from a handler to simulate the function hitting its own timeout
    (AWS reports errorType 'Sandbox.Timedout' to Step Functions)."""


class _ServiceError(JsonRESTError):
    def __init__(self, code: str, message: str, status: int):
        self.code = status
        super().__init__(code, message)


class FakeLambdaContext:
    def __init__(self, fn):
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


_orig_invoke = LambdaSimpleBackend.invoke
_ENVIRONMENTS: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)


def _in_environment(function: str, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """The handler as one Lambda execution environment runs it: one invocation at a time.

    A function's module state (powertools Logger, Metrics and Tracer, cached clients) is
    shared by every in-process invocation, and AWS never runs two invocations in one
    environment at once; concurrent ones would mix each other's metrics and log keys (a
    burst flushed one invocation's metrics from another: "Must contain at least one
    metric"). Threads take turns on the interpreter lock anyway, so nothing runs slower.
    """

    def run(event: Any, ctx: Any) -> Any:
        with _ENVIRONMENTS[function]:
            started = time.monotonic()
            result = handler(event, ctx)
            if ENFORCE_FUNCTION_TIMEOUT and time.monotonic() - started > ctx._timeout_ms / 1000:
                raise LambdaTimeout()  # ran past the function's Timeout: reported as AWS does
            return result

    return run


def _invoke(self, function_name, qualifier, body, headers, response_headers):
    fn = self.get_function(function_name, qualifier)  # unknown -> ResourceNotFoundException
    handler = HANDLERS.get(fn.function_name)
    if handler is None:
        return _orig_invoke(self, function_name, qualifier, body, headers, response_headers)
    if isinstance(body, bytes):
        body = body.decode()
    event = json.loads(body) if body else {}
    ctx = FakeLambdaContext(fn)
    rec = {"function": fn.function_name, "event": event, "thread": threading.current_thread().name}
    with _LOCK:
        INVOCATIONS.append(rec)
        _INVOKED[fn.function_name] += 1
        number = _INVOKED[fn.function_name]
        fault = FAULTS.take(fn.function_name, number)
    handler = _in_environment(fn.function_name, handler)
    if fault is not None:
        handler = fault.as_handler(handler)  # a held invocation waits outside the environment
    try:
        result = handler(event, ctx)
    except LambdaServiceError as e:
        rec["outcome"] = e.code
        raise _ServiceError(e.code, str(e), e.status)
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
        return json.dumps(
            {
                "errorMessage": str(e),
                "errorType": type(e).__name__,
                "requestId": ctx.aws_request_id,
                "stackTrace": traceback.format_tb(
                    e.__traceback__.tb_next
                ),  # drop this hook's frame
            }
        ).encode()
    rec["outcome"] = "ok"
    return json.dumps(result).encode()


# ---------------------------------------------------------------- 1b. fault injection
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
    ``errorType``); a name from the project's taxonomy gives that class itself."""
    from ingest_pipeline import errors

    known = getattr(errors, type_name, None)
    if isinstance(known, type) and issubclass(known, Exception):
        return known(message or type_name)
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
    """Injected failures at the boundaries of the local cloud (thread-safe).

    * functions: the Nth invocation of a function (by physical name) raises an error, times
      out, or runs ``before`` first (to hold it);
    * operations: ``(service, operation)`` answered with an error code N times (any caller:
      handlers, the state machine's integrations, the AWS CLI through the server);
    * deliveries: an EventBridge rule target delivery fails with an EventBridge error code;
    * put-events entries: PutEvents entries rejected per entry (every Nth, or a ratio).
    """

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
        with self._lock:
            self._deliveries.append(
                {
                    "code": code,
                    "remaining": times,
                    "target": target,
                    "rule": rule,
                    "message": message or f"Injected delivery failure: {code}",
                }
            )

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
        import random

        with self._lock:
            self._entries = {
                "code": code,
                "every": every,
                "ratio": ratio,
                "random": random.Random(seed),  # noqa: S311 - reproducible fault pattern
            }
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
        """Add the faults described by ``spec`` (the faults-file format, see README "The local cloud").
        ``functions`` maps logical ids to physical names so a file can say "ProcessFunction"."""
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


FAULTS = Faults()


def invocation_count(function: str) -> int:
    """How many times ``function`` (physical name) has been invoked in-process so far."""
    with _LOCK:
        return _INVOKED[function]


# ---------------------------------------------------------------- 2. virtual backoff
SLEEP_SCALE = 0.0  # 0: virtual clock (no real sleeping); 1.0: real time; 0.01: 100x faster
VIRTUAL_SLEPT = [0.0]  # total seconds slept on the engine clock outside the ASL (deliveries ...)


def clock_sleep(seconds: float) -> None:
    """Sleep ``seconds`` on the engine clock: recorded, and really slept times SLEEP_SCALE."""
    with _LOCK:
        VIRTUAL_SLEPT[0] += seconds
    if SLEEP_SCALE and seconds > 0:
        time.sleep(seconds * SLEEP_SCALE)


class _ClockTime:
    """``botocore.endpoint``'s view of the ``time`` module: the SDK's retry backoff (the
    Lambdas', the tools', the local cloud's own clients) sleeps on the engine clock, like the
    workflow's Retry and EventBridge's RetryPolicy. botocore.endpoint only calls time.sleep."""

    sleep = staticmethod(clock_sleep)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


RETRY_SLEEPS: dict[str, list[tuple[str, float]]] = defaultdict(list)  # exec arn -> [(state, s)]
_orig_jitter_eval = jitter_strategy_decl.JitterStrategyDecl._eval_body


def _jitter_eval(self, env):
    _orig_jitter_eval(self, env)
    interval = env.stack.pop()
    co = env.states.context_object.context_object_data
    with _LOCK:
        RETRY_SLEEPS[co["Execution"]["Id"]].append((co["State"]["Name"], interval))
    env.stack.append(interval * SLEEP_SCALE)


# ---------------------------------------------------------------- 3. virtual Wait
WAITS: dict[str, list[tuple[str, float]]] = defaultdict(list)
_orig_wait_interval = wait_function.WaitFunction._wait_interval


def _wait_interval(self, env, wait_seconds):
    co = env.states.context_object.context_object_data
    with _LOCK:
        WAITS[co["Execution"]["Id"]].append((co["State"]["Name"], wait_seconds))
    if SLEEP_SCALE and wait_seconds > 0:
        env.program_state_event.wait(wait_seconds * SLEEP_SCALE)


# ---------------------------------------------------------------- 4. MockConfigFile
import os as _os

# parsed SFN Local MockConfigFile JSON; our own convention: path in $SFN_MOCK_CONFIG (moto reads no such variable)
MOCK_CONFIG: dict | None = (
    json.load(open(_os.environ["SFN_MOCK_CONFIG"])) if _os.environ.get("SFN_MOCK_CONFIG") else None
)
_pending_mock = threading.local()
_orig_start_execution = sfn_parser_models.StepFunctionsParserBackend.start_execution
_orig_get_worker = sfn_execution.Execution._get_start_execution_worker


def build_mock_test_case(cfg: dict, sm_name: str, test_case: str) -> mock_config.MockTestCase:
    tc = cfg["StateMachines"][sm_name]["TestCases"][test_case]
    states = []
    for state_name, resp_name in tc.items():
        responses = []
        for rng, spec in cfg["MockedResponses"][resp_name].items():
            start, end = mock_config._parse_mocked_response_range(rng)
            if "Return" in spec:
                responses.append(mock_config.MockedResponseReturn(start, end, spec["Return"]))
            else:
                t = spec["Throw"]
                responses.append(
                    mock_config.MockedResponseThrow(start, end, t.get("Error"), t.get("Cause"))
                )
        states.append(mock_config.StateMockedResponses(state_name, resp_name, responses))
    return mock_config.MockTestCase(sm_name, test_case, states)


def _start_execution(self, state_machine_arn, name=None, execution_input=None, trace_header=None):
    mock = None
    if "#" in state_machine_arn:
        state_machine_arn, test_case = state_machine_arn.split("#", 1)
        sm_name = state_machine_arn.split(":")[6]
        if MOCK_CONFIG is None:
            raise RuntimeError("MOCK_CONFIG not set")
        mock = build_mock_test_case(MOCK_CONFIG, sm_name, test_case)
    _pending_mock.value = mock  # start_execution -> Execution.start -> worker is synchronous
    try:
        return _orig_start_execution(self, state_machine_arn, name, execution_input, trace_header)
    finally:
        _pending_mock.value = None


def _get_worker(self):
    worker = _orig_get_worker(self)
    mock = getattr(_pending_mock, "value", None)
    if mock is not None:
        worker._mock_test_case = mock
    return worker


# ---------------------------------------------------------------- 5. context-object timestamps
# moto: $$.State.EnteredTime = datetime.now(utc).isoformat()  (asl/component/state/state.py:226-229)
#       -> "2026-01-01T00:00:00.123456+00:00";  $$.Execution.StartTime is a datetime object
#       (backend/execution_worker.py:75) serialised with isoformat().
# AWS:  "2026-01-01T00:00:00.123Z" (ms precision, Z).  Matters when the value is stored and
#       compared as a string (claimed_at < :cutoff).
import datetime as _dt

from moto.stepfunctions.parser.asl.component.state import state as _state_mod
from moto.stepfunctions.parser.asl.eval.states import StateData as _StateData
from moto.stepfunctions.parser.backend import execution_worker as _ew


def aws_ts(value) -> str:
    d = value if isinstance(value, _dt.datetime) else _dt.datetime.fromisoformat(value)
    d = d.astimezone(_dt.UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def _state_data(EnteredTime, Name, **kw):
    return _StateData(EnteredTime=aws_ts(EnteredTime), Name=Name, **kw)


_orig_get_env = _ew.ExecutionWorker._get_evaluation_environment


def _get_env(self):
    env = _orig_get_env(self)
    ex = env.states.context_object.context_object_data["Execution"]
    ex["StartTime"] = aws_ts(ex["StartTime"])
    return env


# ---------------------------------------------------------------- 6. aws-sdk error names
# moto 5.2.1 service/state_task_service_aws_sdk.py:34 only maps dynamodb/sfn; S3 errors come out
# as "s3.NoSuchKeyException" while AWS documents PascalCase "S3.<Error>Exception".
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_aws_sdk as _sdk,
)

_SDK_NAMES = {"s3": "S3"}


# ---------------------------------------------------------------- 7. FailureEventException / NoSuchJsonPath pass-through
# Several service integrations override _from_error and only special-case ClientError
# (e.g. service/state_task_service_dynamodb.py:99-129 maps everything else to
# "DynamoDB.AmazonDynamoDBException"). A FailureEventException raised inside the task - a mocked
# Throw from a MockConfigFile (state_task/mock_eval_utils.py:20-33) - loses its Error/Cause.
# ExecutionState._from_error (state/exec/execute_state.py:133-135) already passes it through.
import importlib as _il
import pkgutil as _pkg

from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEventException as _FEE,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task import service as _svc_pkg
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service as _sts,
)


def _all_service_classes():
    for m in _pkg.iter_modules(_svc_pkg.__path__):
        _il.import_module(f"{_svc_pkg.__name__}.{m.name}")
    todo, seen = [_sts.StateTaskService], set()
    while todo:
        k = todo.pop()
        for sub in k.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return seen


from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError as _NoPath


def _wrap_from_error(orig):
    def _from_error(self, env, ex):
        if isinstance(ex, _FEE):
            return ex.failure_event
        if isinstance(ex, _NoPath):
            # AWS: missing JSONPath in Parameters = States.Runtime, not catchable -> execution fails.
            # Re-raising lets BaseState._eval_body (state/state.py:235-252) build that failure.
            raise ex
        return orig(self, env, ex)

    return _from_error


# ---------------------------------------------------------------- 8. CloudFormation state machines
# moto 5.2.1 stepfunctions/models.py:271-286 StateMachine.create_from_cloudformation_json
#  - always writes into `stepfunctions_backends` (the non-executing backend), while the API with
#    execute_state_machine=True reads `stepfunctions_parser_backends` (stepfunctions/responses.py:14-17)
#    -> a CFN-created state machine is invisible (StateMachineDoesNotExist);
#  - reads only DefinitionString: `Definition` (object) and DefinitionSubstitutions are ignored.
import re as _re

from moto.core.common_models import CloudFormationModel as _CFM  # noqa
from moto.stepfunctions import models as _sfn_models
from moto.stepfunctions import responses as _sfn_responses

_orig_cfn_create = _sfn_models.StateMachine.__dict__["create_from_cloudformation_json"]
_orig_cfn_delete = _sfn_models.StateMachine.__dict__["delete_from_cloudformation_json"]


def _cfn_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    props = cloudformation_json["Properties"]
    name = props.get("StateMachineName", resource_name)
    definition = props.get("DefinitionString")
    if definition is None and "Definition" in props:
        definition = json.dumps(props["Definition"])
    for key, value in (props.get("DefinitionSubstitutions") or {}).items():
        definition = definition.replace(f"${{{key}}}", str(value))
    leftover = _re.findall(r"\$\{[A-Za-z0-9_]+\}", definition or "")
    if leftover:  # CloudFormation fails the resource in this case
        raise ValueError(f"Unresolved DefinitionSubstitutions {leftover} in state machine {name}")
    backend = _sfn_responses.get_backend(account_id, region_name)
    tags = _sfn_models.cfn_to_api_tags(props.get("Tags", []))
    return backend.create_state_machine(name, definition, props.get("RoleArn", ""), tags=tags)


def _cfn_delete(cls, resource_name, cloudformation_json, account_id, region_name):
    _sfn_responses.get_backend(account_id, region_name).delete_state_machine(resource_name)


# ---------------------------------------------------------------- 9. parsed-definition cache
# moto parses the definition with ANTLR on every StartExecution
# (backend/execution_worker.py:60 _get_evaluation_entrypoint): ~40% of an execution's CPU.
# The evaluation components keep per-execution state in env.heap/env.stack (keyed by each
# component's heap_key), so one parsed program serves every execution of a definition. The
# lazily assigned heap keys are fixed once, under the lock, before the program is shared.
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent as _EvalComponent
from moto.stepfunctions.parser.asl.parse import asl_parser as _asl_parser

_orig_parse = _asl_parser.AmazonStateLanguageParser.__dict__["parse"]
_PARSED: dict[str, Any] = {}


def _fix_heap_keys(root: Any) -> None:
    seen: set[int] = set()
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, _EvalComponent):
            _ = obj.heap_key
            todo.extend(vars(obj).values())
        elif isinstance(obj, (list, tuple, set)):
            todo.extend(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())


def _cached_parse(definition: str) -> Any:
    with _LOCK:
        parsed = _PARSED.get(definition)
        if parsed is None:
            parsed = _orig_parse.__func__(definition)
            _fix_heap_keys(parsed[0])
            _PARSED[definition] = parsed
        return parsed


# ---------------------------------------------------------------- 9b. JSONPath and SDK client caches
# Per task, moto builds a jsonpath_ng parser (a PLY yacc table) for every path it evaluates
# (asl/utils/json_path.py:47 extract_json, common/path/result_path.py) and a new boto3 client
# per service call (asl/utils/boto_client.py:13 boto_client_for): together about a third of
# an execution's CPU. Parsed paths are immutable; boto3 clients are thread-safe once built
# (they are built under a lock here: boto3's default session is not).
import functools as _functools
import sys as _sys

from jsonpath_ng import parse as _jp_parse
from jsonpath_ng.ext import parse as _jp_ext_parse
from moto.stepfunctions.parser.asl.component.common.path import result_path as _result_path
from moto.stepfunctions.parser.asl.utils import boto_client as _boto_client
from moto.stepfunctions.parser.asl.utils import json_path as _json_path

_cached_ext_parse = _functools.lru_cache(maxsize=4096)(_jp_ext_parse)
_cached_jp_parse = _functools.lru_cache(maxsize=4096)(_jp_parse)
_orig_boto_client_for = _boto_client.boto_client_for
_SDK_CLIENTS: dict[tuple[str, str], Any] = {}


def _cached_boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
    # moto's boto_client_for ignores state_credentials (fixed "ak"/"sk" keys), so one client
    # per region and service is equivalent.
    with _LOCK:
        client = _SDK_CLIENTS.get((region, service))
        if client is None:
            client = _orig_boto_client_for(region, service)
            _SDK_CLIENTS[(region, service)] = client
        return client


def _cache_patches() -> dict[tuple[Any, str], Any]:
    _all_service_classes()  # import every integration module first
    table: dict[tuple[Any, str], Any] = {
        (_json_path, "parse"): _cached_ext_parse,
        (_result_path, "parse"): _cached_jp_parse,
    }
    for name, module in list(_sys.modules.items()):
        if (
            name.startswith("moto.stepfunctions.parser")
            and getattr(module, "boto_client_for", None) is _orig_boto_client_for
        ):
            table[(module, "boto_client_for")] = _cached_boto_client_for
    return table


# ---------------------------------------------------------------- 10. execution end notification
# Waiting for an execution polls DescribeExecution otherwise; the worker reports its end to
# BaseExecutionWorkerCommunication.terminated (backend/execution.py:90).
_ENDED = threading.Condition()
_orig_terminated = sfn_execution.BaseExecutionWorkerCommunication.terminated


def _terminated(self: Any) -> None:
    try:
        _orig_terminated(self)
    finally:
        with _ENDED:
            _ENDED.notify_all()


def wait_until(predicate: Callable[[], Any], timeout: float) -> Any:
    """Block until ``predicate()`` is truthy, re-checking whenever an execution ends (and at
    least every 50 ms for anything else); returns its value, or the falsy value on timeout."""
    deadline = time.monotonic() + timeout
    with _ENDED:
        while True:
            value = predicate()
            remaining = deadline - time.monotonic()
            if value or remaining <= 0:
                return value
            _ENDED.wait(min(remaining, 0.05))


def executions() -> list[Any]:
    """Every execution moto's executing backend holds (all accounts and regions)."""
    out = []
    for account in list(sfn_parser_models.stepfunctions_parser_backends.values()):
        for backend in list(account.values()):
            for machine in list(backend.state_machines):
                out.extend(list(getattr(machine, "executions", [])))
    return out


def running_executions() -> list[Any]:
    return [e for e in executions() if getattr(e, "exec_status", None) == "RUNNING"]


def execution_statuses() -> dict[str, str]:
    """Every execution's status straight from the backend (no API call), by ARN."""
    return {
        execution.exec_arn: str(getattr(status, "value", status))
        for execution in executions()
        if (status := execution.exec_status)
    }


# ---------------------------------------------------------------- 11. operation faults
# Every moto request except S3's passes through BaseResponse.call_action
# (core/responses.py:434) - in-process SDK calls (mock_aws), the state machine's service
# integrations and HTTP requests to the server alike. S3 enters through S3Response.key_response
# / bucket_response (s3/responses.py:1876/398).
from moto.core.exceptions import ServiceException as _ServiceException
from moto.core.responses import ActionResult as _ActionResult
from moto.core.responses import BaseResponse as _BaseResponse
from moto.s3 import responses as _s3_responses

_orig_call_action = _BaseResponse.call_action
_orig_key_response = _s3_responses.S3Response.key_response
_orig_bucket_response = _s3_responses.S3Response.bucket_response


class _InjectedFault(_ServiceException):
    """An injected error. Not in a ``moto.<service>`` module, so moto's serializer looks its
    shape up in the service being called (for ``moto.core`` it would look up "core")."""


_InjectedFault.__module__ = "ingest_tools.localcloud.engine"


def _call_action(self: Any) -> Any:
    fault = FAULTS.take_operation(self.boto3_service_name, self._get_action())
    if fault is None:
        return _orig_call_action(self)
    # The caller gets the error as the service's own (moto's ServiceException would make the
    # serializer look up a "core" service model and crash instead).
    _, headers, body = self.serialized(_ActionResult(_InjectedFault(fault.code, fault.message)))
    headers, body = self._enrich_response(headers, body)
    return fault.status, headers, body


def _s3_key_operation(request: Any) -> str:
    method = request.method
    if method == "PUT":
        return "CopyObject" if "x-amz-copy-source" in request.headers else "PutObject"
    return {"GET": "GetObject", "HEAD": "HeadObject", "DELETE": "DeleteObject"}.get(method, method)


def _s3_bucket_operation(request: Any, full_url: str) -> str:
    method = request.method
    if method == "GET":
        if "versions" in full_url:
            return "ListObjectVersions"
        return "ListObjectsV2" if "list-type=2" in full_url else "ListObjects"
    return {
        "HEAD": "HeadBucket",
        "PUT": "CreateBucket",
        "DELETE": "DeleteBucket",
        "POST": "DeleteObjects",
    }.get(method, method)


def _s3_fault_response(self: Any, request: Any, fault: OperationFault) -> Any:
    self.setup_class(request)
    response = self.serialized(
        _ActionResult(_s3_exceptions.S3ClientError(fault.code, fault.message))
    )
    _, headers, body = self._send_response(response)
    return fault.status, headers, body


from moto.s3 import exceptions as _s3_exceptions


def _key_response(self: Any, request: Any, full_url: str, headers: Any) -> Any:
    fault = FAULTS.take_operation("s3", _s3_key_operation(request))
    if fault is None:
        return _orig_key_response(self, request, full_url, headers)
    return _s3_fault_response(self, request, fault)


def _bucket_response(self: Any, request: Any, full_url: str, headers: Any) -> Any:
    fault = FAULTS.take_operation("s3", _s3_bucket_operation(request, full_url))
    if fault is None:
        return _orig_bucket_response(self, request, full_url, headers)
    return _s3_fault_response(self, request, fault)


# ---------------------------------------------------------------- install
def _patches() -> dict[tuple[Any, str], Any]:
    return {
        **_cache_patches(),
        (_asl_parser.AmazonStateLanguageParser, "parse"): staticmethod(_cached_parse),
        (sfn_execution.BaseExecutionWorkerCommunication, "terminated"): _terminated,
        (_BaseResponse, "call_action"): _call_action,
        (_s3_responses.S3Response, "key_response"): _key_response,
        (_s3_responses.S3Response, "bucket_response"): _bucket_response,
        (_sfn_models.StateMachine, "create_from_cloudformation_json"): classmethod(_cfn_create),
        (_sfn_models.StateMachine, "delete_from_cloudformation_json"): classmethod(_cfn_delete),
        **{
            (k, "_from_error"): _wrap_from_error(k.__dict__["_from_error"])
            for k in _all_service_classes()
            if "_from_error" in k.__dict__
        },
        (_state_mod, "StateData"): _state_data,
        (_ew.ExecutionWorker, "_get_evaluation_environment"): _get_env,
        (LambdaSimpleBackend, "invoke"): _invoke,
        (jitter_strategy_decl.JitterStrategyDecl, "_eval_body"): _jitter_eval,
        (wait_function.WaitFunction, "_wait_interval"): _wait_interval,
        (_botocore_endpoint, "time"): _ClockTime(),
        (sfn_parser_models.StepFunctionsParserBackend, "start_execution"): _start_execution,
        (sfn_execution.Execution, "_get_start_execution_worker"): _get_worker,
    }


_PATCHES = Patches(_patches)


def install():
    _PATCHES.install()
    _sdk._SERVICE_ERROR_NAMES.update(_SDK_NAMES)


def uninstall():
    _PATCHES.uninstall()
    for k in _SDK_NAMES:
        _sdk._SERVICE_ERROR_NAMES.pop(k, None)
    with _LOCK:
        _SDK_CLIENTS.clear()


def reset():
    HANDLERS.clear()
    with _LOCK:
        INVOCATIONS.clear()
        _INVOKED.clear()
    RETRY_SLEEPS.clear()
    WAITS.clear()
    FAULTS.clear()
    VIRTUAL_SLEPT[0] = 0.0
