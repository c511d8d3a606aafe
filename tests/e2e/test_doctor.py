"""`ingestctl doctor` against the local cloud: a healthy stack, then each fault injected.

The tests share one deployed stack (module scope), which has processed one object; each
injects one fault the way it happens on AWS (an API call an operator or a deploy could make,
or a delivery failure), and checks that the check it concerns FAILs or WARNs with the figures
that matter, that every other check still PASSes, and the exit code; then takes the fault
back (the ``healthy`` fixture checks that every check PASSes again).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from ingest_pipeline.models import iso_ms
from ingest_tools import cli
from ingest_tools.doctor import Clients, Context, Status, run
from ingest_tools.local_pipeline import REGION, Pipeline, app_cloud
from localcloud.clients import client
from tests.support import (
    claim_record,
    cli_json,
    delete_record,
    fail_retryably,
    queue_arn,
    sample_file,
)

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")
EVERY_CHECK = {
    "bucket-eventbridge",
    "rule-enabled",
    "rule-pattern",
    "rule-targets",
    "rule-dlq-policy",
    "state-machine",
    "execution-failures",
    "dead-letters:EventDeliveryDLQ",
    "dead-letters:ReconcileDLQ",
    "dead-letters:ReconcileScheduleDLQ",
    "stale-claims",
    "overdue-retries",
    "reconcile-schedule",
    "alarms",
}


Undo = list[Callable[[], Any]]


@dataclass
class Stack:
    pipeline: Pipeline
    outputs: Path
    undo: Undo = field(default_factory=list)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One deployed stack for the module, after one object has been processed."""
    with app_cloud() as cloud:
        p = Pipeline(cloud)
        _, run_ = p.ingest("incoming/orders/healthy.csv", GOOD)
        assert run_.status == "SUCCEEDED"
        outputs = tmp_path_factory.mktemp("doctor") / "outputs.json"
        outputs.write_text(json.dumps(cloud.describe()))
        yield Stack(p, outputs)


@pytest.fixture
def healthy(stack: Stack) -> Iterator[Stack]:
    """The shared stack; each test registers in ``undo`` how to take its fault back, and
    afterwards every check must PASS again (the next test starts from a healthy stack)."""
    yield stack
    try:
        for step in reversed(stack.undo):
            step()
    finally:
        stack.undo.clear()
        stack.pipeline.cloud.faults.clear()
    report = run(context(stack.pipeline, datetime.now(UTC)))
    assert {c.name: c.status.value for c in report.checks} == dict.fromkeys(EVERY_CHECK, "PASS")


@pytest.fixture
def p(healthy: Stack) -> Pipeline:
    return healthy.pipeline


@pytest.fixture
def outputs(healthy: Stack) -> Path:
    return healthy.outputs


@pytest.fixture
def undo(healthy: Stack) -> Undo:
    return healthy.undo


def doctor(outputs: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, Any]:
    """Run `ingestctl doctor --json`: (exit code, the parsed report). Lambda logs of the
    local cloud share stdout, one JSON object a line; the report is indented."""
    capsys.readouterr()
    code = cli.main(["doctor", "--json", "--outputs", str(outputs), *extra])
    return code, cli_json(capsys)


