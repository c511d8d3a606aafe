"""Parse every failure-record format an SQS dead-letter queue can hold (pure: no AWS calls).

Input is one SQS message as boto3 ``receive_message(AttributeNames=["All"],
MessageAttributeNames=["All"])`` returns it (``MessageId``, ``ReceiptHandle``, ``Body``,
``Attributes``, optional ``MessageAttributes``); the lower-case shape of a Lambda SQS event
record (``messageId``, ``body``, ``messageAttributes.*.stringValue``) is read too.
``parse_message`` (module ``parse``) turns it into one ``FailureRecord`` (module ``model``);
each format family has its module, which says what it reads:

* ``events``: **EventBridge rule DLQ** (``RecordKind.RULE_EVENT``), the S3 event shapes;
* ``scheduler``: **EventBridge Scheduler DLQ** (``RecordKind.SCHEDULER``);
* ``lambda_records``: **Lambda on-failure records** (``RecordKind.LAMBDA_FAILURE``);
* ``queue``: **Queue messages** (``RecordKind.QUEUE``): moved by a source queue's
  RedrivePolicy, or a reconcile-run body sent straight to the dead-letter queue;
* ``parse``: which family a message is, and **SNS-wrapped** messages (an SNS notification
  whose ``Message`` is any of the above).

Anything else raises ``UnreadableMessageError``: no half-parsed records. ``to_put_events_entry``
(module ``redrive``) builds the PutEvents entry that redrives a replayable record, with
provenance in ``detail.redrive``; ``futile_reason`` names the errors a redrive would only repeat.
"""

from __future__ import annotations

from ingest_tools.recovery.formats.model import (
    FailureRecord,
    ObjectHint,
    RecordKind,
    UnreadableMessageError,
)
from ingest_tools.recovery.formats.parse import parse_message
from ingest_tools.recovery.formats.redrive import (
    MAX_ENTRY_BYTES,
    MAX_ERROR_MESSAGE_CHARS,
    RETRY_FUTILE,
    bus_from_rule_arn,
    futile_reason,
    object_created_event,
    replay_event,
    to_put_events_entry,
)

__all__ = [
    "MAX_ENTRY_BYTES",
    "MAX_ERROR_MESSAGE_CHARS",
    "RETRY_FUTILE",
    "FailureRecord",
    "ObjectHint",
    "RecordKind",
    "UnreadableMessageError",
    "bus_from_rule_arn",
    "futile_reason",
    "object_created_event",
    "parse_message",
    "replay_event",
    "to_put_events_entry",
]
