"""The checks of what the reconciler should take care of: ``stale-claims`` and
``overdue-retries`` (open state records it should have acted on, judged by its own planner
with the deployed policy) and ``reconcile-schedule`` (is the schedule that runs it ENABLED,
with a dead-letter queue that exists).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

from ingest_pipeline.dal.state import open_record
from ingest_pipeline.logic.policy import ReconcilePolicy
from ingest_pipeline.logic.reconcile import ActionKind, Plan, plan_open_records
from ingest_pipeline.models import OPEN_STATE_INDEX, Attr, OpenRecord, OpenState, iso_ms
from ingest_tools.doctor.event_path import queue_url
from ingest_tools.doctor.report import Check, Status, duration

if TYPE_CHECKING:
    from ingest_tools.doctor.context import Context

__all__ = ["DEFAULT_SCHEDULE_PERIOD", "open_records", "reconcile_schedule", "schedule_period"]

#: The reconcile schedule's period when its expression is not a rate(...).
DEFAULT_SCHEDULE_PERIOD = timedelta(minutes=15)
_SHOWN = 3  # object keys named in a detail line
_DESERIALIZER = TypeDeserializer()


def schedule_period(expression: str | None) -> timedelta | None:
    """The period of a ``rate(...)`` schedule expression (None for cron/at/unknown)."""
    match = re.fullmatch(r"\s*rate\(\s*(\d+)\s+(minute|hour|day)s?\s*\)\s*", expression or "")
    if not match:
        return None
    unit = {"minute": 60, "hour": 3600, "day": 86400}[match.group(2)]
    return timedelta(seconds=int(match.group(1)) * unit)


def _schedule(context: Context) -> dict[str, Any]:
    """GetSchedule of the reconcile schedule (its group and name come from its ARN:
    ``...:schedule/<group>/<name>``)."""
    arn = context.output("ReconcileScheduleArn")
    group, _, name = arn.split(":schedule/", 1)[1].partition("/")
    return dict(context.clients.scheduler.get_schedule(Name=name, GroupName=group))


def _reconcile_settings(context: Context) -> tuple[ReconcilePolicy, timedelta, list[str]]:
    """The deployed reconcile policy (the function's environment, read as the function reads
    it) and the schedule's period; defaults where they cannot be read, with a note."""
    from ingest_pipeline.config import ReconcileSettings

    notes: list[str] = []
    policy = ReconcilePolicy()
    function = context.outputs.get("ReconcileFunctionName")
    try:
        if not function:
            raise ValueError("no ReconcileFunctionName output")
        config = context.clients.lambda_.get_function_configuration(FunctionName=function)
        variables = (config.get("Environment") or {}).get("Variables") or {}
        policy = ReconcileSettings.from_env(variables).policy
    except Exception as exc:  # any failure: the defaults, said so
        notes.append(f"reconcile policy defaults used ({type(exc).__name__})")
    period: timedelta | None = None
    try:
        if context.outputs.get("ReconcileScheduleArn"):
            period = schedule_period(_schedule(context).get("ScheduleExpression"))
    except (ClientError, BotoCoreError, ValueError, IndexError) as exc:
        notes.append(f"schedule period assumed ({type(exc).__name__})")
    return policy, period or DEFAULT_SCHEDULE_PERIOD, notes


def _query_open(context: Context, open_state: OpenState) -> list[OpenRecord]:
    kwargs: dict[str, Any] = {
        "TableName": context.output("ObjectStateTableName"),
        "IndexName": OPEN_STATE_INDEX,
        "KeyConditionExpression": f"{Attr.OPEN_STATE} = :s",
        "ExpressionAttributeValues": {":s": {"S": open_state.value}},
    }
    records: list[OpenRecord] = []
    while True:
        page = context.clients.dynamodb.query(**kwargs)
        for raw in page.get("Items", []):
            record = open_record({k: _DESERIALIZER.deserialize(v) for k, v in raw.items()})
            if record is not None:
                records.append(record)
        if "LastEvaluatedKey" not in page:
            return records
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _due_since(record: OpenRecord) -> datetime | None:
    """When the reconciler could first act on a record it plans an action for: a claim's
    lease expiry, a retry's retry_after (None: due from the start)."""
    if record.claimed_at is not None and record.status == "RUNNING":
        return record.claimed_at + timedelta(seconds=record.lease_seconds)
    return record.retry_after