def check(report: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [c for c in report["checks"] if c["name"] == name]
    return dict(found)


def assert_only(report: dict[str, Any], expected: dict[str, str]) -> None:
    """The checks in ``expected`` have those statuses; every other check PASSes."""
    found = {c["name"]: c["status"] for c in report["checks"]}
    assert found == {name: expected.get(name, "PASS") for name in EVERY_CHECK}


def context(p: Pipeline, now: datetime) -> Context:
    """doctor's context for an in-process run at another time."""
    return Context(
        clients=Clients.create(lambda service: client(service, REGION)),  # kept per process
        outputs=p.cloud.outputs,
        stack=p.cloud.stack_name,
        now=now,
    )


def alarm_count(p: Pipeline) -> int:
    """How many alarms the deployed template has."""
    resources = boto3.client("cloudformation", region_name=REGION).list_stack_resources(
        StackName=p.cloud.stack_name
    )["StackResourceSummaries"]
    return sum(1 for r in resources if r["ResourceType"] == "AWS::CloudWatch::Alarm")


def test_a_healthy_stack_passes_every_check(
    p: Pipeline, outputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = doctor(outputs, capsys, "--strict")

    assert code == 0 and report["ok"] and report["exitCode"] == 0
    assert_only(report, {})
    assert report["counts"] == {"PASS": len(EVERY_CHECK), "WARN": 0, "FAIL": 0}
    assert report["stack"] == "ingest-local"
    assert all(c["action"] is None for c in report["checks"])
    failures = check(report, "execution-failures")["data"]
    assert (failures["ended"], failures["failed"], failures["byStatus"]) == (1, 0, {"SUCCEEDED": 1})
    # A deployed alarm is INSUFFICIENT_DATA until CloudWatch first evaluates it.
    by_state = check(report, "alarms")["data"]["byState"]
    assert "ALARM" not in by_state and sum(by_state.values()) == alarm_count(p)
    assert check(report, "rule-pattern")["data"]["cases"] == 4
    schedule = check(report, "reconcile-schedule")["data"]  # GetSchedule answers in full
    assert (schedule["expression"], schedule["state"]) == ("rate(15 minutes)", "ENABLED")
    assert schedule["group"] != "default" and schedule["dlq"].endswith(
        p.stack.outputs["ReconcileScheduleDLQUrl"].rsplit("/", 1)[-1]
    )

    assert cli.main(["doctor", "--outputs", str(outputs)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("{")]
    assert [line.split()[:2] for line in lines[:-1]] == [
        ["PASS", c["name"]] for c in report["checks"]
    ]
    assert lines[-1] == f"stack ingest-local: {len(EVERY_CHECK)} PASS, 0 WARN, 0 FAIL: healthy"


def test_a_disabled_rule_fails(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    name = p.stack.outputs["ObjectCreatedRuleArn"].rsplit("/", 1)[-1]
    p.events.disable_rule(Name=name)
    undo.append(lambda: p.events.enable_rule(Name=name))

    code, report = doctor(outputs, capsys)

    assert code == 1 and not report["ok"]
    assert_only(report, {"rule-enabled": "FAIL"})
    failed = check(report, "rule-enabled")
    assert failed["detail"] == f"rule {name} is DISABLED: S3 events reach no target and are lost"
    assert failed["action"].startswith(f"aws events enable-rule --name {name};")


def test_bucket_notifications_off_fail(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    p.s3.put_bucket_notification_configuration(Bucket=p.bucket, NotificationConfiguration={})
    undo.append(
        lambda: p.s3.put_bucket_notification_configuration(
            Bucket=p.bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
        )
    )

    code, report = doctor(outputs, capsys)

    assert code == 1
    assert_only(report, {"bucket-eventbridge": "FAIL"})
    failed = check(report, "bucket-eventbridge")
    assert "does not send its events to EventBridge" in failed["detail"]
    assert f"put-bucket-notification-configuration --bucket {p.bucket}" in failed["action"]
    assert '{"EventBridgeConfiguration": {}}' in failed["action"]


def dead_letter(p: Pipeline, queue: str, undo: Undo) -> str:
    """Put one dead letter in ``queue`` the way AWS would; returns the error code that
    ``ingestctl inspect`` reports for it."""
    if queue == "EventDeliveryDLQ":
        # A NO_PERMISSIONS delivery failure skips the rule's retries: EventBridge puts the
        # event in the rule's DLQ with RULE_ARN, ERROR_CODE, ... attributes.
        p.cloud.faults.fail_delivery("NO_PERMISSIONS")
        p.put("incoming/orders/denied.csv", GOOD)
        p.cloud.settle()
        return "NO_PERMISSIONS"
    if queue == "ReconcileScheduleDLQ":
        # ReconcileQueue's policy refuses the schedule's role (an explicit Deny, which IAM
        # cannot override): Scheduler does not retry AccessDenied and puts the run in the
        # schedule's DLQ with ERROR_CODE, SCHEDULE_ARN, ... attributes.
        assert p.cloud.schedules is not None
        url = p.stack.outputs["ReconcileQueueUrl"]
        arn = queue_arn(p, url)
        group, name = p.stack.outputs["ReconcileScheduleArn"].split(":schedule/")[1].split("/")
        role = boto3.client("scheduler", region_name=REGION).get_schedule(
            Name=name, GroupName=group
        )["Target"]["RoleArn"]
        before = p.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])
        policy = json.loads(before["Attributes"]["Policy"])
        undo.append(
            lambda: p.sqs.set_queue_attributes(QueueUrl=url, Attributes=before["Attributes"])
        )
        deny = {"Sid": "DenyTheSchedule", "Effect": "Deny", "Principal": {"AWS": role},
                "Action": "sqs:SendMessage", "Resource": arn}  # fmt: skip
        policy["Statement"].append(deny)
        p.sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
        (fired,) = p.cloud.schedules.fire(p.reconcile_schedule)
        assert fired.status != "DELIVERED"
        return "AccessDenied"
    # ReconcileDLQ: ReconcileFunction rejects a run message it cannot read on every receive;
    # ReconcileQueue's redrive policy moves it after maxReceiveCount. SQS adds no error code.
    assert queue == "ReconcileDLQ" and p.cloud.mappings is not None
    body = {"run": {"scheduleArn": p.stack.outputs["ReconcileScheduleArn"]}}
    p.sqs.send_message(QueueUrl=p.stack.outputs["ReconcileQueueUrl"], MessageBody=json.dumps(body))
    p.cloud.mappings.drain()
    return "unknown"


@pytest.mark.parametrize("queue", ["EventDeliveryDLQ", "ReconcileDLQ", "ReconcileScheduleDLQ"])
def test_a_dead_letter_fails_at_once_and_is_left_in_its_queue(
    queue: str, p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    url = p.stack.outputs[f"{queue}Url"]
    undo.append(lambda: p.sqs.purge_queue(QueueUrl=url))
    code = dead_letter(p, queue, undo)
    name = f"dead-letters:{queue}"

    exit_code, report = doctor(outputs, capsys)

    assert exit_code == 1 and report["exitCode"] == 1 and not report["ok"]
    assert_only(report, {name: "FAIL"})
    failed = check(report, name)
    assert failed["detail"].startswith(f"1 message in {queue}; oldest ")
    assert f"by error code: {code} 1" in failed["detail"]
    assert failed["data"]["byErrorCode"] == {code: 1}
    assert failed["data"]["approximateMessages"] == 1
    assert 0 <= failed["data"]["oldestAgeSeconds"] < 300
    redrive = f"ingestctl redrive {queue} --outputs {outputs}"
    assert failed["data"]["redrive"] == redrive
    assert failed["action"].startswith(
        f"ingestctl inspect {queue} --outputs {outputs}, fix the cause, then {redrive}"
    )
    if queue == "EventDeliveryDLQ":
        assert failed["detail"].endswith("; by error code: NO_PERMISSIONS 1")
        assert failed["action"].endswith(
            "(redrive refuses 1 of them until the cause is fixed, or with --force)"
        )
    if queue == "ReconcileDLQ":
        assert "1 moved by the source queue's redrive policy" in failed["detail"]

    # The text verdict: the FAIL line, then the summary; exit 1.
    assert cli.main(["doctor", "--outputs", str(outputs)]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("{")]
    (line,) = [line for line in lines if line.split()[1:2] == [name]]
    assert line.startswith(f"FAIL  {name}")
    assert f"1 message in {queue}; oldest " in line and f"by error code: {code} 1" in line
    assert line.endswith(f" \u2014 {failed['action']}")  # the same action, redrive included
    summary = f"stack ingest-local: {len(EVERY_CHECK) - 1} PASS, 0 WARN, 1 FAIL: needs attention"
    assert lines[-1] == summary

    # Its age does not change the verdict, only the figures.
    later = run(context(p, datetime.now(UTC) + timedelta(hours=2)))
    (aged,) = [c for c in later.checks if c.name == name]
    assert aged.status is Status.FAIL and "(2 h ago)" in aged.detail
    assert later.exit_code() == 1

    # doctor peeks without consuming: the dead letter is still there for redrive.
    depth = p.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    assert depth["Attributes"]["ApproximateNumberOfMessages"] == "1"
    (kept,) = p.sqs.receive_message(
        QueueUrl=url, VisibilityTimeout=0, AttributeNames=["All"], MessageAttributeNames=["All"]
    )["Messages"]
    if code != "unknown":
        assert kept["MessageAttributes"]["ERROR_CODE"]["StringValue"] == code


def test_after_the_cause_is_fixed_redrive_empties_the_queue_and_doctor_is_healthy(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole loop a person runs: doctor FAILs on the dead letter, the cause is fixed,
    `ingestctl redrive` brings the object back, it is processed, and doctor exits 0."""
    url = p.stack.outputs["EventDeliveryDLQUrl"]

    def empty() -> None:  # not PurgeQueue: SQS allows one a minute, another test purges too
        for message in p.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            p.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    undo.append(empty)
    dead_letter(p, "EventDeliveryDLQ", undo)
    assert doctor(outputs, capsys)[0] == 1
    p.cloud.faults.clear()  # the cause, fixed

    # NO_PERMISSIONS dead letters are refused until the operator says the cause is fixed
    assert cli.main(["redrive", "EventDeliveryDLQ", "--force", "--outputs", str(outputs)]) == 0
    p.cloud.settle()

    version = p.s3.head_object(Bucket=p.bucket, Key="incoming/orders/denied.csv")["VersionId"]
    record = p.record("incoming/orders/denied.csv", version)
    assert record is not None and record["status"] == "SUCCEEDED"
    exit_code, report = doctor(outputs, capsys)
    assert exit_code == 0 and report["ok"]
    assert check(report, "dead-letters:EventDeliveryDLQ")["status"] == "PASS"


def test_an_empty_stack_has_empty_dead_letter_queues_and_exits_0(
    p: Pipeline, outputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code, report = doctor(outputs, capsys)

    assert exit_code == 0 and report["ok"]
    for queue in ("EventDeliveryDLQ", "ReconcileDLQ", "ReconcileScheduleDLQ"):
        passed = check(report, f"dead-letters:{queue}")
        assert (passed["status"], passed["detail"]) == ("PASS", f"{queue} is empty")


def test_a_claim_past_its_lease_warns_then_fails(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "incoming/orders/stuck.csv"
    now = datetime.now(UTC)
    # Claimed 65 minutes ago: the 3600 s lease expired 5 minutes ago; the next reconcile run
    # (every 15 minutes) recovers it.
    version = claim_record(p, key, now - timedelta(minutes=65))
    undo.append(lambda: delete_record(p, key, version))

    code, report = doctor(outputs, capsys)

    assert code == 0
    assert_only(report, {"stale-claims": "WARN"})
    warned = check(report, "stale-claims")
    assert warned["detail"].startswith(f"1 claim RUNNING past its lease: {key} (")
    (record,) = warned["data"]["records"]
    assert (record["key"], record["versionId"], record["action"]) == (key, version, "RECOVER")
    assert 299 <= record["overdueSeconds"] < 600
    assert f"ingestctl reprocess --key '{key}' --outputs {outputs}" in warned["action"]

    # Claimed two hours ago: an hour past its lease, more than two reconcile periods: the
    # reconciler is not recovering it.
    p.set_record(key, version, claimed_at=iso_ms(now - timedelta(hours=2)))
    code, report = doctor(outputs, capsys)

    assert code == 1
    assert_only(report, {"stale-claims": "FAIL"})
    failed = check(report, "stale-claims")
    assert "overdue by more than two reconcile periods (30 min)" in failed["detail"]
    assert failed["data"]["graceSeconds"] == 1800


def test_a_claim_within_its_lease_passes(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "incoming/orders/running.csv"
    version = claim_record(p, key, datetime.now(UTC) - timedelta(minutes=59))
    undo.append(lambda: delete_record(p, key, version))

    code, report = doctor(outputs, capsys, "--strict")

    assert code == 0
    assert (
        check(report, "stale-claims")["detail"] == "no RUNNING claim past its lease (1 within it)"
    )


def test_a_retry_past_its_time_fails_and_one_waiting_passes(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    now = datetime.now(UTC)
    waiting = fail_retryably(p, "incoming/orders/waiting.csv", now + timedelta(minutes=5))
    undo.append(lambda: delete_record(p, "incoming/orders/waiting.csv", waiting))

    code, report = doctor(outputs, capsys, "--strict")
    assert code == 0
    assert check(report, "overdue-retries")["detail"] == (
        "no retryable failure past its retry time (1 waiting)"
    )

    key = "incoming/orders/flaky.csv"
    version = fail_retryably(p, key, now - timedelta(hours=3))
    undo.append(lambda: delete_record(p, key, version))
    code, report = doctor(outputs, capsys)

    assert code == 1
    assert_only(report, {"overdue-retries": "FAIL"})
    failed = check(report, "overdue-retries")
    assert failed["detail"].startswith(
        f"1 FAILED-retryable record past its retry time: {key} (3 h)"
    )
    (record,) = failed["data"]["records"]
    assert (record["action"], record["errorCode"]) == ("RETRY", "STORAGE_UNAVAILABLE")
    assert "ingestctl reprocess --error-class TRANSIENT" in failed["action"]


def test_attempts_used_up_await_escalation(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "incoming/orders/hopeless.csv"
    version = fail_retryably(p, key, datetime.now(UTC) - timedelta(minutes=10), attempt=5)
    undo.append(lambda: delete_record(p, key, version))

    code, report = doctor(outputs, capsys)

    assert code == 0  # due 10 minutes ago: the next reconcile run escalates it
    assert_only(report, {"overdue-retries": "WARN"})
    (record,) = check(report, "overdue-retries")["data"]["records"]
    assert (record["action"], record["attempt"]) == ("ESCALATE", 5)


def test_a_target_without_its_retry_policy_and_dlq_fails(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    name = p.stack.outputs["ObjectCreatedRuleArn"].rsplit("/", 1)[-1]
    (target,) = p.events.list_targets_by_rule(Rule=name)["Targets"]
    bare = {k: v for k, v in target.items() if k not in ("RetryPolicy", "DeadLetterConfig")}
    p.events.put_targets(Rule=name, Targets=[bare])
    undo.append(lambda: p.events.put_targets(Rule=name, Targets=[target]))

    code, report = doctor(outputs, capsys)

    assert code == 1
    assert_only(report, {"rule-targets": "FAIL", "rule-dlq-policy": "WARN"})
    assert check(report, "rule-targets")["detail"] == (
        f"{target['Id']} has no dead-letter queue: failed events are dropped; "
        f"{target['Id']} has no RetryPolicy (EventBridge's default: 24 h, 185)"
    )


def test_a_deleted_queue_policy_fails(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    dlq = p.stack.outputs["EventDeliveryDLQUrl"]
    policy = queue_policy_of(p, dlq)
    p.sqs.set_queue_attributes(QueueUrl=dlq, Attributes={"Policy": ""})
    undo.append(lambda: p.sqs.set_queue_attributes(QueueUrl=dlq, Attributes={"Policy": policy}))

    code, report = doctor(outputs, capsys)

    assert code == 1
    assert_only(report, {"rule-dlq-policy": "FAIL"})
    failed = check(report, "rule-dlq-policy")
    assert "the queue has no policy: the rule cannot send it dead letters" in failed["detail"]
    (queue,) = failed["data"]["queues"]
    rule_arn = p.stack.outputs["ObjectCreatedRuleArn"]
    assert queue["neededStatement"]["Condition"] == {"ArnEquals": {"aws:SourceArn": rule_arn}}
    assert "sam deploy restores EventDeliveryDLQPolicy" in failed["action"]


def test_a_queue_policy_for_another_rule_fails(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    dlq = p.stack.outputs["EventDeliveryDLQUrl"]
    original = queue_policy_of(p, dlq)
    policy = json.loads(original)
    condition = policy["Statement"][0]["Condition"]["ArnEquals"]
    condition["aws:SourceArn"] = condition["aws:SourceArn"] + "-old"
    p.sqs.set_queue_attributes(QueueUrl=dlq, Attributes={"Policy": json.dumps(policy)})
    undo.append(lambda: p.sqs.set_queue_attributes(QueueUrl=dlq, Attributes={"Policy": original}))

    code, report = doctor(outputs, capsys)

    assert code == 1
    assert_only(report, {"rule-dlq-policy": "FAIL"})
    assert "no statement allows events.amazonaws.com" in check(report, "rule-dlq-policy")["detail"]


def queue_policy_of(p: Pipeline, url: str) -> str:
    attributes = p.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])
    return str(attributes["Attributes"]["Policy"])


def test_an_alarm_in_alarm_fails_with_what_its_description_says_to_do(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    (name,) = [
        a["AlarmName"]
        for a in cloudwatch.describe_alarms()["MetricAlarms"]
        if "-DeadLetterAlarm-" in a["AlarmName"]
    ]
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="test")
    undo.append(
        lambda: cloudwatch.set_alarm_state(
            AlarmName=name, StateValue="INSUFFICIENT_DATA", StateReason="test"
        )
    )

    code, report = doctor(outputs, capsys)

    assert code == 1
    assert_only(report, {"alarms": "FAIL"})
    failed = check(report, "alarms")
    assert failed["detail"] == f"1 of {alarm_count(p)} alarms in ALARM: DeadLetterAlarm"
    assert "ingestctl inspect EventDeliveryDLQ" in failed["action"]
    assert failed["data"]["inAlarm"][0]["reason"] == "test"


def test_a_disabled_schedule_fails(
    p: Pipeline, outputs: Path, undo: Undo, capsys: pytest.CaptureFixture[str]
) -> None:
    scheduler = boto3.client("scheduler", region_name=REGION)
    group, name = p.stack.outputs["ReconcileScheduleArn"].split(":schedule/")[1].split("/")
    schedule = scheduler.get_schedule(Name=name, GroupName=group)

    def set_state(state: str) -> None:
        scheduler.update_schedule(
            Name=name,
            GroupName=group,
            ScheduleExpression=schedule["ScheduleExpression"],
            FlexibleTimeWindow=schedule["FlexibleTimeWindow"],
            Target=schedule["Target"],
            State=state,
        )

    set_state("DISABLED")
    undo.append(lambda: set_state("ENABLED"))

    code, report = doctor(outputs, capsys)

    assert code == 1
    assert_only(report, {"reconcile-schedule": "FAIL"})
    detail = check(report, "reconcile-schedule")["detail"]
    assert detail == f"schedule {name} is DISABLED: nothing is reconciled"


# AccessDeniedException is one of the errors common to every AWS API: CloudWatch's model does
# not list it, and moto warns when it serializes the injected one.
@pytest.mark.filterwarnings("ignore:.*code AccessDeniedException does not match:UserWarning")
def test_an_api_error_affects_only_its_own_check(
    p: Pipeline, outputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p.cloud.faults.fail_operation("events", "TestEventPattern", "AccessDeniedException")
    express = p.sfn.describe_state_machine(stateMachineArn=p.state_machine)["type"] == "EXPRESS"
    if express:  # no ListExecutions: execution-failures reads the AWS/States metrics
        p.cloud.faults.fail_operation("cloudwatch", "GetMetricData", "AccessDeniedException")
    else:
        p.cloud.faults.fail_operation("stepfunctions", "ListExecutions", "StateMachineDoesNotExist")

    code, report = doctor(outputs, capsys)

    warned = check(report, "rule-pattern")
    assert warned["detail"].startswith("could not check: TestEventPattern: AccessDeniedException")
    assert "give the caller TestEventPattern" in warned["action"]
    if express:
        assert code == 0  # denied calls only WARN
        assert_only(report, {"rule-pattern": "WARN", "execution-failures": "WARN"})
        assert check(report, "execution-failures")["detail"].startswith(
            "could not check: GetMetricData: AccessDeniedException"
        )
        return
    assert code == 1  # the missing resource FAILs; the denied call only WARNs
    assert_only(report, {"rule-pattern": "WARN", "execution-failures": "FAIL"})
    assert check(report, "execution-failures")["detail"].startswith(
        "missing: ListExecutions: StateMachineDoesNotExist"
    )


def test_an_unreadable_stack_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["doctor", "--outputs", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the stack" in capsys.readouterr().err
    assert cli.main(["doctor"]) == 2
    assert "--stack NAME or --outputs FILE is required" in capsys.readouterr().err
