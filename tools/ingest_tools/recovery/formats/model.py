"""What the dead-letter formats parse into (``FailureRecord``, ``RecordKind``, ``ObjectHint``,
``UnreadableMessageError``), what the SQS message itself says (``_Envelope``), and the
attribute and scalar readers every format module shares.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

__all__ = ["FailureRecord", "ObjectHint", "RecordKind", "UnreadableMessageError"]


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


def _field(message: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in message:
            return message[name]
    return None


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
