"""ingestctl doctor's workflow checks: the execution failure rate of a STANDARD state machine
(ListExecutions) and of an EXPRESS one (its AWS/States metrics), and where an EXPRESS one logs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ingest_tools.doctor import workflow
from ingest_tools.doctor.checks import Context
from ingest_tools.doctor.report import Check, Status
from tests.support import doctor_clients

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


class FakeStepFunctions:
    """A STANDARD state machine; ListExecutions over a fixed list (newest first), ``page`` at
    a time."""

    def __init__(self, statuses: list[tuple[str, timedelta]], page: int = 2) -> None:
        self.executions = [{"status": s, "startDate": NOW - ago} for s, ago in statuses]
        self.page = page

    def describe_state_machine(self, stateMachineArn: str) -> dict[str, Any]:
        return {"stateMachineArn": stateMachineArn, "status": "ACTIVE", "type": "STANDARD"}

    def list_executions(self, **kwargs: Any) -> dict[str, Any]:
        start = int(kwargs.get("nextToken", 0))
        out: dict[str, Any] = {"executions": self.executions[start : start + self.page]}
        if start + self.page < len(self.executions):
            out["nextToken"] = str(start + self.page)
        return out


def failures(statuses: list[tuple[str, timedelta]]) -> Check:
    context = Context(
        clients=doctor_clients(stepfunctions=FakeStepFunctions(statuses)),
        outputs={"PipelineStateMachineArn": "arn:aws:states:r:1:stateMachine:m"},
        stack="s",
        now=NOW,
        since=timedelta(hours=1),
    )
    (result,) = workflow.execution_failures(context)
    return result


def test_failure_rate_counts_executions_that_ended_in_the_window() -> None:
    minute = timedelta(minutes=1)
    healthy = failures([("RUNNING", minute), ("SUCCEEDED", 2 * minute), ("FAILED", 2 * minute)])
    assert healthy.status is Status.WARN  # 1 of the 2 that ended: 50%
    assert healthy.detail.startswith("1 of 2 executions that ended in the last 60 min failed")
    assert healthy.data["byStatus"] == {"RUNNING": 1, "SUCCEEDED": 1, "FAILED": 1}
    assert "--status-filter FAILED" in healthy.action

    mostly = (
        [("SUCCEEDED", minute)] * 9 + [("TIMED_OUT", minute)] + [("FAILED", timedelta(hours=2))]
    )
    result = failures(mostly)  # the FAILED one started before the window
    assert (result.status, result.data["failed"], result.data["ended"]) == (Status.PASS, 1, 10)

    quiet = failures([("FAILED", timedelta(hours=2))])
    assert (quiet.status, quiet.detail) == (Status.PASS, "no execution ended in the last 60 min")


MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:ingest-pipeline"
LOG_GROUP = "/aws/vendedlogs/states/ingest-pipeline"
LOGGING = {
    "level": "ERROR",
    "includeExecutionData": True,
    "destinations": [
        {
            "cloudWatchLogsLogGroup": {
                "logGroupArn": f"arn:aws:logs:us-east-1:123456789012:log-group:{LOG_GROUP}:*"
            }
        }
    ],
}


class FakeExpressStepFunctions:
    """An EXPRESS state machine: DescribeStateMachine only (AWS refuses ListExecutions)."""

    def __init__(self, logging: dict[str, Any] | None = None) -> None:
        self.logging = LOGGING if logging is None else logging

    def describe_state_machine(self, stateMachineArn: str) -> dict[str, Any]:
        assert stateMachineArn == MACHINE
        return {
            "stateMachineArn": MACHINE,
            "status": "ACTIVE",
            "type": "EXPRESS",
            "loggingConfiguration": self.logging,
        }

    def list_executions(self, **kwargs: Any) -> dict[str, Any]:
        raise AssertionError("ListExecutions is not supported for EXPRESS state machines")


class FakeCloudWatch:
    """GetMetricData over fixed AWS/States sums of MACHINE, each metric's sum split into one
    value per page (two pages) as CloudWatch may return it; records every request."""

    def __init__(self, sums: dict[str, float]) -> None:
        self.sums = sums
        self.requests: list[dict[str, Any]] = []

    def get_metric_data(self, **kwargs: Any) -> dict[str, Any]:
        self.requests.append(kwargs)
        page = int(kwargs.get("NextToken", 0))
        results = []
        for query in kwargs["MetricDataQueries"]:
            metric = query["MetricStat"]["Metric"]
            assert metric["Namespace"] == "AWS/States"
            assert metric["Dimensions"] == [{"Name": "StateMachineArn", "Value": MACHINE}]
            assert query["MetricStat"]["Stat"] == "Sum"
            total = self.sums.get(metric["MetricName"], 0.0)
            values = [total - total // 2, total // 2][page : page + 1] if total else []
            results.append({"Id": query["Id"], "Values": values, "StatusCode": "Complete"})
        return {"MetricDataResults": results, **({"NextToken": "1"} if page == 0 else {})}


def express_failures(
    sums: dict[str, float], *, logging: dict[str, Any] | None = None
) -> tuple[Check, FakeCloudWatch]:
    cloudwatch = FakeCloudWatch(sums)
    context = Context(
        clients=doctor_clients(
            stepfunctions=FakeExpressStepFunctions(logging), cloudwatch=cloudwatch
        ),
        outputs={"PipelineStateMachineArn": MACHINE},
        stack="s",
        now=NOW,
        since=timedelta(hours=1),
        connection="--stack s",
    )
    (result,) = workflow.execution_failures(context)
    return result, cloudwatch


def test_express_failure_rate_comes_from_the_execution_metrics() -> None:
    result, cloudwatch = express_failures(
        {
            "ExecutionsStarted": 12,
            "ExecutionsSucceeded": 8,
            "ExecutionsFailed": 1,
            "ExecutionsTimedOut": 1,
        }
    )
    assert result.status is Status.WARN  # 2 of the 10 that ended: 20%
    assert result.detail == (
        "2 of 10 executions that ended in the last 60 min failed (20%; 1 FAILED, 2 RUNNING, "
        "8 SUCCEEDED, 1 TIMED_OUT), above 10% (AWS/States metrics: the state machine is "
        "EXPRESS)"
    )
    # The data of a STANDARD state machine's check, from the metrics.
    assert dict(result.data) == {
        "window": "60 min",
        "byStatus": {"SUCCEEDED": 8, "FAILED": 1, "TIMED_OUT": 1, "RUNNING": 2},
        "ended": 10,
        "failed": 2,
        "rate": 0.2,
    }
    # What works for Express: its log group in Logs Insights, the console, the state table.
    assert "list-executions" not in result.action
    assert f"aws logs start-query --log-group-name {LOG_GROUP} " in result.action
    assert f"--start-time {int((NOW - timedelta(hours=1)).timestamp())} " in result.action
    assert f"--end-time {int(NOW.timestamp())} " in result.action
    assert 'filter type in ["ExecutionFailed", "ExecutionTimedOut", "ExecutionAborted"]' in (
        result.action
    )
    assert "console's Express execution view of ingest-pipeline" in result.action
    assert result.action.endswith(
        "ingestctl reprocess --key KEY (or --error-class CONFIGURATION) --stack s"
    )

    # One request per page, the window as one whole-hour period, all five metrics.
    assert [r.get("NextToken") for r in cloudwatch.requests] == [None, "1"]
    first = cloudwatch.requests[0]
    assert (first["StartTime"], first["EndTime"]) == (NOW - timedelta(hours=1), NOW)
    assert {q["MetricStat"]["Period"] for q in first["MetricDataQueries"]} == {3600}
    assert sorted(q["MetricStat"]["Metric"]["MetricName"] for q in first["MetricDataQueries"]) == [
        "ExecutionsAborted",
        "ExecutionsFailed",
        "ExecutionsStarted",
        "ExecutionsSucceeded",
        "ExecutionsTimedOut",
    ]


def test_express_without_failures_or_executions_passes() -> None:
    healthy, _ = express_failures({"ExecutionsStarted": 5, "ExecutionsSucceeded": 5})
    assert (healthy.status, healthy.data["rate"], healthy.data["byStatus"]) == (
        Status.PASS,
        0.0,
        {"SUCCEEDED": 5},
    )
    assert healthy.detail.startswith("0 of 5 executions that ended in the last 60 min failed")

    quiet, _ = express_failures({})
    assert quiet.status is Status.PASS
    assert quiet.detail == (
        "no execution ended in the last 60 min (AWS/States metrics: the state machine is EXPRESS)"
    )
    assert (quiet.data["ended"], quiet.data["rate"], quiet.data["byStatus"]) == (0, None, {})


def test_express_executions_started_before_the_window_are_not_running() -> None:
    # 3 ended in the window, 1 of them started in it: no RUNNING below zero.
    result, _ = express_failures(
        {"ExecutionsStarted": 1, "ExecutionsSucceeded": 2, "ExecutionsAborted": 1}
    )
    assert result.data["byStatus"] == {"SUCCEEDED": 2, "ABORTED": 1}
    assert (result.status, result.data["failed"], result.data["ended"]) == (Status.WARN, 1, 3)


def test_express_that_logs_nowhere_says_to_enable_logging() -> None:
    result, _ = express_failures(
        {"ExecutionsStarted": 2, "ExecutionsFailed": 2}, logging={"level": "OFF"}
    )
    assert result.status is Status.WARN
    assert "logs nothing (logging level OFF)" in result.action
    assert "start-query" not in result.action and "list-executions" not in result.action
    assert "ingestctl reprocess --prefix incoming/ --dry-run --stack s" in result.action


def test_express_state_machine_check_reports_where_it_logs() -> None:
    def verdict(logging: dict[str, Any] | None = None) -> Check:
        context = Context(
            clients=doctor_clients(stepfunctions=FakeExpressStepFunctions(logging)),
            outputs={"PipelineStateMachineArn": MACHINE},
            stack="s",
            now=NOW,
        )
        (result,) = workflow.state_machine(context)
        return result

    logged = verdict()
    assert (logged.status, logged.detail) == (
        Status.PASS,
        f"ingest-pipeline is ACTIVE (EXPRESS; executions logged to {LOG_GROUP}, level ERROR)",
    )
    unlogged = verdict({"level": "ALL", "destinations": []})
    assert unlogged.status is Status.WARN
    assert unlogged.data == {"type": "EXPRESS", "logGroup": None, "logLevel": "ALL"}


def test_the_metric_window_is_taken_in_whole_minutes() -> None:
    start, end = NOW + timedelta(seconds=-59.5), NOW + timedelta(seconds=0.25)
    assert workflow._whole_minutes(start, end) == {
        "StartTime": NOW - timedelta(minutes=1),
        "EndTime": NOW + timedelta(minutes=1),
    }
    assert workflow._whole_minutes(NOW, NOW) == {"StartTime": NOW, "EndTime": NOW}


@pytest.mark.parametrize(
    ("window", "period"),
    [
        (timedelta(minutes=5), 3600),
        (timedelta(hours=1), 3600),
        (timedelta(minutes=90), 7200),
        (timedelta(hours=24), 86400),
        (timedelta(days=20), 20 * 86400),
    ],
)
def test_the_metric_period_covers_the_window_in_whole_hours(window: timedelta, period: int) -> None:
    assert workflow._metric_period(window) == period
