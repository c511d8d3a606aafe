"""ingestctl doctor's dead-letters checks: one per dead-letter queue, peeked at (never
consumed), FAIL on any message with its count, age, error codes and the redrive command."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ingest_tools.doctor import dead_letters
from ingest_tools.doctor.checks import Context
from ingest_tools.doctor.report import Report, Status, duration
from tests.support import doctor_clients, load_event

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


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


def dead_letters_context(sqs: Any, key: str = "EventDeliveryDLQUrl") -> Context:
    return Context(
        clients=doctor_clients(sqs=sqs),
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
