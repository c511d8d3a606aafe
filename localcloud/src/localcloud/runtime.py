"""What one running local cloud knows and changes while it runs.

A :class:`Runtime` belongs to one :class:`~localcloud.cloud.LocalCloud`: the
in-process Lambda handlers by function name, the log of invocations, the faults to inject,
the clock (virtual or scaled real time), the EventBridge delivery log and the Step Functions
MockConfigFile. Patches are built for a runtime (``Patch.build(runtime)``) and reach it
through their closures, so nothing here is a module global and two clouds never share state.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from localcloud.features.clock import Clock
from localcloud.features.delivery import DeliveryLog
from localcloud.features.faults import Faults
from localcloud.features.lambda_async import AsyncInvocations
from localcloud.features.lambda_runtime import EnvironmentWaits
from localcloud.features.s3_replication import Replications
from localcloud.iam.enforcement import Authorizer

__all__ = ["DeployReport", "Handler", "Runtime"]

Handler = Callable[[Any, Any], Any]


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
        self.authorizer = Authorizer(account)
        #: function name (physical) -> handler(event, context), run in-process on Invoke
        self.handlers: dict[str, Handler] = {}
        #: with environments as processes (features/lambda_processes.py), their pools
        self.processes: Any = None
        #: (function name, CodeSha256) -> the handler of that code: a published version runs
        #: the code it was published with (stack/updates.py)
        self.code_handlers: dict[tuple[str, str], Handler] = {}
        #: how CloudFormation's API runs a template as the deploy does (stack/api.py
        #: StackOperations, set by LocalCloud; features/cloudformation_stack_api.py)
        self.stacks: Any = None
        #: called with a stack's name after an update of it (LocalCloud refreshes its stack)
        self.stack_listeners: list[Callable[[str], None]] = []
        #: a handler slower than its function's Timeout is reported as Sandbox.Timedout
        self.enforce_function_timeout = True
        #: how long threads waited for a function's (one, local) environment
        self.environment_waits = EnvironmentWaits()
        #: every in-process invocation: function, event, thread, outcome
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
        """How many times ``function`` (physical name) has been invoked in-process so far."""
        with self.lock:
            return self.invoked[function]

    def count_invocation(self, record: dict[str, Any]) -> int:
        with self.lock:
            self.invocations.append(record)
            self.invoked[record["function"]] += 1
            return self.invoked[record["function"]]

    def wait_until(self, predicate: Callable[[], Any], timeout: float) -> Any:
        """Block until ``predicate()`` is truthy, re-checking whenever an execution ends (and
        at least every 50 ms for anything else); its value, or the falsy value on timeout."""
        deadline = time.monotonic() + timeout
        with self.executions_changed:
            while True:
                value = predicate()
                remaining = deadline - time.monotonic()
                if value or remaining <= 0:
                    return value
                self.executions_changed.wait(min(remaining, 0.05))

    def on_close(self, closer: Callable[[], None]) -> None:
        """Run ``closer`` when the runtime closes (a patch's own cleanup)."""
        self._closers.append(closer)

    def close(self) -> None:
        self.deliveries.shutdown()
        while self._closers:
            self._closers.pop()()
