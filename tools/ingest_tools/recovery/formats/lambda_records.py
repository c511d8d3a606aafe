"""**Lambda on-failure records** (``RecordKind.LAMBDA_FAILURE``): the asynchronous-invocation
destination record (``requestContext``, ``requestPayload``, ``responseContext``,
``responsePayload``) and the event-source-mapping record for Kinesis / DynamoDB streams
(``KinesisBatchInfo`` / ``DDBStreamBatchInfo``; SQS and SNS destinations carry no records,
an S3 destination adds ``payload``, the whole invocation event as escaped JSON). Only a
payload that is an EventBridge event can be put back on a bus; the rest are readable but
not replayable, and the reason says where the records are (shard and sequence range).
"""

from __future__ import annotations

import json
from typing import Any

from ingest_tools.recovery.formats.events import (
    _is_event,
    _is_s3_notification,
    _notification_problem,
    _object_hint,
)
from ingest_tools.recovery.formats.model import (
    FailureRecord,
    RecordKind,
    _compact,
    _dict,
    _Envelope,
    _int,
    _str_or_none,
)

_BATCH_LABELS = {"KinesisBatchInfo": "Kinesis", "DDBStreamBatchInfo": "DynamoDB stream"}


def _is_lambda_record(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    request = document.get("requestContext")
    return isinstance(request, dict) and isinstance(request.get("functionArn"), str)


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
