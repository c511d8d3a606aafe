"""Dead-letter formats: EventBridge Scheduler dead letters."""

from __future__ import annotations

import json

import pytest

from ingest_tools.recovery.formats import (
    RETRY_FUTILE,
    RecordKind,
    futile_reason,
    parse_message,
)
from tests.support import (
    dlq_message,
    dlq_record,
    sqs_message,
)

pytestmark = pytest.mark.unit


def test_scheduler_sqs_target() -> None:
    message = dlq_message("scheduler-sqs-target.json")
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
    record = dlq_record("scheduler-stepfunctions-target.json")

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
