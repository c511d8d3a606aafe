"""Dead-letter formats: every fixture an SQS DLQ can hold, EventBridge rule dead letters,
SNS-wrapped ones and queue messages (reconcile runs). Scheduler and Lambda records are tested
in test_dlq_formats_scheduler.py / _lambda.py, the redrive entry in _redrive.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ingest_tools.recovery.formats import (
    RETRY_FUTILE,
    ObjectHint,
    RecordKind,
    UnreadableMessageError,
    futile_reason,
    parse_message,
)
from tests.support import (
    DLQ,
    DLQ_BUCKET,
    DLQ_RULE_ARN,
    DLQ_SFN_ARN,
    dlq_body,
    dlq_message,
    dlq_record,
    dlq_s3_event,
    sqs_message,
)

pytestmark = pytest.mark.unit

# fixture -> (kind, wrapped in SNS, replayable)
READABLE = {
    "rule-s3-object-created.json": (RecordKind.RULE_EVENT, False, True),
    "rule-no-permissions.json": (RecordKind.RULE_EVENT, False, True),
    "rule-cloudtrail-putobject.json": (RecordKind.RULE_EVENT, False, True),
    "scheduler-sqs-target.json": (RecordKind.SCHEDULER, False, True),
    "scheduler-stepfunctions-target.json": (RecordKind.SCHEDULER, False, True),
    "lambda-async-on-failure.json": (RecordKind.LAMBDA_FAILURE, False, True),
    "lambda-kinesis-on-failure.json": (RecordKind.LAMBDA_FAILURE, False, False),
    "lambda-kinesis-s3-payload.json": (RecordKind.LAMBDA_FAILURE, False, False),
    "sns-wrapped-rule-event.json": (RecordKind.RULE_EVENT, True, True),
}
# fixture -> a fragment of the reason
UNREADABLE = {
    "unreadable-not-json.json": "body is not JSON",
    "unreadable-unknown-shape.json": (
        "the JSON body matches no dead-letter format (keys: orderId, reason, status)"
    ),
}


# ------------------------------------------------------------------------------------------
# every fixture
# ------------------------------------------------------------------------------------------


def test_every_fixture_file_is_covered() -> None:
    on_disk = {path.name for path in DLQ.glob("*.json")}
    assert on_disk == set(READABLE) | set(UNREADABLE)


@pytest.mark.parametrize(("name", "expected"), sorted(READABLE.items()))
def test_readable_fixture(name: str, expected: tuple[RecordKind, bool, bool]) -> None:
    kind, wrapped, replayable = expected
    message = dlq_message(name)

    record = parse_message(message)

    assert record.kind is kind
    assert record.wrapped_in_sns is wrapped
    assert record.replayable is replayable
    assert (record.not_replayable_reason is None) is replayable
    assert record.message_id == message["MessageId"]
    assert record.receipt_handle == message["ReceiptHandle"]
    sent_ms = int(message["Attributes"]["SentTimestamp"])
    assert record.sent_at == datetime.fromtimestamp(sent_ms / 1000, tz=UTC)
    assert record.sent_at is not None
    assert record.sent_at.tzinfo is not None
    assert record.receive_count == int(message["Attributes"]["ApproximateReceiveCount"])
    assert record.error_code
    # A record with an event to put back can be turned into a PutEvents entry.
    assert (record.event is not None) is (kind is not RecordKind.SCHEDULER and replayable)


@pytest.mark.parametrize(("name", "fragment"), sorted(UNREADABLE.items()))
def test_unreadable_fixture(name: str, fragment: str) -> None:
    message = dlq_message(name)

    with pytest.raises(UnreadableMessageError) as caught:
        parse_message(message)

    assert isinstance(caught.value, ValueError)
    assert caught.value.message_id == message["MessageId"]
    assert fragment in caught.value.reason
    assert message["MessageId"] in str(caught.value)


# ------------------------------------------------------------------------------------------
# EventBridge rule DLQ
# ------------------------------------------------------------------------------------------


def test_rule_s3_object_created_after_retries() -> None:
    record = dlq_record("rule-s3-object-created.json")

    assert record.error_code == "THROTTLING"
    assert record.error_message is not None
    assert record.error_message.startswith("Rate exceeded")
    assert record.retry_attempts == 185
    assert record.exhausted_condition == "MaximumRetryAttempts"
    assert record.rule_arn == DLQ_RULE_ARN
    assert record.target_arn == DLQ_SFN_ARN
    assert record.origin == DLQ_RULE_ARN
    assert record.event == dlq_s3_event()
    assert record.object == ObjectHint(
        DLQ_BUCKET, "incoming/orders/2026-11-21.csv", "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e"
    )
    assert record.sent_at == datetime(2026, 11, 21, 23, 14, 1, 337000, tzinfo=UTC)
    assert record.target_input is None
    assert (record.schedule_arn, record.scheduled_time, record.execution_id) == (None, None, None)
    assert futile_reason(record) is None


def test_rule_no_permissions_is_not_retried() -> None:
    record = dlq_record("rule-no-permissions.json")

    assert record.error_code == "NO_PERMISSIONS"
    assert record.error_message is not None
    assert "is not authorized to perform: states:StartExecution" in record.error_message
    assert record.retry_attempts is None
    assert record.exhausted_condition is None
    assert record.object == ObjectHint(DLQ_BUCKET, "incoming/orders/2026-11-21-late.csv", None)
    assert record.replayable  # the event is intact; redriving it is futile until IAM is fixed
    assert futile_reason(record) == f"NO_PERMISSIONS: {RETRY_FUTILE['NO_PERMISSIONS']}"


def test_rule_cloudtrail_putobject_event() -> None:
    record = dlq_record("rule-cloudtrail-putobject.json")

    assert record.error_code == "THROTTLING"
    assert record.retry_attempts == 27
    assert record.exhausted_condition == "MaximumEventAgeInSeconds"
    assert record.rule_arn == "arn:aws:events:us-east-1:123456789012:rule/s3-cloudtrail-putobject"
    assert record.target_arn == (
        "arn:aws:lambda:us-east-1:123456789012:function:orders-putobject-handler"
    )
    assert record.receive_count == 2
    assert record.event is not None
    assert record.event["detail-type"] == "AWS API Call via CloudTrail"
    assert record.object == ObjectHint(
        DLQ_BUCKET, "incoming/orders/2026-11-21-cloudtrail.csv", "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"
    )


def test_cloudtrail_event_without_version_id() -> None:
    event = dlq_body("rule-cloudtrail-putobject.json")
    del event["detail"]["responseElements"]

    record = parse_message(sqs_message(event))

    assert record.object == ObjectHint(DLQ_BUCKET, "incoming/orders/2026-11-21-cloudtrail.csv")


def test_event_without_attributes_is_a_rule_record_with_unknown_error() -> None:
    record = parse_message(sqs_message(dlq_s3_event()))

    assert record.kind is RecordKind.RULE_EVENT
    assert (record.error_code, record.error_message, record.retry_attempts) == (None, None, None)
    assert (record.rule_arn, record.target_arn) == (None, None)
    assert record.origin == "unknown"
    assert record.replayable
    assert record.receive_count == 3
    assert futile_reason(record) is None


def test_empty_attribute_values_count_as_absent() -> None:
    record = parse_message(
        sqs_message(dlq_s3_event(), {"ERROR_CODE": "", "RULE_ARN": DLQ_RULE_ARN})
    )

    assert record.error_code is None
    assert record.rule_arn == DLQ_RULE_ARN


def test_lambda_function_dlq_error_message_is_kept() -> None:
    # A Lambda function's own DLQ (seed 002's flow): the event plus RequestID, ErrorCode and
    # ErrorMessage attributes.
    attributes = {
        "RequestID": "0f8c7d6e-5b4a-4321-9e8d-7c6b5a4f3e2d",
        "ErrorCode": "200",
        "ErrorMessage": "Task timed out after 30.03 seconds",
    }

    record = parse_message(sqs_message(dlq_s3_event(), attributes))

    assert record.kind is RecordKind.RULE_EVENT
    assert record.error_message == "Task timed out after 30.03 seconds"


def test_rule_attributes_with_a_body_that_is_not_an_event_are_unreadable() -> None:
    message = sqs_message(
        {"bucket": DLQ_BUCKET}, {"RULE_ARN": DLQ_RULE_ARN, "ERROR_CODE": "THROTTLING"}
    )

    with pytest.raises(UnreadableMessageError) as caught:
        parse_message(message)

    assert caught.value.reason == (
        f"an EventBridge rule dead letter ({DLQ_RULE_ARN}) whose body is not an EventBridge event"
    )


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"MessageId": "m-1", "ReceiptHandle": "rh"}, "the message has no Body"),
        (sqs_message(""), "body is not JSON"),
        (sqs_message("[1, 2]"), "matches no dead-letter format (a JSON list)"),
        (sqs_message("{}"), "matches no dead-letter format (an empty object)"),
    ],
)
def test_other_unreadable_messages(message: dict[str, Any], fragment: str) -> None:
    with pytest.raises(UnreadableMessageError) as caught:
        parse_message(message)

    assert fragment in caught.value.reason


def test_lambda_sqs_event_record_shape_is_read_too() -> None:
    boto3_shaped = dlq_message("rule-s3-object-created.json")
    lambda_shaped = {
        "messageId": boto3_shaped["MessageId"],
        "receiptHandle": boto3_shaped["ReceiptHandle"],
        "body": boto3_shaped["Body"],
        "attributes": boto3_shaped["Attributes"],
        "messageAttributes": {
            name: {"stringValue": value["StringValue"], "dataType": "String"}
            for name, value in boto3_shaped["MessageAttributes"].items()
        },
    }

    assert parse_message(lambda_shaped) == parse_message(boto3_shaped)


def test_missing_system_attributes_default() -> None:
    message = sqs_message(dlq_s3_event())
    del message["Attributes"]

    record = parse_message(message)

    assert record.sent_at is None
    assert record.receive_count == 1


# ------------------------------------------------------------------------------------------
# SNS-wrapped
# ------------------------------------------------------------------------------------------


def test_sns_wrapped_rule_event_uses_sns_attributes() -> None:
    message = dlq_message("sns-wrapped-rule-event.json")
    notification = json.loads(message["Body"])

    record = parse_message(message)

    assert "MessageAttributes" not in message
    assert record.wrapped_in_sns
    assert record.message_id == message["MessageId"]
    assert record.event == json.loads(notification["Message"])
    assert record.error_code == "THROTTLING"
    assert record.retry_attempts == 96  # an SNS "Number" attribute
    assert record.exhausted_condition == "MaximumEventAgeInSeconds"
    assert record.rule_arn == DLQ_RULE_ARN
    assert record.target_arn == DLQ_SFN_ARN
    assert record.object == ObjectHint(
        DLQ_BUCKET, "incoming/orders/2026-11-21-sns.csv", "Zk7Qm2Rt5Vx8Yb1Nc4Hd6Jf9Gs3Lp0Wa"
    )


def test_sqs_attributes_win_over_sns_attributes() -> None:
    message = dlq_message("sns-wrapped-rule-event.json")
    message["MessageAttributes"] = {
        "ERROR_CODE": {"StringValue": "NO_RESOURCE", "DataType": "String"}
    }

    record = parse_message(message)

    assert record.wrapped_in_sns
    assert record.error_code == "NO_RESOURCE"
    assert record.rule_arn is None


def test_sns_wrapped_scheduler_record() -> None:
    notification = {
        "Type": "Notification",
        "TopicArn": "arn:aws:sns:us-east-1:123456789012:schedule-failures",
        "Message": "plain target input",
        "MessageAttributes": {
            "EXECUTION_ID": {"Type": "String", "Value": "0a1b2c3d4e5f6789"},
            "TARGET_ARN": {"Type": "String", "Value": "arn:aws:sqs:us-east-1:123456789012:q"},
        },
    }

    record = parse_message(sqs_message(notification))

    assert record.kind is RecordKind.SCHEDULER
    assert record.wrapped_in_sns
    assert record.target_input == "plain target input"


@pytest.mark.parametrize(
    ("inner", "fragment"),
    [
        ("not json at all", "SNS Message is not JSON"),
        ('{"hello": "world"}', "JSON SNS Message matches no dead-letter format (keys: hello)"),
        (
            json.dumps({"Type": "Notification", "TopicArn": "arn:aws:sns:x", "Message": "{}"}),
            "an SNS notification inside another",
        ),
        (None, "no Message string"),
    ],
)
def test_sns_notification_with_unreadable_message(inner: str | None, fragment: str) -> None:
    topic = "arn:aws:sns:us-east-1:123456789012:ingest-dead-letters"
    notification = {"Type": "Notification", "TopicArn": topic, "Message": inner}

    with pytest.raises(UnreadableMessageError) as caught:
        parse_message(sqs_message(notification))

    assert caught.value.reason.startswith(f"SNS notification from {topic}: ")
    assert fragment in caught.value.reason


# --- queue messages: a reconcile run with or without DeadLetterQueueSourceArn -------------

RECONCILE_QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:s3-ingest-pipeline-ReconcileQueue-X"
SCHEDULE_ARN = "arn:aws:scheduler:us-east-1:123456789012:schedule/ingest-reconcile/run"
RUN = {
    "scheduleArn": SCHEDULE_ARN,
    "scheduledTime": "2026-11-21T10:15:00Z",
    "executionId": "2b1f4ea1-7c2e-4f57-9d3c-4a8e0f6c2d11",
    "attempt": "1",
}


def test_a_reconcile_run_sent_straight_to_the_dlq_is_a_queue_message_without_source() -> None:
    """What ReconcileSchedule sends, put in ReconcileDLQ with SendMessage: no
    DeadLetterQueueSourceArn, no attributes; the redrive sends it to the only source queue."""
    body = json.dumps({"run": RUN, "task": "reconcile"})

    record = parse_message(sqs_message(body))

    assert record.kind is RecordKind.QUEUE and record.replayable
    assert record.target_arn is None  # to be resolved from ListDeadLetterSourceQueues
    assert record.target_input == body  # sent back unchanged
    assert (record.schedule_arn, record.scheduled_time, record.execution_id) == (
        SCHEDULE_ARN,
        RUN["scheduledTime"],
        RUN["executionId"],
    )
    assert record.origin == SCHEDULE_ARN
    assert record.exhausted_condition is None and record.error_code is None


def test_a_reconcile_run_moved_by_the_redrive_policy_goes_back_to_its_source() -> None:
    message = sqs_message({"run": RUN})  # the shape without "task" is a run too
    message["Attributes"]["DeadLetterQueueSourceArn"] = RECONCILE_QUEUE_ARN

    record = parse_message(message)

    assert record.kind is RecordKind.QUEUE
    assert record.target_arn == RECONCILE_QUEUE_ARN
    assert record.exhausted_condition == "maxReceiveCount"
    assert record.schedule_arn == SCHEDULE_ARN


def test_any_body_with_a_dead_letter_source_is_a_queue_message() -> None:
    message = sqs_message("Test message.")
    message["Attributes"]["DeadLetterQueueSourceArn"] = RECONCILE_QUEUE_ARN

    record = parse_message(message)

    assert (record.kind, record.target_arn, record.schedule_arn) == (
        RecordKind.QUEUE,
        RECONCILE_QUEUE_ARN,
        None,
    )


@pytest.mark.parametrize(
    "body",
    [
        {"run": "2026-11-21T10:15:00Z"},  # the run is no object
        {"run": RUN, "task": "something-else"},
        {"run": RUN, "task": "reconcile", "orderId": 7},  # another document with a run key
        ["run", RUN],
    ],
)
def test_other_bodies_without_a_source_are_not_runs(body: Any) -> None:
    with pytest.raises(UnreadableMessageError):
        parse_message(sqs_message(body))


def test_a_run_with_scheduler_attributes_is_a_scheduler_dead_letter() -> None:
    """Scheduler's own DLQ record of a run it could not deliver goes back to its target."""
    attributes = {"SCHEDULE_ARN": SCHEDULE_ARN, "TARGET_ARN": RECONCILE_QUEUE_ARN}

    record = parse_message(sqs_message({"run": RUN, "task": "reconcile"}, attributes))

    assert record.kind is RecordKind.SCHEDULER and record.target_arn == RECONCILE_QUEUE_ARN


def test_an_event_without_attributes_or_source_is_still_a_rule_record() -> None:
    record = parse_message(sqs_message(dlq_s3_event()))

    assert record.kind is RecordKind.RULE_EVENT and record.error_code is None
