"""**EventBridge rule DLQ** (``RecordKind.RULE_EVENT``): the body is the original event
(``version, id, detail-type, source, account, time, region, resources, detail``); the
message attributes say why: RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE and, after
retries, EXHAUSTED_RETRY_CONDITION and RETRY_ATTEMPTS. Both S3 shapes give an
``ObjectHint``: the native "Object Created" event (``detail.bucket.name``,
``detail.object.key``) and CloudTrail's "AWS API Call via CloudTrail" PutObject
(``detail.requestParameters.bucketName/key``). An event without attributes (a Lambda
function DLQ, or attributes lost on the way) is still a rule record, error unknown.

The S3 shapes (``_is_event``, ``_is_s3_notification``, ``_object_hint``) are read by the
other families and by ``redrive.replay_event`` too.
"""

from __future__ import annotations

from typing import Any

from ingest_pipeline.errors import InvalidEventError
from ingest_pipeline.logic import identity
from ingest_tools.recovery.formats.model import (
    FailureRecord,
    ObjectHint,
    RecordKind,
    _Envelope,
    _int,
)


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


def _object_hint(event: dict[str, Any]) -> ObjectHint | None:
    """The object a trigger names (``logic.identity``: every S3 shape), if it names one."""
    try:
        found = identity.from_trigger(event)
    except InvalidEventError:
        return None
    return ObjectHint(found.bucket, found.key, found.version_id)
