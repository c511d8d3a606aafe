"""ingestctl doctor's pure parts: the queue policy evaluation, verdict rendering and exit
codes, the sample event, API errors turned into verdicts, the order of the checks. The checks
of each area are tested in test_doctor_<area>.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ingest_tools.doctor import checks, event_path
from ingest_tools.doctor.queue_policy import Outcome, evaluate
from ingest_tools.doctor.report import Check, Report, Status, duration

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
    event = event_path.object_created_event(
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
    redriven = event_path.object_created_event(
        "b", "k", account="1", region="r", now=NOW, source="ingest-pipeline.redrive"
    )
    assert redriven["source"] == "ingest-pipeline.redrive"
    assert redriven["detail"]["redrive"]["originalSource"] == "aws.s3"


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
