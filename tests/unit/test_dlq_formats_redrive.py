"""Dead-letter formats: the PutEvents entry that redrives a record, the bus of a rule, the
errors a redrive would only repeat."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from ingest_tools.recovery.formats import (
    MAX_ERROR_MESSAGE_CHARS,
    RETRY_FUTILE,
    bus_from_rule_arn,
    futile_reason,
    parse_message,
    to_put_events_entry,
)
from tests.support import (
    DLQ_RULE_ARN,
    DLQ_SFN_ARN,
    REDRIVE_SOURCE,
    REDRIVEN_AT,
    dlq_record,
    dlq_s3_event,
    put_events_entry,
    sqs_message,
)

pytestmark = pytest.mark.unit


def test_scheduler_record_is_not_a_put_events_entry() -> None:
    record = dlq_record("scheduler-sqs-target.json")

    with pytest.raises(ValueError, match="has no replayable event"):
        put_events_entry(record)


def test_put_events_entry_rewrites_the_reserved_aws_source() -> None:
    record = dlq_record("rule-s3-object-created.json")
    original = dlq_s3_event()

    entry = put_events_entry(record)

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
        "ruleArn": DLQ_RULE_ARN,
        "targetArn": DLQ_SFN_ARN,
        "dlqMessageId": record.message_id,
        "redrivenAt": "2026-11-22T10:00:00Z",
        "redriveCount": 1,
    }


def test_put_events_entry_for_cloudtrail_event() -> None:
    record = dlq_record("rule-cloudtrail-putobject.json")

    entry = put_events_entry(record)

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
    record = dlq_record("lambda-async-on-failure.json")

    detail = json.loads(put_events_entry(record)["Detail"])

    assert detail["redrive"]["ruleArn"] is None
    assert detail["redrive"]["targetArn"] == record.target_arn
    assert detail["redrive"]["errorCode"] == "ClientError"
    assert detail["redrive"]["retryAttempts"] == 2


def test_put_events_entry_keeps_a_custom_source() -> None:
    event = dlq_s3_event()
    event["source"] = "orders.uploader"
    record = parse_message(sqs_message(event, {"RULE_ARN": DLQ_RULE_ARN, "ERROR_CODE": "TIMEOUT"}))

    entry = put_events_entry(record)

    assert entry["Source"] == "orders.uploader"
    assert json.loads(entry["Detail"])["redrive"]["originalSource"] == "orders.uploader"


def test_redriven_event_dead_lettered_again_counts_redrives() -> None:
    first = dlq_record("rule-s3-object-created.json")
    entry = put_events_entry(first)
    # EventBridge delivers the redriven event with a new id; it fails and is dead-lettered again.
    redelivered = copy.deepcopy(dlq_s3_event())
    redelivered.update(
        id="0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5",
        source=entry["Source"],
        detail=json.loads(entry["Detail"]),
        time="2026-11-22T10:00:01Z",
    )
    attributes = {"RULE_ARN": DLQ_RULE_ARN, "TARGET_ARN": DLQ_SFN_ARN, "ERROR_CODE": "NO_RESOURCE"}
    second = parse_message(sqs_message(redelivered, attributes, message_id="second-dlq-message"))

    again = to_put_events_entry(
        second,
        redrive_source=REDRIVE_SOURCE,
        event_bus_name="default",
        redriven_at=REDRIVEN_AT + timedelta(hours=1),
    )

    assert again["Source"] == REDRIVE_SOURCE
    provenance = json.loads(again["Detail"])["redrive"]
    assert provenance["redriveCount"] == 2
    assert provenance["originalSource"] == "aws.s3"
    assert provenance["originalEventId"] == dlq_s3_event()["id"]
    assert provenance["dlqMessageId"] == "second-dlq-message"
    assert provenance["errorCode"] == "NO_RESOURCE"
    assert provenance["redrivenAt"] == "2026-11-22T11:00:00Z"
    assert again["Detail"].count('"redrive"') == 1


def test_put_events_entry_truncates_the_error_message_and_keeps_unicode() -> None:
    event = dlq_s3_event()
    event["detail"]["object"]["key"] = "incoming/orders/d\u00e9j\u00e0-\u6771\u4eac.csv"
    long_message = "\u30a8\u30e9\u30fc " * 400
    record = parse_message(sqs_message(event, {"ERROR_MESSAGE": long_message}))

    entry = put_events_entry(record)

    assert "d\u00e9j\u00e0-\u6771\u4eac.csv" in entry["Detail"]  # ensure_ascii=False
    provenance = json.loads(entry["Detail"])["redrive"]
    assert provenance["errorMessage"] == long_message[:MAX_ERROR_MESSAGE_CHARS]
    assert len(provenance["errorMessage"]) == MAX_ERROR_MESSAGE_CHARS == 512


def test_put_events_entry_redriven_at_is_utc() -> None:
    record = dlq_record("rule-no-permissions.json")
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
    event = dlq_s3_event()
    event["detail"]["padding"] = "x" * (256 * 1024)
    record = parse_message(sqs_message(event))

    with pytest.raises(ValueError, match="over the 262144-byte limit"):
        put_events_entry(record)


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
    record = dlq_record("rule-s3-object-created.json")
    arguments: dict[str, Any] = {
        "redrive_source": REDRIVE_SOURCE,
        "event_bus_name": "default",
        "redriven_at": REDRIVEN_AT,
        **kwargs,
    }

    with pytest.raises(ValueError, match=match):
        to_put_events_entry(record, **arguments)


def test_put_events_entry_refuses_a_foreign_redrive_field() -> None:
    event = dlq_s3_event()
    event["detail"]["redrive"] = "yes please"
    record = parse_message(sqs_message(event))

    with pytest.raises(ValueError, match=r"detail\.redrive is not a redrive block"):
        put_events_entry(record)


# ------------------------------------------------------------------------------------------
# bus_from_rule_arn and futile_reason
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule_arn", "bus"),
    [
        (None, "default"),
        ("arn:aws:events:us-east-1:123456789012:rule/name", "default"),
        (DLQ_RULE_ARN, "default"),
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
        DLQ_SFN_ARN,
    ],
)
def test_bus_from_rule_arn_rejects_other_strings(rule_arn: str) -> None:
    with pytest.raises(ValueError, match="not an EventBridge rule ARN"):
        bus_from_rule_arn(rule_arn)


def test_bus_from_fixture_rule_arns() -> None:
    assert bus_from_rule_arn(dlq_record("rule-s3-object-created.json").rule_arn) == "default"
    assert bus_from_rule_arn(dlq_record("lambda-async-on-failure.json").rule_arn) == "default"


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
    record = parse_message(sqs_message(dlq_s3_event(), {"ERROR_CODE": code}))

    reason = futile_reason(record)

    if futile:
        assert reason == f"{code}: {RETRY_FUTILE[code]}"
    else:
        assert reason is None
