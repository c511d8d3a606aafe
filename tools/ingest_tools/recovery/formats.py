"""Parse every failure-record format an SQS dead-letter queue can hold (pure: no AWS calls).

Input is one SQS message as boto3 ``receive_message(AttributeNames=["All"],
MessageAttributeNames=["All"])`` returns it (``MessageId``, ``ReceiptHandle``, ``Body``,
``Attributes``, optional ``MessageAttributes``); the lower-case shape of a Lambda SQS event
record (``messageId``, ``body``, ``messageAttributes.*.stringValue``) is read too.
``parse_message`` turns it into one ``FailureRecord``:

* **EventBridge rule DLQ** (``RecordKind.RULE_EVENT``): the body is the original event
  (``version, id, detail-type, source, account, time, region, resources, detail``); the
  message attributes say why: RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE and, after
  retries, EXHAUSTED_RETRY_CONDITION and RETRY_ATTEMPTS. Both S3 shapes give an
  ``ObjectHint``: the native "Object Created" event (``detail.bucket.name``,
  ``detail.object.key``) and CloudTrail's "AWS API Call via CloudTrail" PutObject
  (``detail.requestParameters.bucketName/key``). An event without attributes (a Lambda
  function DLQ, or attributes lost on the way) is still a rule record, error unknown.
* **EventBridge Scheduler DLQ** (``RecordKind.SCHEDULER``), recognised by SCHEDULE_ARN /
  EXECUTION_ID attributes: the body is the target input as sent (JSON or not; for Step
  Functions the StartExecution request ``{"Input", "Name", "StateMachineArn"}``); attributes
  ERROR_CODE, ERROR_MESSAGE, EXECUTION_ID, EXHAUSTED_RETRY_CONDITION, IS_PAYLOAD_TRUNCATED,
  RETRY_ATTEMPTS, SCHEDULED_TIME, SCHEDULE_ARN, TARGET_ARN. A truncated input cannot be
  replayed.
* **Lambda on-failure records** (``RecordKind.LAMBDA_FAILURE``): the asynchronous-invocation
  destination record (``requestContext``, ``requestPayload``, ``responseContext``,
  ``responsePayload``) and the event-source-mapping record for Kinesis / DynamoDB streams
  (``KinesisBatchInfo`` / ``DDBStreamBatchInfo``; SQS and SNS destinations carry no records,
  an S3 destination adds ``payload``, the whole invocation event as escaped JSON). Only a
  payload that is an EventBridge event can be put back on a bus; the rest are readable but
  not replayable, and the reason says where the records are (shard and sequence range).
* **Queue messages** (``RecordKind.QUEUE``): a message its source queue's RedrivePolicy moved
  to the dead-letter queue (SQS sets ``DeadLetterQueueSourceArn``; any body), or a
  reconcile-run body (``{"run": {...}, "task": "reconcile"}``, what ReconcileSchedule sends)
  sent straight to the dead-letter queue, which has no ``DeadLetterQueueSourceArn``
  (``target_arn`` None: the redrive sends it to the queue's only source queue).
* **SNS-wrapped** messages: an SNS notification (``"Type": "Notification"``) whose
  ``Message`` is any of the above; its ``MessageAttributes`` stand in for absent SQS ones.

Anything else raises ``UnreadableMessageError``: no half-parsed records. ``to_put_events_entry``
builds the PutEvents entry that redrives a replayable record, with provenance in
``detail.redrive``; ``futile_reason`` names the errors a redrive would only repeat.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from ingest_pipeline.errors import InvalidEventError
from ingest_pipeline.logic import identity

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

# PutEvents limit for one entry (Time + Source + DetailType + Detail + Resources, UTF-8).
MAX_ENTRY_BYTES = 256 * 1024
MAX_ERROR_MESSAGE_CHARS = 512
_TIME_BYTES = 14  # what PutEvents counts for an entry's Time, whatever its format
_SCHEDULER_MARKERS = ("SCHEDULE_ARN", "EXECUTION_ID")
_BATCH_LABELS = {"KinesisBatchInfo": "Kinesis", "DDBStreamBatchInfo": "DynamoDB stream"}

# Error codes that mean a redrive fails the same way until someone fixes the cause.
RETRY_FUTILE: dict[str, str] = {
    # EventBridge rule DLQ codes
    "NO_PERMISSIONS": "the rule's role may not invoke the target: fix its IAM policy first",
    "NO_RESOURCE": "the target does not exist: restore it or point the rule elsewhere first",
    "INVALID_JSON": "the target input is not valid JSON for the target: fix the rule's input",
    "INVALID_PARAMETER": "the target rejected the input: fix the target or the rule's input",
    # EventBridge Scheduler DLQ codes (the target service's own error codes)
    "AccessDeniedException": "the schedule's role may not invoke the target: fix its IAM policy",
    "AccessDenied": "the schedule's role may not invoke the target: fix its IAM policy",
    "ResourceNotFoundException": "the target does not exist: restore it or retarget the schedule",
    "StateMachineDoesNotExist": "the state machine does not exist: restore it first",
    "AWS.SimpleQueueService.NonExistentQueue": "the target queue does not exist: recreate it",
    "QueueDoesNotExist": "the target queue does not exist: recreate it",
    "NotFound": "the target topic does not exist: recreate it first",
    "ValidationException": "the target rejected the request as invalid: fix the schedule",
    "InvalidExecutionInput": "the state machine rejected the input: fix the schedule's input",
}


class RecordKind(StrEnum):
    RULE_EVENT = "eventbridge-rule"
    SCHEDULER = "scheduler"
    LAMBDA_FAILURE = "lambda-failure"
    QUEUE = "sqs-redrive-policy"  # moved here by a source queue's RedrivePolicy


class UnreadableMessageError(ValueError):
    """A dead-letter message in none of the known formats (or broken inside one)."""

    def __init__(self, message_id: str, reason: str) -> None:
        super().__init__(f"message {message_id}: {reason}")
        self.message_id = message_id
        self.reason = reason


@dataclass(frozen=True)
class ObjectHint:
    """The S3 object an event is about (the key exactly as the event spells it)."""

    bucket: str
    key: str
    version_id: str | None = None


@dataclass(frozen=True)
class FailureRecord:
    message_id: str
    receipt_handle: str
    kind: RecordKind
    wrapped_in_sns: bool
    error_code: str | None
    error_message: str | None
    retry_attempts: int | None
    exhausted_condition: str | None
    rule_arn: str | None
    target_arn: str | None
    sent_at: datetime | None
    receive_count: int
    event: dict[str, Any] | None
    target_input: str | None
    schedule_arn: str | None
    scheduled_time: str | None
    execution_id: str | None
    object: ObjectHint | None
    not_replayable_reason: str | None
    # QUEUE records: the message's own attributes, sent back with its body
    message_attributes: dict[str, Any] | None = None

    @property
    def replayable(self) -> bool:
        return self.not_replayable_reason is None

    @property
    def origin(self) -> str:
        """What failed to deliver this record, for grouping: rule, schedule or target."""
        return self.rule_arn or self.schedule_arn or self.target_arn or "unknown"


@dataclass(frozen=True)
class _Envelope:
    """What the SQS message itself says, whatever its body holds."""

    message_id: str
    receipt_handle: str
    sent_at: datetime | None
    receive_count: int
    dead_letter_source: str | None = None  # DeadLetterQueueSourceArn (SQS sets it)
    raw_attributes: Mapping[str, Any] | None = None


# ------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------


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


def _schedule_run(body: str) -> dict[str, Any] | None:
    """The run of a reconcile-run body (``{"run": {...}, "task": "reconcile"}``, what
    template.yaml's ReconcileSchedule sends to ReconcileQueue), or None for any other body.
    Such a message in a dead-letter queue is a queue message whatever way it got there (moved
    by the redrive policy, or sent straight to the DLQ with no DeadLetterQueueSourceArn)."""
    if not body.lstrip().startswith("{"):
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("run"), dict):
        return None
    if set(document) - {"run", "task"} or document.get("task", "reconcile") != "reconcile":
        return None
    run: dict[str, Any] = document["run"]
    return run


def _from_eventbridge(attributes: Mapping[str, str]) -> bool:
    """An EventBridge rule or Scheduler dead letter (these go back to their rule / target)."""
    return any(name in attributes for name in ("RULE_ARN", *_SCHEDULER_MARKERS))


def _queue_record(
    envelope: _Envelope, body: str, run: Mapping[str, Any] | None = None
) -> FailureRecord:
    """A queue's own message: moved here by its source queue's RedrivePolicy after
    maxReceiveCount receives (``DeadLetterQueueSourceArn`` names that queue), or a
    reconcile-run body sent straight to the dead-letter queue (no source: ``target_arn`` is
    None, and the redrive sends it to the dead-letter queue's only source queue). It goes back
    body and attributes unchanged (what SQS's own StartMessageMoveTask does)."""
    run = run or {}
    return FailureRecord(
        message_id=envelope.message_id,
        receipt_handle=envelope.receipt_handle,
        kind=RecordKind.QUEUE,
        wrapped_in_sns=False,
        error_code=None,
        error_message=None,
        retry_attempts=None,
        exhausted_condition="maxReceiveCount" if envelope.dead_letter_source else None,
        rule_arn=None,
        target_arn=envelope.dead_letter_source,
        sent_at=envelope.sent_at,
        receive_count=envelope.receive_count,
        event=None,
        target_input=body,
        schedule_arn=_str_or_none(run.get("scheduleArn")),
        scheduled_time=_str_or_none(run.get("scheduledTime")),
        execution_id=_str_or_none(run.get("executionId")),
        object=None,
        not_replayable_reason=None,
        message_attributes=_sendable_attributes(envelope.raw_attributes),
    )


def _sendable_attributes(raw: Any) -> dict[str, Any]:
    """ReceiveMessage's MessageAttributes in SendMessage's shape."""
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if not isinstance(value, Mapping):
            continue
        data_type = _field(value, "DataType", "dataType")
        text = _field(value, "StringValue", "stringValue")
        binary = _field(value, "BinaryValue", "binaryValue")
        if isinstance(data_type, str) and text is not None:
            out[str(name)] = {"DataType": data_type, "StringValue": text}
        elif isinstance(data_type, str) and binary is not None:
            out[str(name)] = {"DataType": data_type, "BinaryValue": binary}
    return out


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


def _rule_record(
    envelope: _Envelope, event: dict[str, Any], attributes: dict[str, str], *, wrapped: bool
) -> FailureRecord:
    return FailureRecord(
        message_id=envelope.message_id,
        receipt_handle=envelope.receipt_handle,
        kind=RecordKind.RULE_EVENT,
        wrapped_in_sns=wrapped,
        error_code=attributes.get("ERROR_CODE"),
        # ErrorMessage: a Lambda function's own DLQ (RequestID/ErrorCode/ErrorMessage).
        error_message=attributes.get("ERROR_MESSAGE") or attributes.get("ErrorMessage"),
        retry_attempts=_int(attributes.get("RETRY_ATTEMPTS")),
        exhausted_condition=attributes.get("EXHAUSTED_RETRY_CONDITION"),
        rule_arn=attributes.get("RULE_ARN"),
        target_arn=attributes.get("TARGET_ARN"),
        sent_at=envelope.sent_at,
        receive_count=envelope.receive_count,
        event=event,
        target_input=None,
        schedule_arn=None,
        scheduled_time=None,
        execution_id=None,
        object=_object_hint(event),
        not_replayable_reason=None,
    )


def _scheduler_record(
    envelope: _Envelope, body: str, attributes: dict[str, str], *, wrapped: bool
) -> FailureRecord:
    schedule_arn = attributes.get("SCHEDULE_ARN")
    target_arn = attributes.get("TARGET_ARN")
    reason: str | None = None
    if (attributes.get("IS_PAYLOAD_TRUNCATED") or "").lower() == "true":
        reason = (
            "EventBridge Scheduler truncated the target input (IS_PAYLOAD_TRUNCATED=true): "
            f"take the input from schedule {schedule_arn or '(unknown)'} instead"
        )
    elif target_arn is None:
        reason = "no TARGET_ARN attribute: the target to invoke again is unknown"
    return FailureRecord(
        message_id=envelope.message_id,
        receipt_handle=envelope.receipt_handle,
        kind=RecordKind.SCHEDULER,
        wrapped_in_sns=wrapped,
        error_code=attributes.get("ERROR_CODE"),
        error_message=attributes.get("ERROR_MESSAGE"),
        retry_attempts=_int(attributes.get("RETRY_ATTEMPTS")),
        exhausted_condition=attributes.get("EXHAUSTED_RETRY_CONDITION"),
        rule_arn=None,
        target_arn=target_arn,
        sent_at=envelope.sent_at,
        receive_count=envelope.receive_count,
        event=None,
        target_input=body,
        schedule_arn=schedule_arn,
        scheduled_time=attributes.get("SCHEDULED_TIME"),
        execution_id=attributes.get("EXECUTION_ID"),
        object=None,
        not_replayable_reason=reason,
    )


def _lambda_record(envelope: _Envelope, record: dict[str, Any], *, wrapped: bool) -> FailureRecord:
    request = record["requestContext"]
    response = _dict(record.get("responseContext"))
    response_payload = _dict(record.get("responsePayload"))
    function_arn = _str_or_none(request.get("functionArn"))
    invocations = _int(request.get("approximateInvokeCount"))

    batch_key, batch = _batch_info(record)
    payload, payload_problem = _lambda_payload(record)
    event = payload if _is_event(payload) or _is_s3_notification(payload) else None
    reason: str | None = None
    if event is None:
        reason = _not_replayable_reason(function_arn, payload, payload_problem, batch_key, batch)
    elif _is_s3_notification(event):
        reason = _notification_problem(event)
    return FailureRecord(
        message_id=envelope.message_id,
        receipt_handle=envelope.receipt_handle,
        kind=RecordKind.LAMBDA_FAILURE,
        wrapped_in_sns=wrapped,
        error_code=_str_or_none(response_payload.get("errorType"))
        or _str_or_none(response.get("functionError")),
        error_message=_str_or_none(response_payload.get("errorMessage")),
        retry_attempts=max(invocations - 1, 0) if invocations is not None else None,
        exhausted_condition=_str_or_none(request.get("condition")),
        rule_arn=None,
        target_arn=function_arn,
        sent_at=envelope.sent_at,
        receive_count=envelope.receive_count,
        event=event,
        target_input=None,
        schedule_arn=None,
        scheduled_time=None,
        execution_id=None,
        object=_object_hint(event) if event is not None else None,
        not_replayable_reason=reason,
    )


def _lambda_payload(record: dict[str, Any]) -> tuple[Any, str | None]:
    """The invocation event a Lambda record carries (or None), and why it is unusable."""
    if "requestPayload" in record:
        return record["requestPayload"], None
    raw = record.get("payload")
    if raw is None:
        return None, None
    if isinstance(raw, str):
        try:
            return json.loads(raw), None
        except ValueError:
            return None, "the record's payload is not valid JSON"
    return raw, None


def _not_replayable_reason(
    function_arn: str | None,
    payload: Any,
    payload_problem: str | None,
    batch_key: str | None,
    batch: dict[str, Any],
) -> str:
    if batch_key is None:
        if payload_problem:
            return payload_problem
        if payload is not None:
            function = function_arn or "the function"
            return f"the invocation payload is not an EventBridge event: invoke {function} with it"
        return "the record carries neither a payload nor batch info: nothing to replay"
    label = _BATCH_LABELS.get(batch_key) or batch_key.removesuffix("BatchInfo") or batch_key
    where = _batch_location(batch)
    if payload_problem:
        return f"{payload_problem}; {label} batch: {where}"
    if payload is None:
        return f"{label} batch without records: {where}"
    records = payload.get("Records") if isinstance(payload, dict) else None
    count = f"{len(records)} stream records" if isinstance(records, list) else "a stream batch"
    function = function_arn or "the function"
    return (
        f"{label} batch payload holds {count}, not an EventBridge event: reprocess them with "
        f"{function} (or {where})"
    )


def _batch_location(batch: dict[str, Any]) -> str:
    shard, stream = batch.get("shardId"), batch.get("streamArn")
    start, end = batch.get("startSequenceNumber"), batch.get("endSequenceNumber")
    if shard and stream and start and end:
        return f"re-read shard {shard} of {stream} from sequence {start} to {end}"
    return f"find the records from {_compact(batch)}"


def _batch_info(record: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    for key, value in record.items():
        if key.endswith("BatchInfo") and isinstance(value, dict):
            return key, value
    return None, {}


# ------------------------------------------------------------------------------------------
# shapes
# ------------------------------------------------------------------------------------------


def _is_event(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and isinstance(document.get("detail-type"), str)
        and isinstance(document.get("source"), str)
        and isinstance(document.get("detail"), dict)
    )


def _is_s3_notification(document: Any) -> bool:
    """An S3 event notification (``Records[].s3``), as S3 sends it to SQS, SNS or Lambda."""
    if not isinstance(document, dict) or not isinstance(document.get("Records"), list):
        return False
    return any(isinstance(r, dict) and isinstance(r.get("s3"), dict) for r in document["Records"])


def _notification_problem(document: dict[str, Any]) -> str | None:
    """Why an S3 notification cannot be put back as an Object Created event, or None."""
    try:
        identity.from_trigger(document)
    except InvalidEventError as exc:
        return f"an S3 notification that cannot be redriven: {exc.message}"
    return None


def _is_sns_notification(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and document.get("Type") == "Notification"
        and "Message" in document
        and "TopicArn" in document
    )


def _is_lambda_record(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    request = document.get("requestContext")
    return isinstance(request, dict) and isinstance(request.get("functionArn"), str)


def _object_hint(event: dict[str, Any]) -> ObjectHint | None:
    """The object a trigger names (``logic.identity``: every S3 shape), if it names one."""
    try:
        found = identity.from_trigger(event)
    except InvalidEventError:
        return None
    return ObjectHint(found.bucket, found.key, found.version_id)


def _describe_json(document: Any) -> str:
    if isinstance(document, dict):
        keys = sorted(str(key) for key in document)
        shown = ", ".join(keys[:8]) + (", ..." if len(keys) > 8 else "")
        return f"keys: {shown}" if keys else "an empty object"
    return f"a JSON {type(document).__name__}"


# ------------------------------------------------------------------------------------------
# attributes and scalars
# ------------------------------------------------------------------------------------------


def _field(message: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in message:
            return message[name]
    return None


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


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _epoch_ms(value: Any) -> datetime | None:
    millis = _int(value)
    return datetime.fromtimestamp(millis / 1000, tz=UTC) if millis is not None else None


def _parse_time(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)  # 3.11+: accepts a trailing "Z"
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _iso_z(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ------------------------------------------------------------------------------------------
# redrive helpers
# ------------------------------------------------------------------------------------------


def bus_from_rule_arn(rule_arn: str | None) -> str:
    """The event bus a rule belongs to: ``rule/name`` -> default, ``rule/bus/name`` -> bus."""
    if rule_arn is None:
        return "default"
    prefix, found, resource = rule_arn.partition(":rule/")
    if not found or not prefix.startswith("arn:") or ":events:" not in prefix or not resource:
        raise ValueError(f"not an EventBridge rule ARN: {rule_arn!r}")
    # Partner bus names contain '/' (aws.partner/...): the rule name is the last segment.
    bus, slash, name = resource.rpartition("/")
    if not name or (slash and not bus):
        raise ValueError(f"not an EventBridge rule ARN: {rule_arn!r}")
    return bus if slash else "default"


def futile_reason(record: FailureRecord) -> str | None:
    """Why redriving this record would fail again before someone acts, or None."""
    if record.error_code is None:
        return None
    reason = RETRY_FUTILE.get(record.error_code)
    return f"{record.error_code}: {reason}" if reason else None


def to_put_events_entry(
    record: FailureRecord, *, redrive_source: str, event_bus_name: str, redriven_at: datetime
) -> dict[str, Any]:
    """The PutEvents entry that puts a replayable record's event back on ``event_bus_name``.

    ``aws.*`` sources are reserved (PutEvents rejects them with
    NotAuthorizedForSourceException), so they become ``redrive_source``; any other source is
    kept. ``detail.redrive`` records where the event came from; an event redriven before
    keeps its original source and id and counts one more redrive.
    """
    if not record.replayable or record.event is None:
        raise ValueError(
            f"message {record.message_id} has no replayable event"
            + (f": {record.not_replayable_reason}" if record.not_replayable_reason else "")
        )
    if not redrive_source or redrive_source.startswith("aws."):
        raise ValueError(f"redrive source {redrive_source!r} is empty or reserved (aws.*)")
    if not event_bus_name:
        raise ValueError("event_bus_name is empty")
    if redriven_at.tzinfo is None:
        raise ValueError("redriven_at must be timezone-aware")

    event = replay_event(record.event)
    source: str = event["source"]
    detail_type: str = event["detail-type"]
    detail: dict[str, Any] = event["detail"]
    resources = event.get("resources") or []
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        raise ValueError(f"message {record.message_id}: event resources are not a string list")

    previous = detail.get("redrive")
    if previous is not None and not isinstance(previous, dict):
        raise ValueError(f"message {record.message_id}: detail.redrive is not a redrive block")
    previous = previous or {}
    error_message = record.error_message
    if error_message is not None and len(error_message) > MAX_ERROR_MESSAGE_CHARS:
        error_message = error_message[:MAX_ERROR_MESSAGE_CHARS]
    provenance = {
        **{k: v for k, v in previous.items() if k.startswith("original")},
        "originalSource": previous.get("originalSource") or source,
        "originalEventId": previous.get("originalEventId") or event.get("id"),
        "errorCode": record.error_code,
        "errorMessage": error_message,
        "retryAttempts": record.retry_attempts,
        "ruleArn": record.rule_arn,
        "targetArn": record.target_arn,
        "dlqMessageId": record.message_id,
        "redrivenAt": _iso_z(redriven_at),
        "redriveCount": (_int(previous.get("redriveCount")) or 0) + 1,
    }
    new_detail = {key: value for key, value in detail.items() if key != "redrive"}
    new_detail["redrive"] = provenance
    detail_json = _compact(new_detail)

    entry: dict[str, Any] = {
        "Source": redrive_source if source.startswith("aws.") else source,
        "DetailType": detail_type,
        "Detail": detail_json,
        "Resources": list(resources),
    }
    time_value = event.get("time")
    if isinstance(time_value, str) and time_value:
        try:
            entry["Time"] = _parse_time(time_value)
        except ValueError:
            raise ValueError(
                f"message {record.message_id}: event time {time_value!r} is not ISO 8601"
            ) from None
    entry["EventBusName"] = event_bus_name

    size = sum(
        len(part.encode("utf-8"))
        for part in (entry["Source"], detail_type, detail_json, *entry["Resources"])
    ) + (_TIME_BYTES if "Time" in entry else 0)
    if size > MAX_ENTRY_BYTES:
        raise ValueError(
            f"message {record.message_id}: PutEvents entry is {size} bytes, "
            f"over the {MAX_ENTRY_BYTES}-byte limit"
        )
    return entry


# ------------------------------------------------------------------------------------------
# one shape for every S3 trigger
# ------------------------------------------------------------------------------------------

MAX_ORIGINAL_DETAIL_BYTES = 64 * 1024


def replay_event(document: dict[str, Any]) -> dict[str, Any]:
    """The event to put back on the bus for a dead-lettered trigger.

    S3 triggers in any other shape than S3's own "Object Created" event (CloudTrail's "AWS
    API Call via CloudTrail" PutObject / CopyObject / CompleteMultipartUpload / PostObject,
    or an S3 notification's ``Records``) are converted into that shape
    (``object_created_event``), so the pipeline's rule matches them and its InputTransformer
    finds the object where it always does. Anything else is sent as it was.
    """
    native = _is_event(document) and document.get("detail-type") == "Object Created"
    if native or not (_is_event(document) or _is_s3_notification(document)):
        return document
    try:
        found = identity.from_trigger(document)
    except InvalidEventError:
        return document  # not a new object version: the routing check decides
    return object_created_event(found, document)


def object_created_event(
    found: identity.ObjectIdentity, original: dict[str, Any]
) -> dict[str, Any]:
    """S3's "Object Created" EventBridge event for ``found``, with the original trigger kept
    as provenance in ``detail.redrive`` (``originalDetailType``, ``originalSource``,
    ``originalEventId``, ``originalDetail``: the CloudTrail detail or the S3 record, left out
    above 64 KB)."""
    obj: dict[str, Any] = {"key": found.key}
    if found.size is not None:
        obj["size"] = found.size
    if found.etag is not None:
        obj["etag"] = found.etag
    if found.version_id is not None:
        obj["version-id"] = found.version_id
    if found.sequencer is not None:
        obj["sequencer"] = found.sequencer
    if _is_event(original):
        kind, source = str(original["detail-type"]), str(original["source"])
        event_id, when = original.get("id"), original.get("time")
        account, region = original.get("account"), original.get("region")
        detail_of_original: Any = original["detail"]
    else:  # an S3 notification
        record = original["Records"][0]
        kind, source = "S3 Event Notification", str(record.get("eventSource") or "aws:s3")
        event_id, when = None, record.get("eventTime")
        account, region = None, record.get("awsRegion")
        detail_of_original = record
    previous = detail_of_original.get("redrive") if isinstance(detail_of_original, dict) else None
    provenance: dict[str, Any] = dict(previous) if isinstance(previous, dict) else {}
    provenance.setdefault("originalDetailType", kind)
    provenance.setdefault("originalSource", source)
    if event_id:
        provenance.setdefault("originalEventId", event_id)
    if len(_compact(detail_of_original).encode()) <= MAX_ORIGINAL_DETAIL_BYTES:
        provenance.setdefault("originalDetail", detail_of_original)
    detail: dict[str, Any] = {
        "version": "0",
        "bucket": {"name": found.bucket},
        "object": obj,
        "reason": found.reason or "PutObject",
        "redrive": provenance,
    }
    event: dict[str, Any] = {
        "version": "0",
        "id": event_id,
        "detail-type": "Object Created",
        "source": "aws.s3",
        "resources": [f"arn:aws:s3:::{found.bucket}"],
        "detail": detail,
    }
    if isinstance(when, str) and when:
        event["time"] = when
    if account:
        event["account"] = account
    if region:
        event["region"] = region
    return event
