"""Reconciliation planning: what one scheduled run should do. Pure: no AWS access.

A run looks at three kinds of objects and decides, for each, one action:

* FAILED and retryable (a transient error): once its ``retry_after`` has passed, start it
  again (``RETRY``) - unless it has used ``max_attempts``, then ``ESCALATE`` it to operations
  (once: the escalation is a conditional write).
* RUNNING, whose claim's lease has expired (the execution died without recording anything:
  timeout, abort, an unrecordable failure): start it again, allowed to take the stale claim
  over (``RECOVER``).
* under ``incoming/`` with no state record at all, written longer ago than the grace
  period: its S3 event never arrived (``START_MISSED``).

Executions get deterministic names (``execution_name``): StartExecution is idempotent by
name, so a run delivered twice, or two runs overlapping, start each execution once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from msgspec import Struct, field

# The state record's types live in models (the DAL reads records without importing logic);
# callers that import ObjectVersion, OpenRecord or iso_ms from this module still may.
from ingest_pipeline.logic.policy import ReconcilePolicy
from ingest_pipeline.models import ObjectVersion, OpenRecord, Status, iso_ms

# Step Functions execution names: 1-80 characters of [0-9A-Za-z_-].
_NAME_DIGEST_CHARS = 40


class ActionKind(StrEnum):
    RETRY = "RETRY"
    RECOVER = "RECOVER"
    START_MISSED = "START_MISSED"
    ESCALATE = "ESCALATE"
    REPROCESS = "REPROCESS"


class ListedObject(Struct, frozen=True):
    object: ObjectVersion
    last_modified: datetime


class Action(Struct, frozen=True):
    kind: ActionKind
    object: ObjectVersion
    attempt: int
    execution_name: str
    stale_before: str = ""
    reason: str = ""


class Plan(Struct):
    actions: list[Action] = field(default_factory=list)
    waiting: int = 0  # FAILED-retryable, backoff not elapsed yet
    leased: int = 0  # RUNNING within their lease
    deferred: int = 0  # over max_starts_per_run: next run
    # How long the longest-expired RUNNING claim has been past its lease: recovered claims
    # take a new lease, so this grows only while recovery does not happen (alarmed).
    expired_claim_age_seconds: float = 0.0

    def count(self, kind: ActionKind) -> int:
        return sum(1 for a in self.actions if a.kind is kind)


def execution_name(kind: ActionKind, obj: ObjectVersion, attempt: int | None = None) -> str:
    """A deterministic execution name for one action on one object version."""
    digest = hashlib.sha256(f"{obj.bucket}\0{obj.key}\0{obj.version_id}".encode()).hexdigest()
    suffix = f"-a{attempt}" if attempt is not None else ""
    return f"{kind.value.lower().replace('_', '-')}-{digest[:_NAME_DIGEST_CHARS]}{suffix}"


def plan_open_records(
    records: Iterable[OpenRecord], now: datetime, policy: ReconcilePolicy, plan: Plan
) -> None:
    for record in records:
        if record.status == Status.FAILED and record.retryable:
            if record.attempt >= policy.max_attempts:
                plan.actions.append(
                    Action(
                        ActionKind.ESCALATE,
                        record.object,
                        record.attempt,
                        execution_name="",
                        reason=(
                            f"{record.attempt} attempts failed with transient errors "
                            f"(last: {record.error_code or 'unknown'}); retries stop here"
                        ),
                    )
                )
            elif record.retry_after is None or record.retry_after <= now:
                plan.actions.append(
                    Action(
                        ActionKind.RETRY,
                        record.object,
                        record.attempt,
                        execution_name(ActionKind.RETRY, record.object, record.attempt),
                        reason=f"transient failure {record.error_code or ''} backoff elapsed",
                    )
                )
            else:
                plan.waiting += 1
        elif record.status == Status.RUNNING:
            claimed = record.claimed_at
            if claimed is None:
                continue
            expires = claimed + timedelta(seconds=record.lease_seconds)
            if expires < now:
                plan.expired_claim_age_seconds = max(
                    plan.expired_claim_age_seconds, (now - expires).total_seconds()
                )
                plan.actions.append(
                    Action(
                        ActionKind.RECOVER,
                        record.object,
                        record.attempt,
                        execution_name(ActionKind.RECOVER, record.object, record.attempt),
                        stale_before=iso_ms(now - timedelta(seconds=record.lease_seconds)),
                        reason=f"claim by {record.execution_arn} expired at {iso_ms(expires)}",
                    )
                )
            else:
                plan.leased += 1


def missed_window(now: datetime, policy: ReconcilePolicy) -> tuple[datetime, datetime]:
    """Objects last modified inside (oldest, newest) are checked for a missing record."""
    return (
        now - timedelta(hours=policy.missed_lookback_hours),
        now - timedelta(seconds=policy.missed_grace_seconds),
    )


def plan_missed(
    listed: Iterable[ListedObject],
    known: set[tuple[str, str]],
    now: datetime,
    policy: ReconcilePolicy,
    plan: Plan,
) -> None:
    """``known`` holds the (pk, sk) of every listed object that has a state record."""
    oldest, newest = missed_window(now, policy)
    for item in listed:
        if not oldest < item.last_modified < newest:
            continue
        if (item.object.pk, item.object.sk) in known:
            continue
        plan.actions.append(
            Action(
                ActionKind.START_MISSED,
                item.object,
                0,
                execution_name(ActionKind.START_MISSED, item.object),
                reason=f"written {iso_ms(item.last_modified)}, no state record",
            )
        )


def limit(plan: Plan, policy: ReconcilePolicy) -> Plan:
    """Keep escalations, and at most ``max_starts_per_run`` executions (oldest work first:
    recoveries, retries, then missed objects)."""
    order = {ActionKind.RECOVER: 0, ActionKind.RETRY: 1, ActionKind.START_MISSED: 2}
    escalations = [a for a in plan.actions if a.kind is ActionKind.ESCALATE]
    starts = sorted(
        (a for a in plan.actions if a.kind is not ActionKind.ESCALATE),
        key=lambda a: order.get(a.kind, 3),
    )
    kept = starts[: policy.max_starts_per_run]
    plan.deferred += len(starts) - len(kept)
    plan.actions = escalations + kept
    return plan


def execution_input(
    action: Action, *, source: str, event_id: str, event_time: str, reprocess: bool = False
) -> dict[str, Any]:
    """The state machine input, in the shape the EventBridge rule's InputTransformer builds."""
    return {
        "object": action.object.as_input(),
        "trigger": {"source": source, "eventId": event_id, "eventTime": event_time},
        "request": {"reprocess": reprocess, "staleBefore": action.stale_before},
    }


def escalation_message(
    record: OpenRecord, reason: str, execution_console: str | None
) -> dict[str, Any]:
    key = record.object.key
    return {
        "subject": f"[ingest] retries exhausted: {key}"[:100],
        "message": {
            "summary": f"s3://{record.object.bucket}/{key} {reason}.",
            "object": record.object.as_input(),
            "attempts": record.attempt,
            "errorClass": record.error_class,
            "errorCode": record.error_code,
            "lastExecution": record.execution_arn,
            "console": execution_console,
            "action": (
                "Find the cause in the last execution, fix it, then run "
                f"ingestctl reprocess --key '{key}'."
            ),
        },
    }


class RunInProgressError(RuntimeError):
    """Another delivery of this schedule run holds a live lease. Not part of the workflow's
    error taxonomy: it only makes the SQS message a batch item failure, so it is delivered
    again after the visibility timeout (by then the run is done, or its lease has expired)."""
