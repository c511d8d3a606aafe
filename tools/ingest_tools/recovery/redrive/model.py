"""The redrive vocabulary: what a run is asked to do, what it holds, what becomes of a message.

``DeadLetter`` is one received SQS message together with the failure record parsed from it;
everything after triage passes these instead of ``(message, record)`` pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from ingest_tools.recovery.formats import FailureRecord, RecordKind

__all__ = [
    "LEFT_IN_QUEUE",
    "NOT_MOVED",
    "REFUSED",
    "DeadLetter",
    "Outcome",
    "RedriveOptions",
    "Status",
]


class Status(StrEnum):
    SENT = "sent"
    ALREADY_SENT = "already-sent"  # in the ledger from an earlier, interrupted run: deleted
    FAILED = "failed"  # still failing after entry_attempts: left in the queue
    SKIPPED = "skipped"  # filtered out
    REFUSED = "refused"  # would fail again (NO_PERMISSIONS, ...; --force) or nowhere to go
    UNROUTABLE = "unroutable"  # no enabled rule on the bus would route it: needs --force
    NOT_REPLAYABLE = "not-replayable"
    UNREADABLE = "unreadable"
    DRY_RUN = "dry-run"


# Left in the queue although the run was asked to move it: the run's exit status is 1.
# (SKIPPED: the filters left it out; DRY_RUN: a real run would send it.)
NOT_MOVED = frozenset(
    {
        Status.FAILED,
        Status.REFUSED,
        Status.UNROUTABLE,
        Status.NOT_REPLAYABLE,
        Status.UNREADABLE,
    }
)
# Refused: redrive would not send it (the error would repeat, no rule would route it, or its
# destination is ambiguous); it needs a fix, or --force where that helps.
REFUSED = frozenset({Status.REFUSED, Status.UNROUTABLE})

LEFT_IN_QUEUE = frozenset(
    {
        Status.FAILED,
        Status.SKIPPED,
        Status.REFUSED,
        Status.UNROUTABLE,
        Status.NOT_REPLAYABLE,
        Status.UNREADABLE,
        Status.DRY_RUN,
    }
)


@dataclass
class RedriveOptions:
    queue_url: str
    redrive_source: str
    event_bus: str | None = None  # default: the bus of the rule that dead-lettered it
    dry_run: bool = False
    force: bool = False
    error_codes: frozenset[str] = frozenset()
    origins: frozenset[str] = frozenset()  # rule / schedule ARNs or names
    older_than: timedelta | None = None
    newer_than: timedelta | None = None
    max_messages: int | None = None
    rate: float | None = None  # messages per second, all workers together
    concurrency: int = 1
    visibility_timeout: int = 300
    entry_attempts: int = 5
    ledger_table: str | None = None
    progress: bool = False
    move_task_timeout: float = 900.0  # seconds to wait for an SQS message move task

    @property
    def selective(self) -> bool:
        """Only some messages are wanted (filters, --max) or nothing may change (dry run)."""
        return bool(
            self.dry_run
            or self.error_codes
            or self.origins
            or self.older_than
            or self.newer_than
            or self.max_messages is not None
        )


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One received dead-letter message and the failure record parsed from it."""

    message: Mapping[str, Any]  # as ``receive_message`` returned it
    record: FailureRecord

    @property
    def message_id(self) -> str:
        return str(self.message["MessageId"])

    @property
    def receipt_handle(self) -> str:
        return str(self.message["ReceiptHandle"])

    @property
    def kind(self) -> RecordKind:
        return self.record.kind


@dataclass(frozen=True)
class Outcome:
    message_id: str
    status: Status
    kind: str | None = None
    origin: str | None = None
    error_code: str | None = None
    object_key: str | None = None
    destination: str | None = None
    reason: str | None = None
    entry: dict[str, Any] | None = None  # dry run: what would be sent

    @classmethod
    def of(cls, record: FailureRecord, status: Status, **details: Any) -> Outcome:
        """An outcome for a parsed record, with what the record says about itself."""
        return cls(
            record.message_id,
            status,
            kind=record.kind.value,
            origin=record.origin,
            error_code=record.error_code,
            object_key=record.object.key if record.object else None,
            **details,
        )
