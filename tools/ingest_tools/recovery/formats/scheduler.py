"""**EventBridge Scheduler DLQ** (``RecordKind.SCHEDULER``), recognised by SCHEDULE_ARN /
EXECUTION_ID attributes: the body is the target input as sent (JSON or not; for Step
Functions the StartExecution request ``{"Input", "Name", "StateMachineArn"}``); attributes
ERROR_CODE, ERROR_MESSAGE, EXECUTION_ID, EXHAUSTED_RETRY_CONDITION, IS_PAYLOAD_TRUNCATED,
RETRY_ATTEMPTS, SCHEDULED_TIME, SCHEDULE_ARN, TARGET_ARN. A truncated input cannot be
replayed.
"""

from __future__ import annotations

from ingest_tools.recovery.formats.model import FailureRecord, RecordKind, _Envelope, _int

_SCHEDULER_MARKERS = ("SCHEDULE_ARN", "EXECUTION_ID")


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
