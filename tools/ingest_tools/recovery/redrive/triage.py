"""Triage: what a redrive does with one dead-letter message (pure: no AWS calls).

``triage`` either settles a message on the spot (unreadable, filtered out, not replayable,
refused as futile) with an ``Outcome`` that leaves it in the queue, or hands it on as a
``DeadLetter`` to be sent. ``put_events_entry`` and ``preview`` say what would be sent and
where; ``dry_run`` turns that into the outcome a dry run reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ingest_tools.recovery.formats import (
    FailureRecord,
    RecordKind,
    UnreadableMessageError,
    bus_from_rule_arn,
    futile_reason,
    parse_message,
    to_put_events_entry,
)
from ingest_tools.recovery.redrive.model import DeadLetter, Outcome, RedriveOptions, Status

__all__ = [
    "DIRECT_KINDS",
    "RouteCheck",
    "dry_run",
    "filtered_out",
    "preview",
    "put_events_entry",
    "triage",
]

# Sent straight back to their target or source queue, not through an event bus.
DIRECT_KINDS = frozenset({RecordKind.SCHEDULER, RecordKind.QUEUE})

# Why no rule would route a PutEvents entry (None: one would); see ``routes.RouteCheck``.
RouteCheck = Callable[[FailureRecord, dict[str, Any]], str | None]


def triage(
    message: Mapping[str, Any], options: RedriveOptions, now: datetime
) -> Outcome | DeadLetter:
    """An outcome for a message that stays in the queue, or the dead letter to send."""
    message_id = str(message["MessageId"])
    try:
        record = parse_message(message)
    except UnreadableMessageError as exc:
        return Outcome(message_id, Status.UNREADABLE, reason=exc.reason)
    skip = filtered_out(record, options, now)
    if skip:
        return Outcome.of(record, Status.SKIPPED, reason=skip)
    if not record.replayable:
        return Outcome.of(record, Status.NOT_REPLAYABLE, reason=record.not_replayable_reason)
    futile = futile_reason(record)
    if futile and not options.force:
        reason = f"{futile} (fix the cause, then use --force)"
        return Outcome.of(record, Status.REFUSED, reason=reason)
    return DeadLetter(message, record)


def filtered_out(record: FailureRecord, options: RedriveOptions, now: datetime) -> str | None:
    """Why the options leave this record out, or None when they select it."""
    o = options
    if o.error_codes and (record.error_code or "") not in o.error_codes:
        return f"error code {record.error_code} not in {sorted(o.error_codes)}"
    if o.origins and not any(
        record.origin == wanted or record.origin.rsplit("/", 1)[-1] == wanted
        for wanted in o.origins
    ):
        return f"origin {record.origin} not selected"
    if record.sent_at is not None and (o.older_than or o.newer_than):
        age = now - record.sent_at
        if o.older_than and age < o.older_than:
            return f"dead-lettered {age} ago, newer than --older-than"
        if o.newer_than and age > o.newer_than:
            return f"dead-lettered {age} ago, older than --newer-than"
    return None


def put_events_entry(
    record: FailureRecord, options: RedriveOptions, now: datetime
) -> dict[str, Any]:
    """The PutEvents entry for a bus record (``ValueError`` when it cannot be built)."""
    bus = options.event_bus or bus_from_rule_arn(record.rule_arn)
    return to_put_events_entry(
        record,
        redrive_source=options.redrive_source,
        event_bus_name=bus,
        redriven_at=now,
    )


def preview(
    record: FailureRecord, options: RedriveOptions, now: datetime
) -> tuple[dict[str, Any], str]:
    """What would be sent for a record, and where to."""
    if record.kind in DIRECT_KINDS:
        return {"target": record.target_arn, "input": record.target_input}, str(record.target_arn)
    entry = put_events_entry(record, options, now)
    return entry, str(entry["EventBusName"])


def dry_run(
    record: FailureRecord, options: RedriveOptions, now: datetime, why_unroutable: RouteCheck
) -> Outcome:
    """What a real run would do with a record that passed triage (routing included)."""
    try:
        entry, destination = preview(record, options, now)
    except ValueError as exc:
        return Outcome.of(record, Status.NOT_REPLAYABLE, reason=str(exc))
    unroutable = why_unroutable(record, entry)
    if unroutable and not options.force:
        return Outcome.of(record, Status.UNROUTABLE, reason=unroutable, entry=entry)
    return Outcome.of(record, Status.DRY_RUN, destination=destination, entry=entry)
