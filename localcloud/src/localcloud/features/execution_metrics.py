"""Step Functions execution metrics: each execution's start and end in CloudWatch, as AWS does.

AWS (Step Functions developer guide, "Monitoring Step Functions metrics using Amazon
CloudWatch", https://docs.aws.amazon.com/step-functions/latest/dg/procedure-cw-metrics.html):
every state machine, Standard or Express, publishes in namespace ``AWS/States`` with the
dimension ``StateMachineArn`` the counts ``ExecutionsStarted``, ``ExecutionsSucceeded``,
``ExecutionsFailed``, ``ExecutionsTimedOut``, ``ExecutionsAborted`` and ``ExecutionTime``
(milliseconds between the start and the close of the execution). ``ExecutionsStarted`` is
emitted twice per execution: 1 when it starts, then 0 when it completes (its SampleCount is 2
per execution, its Sum 1). moto 5.2.5 publishes nothing, so the template's alarms on
``ExecutionsFailed`` / ``ExecutionsTimedOut``, its dashboards and any tool's
figures for an EXPRESS state machine (which has no ListExecutions) see no data locally.

Here they are published in the account and Region of the execution, with ``StateMachineArn``
the state machine's ARN (the unqualified one for a version), as the execution starts
(``Execution.start``, moto: stepfunctions/parser/backend/execution.py; StartExecution and
StartSyncExecution both go through it, an idempotent StartExecution that returns the running
execution does not) and as its final status is set (``BaseExecutionWorkerCommunication.
_reflect_execution_status``, which the synchronous flavour calls through ``super()``; the
speedup ``execution-ended`` wraps ``terminated``, which calls it): both hooks wrap moto's
method, so other patches of the execution compose with them. ``ExecutionTime`` is the stop
date - the start date, as DescribeExecution reports them: on the virtual clock, Wait states
and retry backoff are not in it.

Not emulated: the account-level series (no dimension: moto's GetMetricData without
dimensions sums every series of the metric, which gives the account's figure anyway), the
``Version`` / ``Alias`` series, ``ExecutionThrottled`` (nothing is throttled locally),
the ``ExecutionsRedriven`` family (moto has no RedriveExecution), and the Express billing
metrics ``ExpressExecutionBilledDuration`` / ``ExpressExecutionBilledMemory`` /
``ExpressExecutionMemory`` (memory is not measured locally). Child workflow executions of a
Distributed Map publish nothing: they are not executions of the parent's state machine
(their StateMachineArn is ``<parent>/<Map Run label>``, see fixes/sfn_map_result_writer.py),
so they never count under the parent's ``StateMachineArn``, and whether AWS publishes a
series for them is not documented.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.stepfunctions.parser.backend import execution as sfn_execution

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["ENDED_METRICS", "NAMESPACE", "PATCHES", "ended_data", "started_data"]

LOG = logging.getLogger(__name__)

NAMESPACE = "AWS/States"
#: An ended execution's status -> the count metric AWS publishes for it.
ENDED_METRICS = {
    "SUCCEEDED": "ExecutionsSucceeded",
    "FAILED": "ExecutionsFailed",
    "TIMED_OUT": "ExecutionsTimedOut",
    "ABORTED": "ExecutionsAborted",
}


def _state_machine_arn(execution: Any) -> str:
    machine = execution.state_machine
    return str(getattr(machine, "source_arn", None) or machine.arn)


def _utc(moment: Any) -> dt.datetime:
    """moto's CloudWatch keeps naive UTC timestamps (what its API parser produces)."""
    if not isinstance(moment, dt.datetime):
        moment = dt.datetime.now(dt.UTC)
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return moment


def _datum(execution: Any, name: str, value: float, unit: str, at: Any) -> dict[str, Any]:
    return {
        "MetricName": name,
        "Dimensions": [{"Name": "StateMachineArn", "Value": _state_machine_arn(execution)}],
        "Value": value,
        "Unit": unit,
        "Timestamp": _utc(at),
    }


def started_data(execution: Any) -> list[dict[str, Any]]:
    """The datapoints of an execution that has just started."""
    return [_datum(execution, "ExecutionsStarted", 1.0, "Count", execution.start_date)]


def ended_data(execution: Any) -> list[dict[str, Any]]:
    """The datapoints of an execution whose final status has just been set."""
    status = str(getattr(execution.exec_status, "value", execution.exec_status))
    metric = ENDED_METRICS.get(status)
    if metric is None:
        return []
    stop = execution.stop_date or dt.datetime.now(dt.UTC)
    elapsed = max(0.0, (_utc(stop) - _utc(execution.start_date)).total_seconds() * 1000)
    return [
        _datum(execution, metric, 1.0, "Count", stop),
        _datum(execution, "ExecutionsStarted", 0.0, "Count", stop),
        _datum(execution, "ExecutionTime", elapsed, "Milliseconds", stop),
    ]


def _publish(execution: Any, data: list[dict[str, Any]]) -> None:
    if not data:
        return
    try:
        backend = cloudwatch_backends[execution.account_id][execution.region_name]
        backend.put_metric_data(NAMESPACE, data)
    except Exception:  # metrics are best effort on AWS too: never fail the execution
        LOG.exception("could not publish the metrics of %s", execution.exec_arn)


def _build(rt: Runtime) -> Targets:
    start = sfn_execution.Execution.start
    communication = sfn_execution.BaseExecutionWorkerCommunication
    reflect = communication._reflect_execution_status

    def start_and_publish(self: Any) -> None:
        fresh = self.exec_worker is None  # moto refuses to start an execution twice
        if fresh:  # before: a synchronous execution has ended when start() returns
            _publish(self, started_data(self))
        start(self)

    def reflect_and_publish(self: Any) -> None:
        reflect(self)
        _publish(self.execution, ended_data(self.execution))

    return {
        (sfn_execution.Execution, "start"): start_and_publish,
        (communication, "_reflect_execution_status"): reflect_and_publish,
    }


PATCHES = [
    Patch(
        name="sfn-execution-metrics",
        kind=Kind.FEATURE,
        reason="Executions publish AWS/States ExecutionsStarted / Succeeded / Failed / "
        "TimedOut / Aborted and ExecutionTime per StateMachineArn, as Step Functions does "
        "(moto publishes no metrics): alarms and doctor's Express figures see them.",
        test="tests/e2e/test_localcloud_execution_metrics.py"
        "::test_a_succeeded_and_a_failed_execution_are_counted",
        build=_build,
    )
]
