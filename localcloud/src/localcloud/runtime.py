"""What one running local cloud knows and changes while it runs.

A :class:`Runtime` belongs to one :class:`~localcloud.cloud.LocalCloud`. Patches are built for
a runtime (``Patch.build(runtime)``) and reach it through their closures, so nothing here is a
module global and two clouds never share state. The state's classes are here (the faults' in
faults.py): the patches import them, never back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from localcloud.faults import Faults
from localcloud.iam import enforcement as iam
from localcloud.work_log import WorkLog, wait_on

__all__ = [
    "AsyncInvocation", "AsyncInvocations", "Clock", "Delivery", "DeliveryLog", "DeployReport",
    "Replication", "Replications", "Runtime",
]  # fmt: skip

# the background work logs under the names of the features that do the work
_ASYNC_LOG = logging.getLogger("localcloud.features.lambda_async")
_REPLICATION_LOG = logging.getLogger("localcloud.features.s3_replication")
#: execution ARN -> [(state name, seconds)]
_Sleeps = defaultdict[str, list[tuple[str, float]]]


@dataclass
class DeployReport:
    """What the deploy-time patches (stack/patches.py) saw while ``create_stack`` ran."""

    #: (logical id, resource type, reason) of every resource that failed, in order
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    #: the created resources of audited types, with their resolved properties
    created: list[Any] = field(default_factory=list)

    def clear(self) -> None:
        self.failures.clear()
        self.created.clear()


class Clock:
    def __init__(self, scale: float = 0.0) -> None:
        self.scale = scale
        #: seconds slept on this clock outside the ASL (deliveries, SDK retries, schedules)
        self.slept = 0.0
        self.retry_sleeps: _Sleeps = defaultdict(list)  # of every Retry backoff
        self.waits: _Sleeps = defaultdict(list)  # of every Wait state
        self._lock = threading.Lock()

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` on this clock: recorded, and really slept times ``scale``."""
        with self._lock:
            self.slept += seconds
        if self.scale and seconds > 0:
            time.sleep(seconds * self.scale)

    def record(self, log: _Sleeps, env: Any, seconds: float) -> None:
        context = env.states.context_object.context_object_data
        with self._lock:
            log[context["Execution"]["Id"]].append((context["State"]["Name"], seconds))


@dataclass
class Delivery:
    """One event delivered (or not) to one rule target."""

    event_id: str
    rule_arn: str
    target_arn: str
    target_id: str
    event: dict[str, Any]
    input: str | None = None
    status: str = "PENDING"  # PENDING, DELIVERED, DEAD_LETTERED, DROPPED
    attempts: int = 0
    error_code: str | None = None
    error_message: str | None = None
    exhausted_condition: str | None = None
    result: dict[str, Any] = field(default_factory=dict)  # executionArn / MessageId / ...
    dead_letter_message_id: str | None = None
    submitted: float = field(default_factory=time.monotonic)
    finished: float | None = None
    retry_delays: list[float] = field(default_factory=list)

    @property
    def execution_arn(self) -> str | None:
        value = self.result.get("executionArn")
        return str(value) if value else None


class DeliveryLog(WorkLog[Delivery]):
    THREADS = "eventbridge"


@dataclass
class AsyncInvocation:
    """One asynchronous invocation of a function, from 202 to its last send."""

    request_id: str
    function_name: str
    function_arn: str
    payload: str
    status: str = "QUEUED"  # QUEUED, RUNNING, SUCCEEDED, FAILED (ERROR: a local cloud bug)
    attempts: int = 0
    condition: str | None = None  # Success, RetriesExhausted, EventAgeExceeded
    function_error: str | None = None
    response: Any = None
    retry_delays: list[float] = field(default_factory=list)
    #: (kind, target ARN, message id or error): OnSuccess, OnFailure, DeadLetter
    sent: list[tuple[str, str, str]] = field(default_factory=list)
    #: (kind, target ARN, error) of every send that failed: the event is lost there
    lost: list[tuple[str, str, str]] = field(default_factory=list)
    tenant_id: str | None = None  # Invoke's TenantId (features/lambda_tenancy.py)
    finished: float | None = None


