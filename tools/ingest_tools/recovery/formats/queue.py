"""**Queue messages** (``RecordKind.QUEUE``): a message its source queue's RedrivePolicy moved
to the dead-letter queue (SQS sets ``DeadLetterQueueSourceArn``; any body), or a
reconcile-run body (``{"run": {...}, "task": "reconcile"}``, what ReconcileSchedule sends)
sent straight to the dead-letter queue, which has no ``DeadLetterQueueSourceArn``
(``target_arn`` None: the redrive sends it to the queue's only source queue).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ingest_tools.recovery.formats.model import (
    FailureRecord,
    RecordKind,
    _Envelope,
    _field,
    _str_or_none,
)


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
