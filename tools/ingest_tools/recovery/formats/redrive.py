"""Putting a dead-lettered record back: the PutEvents entry that redrives a replayable record
(``to_put_events_entry``, provenance in ``detail.redrive``), S3 triggers of any shape turned
into S3's own "Object Created" event (``replay_event``), the event bus of a rule
(``bus_from_rule_arn``) and the errors a redrive would only repeat (``futile_reason``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest_pipeline.errors import InvalidEventError
from ingest_pipeline.logic import identity
from ingest_tools.recovery.formats.events import _is_event, _is_s3_notification
from ingest_tools.recovery.formats.model import (
    FailureRecord,
    _compact,
    _int,
    _iso_z,
    _parse_time,
)

__all__ = [
    "MAX_ENTRY_BYTES",
    "MAX_ERROR_MESSAGE_CHARS",
    "RETRY_FUTILE",
    "bus_from_rule_arn",
    "futile_reason",
    "object_created_event",
    "replay_event",
    "to_put_events_entry",
]

# PutEvents limit for one entry (Time + Source + DetailType + Detail + Resources, UTF-8).
MAX_ENTRY_BYTES = 256 * 1024
MAX_ERROR_MESSAGE_CHARS = 512
_TIME_BYTES = 14  # what PutEvents counts for an entry's Time, whatever its format

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
