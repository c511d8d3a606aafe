"""Dead-letter formats: Lambda on-failure records (asynchronous invocation destinations,
Kinesis and DynamoDB stream event source mappings)."""

from __future__ import annotations

import json

import pytest

from ingest_tools.recovery.formats import (
    ObjectHint,
    RecordKind,
    parse_message,
)
from tests.support import (
    DLQ_BUCKET,
    dlq_body,
    dlq_record,
    dlq_s3_event,
    put_events_entry,
    sqs_message,
)

pytestmark = pytest.mark.unit

STREAM_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/ingest-audit-stream"
START_SEQ = "49601189658422359378836298521827638475320189012309704722"
END_SEQ = "49601189658422359378836298522902373528957594348623495186"


def test_lambda_async_on_failure_record() -> None:
    record = dlq_record("lambda-async-on-failure.json")
    function_arn = "arn:aws:lambda:us-east-1:123456789012:function:ingest-object-notifier:$LATEST"

    assert record.error_code == "ClientError"
    assert record.error_message is not None
    assert record.error_message.startswith("An error occurred (SlowDown)")
    assert record.retry_attempts == 2  # approximateInvokeCount 3
    assert record.exhausted_condition == "RetriesExhausted"
    assert record.target_arn == record.origin == function_arn
    assert record.rule_arn is None
    assert record.event == dlq_body("lambda-async-on-failure.json")["requestPayload"]
    assert record.object == ObjectHint(
        DLQ_BUCKET, "incoming/orders/2026-11-21-notify.csv", "p8Xr2.Lm3Kq9Wv1Zt4Yb6Nc0Hd5Jf7Gs"
    )


def test_lambda_kinesis_record_without_payload() -> None:
    record = dlq_record("lambda-kinesis-on-failure.json")

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
    record = dlq_record("lambda-kinesis-s3-payload.json")

    assert record.event is None
    assert record.not_replayable_reason is not None
    assert record.not_replayable_reason.startswith(
        "Kinesis batch payload holds 2 stream records, not an EventBridge event"
    )
    assert f"re-read shard shardId-000000000001 of {STREAM_ARN}" in record.not_replayable_reason
    with pytest.raises(ValueError, match="Kinesis batch payload holds 2 stream records"):
        put_events_entry(record)


def test_lambda_payload_holding_an_eventbridge_event_is_replayable() -> None:
    record_body = dlq_body("lambda-kinesis-s3-payload.json")
    record_body["payload"] = json.dumps(dlq_s3_event())

    record = parse_message(sqs_message(record_body))

    assert record.kind is RecordKind.LAMBDA_FAILURE
    assert record.replayable
    assert record.event == dlq_s3_event()
    assert record.object is not None
    assert record.object.key == "incoming/orders/2026-11-21.csv"


def test_lambda_payload_that_is_not_json() -> None:
    record_body = dlq_body("lambda-kinesis-s3-payload.json")
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
    record_body = dlq_body("lambda-kinesis-on-failure.json")
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
    record_body = dlq_body("lambda-async-on-failure.json")
    record_body["requestPayload"] = {"orderId": "ORD-42"}
    function_arn = record_body["requestContext"]["functionArn"]

    record = parse_message(sqs_message(record_body))

    assert record.event is None
    assert record.not_replayable_reason == (
        f"the invocation payload is not an EventBridge event: invoke {function_arn} with it"
    )