def open_records(context: Context) -> list[Check]:
    """``stale-claims``: RUNNING records whose claim's lease has expired (the execution died
    without recording an outcome); ``overdue-retries``: FAILED-retryable records whose
    retry time has passed, or whose attempts are used up and await escalation. Which records
    are due is decided by the reconciler's own planner with the deployed policy.

    The reconciler acts on them at its next run: WARN while a record has been due for at most
    two schedule periods (the next run will take it); FAIL after that (the reconciler is not
    doing its job: see reconcile-schedule and dead-letters:ReconcileDLQ)."""
    policy, period, notes = _reconcile_settings(context)
    grace = 2 * period
    records = {
        r.object: r
        for state in (OpenState.RUNNING, OpenState.RETRYABLE)
        for r in _query_open(context, state)
    }
    plan = Plan()
    plan_open_records(records.values(), context.now, policy, plan)
    stale = [a for a in plan.actions if a.kind is ActionKind.RECOVER]
    overdue = [a for a in plan.actions if a.kind in (ActionKind.RETRY, ActionKind.ESCALATE)]
    note = f" ({'; '.join(notes)})" if notes else ""
    return [
        _open_check(
            "stale-claims",
            [(records[a.object], a.kind) for a in stale],
            context.now,
            grace,
            ok=f"no RUNNING claim past its lease ({plan.leased} within it){note}",
            what=("claim RUNNING past its lease", "claims RUNNING past their lease"),
            action=lambda key: (
                "the reconciler recovers them at its next run; now: "
                + context.ingestctl(f"reprocess --key {key!r}")
                + " (it takes the claim over)"
            ),
        ),
        _open_check(
            "overdue-retries",
            [(records[a.object], a.kind) for a in overdue],
            context.now,
            grace,
            ok=f"no retryable failure past its retry time ({plan.waiting} waiting){note}",
            what=(
                "FAILED-retryable record past its retry time",
                "FAILED-retryable records past their retry time",
            ),
            action=lambda key: (
                "the reconciler retries (or escalates) them at its next run; "
                "now: " + context.ingestctl("reprocess --error-class TRANSIENT")
            ),
        ),
    ]


def _open_check(
    name: str,
    due: list[tuple[OpenRecord, ActionKind]],
    now: datetime,
    grace: timedelta,
    *,
    ok: str,
    what: tuple[str, str],
    action: Callable[[str], str],
) -> Check:
    """WARN for records due at most ``grace`` ago, FAIL beyond; ``action(key)`` names the
    most overdue record's key."""
    if not due:
        return Check(name, Status.PASS, ok)
    lateness = [(_overdue(record, now), record, kind) for record, kind in due]
    lateness.sort(key=lambda row: row[0], reverse=True)
    late, worst, _ = lateness[0]
    shown = ", ".join(f"{r.object.key} ({duration(t)})" for t, r, _ in lateness[:_SHOWN])
    more = f" and {len(due) - _SHOWN} more" if len(due) > _SHOWN else ""
    status = Status.FAIL if late > grace else Status.WARN
    detail = f"{len(due)} {what[0] if len(due) == 1 else what[1]}: {shown}{more}"
    if status is Status.FAIL:
        detail += f"; overdue by more than two reconcile periods ({duration(grace)})"
    data = {
        "count": len(due),
        "graceSeconds": grace.total_seconds(),
        "records": [
            {
                "bucket": r.object.bucket,
                "key": r.object.key,
                "versionId": r.object.version_id,
                "status": r.status,
                "attempt": r.attempt,
                "action": kind.value,
                "dueSince": _iso_or_none(_due_since(r)),
                "overdueSeconds": t.total_seconds(),
                "executionArn": r.execution_arn,
                "errorCode": r.error_code,
            }
            for t, r, kind in lateness
        ],
    }
    return Check(name, status, detail, action(worst.object.key), data)


def _overdue(record: OpenRecord, now: datetime) -> timedelta:
    since = _due_since(record)
    return now - since if since is not None else timedelta(0)


def _iso_or_none(moment: datetime | None) -> str | None:
    return iso_ms(moment) if moment is not None else None


def reconcile_schedule(context: Context) -> list[Check]:
    """FAIL unless the reconcile schedule is ENABLED and its target has a dead-letter queue
    that exists: without the schedule nothing retries, recovers or finds missed objects."""
    schedule = _schedule(context)
    name, group = str(schedule.get("Name")), str(schedule.get("GroupName"))
    state = str(schedule.get("State", ""))
    target = schedule.get("Target") or {}
    dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
    retry = target.get("RetryPolicy") or {}
    problems: list[str] = []
    if state != "ENABLED":
        problems.append(f"schedule {name} is {state or 'in no state'}: nothing is reconciled")
    if not dlq:
        problems.append(f"schedule {name} has no dead-letter queue: failed runs are dropped")
    else:
        try:
            queue_url(context.clients.sqs, str(dlq))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            problems.append(f"its dead-letter queue {dlq} cannot be found ({code})")
    data = {
        "schedule": name,
        "group": group,
        "state": state,
        "expression": schedule.get("ScheduleExpression"),
        "dlq": dlq,
        "retryPolicy": retry,
    }
    if problems:
        return [
            Check(
                "reconcile-schedule",
                Status.FAIL,
                "; ".join(problems),
                "redeploy the stack (sam deploy), or aws scheduler update-schedule --name "
                f"{name} --group-name {group} --state ENABLED with its current expression, "
                f"target and flexible time window (aws scheduler get-schedule --name {name} "
                f"--group-name {group}): UpdateSchedule replaces the whole schedule",
                data,
            )
        ]
    return [
        Check(
            "reconcile-schedule",
            Status.PASS,
            f"{name} is ENABLED ({schedule.get('ScheduleExpression')}, "
            f"DLQ {str(dlq).rsplit(':', 1)[-1]})",
            data=data,
        )
    ]
