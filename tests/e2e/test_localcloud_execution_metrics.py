"""Step Functions execution metrics in the local cloud, as AWS publishes them, and doctor's
figures for an EXPRESS state machine read from them.

A small standalone SAM stack (not the app's template): three state machines whose one
Choice state succeeds or fails on the input (a Wait first, for the aborted and timed-out
cases), a STANDARD one watched by an ExecutionsFailed alarm shaped like the template's, and
an EXPRESS one that logs to a log group. What is asserted is what a user of AWS reads with
GetMetricData (namespace AWS/States, dimension StateMachineArn) and with `ingestctl doctor`.
The feature: localcloud/features/execution_metrics.py (its test fails without it,
LOCALCLOUD_WITHOUT=sfn-execution-metrics).
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from ingest_tools.doctor import Clients, Context, Status, run
from ingest_tools.doctor.checks import specs
from localcloud.cloud import LocalCloud
from tests.support import LOG_DELIVERY_POLICIES, wait_for

pytestmark = pytest.mark.e2e


def _machine(workflow_type: str, extra: str = "", timeout: int = 30) -> str:
    return textwrap.indent(
        textwrap.dedent(
            f"""\
            Type: AWS::Serverless::StateMachine
            Properties:
              Type: {workflow_type}
              Definition:
                StartAt: Hold
                TimeoutSeconds: {timeout}
                States:
                  Hold:
                    Type: Wait
                    SecondsPath: $.wait
                    Next: Outcome
                  Outcome:
                    Type: Choice
                    Choices:
                      - Variable: $.outcome
                        StringEquals: fail
                        Next: Failed
                    Default: Succeeded
                  Failed: {{Type: Fail, Error: Rejected, Cause: the input said so}}
                  Succeeded: {{Type: Succeed}}
            """
        )
        + extra,
        "    ",
    )


EXPRESS_LOGGING = (
    """\
Logging:
  Level: ERROR
  IncludeExecutionData: true
  Destinations:
    - CloudWatchLogsLogGroup:
        LogGroupArn: !GetAtt ExpressLogs.Arn
"""
    + LOG_DELIVERY_POLICIES
)
EXPRESS = _machine("EXPRESS", textwrap.indent(EXPRESS_LOGGING, "  "))

TEMPLATE = f"""\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Standard:
{_machine("STANDARD")}
  Idle:
{_machine("STANDARD")}
  Stoppable:
{_machine("STANDARD")}
  Short:
{_machine("STANDARD", timeout=1)}
  ExpressLogs:
    Type: AWS::Logs::LogGroup
    Properties:
      LogGroupName: /aws/vendedlogs/states/metrics-test-express
  Express:
{EXPRESS}
  StandardFailedAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: AWS/States
      MetricName: ExecutionsFailed
      Dimensions:
        - Name: StateMachineArn
          Value: !Ref Standard
      Statistic: Sum
      Period: 300
      EvaluationPeriods: 1
      Threshold: 0
      ComparisonOperator: GreaterThanThreshold
      TreatMissingData: notBreaching
Outputs:
  StandardArn: {{Value: !Ref Standard}}
  IdleArn: {{Value: !Ref Idle}}
  StoppableArn: {{Value: !Ref Stoppable}}
  ShortArn: {{Value: !Ref Short}}
  ExpressArn: {{Value: !Ref Express}}
  AlarmName: {{Value: !Ref StandardFailedAlarm}}
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    root = tmp_path_factory.mktemp("metrics-stack")
    (root / "template.yaml").write_text(TEMPLATE)
    with LocalCloud(root / "template.yaml", stack_name="metrics-test", event_delivery=False) as c:
        yield c


def start(cloud: LocalCloud, machine: str, outcome: str, wait: int = 0) -> str:
    return str(
        boto3.client("stepfunctions").start_execution(
            stateMachineArn=cloud.outputs[machine],
            name=str(uuid.uuid4()),
            input=json.dumps({"outcome": outcome, "wait": wait}),
        )["executionArn"]
    )


def metric(
    arn: str, name: str, stat: str = "Sum", since: timedelta = timedelta(minutes=30)
) -> float | None:
    """``stat`` of AWS/States ``name`` for state machine ``arn`` over the last ``since``
    (None: no datapoint)."""
    now = datetime.now(UTC)
    result = boto3.client("cloudwatch").get_metric_data(
        MetricDataQueries=[
            {
                "Id": "m",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/States",
                        "MetricName": name,
                        "Dimensions": [{"Name": "StateMachineArn", "Value": arn}],
                    },
                    "Period": 3600,
                    "Stat": stat,
                },
            }
        ],
        StartTime=now - since,
        EndTime=now + timedelta(minutes=1),
    )["MetricDataResults"][0]
    values: list[float] = result["Values"]
    return sum(values) if values else None


