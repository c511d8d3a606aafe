"""ingestctl doctor's pure parts: the queue policy evaluation, verdict rendering and exit
codes, the sample event, schedule periods, API errors turned into verdicts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ingest_tools.doctor import checks, dead_letters
from ingest_tools.doctor.queue_policy import Outcome, evaluate
from ingest_tools.doctor.report import Check, Report, Status, duration
from tests.support import load_event

pytestmark = pytest.mark.unit

QUEUE = "arn:aws:sqs:us-east-1:123456789012:stack-EventDeliveryDLQ-ABC"
RULE = "arn:aws:events:us-east-1:123456789012:rule/stack-ObjectCreated-XYZ"
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(**overrides: Any) -> dict[str, Any]:
    statement: dict[str, Any] = {
        "Sid": "AllowRule",
        "Effect": "Allow",
        "Principal": {"Service": "events.amazonaws.com"},
        "Action": "sqs:SendMessage",
        "Resource": QUEUE,
        "Condition": {"ArnEquals": {"aws:SourceArn": RULE}},
    }
    statement.update(overrides)
    return {k: v for k, v in statement.items() if v is not None}


DENY_INSECURE = {
    "Sid": "DenyInsecureTransport",
    "Effect": "Deny",
    "Principal": "*",
    "Action": "sqs:*",
    "Resource": QUEUE,
    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
}


@pytest.mark.parametrize(
    ("document", "outcome", "reason"),
    [
        (policy(allow(), DENY_INSECURE), Outcome.ALLOWED, "statement AllowRule allows it"),
        (policy(allow(Condition=None)), Outcome.ALLOWED, "statement AllowRule"),
        (policy(allow(Principal="*")), Outcome.ALLOWED, "statement AllowRule"),
        (policy(allow(Action=["sqs:*"], Resource="*")), Outcome.ALLOWED, "AllowRule"),
        (policy(allow(Action="SQS:sendmessage")), Outcome.ALLOWED, "AllowRule"),
        (
            policy(
                allow(Condition={"ArnLike": {"aws:SourceArn": "arn:aws:events:*:rule/stack-*"}})
            ),
            Outcome.ALLOWED,
            "AllowRule",
        ),
        (
            policy(allow(Condition={"StringEquals": {"aws:SourceAccount": "123456789012"}})),
            Outcome.ALLOWED,
            "AllowRule",
        ),
        ("", Outcome.DENIED, "the queue has no policy"),
        (None, Outcome.DENIED, "the queue has no policy"),
        ("{not json", Outcome.DENIED, "the queue policy is not JSON"),
        (json.dumps({"Version": "2012-10-17"}), Outcome.DENIED, "has no Statement"),
        (
            policy(allow(Condition={"ArnEquals": {"aws:SourceArn": RULE + "-old"}})),
            Outcome.DENIED,
            "no statement allows events.amazonaws.com",
        ),
        (
            policy(allow(Principal={"Service": "sns.amazonaws.com"})),
            Outcome.DENIED,
            "no statement allows",
        ),
        (policy(allow(Action="sqs:ReceiveMessage")), Outcome.DENIED, "no statement allows"),
        (policy(allow(Resource=QUEUE + "-other")), Outcome.DENIED, "no statement allows"),
        (policy(allow(Effect="Deny", Sid="Nope")), Outcome.DENIED, "statement Nope denies it"),
        (
            policy(allow(), {**DENY_INSECURE, "Sid": "DenyAll", "Condition": {}}),
            Outcome.DENIED,
            "statement DenyAll denies it",
        ),
        (
            policy(allow(Condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}})),
            Outcome.UNKNOWN,
            "statement AllowRule could not be evaluated",
        ),
        (
            policy({**allow(), "NotPrincipal": {"AWS": "x"}, "Principal": None}),
            Outcome.UNKNOWN,
            "could not be evaluated",
        ),
    ],
)
def test_queue_policy_evaluation(document: str | None, outcome: Outcome, reason: str) -> None:
    verdict = evaluate(document, queue_arn=QUEUE, rule_arn=RULE)
    assert verdict.outcome is outcome
    assert reason in verdict.reason


def test_missing_condition_keys_hold_only_for_if_exists_and_negated_operators() -> None:
    def verdict(condition: dict[str, Any]) -> Outcome:
        return evaluate(policy(allow(Condition=condition)), queue_arn=QUEUE, rule_arn=RULE).outcome

    assert verdict({"StringEquals": {"aws:SourceVpc": "vpc-1"}}) is Outcome.DENIED
    assert verdict({"StringEqualsIfExists": {"aws:SourceVpc": "vpc-1"}}) is Outcome.ALLOWED
    assert verdict({"StringNotEquals": {"aws:SourceVpc": "vpc-1"}}) is Outcome.ALLOWED
    assert verdict({"ArnNotEquals": {"aws:SourceArn": RULE}}) is Outcome.DENIED


def report(*statuses: Status) -> Report:
    return Report(
        "prod",
        NOW,
        [
            Check(
                f"check-{i}", status, f"detail {i}", f"do {i}" if status is not Status.PASS else ""
            )
            for i, status in enumerate(statuses)
        ],
    )


@pytest.mark.parametrize(
    ("statuses", "plain", "strict"),
    [
        ((Status.PASS, Status.PASS), 0, 0),
        ((Status.PASS, Status.WARN), 0, 1),
        ((Status.WARN, Status.FAIL), 1, 1),
        ((), 0, 0),
    ],
)
def test_exit_codes(statuses: tuple[Status, ...], plain: int, strict: int) -> None:
    assert report(*statuses).exit_code() == plain
    assert report(*statuses).exit_code(strict=True) == strict
    assert report(*statuses).to_dict(strict=True)["exitCode"] == strict


def test_render_one_line_per_check_with_the_action_for_warn_and_fail_only() -> None:
    text = report(Status.PASS, Status.WARN, Status.FAIL).render()
    assert text.splitlines() == [
        "PASS  check-0  detail 0",
        "WARN  check-1  detail 1 \u2014 do 1",
        "FAIL  check-2  detail 2 \u2014 do 2",
        "stack prod: 1 PASS, 1 WARN, 1 FAIL: needs attention",
    ]
    assert report(Status.WARN).render(strict=False).endswith(": healthy")
    assert report(Status.WARN).render(strict=True).endswith(": needs attention (--strict)")


def test_json_document() -> None:
    document = report(Status.PASS, Status.FAIL).to_dict()
    assert document["counts"] == {"PASS": 1, "WARN": 0, "FAIL": 1}
    assert (document["ok"], document["exitCode"], document["stack"]) == (False, 1, "prod")
    assert document["checks"][0] == {
        "name": "check-0",
        "status": "PASS",
        "detail": "detail 0",
        "action": None,
        "data": {},
    }


def test_sample_event_has_what_test_event_pattern_requires() -> None:
    event = checks.object_created_event(
        "bucket", "incoming/x.csv", account="123456789012", region="eu-west-1", now=NOW
    )
    assert {"id", "account", "source", "time", "region", "resources", "detail-type"} <= set(event)
    assert (event["source"], event["detail-type"], event["time"]) == (
        "aws.s3",
        "Object Created",
        "2026-11-23T12:00:00Z",
    )
    assert event["detail"]["bucket"]["name"] == "bucket"
    assert event["detail"]["object"]["key"] == "incoming/x.csv"
    redriven = checks.object_created_event(
        "b", "k", account="1", region="r", now=NOW, source="ingest-pipeline.redrive"
    )
    assert redriven["source"] == "ingest-pipeline.redrive"
    assert redriven["detail"]["redrive"]["originalSource"] == "aws.s3"


@pytest.mark.parametrize(
    ("expression", "period"),
    [
        ("rate(15 minutes)", timedelta(minutes=15)),
        ("rate(1 minute)", timedelta(minutes=1)),
        ("rate(2 hours)", timedelta(hours=2)),
        ("rate(1 day)", timedelta(days=1)),
        ("cron(0/15 * * * ? *)", None),
        ("at(2026-11-23T12:00:00)", None),
        (None, None),
    ],
)
def test_schedule_period(expression: str | None, period: timedelta | None) -> None:
    assert checks.schedule_period(expression) == period


def client_error(code: str, operation: str = "DescribeRule") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "no"}}, operation)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ResourceNotFoundException", Status.FAIL),
        ("AWS.SimpleQueueService.NonExistentQueue", Status.FAIL),
        ("StateMachineDoesNotExist", Status.FAIL),
        ("NoSuchBucket", Status.FAIL),
        ("AccessDeniedException", Status.WARN),
        ("ThrottlingException", Status.WARN),
    ],
)
def test_an_api_error_is_its_checks_verdict(code: str, status: Status) -> None:
    def broken(context: checks.Context) -> list[Check]:
        raise client_error(code)

    context = checks.Context(clients=None, outputs={"X": "x"}, stack="s", now=NOW)  # type: ignore[arg-type]
    spec = checks.Spec(("one", "two"), broken, ("X",))
    result = checks.run(context, [spec, checks.Spec(("three",), broken, ("Missing",))])
    one, two, three = result.checks
    assert (one.status, two.status) == (status, status)
    assert one.detail.endswith(f"DescribeRule: {code}: no")
    assert one.data["operation"] == "DescribeRule"
    assert (three.status, three.detail) == (
        Status.WARN,
        "not checked: the stack has no output Missing",
    )


def test_every_check_is_named_once_in_travel_order() -> None:
    outputs = {"EventDeliveryDLQUrl": "u", "ReconcileDLQUrl": "u", "OtherUrl": "u"}
    names = [name for spec in checks.specs(outputs) for name in spec.names]
    assert len(names) == len(set(names))
    assert names[:2] == ["bucket-eventbridge", "rule-enabled"] and names[-1] == "alarms"
    assert [n for n in names if n.startswith("dead-letters:")] == [
        "dead-letters:EventDeliveryDLQ",
        "dead-letters:ReconcileDLQ",
    ]


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


def fake_clients(**clients: Any) -> checks.Clients:
    names = ["s3", "events", "sqs", "stepfunctions", "scheduler", "cloudwatch"]
    names += ["cloudformation", "lambda_", "dynamodb"]
    return checks.Clients(**{name: clients.get(name) for name in names})


def failures(statuses: list[tuple[str, timedelta]]) -> Check:
    context = checks.Context(
        clients=fake_clients(stepfunctions=FakeStepFunctions(statuses)),
        outputs={"PipelineStateMachineArn": "arn:aws:states:r:1:stateMachine:m"},
        stack="s",
        now=NOW,
        since=timedelta(hours=1),
    )
    (result,) = checks.execution_failures(context)
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
    context = checks.Context(
        clients=fake_clients(
            stepfunctions=FakeExpressStepFunctions(logging), cloudwatch=cloudwatch
        ),
        outputs={"PipelineStateMachineArn": MACHINE},
        stack="s",
        now=NOW,
        since=timedelta(hours=1),
        connection="--stack s",
    )
    (result,) = checks.execution_failures(context)
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
        context = checks.Context(
            clients=fake_clients(stepfunctions=FakeExpressStepFunctions(logging)),
            outputs={"PipelineStateMachineArn": MACHINE},
            stack="s",
            now=NOW,
        )
        (result,) = checks.state_machine(context)
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
    assert checks._whole_minutes(start, end) == {
        "StartTime": NOW - timedelta(minutes=1),
        "EndTime": NOW + timedelta(minutes=1),
    }
    assert checks._whole_minutes(NOW, NOW) == {"StartTime": NOW, "EndTime": NOW}


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
    assert checks._metric_period(window) == period


class FakeTable:
    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items

    def query(self, **kwargs: Any) -> dict[str, Any]:
        assert kwargs["IndexName"] == "OpenStateIndex"
        return {"Items": self.items.get(kwargs["ExpressionAttributeValues"][":s"]["S"], [])}


class FakeLambda:
    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        return {"Environment": {"Variables": {
            "OBJECT_STATE_TABLE": "t", "PIPELINE_STATE_MACHINE_ARN": "arn", "INGEST_BUCKET": "b",
            "OPERATIONS_TOPIC_ARN": "arn", "RECONCILE_MAX_ATTEMPTS": "3",
        }}}  # fmt: skip


class FakeScheduler:
    def get_schedule(self, Name: str, GroupName: str) -> dict[str, Any]:
        assert (GroupName, Name) == ("ops", "reconcile")
        return {"ScheduleExpression": "rate(5 minutes)"}


def item(key: str, **values: Any) -> dict[str, Any]:
    raw = {"bucket_name": "b", "object_key": key, "version_id": "v1", **values}
    return {
        k: {"N": str(v)} if isinstance(v, int) and not isinstance(v, bool) else
        {"BOOL": v} if isinstance(v, bool) else {"S": v}
        for k, v in raw.items()
    }  # fmt: skip


def open_checks(items: dict[str, list[dict[str, Any]]]) -> dict[str, Check]:
    context = checks.Context(
        clients=fake_clients(
            dynamodb=FakeTable(items), lambda_=FakeLambda(), scheduler=FakeScheduler()
        ),
        outputs={
            "ObjectStateTableName": "t",
            "ReconcileFunctionName": "f",
            "ReconcileScheduleArn": "arn:aws:scheduler:r:1:schedule/ops/reconcile",
        },
        stack="s",
        now=NOW,
    )
    return {c.name: c for c in checks.open_records(context)}


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_open_records_use_the_deployed_policy_and_schedule_period() -> None:
    running = [
        item("incoming/live.csv", status="RUNNING", claimed_at=ago(minutes=30), lease_seconds=3600),
        item("incoming/late.csv", status="RUNNING", claimed_at=ago(minutes=65), lease_seconds=3600),
    ]
    retryable = [
        item("incoming/waiting.csv", status="FAILED", retryable=True, attempt=1,
             retry_after=ago(minutes=-5)),
        item("incoming/exhausted.csv", status="FAILED", retryable=True, attempt=3,
             retry_after=ago(minutes=11)),
    ]  # fmt: skip
    found = open_checks({"RUNNING": running, "RETRYABLE": retryable})

    stale, overdue = found["stale-claims"], found["overdue-retries"]
    # The schedule runs every 5 minutes: two periods (10 min) of grace.
    assert stale.status is Status.WARN and stale.data["graceSeconds"] == 600
    assert stale.detail == "1 claim RUNNING past its lease: incoming/late.csv (5 min)"
    assert "ingestctl reprocess --key 'incoming/late.csv'" in stale.action
    # RECONCILE_MAX_ATTEMPTS=3 from the function's environment: attempt 3 awaits escalation,
    # due 11 minutes ago, beyond the grace.
    assert overdue.status is Status.FAIL
    (record,) = overdue.data["records"]
    assert (record["key"], record["action"]) == ("incoming/exhausted.csv", "ESCALATE")


def test_no_open_records_pass() -> None:
    found = open_checks({})
    assert found["stale-claims"].status is found["overdue-retries"].status is Status.PASS


# ------------------------------------------------------------------------------------------
# dead letters
# ------------------------------------------------------------------------------------------


class PeekedQueue:
    """SQS as ``ingestctl inspect`` reads it: GetQueueAttributes, ReceiveMessage (each message
    once) and ChangeMessageVisibilityBatch. No delete: a consuming read would fail here."""

    def __init__(self, messages: list[dict[str, Any]], approximate: int | None = None) -> None:
        self.messages, self.calls = messages, list[str]()
        self.approximate = len(messages) if approximate is None else approximate
        self.received = False

    def get_queue_attributes(self, **_: Any) -> dict[str, Any]:
        self.calls.append("GetQueueAttributes")
        return {"Attributes": {"ApproximateNumberOfMessages": str(self.approximate)}}

    def receive_message(self, **_: Any) -> dict[str, Any]:
        self.calls.append("ReceiveMessage")
        if self.received:
            return {}
        self.received = True
        return {"Messages": self.messages}

    def change_message_visibility_batch(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append("ChangeMessageVisibilityBatch")
        assert {e["VisibilityTimeout"] for e in kwargs["Entries"]} == {0}  # visible again
        return {"Successful": kwargs["Entries"], "Failed": []}


def dead_letter_message(code: str = "NO_PERMISSIONS", *, sent: datetime) -> dict[str, Any]:
    message = dict(load_event("dlq/rule-no-permissions.json"))
    message["MessageId"] = f"m-{code}-{sent.timestamp()}"
    message["Attributes"] = {**message["Attributes"], "SentTimestamp": str(_ms(sent))}
    attributes = dict(message["MessageAttributes"])
    attributes["ERROR_CODE"] = {"StringValue": code, "DataType": "String"}
    message["MessageAttributes"] = attributes
    return message


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def dead_letters_context(sqs: Any, key: str = "EventDeliveryDLQUrl") -> checks.Context:
    return checks.Context(
        clients=fake_clients(sqs=sqs),
        outputs={key: "https://sqs.us-east-1.amazonaws.com/123456789012/q"},
        stack="s",
        now=NOW,
        connection="--stack prod",
    )


def test_an_empty_dead_letter_queue_passes() -> None:
    sqs = PeekedQueue([])
    (result,) = dead_letters.check(dead_letters_context(sqs), "EventDeliveryDLQUrl")
    assert (result.name, result.status, result.detail, result.action) == (
        "dead-letters:EventDeliveryDLQ",
        Status.PASS,
        "EventDeliveryDLQ is empty",
        "",
    )


def test_one_dead_letter_fails_with_count_age_codes_and_the_redrive_command() -> None:
    sqs = PeekedQueue(
        [
            dead_letter_message("NO_PERMISSIONS", sent=NOW - timedelta(minutes=5)),
            dead_letter_message("THROTTLING", sent=NOW - timedelta(minutes=1)),
            dead_letter_message("THROTTLING", sent=NOW - timedelta(seconds=30)),
        ]
    )
    (result,) = dead_letters.check(dead_letters_context(sqs), "EventDeliveryDLQUrl")

    assert result.status is Status.FAIL
    assert result.detail == (
        "3 messages in EventDeliveryDLQ; oldest 2026-11-23 11:55:00Z (5 min ago); "
        "by error code: THROTTLING 2, NO_PERMISSIONS 1"
    )
    assert result.action == (
        "ingestctl inspect EventDeliveryDLQ --stack prod, fix the cause, then "
        "ingestctl redrive EventDeliveryDLQ --stack prod "
        "(redrive refuses 1 of them until the cause is fixed, or with --force)"
    )
    assert result.data["redrive"] == "ingestctl redrive EventDeliveryDLQ --stack prod"
    assert result.data["byErrorCode"] == {"THROTTLING": 2, "NO_PERMISSIONS": 1}
    assert result.data["oldestAgeSeconds"] == 300
    assert "samples" not in result.data
    # peeked, not consumed: received, then made visible again; nothing deleted
    assert sqs.calls == [
        "GetQueueAttributes",
        "ReceiveMessage",
        "ReceiveMessage",
        "ChangeMessageVisibilityBatch",
    ]
    report = Report("s", NOW, [result])
    assert report.exit_code() == 1
    assert report.to_dict()["exitCode"] == 1 and not report.to_dict()["ok"]
    assert report.render().splitlines()[-1] == "stack s: 0 PASS, 0 WARN, 1 FAIL: needs attention"


def test_a_dead_letter_fails_whatever_its_age() -> None:
    for age in (timedelta(seconds=0), timedelta(days=3)):
        sqs = PeekedQueue([dead_letter_message("THROTTLING", sent=NOW - age)])
        (result,) = dead_letters.check(
            dead_letters_context(sqs, "ReconcileScheduleDLQUrl"), "ReconcileScheduleDLQUrl"
        )
        assert result.status is Status.FAIL
        assert result.name == "dead-letters:ReconcileScheduleDLQ"
        assert f"({duration(age)} ago)" in result.detail
        assert "ingestctl redrive ReconcileScheduleDLQ --stack prod" in result.action


def test_the_codes_of_a_sample_say_so_and_a_queue_in_flight_still_fails() -> None:
    many = PeekedQueue(
        [dead_letter_message("THROTTLING", sent=NOW - timedelta(hours=3))], approximate=250
    )
    (result,) = dead_letters.check(dead_letters_context(many), "EventDeliveryDLQUrl")
    assert result.status is Status.FAIL
    assert result.detail.startswith("250 messages in EventDeliveryDLQ; oldest ")
    assert "(3 h ago); by error code (of the 1 inspected): THROTTLING 1" in result.detail

    held = PeekedQueue([], approximate=2)  # all in flight: another reader holds them
    (result,) = dead_letters.check(dead_letters_context(held), "EventDeliveryDLQUrl")
    assert result.status is Status.FAIL
    assert result.detail == (
        "2 messages in EventDeliveryDLQ; age unknown; none could be inspected "
        "(another reader holds them: try again)"
    )


def test_a_message_moved_by_a_redrive_policy_has_no_error_code_and_says_why() -> None:
    moved = {
        "MessageId": "m1",
        "ReceiptHandle": "h1",
        "Body": json.dumps({"run": {"scheduleArn": "x"}}),
        "Attributes": {
            "SentTimestamp": str(_ms(NOW - timedelta(minutes=20))),
            "ApproximateReceiveCount": "6",
            "DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:123456789012:s-ReconcileQueue-A",
        },
    }
    context = dead_letters_context(PeekedQueue([moved]), "ReconcileDLQUrl")
    (result,) = dead_letters.check(context, "ReconcileDLQUrl")
    assert result.status is Status.FAIL
    assert result.detail == (
        "1 message in ReconcileDLQ; oldest 2026-11-23 11:40:00Z (20 min ago); "
        "by error code: unknown 1; 1 moved by the source queue's redrive policy after its "
        "maxReceiveCount receives (SQS records no error code: see the consumer's log)"
    )
    assert result.action.endswith("then ingestctl redrive ReconcileDLQ --stack prod")


@pytest.mark.parametrize(
    ("age", "text"),
    [
        (None, "unknown"),
        (timedelta(seconds=-3), "0 s"),
        (timedelta(seconds=119), "119 s"),
        (timedelta(minutes=2), "2 min"),
        (timedelta(hours=2), "2 h"),
        (timedelta(days=2), "2 d"),
    ],
)
def test_ages_are_said_as_people_say_them(age: timedelta | None, text: str) -> None:
    assert duration(age) == text
