"""Dead-letter formats: every failure record an SQS DLQ can hold, and the redrive entry."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from ingest_tools.recovery.formats import (
    MAX_ERROR_MESSAGE_CHARS,
    RETRY_FUTILE,
    FailureRecord,
    ObjectHint,
    RecordKind,
    UnreadableMessageError,
    bus_from_rule_arn,
    futile_reason,
    parse_message,
    to_put_events_entry,
)
from tests.support import EVENTS

pytestmark = pytest.mark.unit

DLQ = EVENTS / "dlq"
REDRIVE_SOURCE = "ingest-pipeline.redrive"
NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
BUCKET = "example-ingest-bucket"
RULE_ARN = (
    "arn:aws:events:us-east-1:123456789012:rule/"
    "s3-ingest-pipeline-PipelineStateMachineObjectCreated-1NQ7XKZ0L7Q3M"
)
SFN_ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:PipelineStateMachine-8Hq2VxRk4TcL"
STREAM_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/ingest-audit-stream"
START_SEQ = "49601189658422359378836298521827638475320189012309704722"
END_SEQ = "49601189658422359378836298522902373528957594348623495186"

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


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DLQ / name).read_text())
    return loaded


def parse(name: str) -> FailureRecord:
    return parse_message(load(name))


def body_of(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(load(name)["Body"])
    return body


def sqs_message(
    body: str | Mapping[str, Any],
    attributes: Mapping[str, str] | None = None,
    *,
    message_id: str = "11111111-2222-4333-8444-555555555555",
) -> dict[str, Any]:
    """A boto3-shaped SQS message around ``body`` (a dict is sent as JSON)."""
    message: dict[str, Any] = {
        "MessageId": message_id,
        "ReceiptHandle": f"AQEB-{message_id}",
        "Body": body if isinstance(body, str) else json.dumps(body),
        "Attributes": {"SentTimestamp": "1795248000000", "ApproximateReceiveCount": "3"},
    }
    if attributes is not None:
        message["MessageAttributes"] = {
            name: {"StringValue": value, "DataType": "String"} for name, value in attributes.items()
        }
    return message


def s3_event() -> dict[str, Any]:
    """The S3 Object Created event inside rule-s3-object-created.json."""
    return body_of("rule-s3-object-created.json")


def entry_for(record: FailureRecord, bus: str = "default") -> dict[str, Any]:
    return to_put_events_entry(
        record, redrive_source=REDRIVE_SOURCE, event_bus_name=bus, redriven_at=NOW
    )


# ------------------------------------------------------------------------------------------
# every fixture
# ------------------------------------------------------------------------------------------


def test_every_fixture_file_is_covered() -> None:
    on_disk = {path.name for path in DLQ.glob("*.json")}
    assert on_disk == set(READABLE) | set(UNREADABLE)


@pytest.mark.parametrize(("name", "expected"), sorted(READABLE.items()))
def test_readable_fixture(name: str, expected: tuple[RecordKind, bool, bool]) -> None:
    kind, wrapped, replayable = expected
    message = load(name)

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
    message = load(name)

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
    record = parse("rule-s3-object-created.json")

    assert record.error_code == "THROTTLING"
    assert record.error_message is not None
    assert record.error_message.startswith("Rate exceeded")
    assert record.retry_attempts == 185
    assert record.exhausted_condition == "MaximumRetryAttempts"
    assert record.rule_arn == RULE_ARN
    assert record.target_arn == SFN_ARN
    assert record.origin == RULE_ARN
    assert record.event == s3_event()
    assert record.object == ObjectHint(
        BUCKET, "incoming/orders/2026-11-21.csv", "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e"
    )
    assert record.sent_at == datetime(2026, 11, 21, 23, 14, 1, 337000, tzinfo=UTC)
    assert record.target_input is None
    assert (record.schedule_arn, record.scheduled_time, record.execution_id) == (None, None, None)
    assert futile_reason(record) is None


def test_rule_no_permissions_is_not_retried() -> None:
    record = parse("rule-no-permissions.json")

    assert record.error_code == "NO_PERMISSIONS"
    assert record.error_message is not None
    assert "is not authorized to perform: states:StartExecution" in record.error_message
    assert record.retry_attempts is None
    assert record.exhausted_condition is None
    assert record.object == ObjectHint(BUCKET, "incoming/orders/2026-11-21-late.csv", None)
    assert record.replayable  # the event is intact; redriving it is futile until IAM is fixed
    assert futile_reason(record) == f"NO_PERMISSIONS: {RETRY_FUTILE['NO_PERMISSIONS']}"


def test_rule_cloudtrail_putobject_event() -> None:
    record = parse("rule-cloudtrail-putobject.json")

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
        BUCKET, "incoming/orders/2026-11-21-cloudtrail.csv", "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"
    )


def test_cloudtrail_event_without_version_id() -> None:
    event = body_of("rule-cloudtrail-putobject.json")
    del event["detail"]["responseElements"]

    record = parse_message(sqs_message(event))

    assert record.object == ObjectHint(BUCKET, "incoming/orders/2026-11-21-cloudtrail.csv")


def test_event_without_attributes_is_a_rule_record_with_unknown_error() -> None:
    record = parse_message(sqs_message(s3_event()))

    assert record.kind is RecordKind.RULE_EVENT
    assert (record.error_code, record.error_message, record.retry_attempts) == (None, None, None)
    assert (record.rule_arn, record.target_arn) == (None, None)
    assert record.origin == "unknown"
    assert record.replayable
    assert record.receive_count == 3
    assert futile_reason(record) is None


def test_empty_attribute_values_count_as_absent() -> None:
    record = parse_message(sqs_message(s3_event(), {"ERROR_CODE": "", "RULE_ARN": RULE_ARN}))

    assert record.error_code is None
    assert record.rule_arn == RULE_ARN


def test_lambda_function_dlq_error_message_is_kept() -> None:
    # A Lambda function's own DLQ (seed 002's flow): the event plus RequestID, ErrorCode and
    # ErrorMessage attributes.
    attributes = {
        "RequestID": "0f8c7d6e-5b4a-4321-9e8d-7c6b5a4f3e2d",
        "ErrorCode": "200",
        "ErrorMessage": "Task timed out after 30.03 seconds",
    }

    record = parse_message(sqs_message(s3_event(), attributes))

    assert record.kind is RecordKind.RULE_EVENT
    assert record.error_message == "Task timed out after 30.03 seconds"


def test_rule_attributes_with_a_body_that_is_not_an_event_are_unreadable() -> None:
    message = sqs_message({"bucket": BUCKET}, {"RULE_ARN": RULE_ARN, "ERROR_CODE": "THROTTLING"})

    with pytest.raises(UnreadableMessageError) as caught:
        parse_message(message)

    assert caught.value.reason == (
        f"an EventBridge rule dead letter ({RULE_ARN}) whose body is not an EventBridge event"
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
    boto3_shaped = load("rule-s3-object-created.json")
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
    message = sqs_message(s3_event())
    del message["Attributes"]

    record = parse_message(message)

    assert record.sent_at is None
    assert record.receive_count == 1


# ------------------------------------------------------------------------------------------
# EventBridge Scheduler DLQ
# ------------------------------------------------------------------------------------------


def test_scheduler_sqs_target() -> None:
    message = load("scheduler-sqs-target.json")
    schedule_arn = (
        "arn:aws:scheduler:us-east-1:123456789012:schedule/default/"
        "s3-ingest-pipeline-ReconcileSchedule-4MZQ8W1T6YB2"
    )

    record = parse_message(message)

    assert record.target_input == message["Body"]
    body = json.loads(message["Body"])
    assert body["task"] == "reconcile"
    assert body["context"] == {
        "execution_id": "c4f1e9a2b7d83650",
        "schedule_arn": schedule_arn,
        "scheduled_time": "2026-11-21T02:00:00Z",
    }
    assert record.execution_id == "c4f1e9a2b7d83650"
    assert record.schedule_arn == schedule_arn
    assert record.scheduled_time == "2026-11-21T02:00:00Z"
    assert record.target_arn == (
        "arn:aws:sqs:us-east-1:123456789012:s3-ingest-pipeline-ReconcileQueue-Qw3Er5Ty7Ui9"
    )
    assert record.error_code == "RequestThrottled"
    assert record.retry_attempts == 17
    assert record.exhausted_condition == "MaximumEventAgeInSeconds"
    assert record.origin == schedule_arn
    assert (record.rule_arn, record.event, record.object) == (None, None, None)
    assert futile_reason(record) is None


def test_scheduler_stepfunctions_target_access_denied() -> None:
    record = parse("scheduler-stepfunctions-target.json")

    assert record.target_input is not None
    request = json.loads(record.target_input)
    assert request["Name"] == record.execution_id == "68d43b39655f8226"
    assert request["StateMachineArn"] == record.target_arn
    assert json.loads(request["Input"])["request"]["reprocess"] is True
    assert record.error_code == "AccessDeniedException"
    assert record.error_message is not None
    assert "states:StartExecution" in record.error_message
    assert record.retry_attempts == 0
    assert record.exhausted_condition is None
    assert record.scheduled_time == "2026-11-21T04:18:42Z"
    assert futile_reason(record) == (
        f"AccessDeniedException: {RETRY_FUTILE['AccessDeniedException']}"
    )


def test_scheduler_record_is_not_a_put_events_entry() -> None:
    record = parse("scheduler-sqs-target.json")

    with pytest.raises(ValueError, match="has no replayable event"):
        entry_for(record)


def test_scheduler_body_need_not_be_json() -> None:
    attributes = {
        "ERROR_CODE": "ThrottlingException",
        "EXECUTION_ID": "0a1b2c3d4e5f6789",
        "SCHEDULE_ARN": "arn:aws:scheduler:us-east-1:123456789012:schedule/default/ping",
        "TARGET_ARN": "arn:aws:sns:us-east-1:123456789012:ops-pings",
    }

    record = parse_message(sqs_message("nightly ping: reconcile now", attributes))

    assert record.kind is RecordKind.SCHEDULER
    assert record.target_input == "nightly ping: reconcile now"
    assert record.replayable


def test_scheduler_truncated_payload_is_not_replayable() -> None:
    attributes = {
        "ERROR_CODE": "ThrottlingException",
        "EXECUTION_ID": "0a1b2c3d4e5f6789",
        "IS_PAYLOAD_TRUNCATED": "true",
        "SCHEDULE_ARN": "arn:aws:scheduler:us-east-1:123456789012:schedule/default/big",
        "TARGET_ARN": "arn:aws:sqs:us-east-1:123456789012:big-input-queue",
    }

    record = parse_message(sqs_message('{"items": [1, 2, 3', attributes))

    assert not record.replayable
    assert record.not_replayable_reason == (
        "EventBridge Scheduler truncated the target input (IS_PAYLOAD_TRUNCATED=true): take "
        "the input from schedule arn:aws:scheduler:us-east-1:123456789012:schedule/default/big "
        "instead"
    )


def test_scheduler_without_target_arn_is_not_replayable() -> None:
    record = parse_message(sqs_message("{}", {"EXECUTION_ID": "0a1b2c3d4e5f6789"}))

    assert record.kind is RecordKind.SCHEDULER
    assert record.schedule_arn is None
    assert record.not_replayable_reason == (
        "no TARGET_ARN attribute: the target to invoke again is unknown"
    )


# ------------------------------------------------------------------------------------------
# Lambda on-failure records
# ------------------------------------------------------------------------------------------


def test_lambda_async_on_failure_record() -> None:
    record = parse("lambda-async-on-failure.json")
    function_arn = "arn:aws:lambda:us-east-1:123456789012:function:ingest-object-notifier:$LATEST"

    assert record.error_code == "ClientError"
    assert record.error_message is not None
    assert record.error_message.startswith("An error occurred (SlowDown)")
    assert record.retry_attempts == 2  # approximateInvokeCount 3
    assert record.exhausted_condition == "RetriesExhausted"
    assert record.target_arn == record.origin == function_arn
    assert record.rule_arn is None
    assert record.event == body_of("lambda-async-on-failure.json")["requestPayload"]
    assert record.object == ObjectHint(
        BUCKET, "incoming/orders/2026-11-21-notify.csv", "p8Xr2.Lm3Kq9Wv1Zt4Yb6Nc0Hd5Jf7Gs"
    )


def test_lambda_kinesis_record_without_payload() -> None:
    record = parse("lambda-kinesis-on-failure.json")

    assert record.error_code == "Unhandled"  # responseContext.functionError
    assert record.error_message is None
    assert record.retry_attempts == 2
    assert record.exhausted_condition == "RetryAttemptsExhausted"
    assert record.target_arn == (
        "arn:aws:lambda:us-east-1:123456789012:function:ingest-audit-consumer"
    )
    assert (record.event, record.object) == (None, None)
    assert record.not_replayable_reason == (
        f"Kinesis batch without records: re-read shard shardId-000000000001 of {STREAM_ARN} "
        f"from sequence {START_SEQ} to {END_SEQ}"
    )


def test_lambda_kinesis_record_with_s3_payload() -> None:
    record = parse("lambda-kinesis-s3-payload.json")

    assert record.event is None
    assert record.not_replayable_reason is not None
    assert record.not_replayable_reason.startswith(
        "Kinesis batch payload holds 2 stream records, not an EventBridge event"
    )
    assert f"re-read shard shardId-000000000001 of {STREAM_ARN}" in record.not_replayable_reason
    with pytest.raises(ValueError, match="Kinesis batch payload holds 2 stream records"):
        entry_for(record)


def test_lambda_payload_holding_an_eventbridge_event_is_replayable() -> None:
    record_body = body_of("lambda-kinesis-s3-payload.json")
    record_body["payload"] = json.dumps(s3_event())

    record = parse_message(sqs_message(record_body))

    assert record.kind is RecordKind.LAMBDA_FAILURE
    assert record.replayable
    assert record.event == s3_event()
    assert record.object is not None
    assert record.object.key == "incoming/orders/2026-11-21.csv"


def test_lambda_payload_that_is_not_json() -> None:
    record_body = body_of("lambda-kinesis-s3-payload.json")
    record_body["payload"] = '{"Records": [{"kinesis": '

    record = parse_message(sqs_message(record_body))

    assert record.not_replayable_reason == (
        "the record's payload is not valid JSON; Kinesis batch: re-read shard "
        f"shardId-000000000001 of {STREAM_ARN} from sequence {START_SEQ} to {END_SEQ}"
    )


def test_lambda_dynamodb_stream_record() -> None:
    stream = (
        "arn:aws:dynamodb:us-east-1:123456789012:table/ingest-state/stream/2026-11-01T00:00:00.000"
    )
    record_body = body_of("lambda-kinesis-on-failure.json")
    del record_body["KinesisBatchInfo"]
    record_body["DDBStreamBatchInfo"] = {
        "shardId": "shardId-00000001795248000000-864758bb",
        "startSequenceNumber": "800000000003126276362",
        "endSequenceNumber": "800000000003126276369",
        "approximateArrivalOfFirstRecord": "2026-11-21T08:00:04Z",
        "approximateArrivalOfLastRecord": "2026-11-21T08:00:05Z",
        "batchSize": 8,
        "streamArn": stream,
    }

    record = parse_message(sqs_message(record_body))

    assert record.not_replayable_reason == (
        "DynamoDB stream batch without records: re-read shard "
        f"shardId-00000001795248000000-864758bb of {stream} from sequence "
        "800000000003126276362 to 800000000003126276369"
    )


def test_lambda_async_payload_that_is_not_an_event() -> None:
    record_body = body_of("lambda-async-on-failure.json")
    record_body["requestPayload"] = {"orderId": "ORD-42"}
    function_arn = record_body["requestContext"]["functionArn"]

    record = parse_message(sqs_message(record_body))

    assert record.event is None
    assert record.not_replayable_reason == (
        f"the invocation payload is not an EventBridge event: invoke {function_arn} with it"
    )


# ------------------------------------------------------------------------------------------
# SNS-wrapped
# ------------------------------------------------------------------------------------------


def test_sns_wrapped_rule_event_uses_sns_attributes() -> None:
    message = load("sns-wrapped-rule-event.json")
    notification = json.loads(message["Body"])

    record = parse_message(message)

    assert "MessageAttributes" not in message
    assert record.wrapped_in_sns
    assert record.message_id == message["MessageId"]
    assert record.event == json.loads(notification["Message"])
    assert record.error_code == "THROTTLING"
    assert record.retry_attempts == 96  # an SNS "Number" attribute
    assert record.exhausted_condition == "MaximumEventAgeInSeconds"
    assert record.rule_arn == RULE_ARN
    assert record.target_arn == SFN_ARN
    assert record.object == ObjectHint(
        BUCKET, "incoming/orders/2026-11-21-sns.csv", "Zk7Qm2Rt5Vx8Yb1Nc4Hd6Jf9Gs3Lp0Wa"
    )


def test_sqs_attributes_win_over_sns_attributes() -> None:
    message = load("sns-wrapped-rule-event.json")
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


# ------------------------------------------------------------------------------------------
# PutEvents entries
# ------------------------------------------------------------------------------------------


def test_put_events_entry_rewrites_the_reserved_aws_source() -> None:
    record = parse("rule-s3-object-created.json")
    original = s3_event()

    entry = entry_for(record)

    assert list(entry) == ["Source", "DetailType", "Detail", "Resources", "Time", "EventBusName"]
    assert entry["Source"] == REDRIVE_SOURCE
    assert entry["DetailType"] == "Object Created"
    assert entry["Resources"] == ["arn:aws:s3:::example-ingest-bucket"]
    assert entry["Time"] == datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
    assert entry["EventBusName"] == "default"
    detail = json.loads(entry["Detail"])
    assert entry["Detail"] == json.dumps(detail, separators=(",", ":"), ensure_ascii=False)
    provenance = detail.pop("redrive")
    assert detail == original["detail"]
    assert provenance == {
        "originalSource": "aws.s3",
        "originalEventId": original["id"],
        "errorCode": "THROTTLING",
        "errorMessage": record.error_message,
        "retryAttempts": 185,
        "ruleArn": RULE_ARN,
        "targetArn": SFN_ARN,
        "dlqMessageId": record.message_id,
        "redrivenAt": "2026-11-22T10:00:00Z",
        "redriveCount": 1,
    }


def test_put_events_entry_for_cloudtrail_event() -> None:
    record = parse("rule-cloudtrail-putobject.json")

    entry = entry_for(record)

    # Converted into S3's own Object Created shape (the rule matches that, and its
    # InputTransformer reads the object there); the CloudTrail detail is kept as provenance.
    assert entry["Source"] == REDRIVE_SOURCE
    assert entry["DetailType"] == "Object Created"
    assert entry["Resources"] == ["arn:aws:s3:::example-ingest-bucket"]
    detail = json.loads(entry["Detail"])
    assert detail["bucket"] == {"name": "example-ingest-bucket"}
    assert detail["object"] == {
        "key": "incoming/orders/2026-11-21-cloudtrail.csv",
        "version-id": "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY",
    }
    assert detail["reason"] == "PutObject"
    assert detail["redrive"]["originalSource"] == "aws.s3"
    assert detail["redrive"]["originalDetailType"] == "AWS API Call via CloudTrail"
    assert detail["redrive"]["originalEventId"] == "6f1e2d3c-e580-4b7a-a18f-0c9d8e7f6a5b"
    assert detail["redrive"]["originalDetail"]["requestID"] == "K2H6N8P4S1T7V3W9"


def test_put_events_entry_for_lambda_async_record() -> None:
    record = parse("lambda-async-on-failure.json")

    detail = json.loads(entry_for(record)["Detail"])

    assert detail["redrive"]["ruleArn"] is None
    assert detail["redrive"]["targetArn"] == record.target_arn
    assert detail["redrive"]["errorCode"] == "ClientError"
    assert detail["redrive"]["retryAttempts"] == 2


def test_put_events_entry_keeps_a_custom_source() -> None:
    event = s3_event()
    event["source"] = "orders.uploader"
    record = parse_message(sqs_message(event, {"RULE_ARN": RULE_ARN, "ERROR_CODE": "TIMEOUT"}))

    entry = entry_for(record)

    assert entry["Source"] == "orders.uploader"
    assert json.loads(entry["Detail"])["redrive"]["originalSource"] == "orders.uploader"


def test_redriven_event_dead_lettered_again_counts_redrives() -> None:
    first = parse("rule-s3-object-created.json")
    entry = entry_for(first)
    # EventBridge delivers the redriven event with a new id; it fails and is dead-lettered again.
    redelivered = copy.deepcopy(s3_event())
    redelivered.update(
        id="0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5",
        source=entry["Source"],
        detail=json.loads(entry["Detail"]),
        time="2026-11-22T10:00:01Z",
    )
    attributes = {"RULE_ARN": RULE_ARN, "TARGET_ARN": SFN_ARN, "ERROR_CODE": "NO_RESOURCE"}
    second = parse_message(sqs_message(redelivered, attributes, message_id="second-dlq-message"))

    again = to_put_events_entry(
        second,
        redrive_source=REDRIVE_SOURCE,
        event_bus_name="default",
        redriven_at=NOW + timedelta(hours=1),
    )

    assert again["Source"] == REDRIVE_SOURCE
    provenance = json.loads(again["Detail"])["redrive"]
    assert provenance["redriveCount"] == 2
    assert provenance["originalSource"] == "aws.s3"
    assert provenance["originalEventId"] == s3_event()["id"]
    assert provenance["dlqMessageId"] == "second-dlq-message"
    assert provenance["errorCode"] == "NO_RESOURCE"
    assert provenance["redrivenAt"] == "2026-11-22T11:00:00Z"
    assert again["Detail"].count('"redrive"') == 1


def test_put_events_entry_truncates_the_error_message_and_keeps_unicode() -> None:
    event = s3_event()
    event["detail"]["object"]["key"] = "incoming/orders/d\u00e9j\u00e0-\u6771\u4eac.csv"
    long_message = "\u30a8\u30e9\u30fc " * 400
    record = parse_message(sqs_message(event, {"ERROR_MESSAGE": long_message}))

    entry = entry_for(record)

    assert "d\u00e9j\u00e0-\u6771\u4eac.csv" in entry["Detail"]  # ensure_ascii=False
    provenance = json.loads(entry["Detail"])["redrive"]
    assert provenance["errorMessage"] == long_message[:MAX_ERROR_MESSAGE_CHARS]
    assert len(provenance["errorMessage"]) == MAX_ERROR_MESSAGE_CHARS == 512


def test_put_events_entry_redriven_at_is_utc() -> None:
    record = parse("rule-no-permissions.json")
    tokyo = timezone(timedelta(hours=9))

    entry = to_put_events_entry(
        record,
        redrive_source=REDRIVE_SOURCE,
        event_bus_name="ingest-bus",
        redriven_at=datetime(2026, 11, 22, 19, 0, tzinfo=tokyo),
    )

    assert entry["EventBusName"] == "ingest-bus"
    assert json.loads(entry["Detail"])["redrive"]["redrivenAt"] == "2026-11-22T10:00:00Z"


def test_put_events_entry_over_256_kb_is_refused() -> None:
    event = s3_event()
    event["detail"]["padding"] = "x" * (256 * 1024)
    record = parse_message(sqs_message(event))

    with pytest.raises(ValueError, match="over the 262144-byte limit"):
        entry_for(record)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"redrive_source": "aws.redrive"}, "reserved"),
        ({"redrive_source": ""}, "reserved"),
        ({"event_bus_name": ""}, "event_bus_name is empty"),
        ({"redriven_at": datetime(2026, 11, 22, 10, 0)}, "timezone-aware"),
    ],
)
def test_put_events_entry_argument_checks(kwargs: dict[str, Any], match: str) -> None:
    record = parse("rule-s3-object-created.json")
    arguments: dict[str, Any] = {
        "redrive_source": REDRIVE_SOURCE,
        "event_bus_name": "default",
        "redriven_at": NOW,
        **kwargs,
    }

    with pytest.raises(ValueError, match=match):
        to_put_events_entry(record, **arguments)


def test_put_events_entry_refuses_a_foreign_redrive_field() -> None:
    event = s3_event()
    event["detail"]["redrive"] = "yes please"
    record = parse_message(sqs_message(event))

    with pytest.raises(ValueError, match=r"detail\.redrive is not a redrive block"):
        entry_for(record)


# ------------------------------------------------------------------------------------------
# bus_from_rule_arn and futile_reason
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule_arn", "bus"),
    [
        (None, "default"),
        ("arn:aws:events:us-east-1:123456789012:rule/name", "default"),
        (RULE_ARN, "default"),
        ("arn:aws:events:us-east-1:123456789012:rule/bus-name/name", "bus-name"),
        (
            "arn:aws:events:us-east-1:123456789012:rule/aws.partner/example.com/123/orders/r1",
            "aws.partner/example.com/123/orders",
        ),
    ],
)
def test_bus_from_rule_arn(rule_arn: str | None, bus: str) -> None:
    assert bus_from_rule_arn(rule_arn) == bus


@pytest.mark.parametrize(
    "rule_arn",
    [
        "",
        "not-an-arn",
        "arn:aws:events:us-east-1:123456789012:rule/",
        "arn:aws:events:us-east-1:123456789012:rule/bus-name/",
        SFN_ARN,
    ],
)
def test_bus_from_rule_arn_rejects_other_strings(rule_arn: str) -> None:
    with pytest.raises(ValueError, match="not an EventBridge rule ARN"):
        bus_from_rule_arn(rule_arn)


def test_bus_from_fixture_rule_arns() -> None:
    assert bus_from_rule_arn(parse("rule-s3-object-created.json").rule_arn) == "default"
    assert bus_from_rule_arn(parse("lambda-async-on-failure.json").rule_arn) == "default"


@pytest.mark.parametrize(
    ("code", "futile"),
    [
        ("NO_PERMISSIONS", True),
        ("NO_RESOURCE", True),
        ("AccessDeniedException", True),
        ("ResourceNotFoundException", True),
        ("THROTTLING", False),
        ("ThrottlingException", False),
        ("ClientError", False),
    ],
)
def test_futile_reason(code: str, futile: bool) -> None:
    record = parse_message(sqs_message(s3_event(), {"ERROR_CODE": code}))

    reason = futile_reason(record)

    if futile:
        assert reason == f"{code}: {RETRY_FUTILE[code]}"
    else:
        assert reason is None


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
    record = parse_message(sqs_message(s3_event()))

    assert record.kind is RecordKind.RULE_EVENT and record.error_code is None