class AsyncInvocations(WorkLog[AsyncInvocation]):
    """The asynchronous invocations of one cloud and the pool that runs them."""

    THREADS = "lambda-async"
    CLOSES = True  # none outlives its cloud (it would call the real endpoints)

    def _work(self, item: AsyncInvocation, work: Callable[[AsyncInvocation], None]) -> None:
        try:
            with iam.acting_as(None):  # not whoever started the pool's thread
                work(item)
        except Exception:
            item.status = "ERROR"
            _ASYNC_LOG.exception(
                "asynchronous invocation %s of %s", item.request_id, item.function_name
            )

    def of(self, function_name: str) -> list[AsyncInvocation]:
        return [i for i in self.all() if i.function_name == function_name]


@dataclass
class Replication:
    """One version (an object or a delete marker) copied to one destination bucket."""

    bucket: str
    key: str
    version_id: str
    destination: str
    rule: str
    delete_marker: bool = False
    status: str = "PENDING"  # COMPLETED, FAILED
    error: str = ""
    finished: float | None = None


class Replications(WorkLog[Replication]):
    """The replications of one cloud and the pool that copies them."""

    THREADS = "s3-replication"
    CLOSES = True

    def _work(self, item: Replication, work: Callable[[Replication], None]) -> None:
        try:
            with iam.acting_as(None):
                work(item)
        except Exception as exc:  # a local cloud bug: reported as the failure it causes
            item.status, item.error = "FAILED", f"{type(exc).__name__}: {exc}"
            _REPLICATION_LOG.exception("replication of %s/%s", item.bucket, item.key)


class Runtime:
    def __init__(
        self,
        *,
        time_scale: float = 0.0,
        mock_config: dict[str, Any] | None = None,
        account: str = "123456789012",
    ):
        self.lock = threading.Lock()
        #: the account's policies and every authorization decision (iam/enforcement.py)
        self.authorizer = iam.Authorizer(account)
        #: the functions' environment processes (features/lambda_processes.py)
        self.processes: Any = None
        #: how CloudFormation's API runs a template as the deploy does (stack/api.py
        #: StackOperations, set by LocalCloud; features/cloudformation_stack_api.py)
        self.stacks: Any = None
        #: called with a stack's name after an update of it (LocalCloud refreshes its stack)
        self.stack_listeners: list[Callable[[str], None]] = []
        #: every invocation: function, event, the invoking thread, tenant, outcome
        self.invocations: list[dict[str, Any]] = []
        self.invoked: Counter[str] = Counter()
        self.faults = Faults()
        self.clock = Clock(time_scale)
        self.deliveries = DeliveryLog()
        #: Invoke with InvocationType Event, S3 and SNS notifications (features/lambda_async.py)
        self.async_invocations = AsyncInvocations()
        #: S3 replication of new object versions (features/s3_replication.py)
        self.s3_replications = Replications()
        #: a parsed Step Functions Local MockConfigFile ("<arn>#<TestCase>" executions)
        self.mock_config = mock_config
        #: notified whenever an execution ends (see features/executions.py)
        self.executions_changed = threading.Condition()
        #: what the deploy-time patches saw while create_stack ran (failures, created)
        self.deploy_report = DeployReport()
        #: SQS message id -> the queue its redrive policy moved it from (sqs_dead_letter_source)
        self.dead_letter_sources: dict[str, str] = {}
        self._closers: list[Callable[[], None]] = []

    def invocation_count(self, function: str) -> int:
        """How many times ``function`` (physical name) has been invoked so far."""
        with self.lock:
            return self.invoked[function]

    def count_invocation(self, record: dict[str, Any]) -> int:
        with self.lock:
            self.invocations.append(record)
            self.invoked[record["function"]] += 1
            return self.invoked[record["function"]]

    def wait_until(self, predicate: Callable[[], Any], timeout: float) -> Any:
        """``wait_on`` the end of an execution (work_log.py)."""
        return wait_on(self.executions_changed, predicate, timeout)

    def on_close(self, closer: Callable[[], None]) -> None:
        """Run ``closer`` when the runtime closes (a patch's own cleanup)."""
        self._closers.append(closer)

    def close(self) -> None:
        self.deliveries.shutdown()
        while self._closers:
            self._closers.pop()()