def test_a_succeeded_and_a_failed_execution_are_counted(cloud: LocalCloud) -> None:
    arn = cloud.outputs["StandardArn"]
    start(cloud, "StandardArn", "succeed")
    start(cloud, "StandardArn", "fail")
    cloud.settle()

    assert metric(arn, "ExecutionsStarted") == 2
    assert metric(arn, "ExecutionsSucceeded") == 1
    assert metric(arn, "ExecutionsFailed") == 1
    assert metric(arn, "ExecutionsTimedOut") is None
    assert metric(arn, "ExecutionsAborted") is None
    # ExecutionsStarted is emitted twice per execution, 1 then 0 (developer guide).
    assert metric(arn, "ExecutionsStarted", "SampleCount") == 4
    assert metric(arn, "ExecutionTime", "SampleCount") == 2
    fastest = metric(arn, "ExecutionTime", "Minimum")
    assert fastest is not None and 0 <= fastest < 10_000  # milliseconds
    # Per state machine: nothing under another one's ARN.
    assert metric(cloud.outputs["IdleArn"], "ExecutionsStarted") is None

    # The template-shaped alarm reads exactly this series: its own query breaches.
    (alarm,) = boto3.client("cloudwatch").describe_alarms(AlarmNames=[cloud.outputs["AlarmName"]])[
        "MetricAlarms"
    ]
    assert alarm["Dimensions"] == [{"Name": "StateMachineArn", "Value": arn}]
    seen = metric(arn, alarm["MetricName"], alarm["Statistic"], timedelta(seconds=alarm["Period"]))
    assert seen is not None and seen > alarm["Threshold"]


def test_an_aborted_and_a_timed_out_execution_are_counted(cloud: LocalCloud) -> None:
    stoppable, short = cloud.outputs["StoppableArn"], cloud.outputs["ShortArn"]
    cloud.time_scale = 1.0  # real time: the Wait holds the executions
    try:
        stopped = start(cloud, "StoppableArn", "succeed", wait=600)
        start(cloud, "ShortArn", "succeed", wait=600)  # TimeoutSeconds 1: times out
        wait_for(lambda: stopped in cloud.clock.waits or None, timeout=10, what="the Wait")
        boto3.client("stepfunctions").stop_execution(executionArn=stopped)
        cloud.settle(timeout=30)
    finally:
        cloud.time_scale = 0.0

    assert metric(stoppable, "ExecutionsStarted") == metric(short, "ExecutionsStarted") == 1
    assert metric(stoppable, "ExecutionsAborted") == 1
    assert metric(short, "ExecutionsTimedOut") == 1
    for arn in (stoppable, short):
        assert metric(arn, "ExecutionsSucceeded") is metric(arn, "ExecutionsFailed") is None
    assert metric(stoppable, "ExecutionsTimedOut") is metric(short, "ExecutionsAborted") is None
    # ExecutionTime is start to close: the TimeoutSeconds (1 s) of the one that timed out.
    timed_out = metric(short, "ExecutionTime", "Maximum")
    assert timed_out is not None and 1000 <= timed_out < 10_000


def test_doctor_reads_an_express_state_machines_figures_from_its_metrics(
    cloud: LocalCloud,
) -> None:
    arn = cloud.outputs["ExpressArn"]
    start(cloud, "ExpressArn", "succeed")
    start(cloud, "ExpressArn", "fail")
    cloud.settle()
    # AWS refuses ListExecutions for EXPRESS: doctor must not need it.
    cloud.faults.fail_operation("stepfunctions", "ListExecutions", "ValidationException")

    context = Context(
        clients=Clients.create(boto3.client),
        outputs={"PipelineStateMachineArn": arn},
        stack="metrics-test",
        now=datetime.now(UTC),
        since=timedelta(hours=1),
        connection="--stack metrics-test",
    )
    chosen = [
        s for s in specs(context.outputs) if s.names[0] in {"state-machine", "execution-failures"}
    ]
    machine, failures = run(context, chosen).checks

    group = "/aws/vendedlogs/states/metrics-test-express"
    assert (machine.name, machine.status) == ("state-machine", Status.PASS)
    assert machine.detail.endswith(
        f"is ACTIVE (EXPRESS; executions logged to {group}, level ERROR)"
    )

    assert (failures.name, failures.status) == ("execution-failures", Status.WARN)
    data: dict[str, Any] = dict(failures.data)
    assert data == {
        "window": "60 min",
        "byStatus": {"SUCCEEDED": 1, "FAILED": 1},
        "ended": 2,
        "failed": 1,
        "rate": 0.5,
    }
    assert failures.detail.startswith("1 of 2 executions that ended in the last 60 min failed")
    assert f"aws logs start-query --log-group-name {group} " in failures.action
    assert "list-executions" not in failures.action
    assert "ingestctl reprocess" in failures.action
