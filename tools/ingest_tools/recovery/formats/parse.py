"""``parse_message``: which format a dead-letter message is in (the EventBridge rule and
Scheduler attributes first, then a queue's own message, then the body's shape), read into its
``FailureRecord`` by the family's module. **SNS-wrapped** messages are unwrapped here: an SNS
notification (``"Type": "Notification"``) whose ``Message`` is any of the above; its
``MessageAttributes`` stand in for absent SQS ones.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ingest_tools.recovery.formats.events import (
    _is_event,
    _is_s3_notification,
    _notification_problem,
    _rule_record,
)
from ingest_tools.recovery.formats.lambda_records import _is_lambda_record, _lambda_record
from ingest_tools.recovery.formats.model import (
    FailureRecord,
    UnreadableMessageError,
    _Envelope,
    _epoch_ms,
    _field,
    _int,
    _str_or_none,
)
from ingest_tools.recovery.formats.queue import _queue_record, _schedule_run
from ingest_tools.recovery.formats.scheduler import _SCHEDULER_MARKERS, _scheduler_record

__all__ = ["parse_message"]


def parse_message(message: Mapping[str, Any]) -> FailureRecord:
    """One SQS dead-letter message -> ``FailureRecord``; ``UnreadableMessageError`` if none fits."""
    message_id = _str_or_none(_field(message, "MessageId", "messageId")) or "<no MessageId>"
    body = _field(message, "Body", "body")
    if not isinstance(body, str):
        raise UnreadableMessageError(message_id, "the message has no Body")
    system = _field(message, "Attributes", "attributes")
    system = system if isinstance(system, Mapping) else {}
    envelope = _Envelope(
        message_id=message_id,
        receipt_handle=_str_or_none(_field(message, "ReceiptHandle", "receiptHandle")) or "",
        sent_at=_epoch_ms(system.get("SentTimestamp")),
        receive_count=_int(system.get("ApproximateReceiveCount")) or 1,
        dead_letter_source=_str_or_none(system.get("DeadLetterQueueSourceArn")),
        raw_attributes=_field(message, "MessageAttributes", "messageAttributes"),
    )
    attributes = _sqs_attributes(envelope.raw_attributes)
    if not _from_eventbridge(attributes):
        run = _schedule_run(body)
        if envelope.dead_letter_source is not None or run is not None:
            return _queue_record(envelope, body, run)
    return _parse_body(envelope, body, attributes, wrapped=False)


def _from_eventbridge(attributes: Mapping[str, str]) -> bool:
    """An EventBridge rule or Scheduler dead letter (these go back to their rule / target)."""
    return any(name in attributes for name in ("RULE_ARN", *_SCHEDULER_MARKERS))


def _parse_body(
    envelope: _Envelope, body: str, attributes: dict[str, str], *, wrapped: bool
) -> FailureRecord:
    what = "SNS Message" if wrapped else "body"
    if any(name in attributes for name in _SCHEDULER_MARKERS):
        return _scheduler_record(envelope, body, attributes, wrapped=wrapped)
    try:
        document = json.loads(body)
    except ValueError:
        raise UnreadableMessageError(
            envelope.message_id, f"the {what} is not JSON and no scheduler attributes are set"
        ) from None
    if _is_sns_notification(document):
        if wrapped:
            raise UnreadableMessageError(envelope.message_id, "an SNS notification inside another")
        return _unwrap_sns(envelope, document, attributes)
    if _is_event(document):
        return _rule_record(envelope, document, attributes, wrapped=wrapped)
    if _is_s3_notification(document):  # an S3 -> SQS / SNS notification's dead letter
        record = _rule_record(envelope, document, attributes, wrapped=wrapped)
        problem = _notification_problem(document)
        if problem is None:
            return record
        return dataclasses.replace(record, not_replayable_reason=problem)
    if _is_lambda_record(document):
        return _lambda_record(envelope, document, wrapped=wrapped)
    if "RULE_ARN" in attributes:
        raise UnreadableMessageError(
            envelope.message_id,
            f"an EventBridge rule dead letter ({attributes['RULE_ARN']}) whose {what} is not "
            "an EventBridge event",
        )
    raise UnreadableMessageError(
        envelope.message_id,
        f"the JSON {what} matches no dead-letter format ({_describe_json(document)})",
    )


def _unwrap_sns(
    envelope: _Envelope, notification: dict[str, Any], attributes: dict[str, str]
) -> FailureRecord:
    topic = _str_or_none(notification.get("TopicArn")) or "an unknown topic"
    inner = notification.get("Message")
    if not isinstance(inner, str):
        raise UnreadableMessageError(
            envelope.message_id, f"SNS notification from {topic}: no Message string"
        )
    inner_attributes = attributes or _sns_attributes(notification.get("MessageAttributes"))
    try:
        return _parse_body(envelope, inner, inner_attributes, wrapped=True)
    except UnreadableMessageError as exc:
        raise UnreadableMessageError(
            envelope.message_id, f"SNS notification from {topic}: {exc.reason}"
        ) from None


def _is_sns_notification(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and document.get("Type") == "Notification"
        and "Message" in document
        and "TopicArn" in document
    )


def _describe_json(document: Any) -> str:
    if isinstance(document, dict):
        keys = sorted(str(key) for key in document)
        shown = ", ".join(keys[:8]) + (", ..." if len(keys) > 8 else "")
        return f"keys: {shown}" if keys else "an empty object"
    return f"a JSON {type(document).__name__}"


# ------------------------------------------------------------------------------------------
def _sqs_attributes(raw: Any) -> dict[str, str]:
    """SQS MessageAttributes -> {name: value}; binary and empty values are left out."""
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, str] = {}
    for name, value in raw.items():
        if isinstance(value, Mapping):
            text = _field(value, "StringValue", "stringValue")
            if isinstance(text, str) and text:
                out[str(name)] = text
    return out


def _sns_attributes(raw: Any) -> dict[str, str]:
    """SNS notification MessageAttributes ({"Type", "Value"}) -> {name: value}."""
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, str] = {}
    for name, value in raw.items():
        if isinstance(value, Mapping) and value.get("Type") != "Binary":
            text = value.get("Value")
            if isinstance(text, str) and text:
                out[str(name)] = text
    return out
