"""``ingestctl reprocess``: run FAILED (or dead-claimed) objects through the pipeline again.

Per object version, one of:

* **new execution** (FAILED record): the execution recorded its failure and ended in a Fail
  state, so RedriveExecution would only re-run that Fail state. A new execution with
  ``request.reprocess = true`` re-claims the record (the claim's condition admits a
  reprocess request for anything not RUNNING). Its name is deterministic
  (``reprocess-<object digest>-a<attempt>``): StartExecution is idempotent by name, and a
  second reprocess of the same attempt reports the execution that already ran.
* **RedriveExecution** (RUNNING record whose execution ended without recording: timed out,
  aborted, or failed outside the catch paths, within 14 days and redrivable): the execution
  resumes from the failed state under its own ARN, so it still owns the claim.
* **take-over execution** (RUNNING record whose execution ended but cannot be redriven):
  a new execution with ``staleBefore`` = now takes the claim over.
* skipped with the reason: SUCCEEDED, or RUNNING under a live execution.
* **start-missed** (``--key`` / ``--prefix`` only; an object under ``incoming/`` with *no*
  state record: its S3 event never arrived, or its execution could not write the claim, e.g.
  DynamoDB throttled through the claim's retries): started exactly as the reconciler's
  missed-object scan starts it (``logic.reconcile.plan_missed``): the same deterministic
  name (``start-missed-<object digest>``) and input (``reprocess = false``, no
  ``staleBefore``), so a start by both is one execution, and the claim's
  ``attribute_not_exists`` condition admits only the first execution of any name. Only the
  current version written within the lookback window (the reconciler's
  ``MissedEventLookbackHours``, 72 h) is considered: older objects may have had a record that
  has since expired (``RecordRetentionDays``), and must not be processed again. There is no
  grace period: the operator asks now, and an S3 event still in flight loses the claim.

An Express execution (WorkflowType=EXPRESS: ``arn:...:express:...``) cannot be described
or redriven, and runs at most 5 minutes: its RUNNING record is judged by the record alone.
Within its lease (``claimed_at`` + ``lease_seconds``, 300 s) it may still be running and is
skipped; after it, the execution has ended without recording, and a new execution takes the
claim over.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ingest_pipeline.dal import s3, state, workflow
from ingest_pipeline.logic.failure import is_express_execution
from ingest_pipeline.logic.keys import INCOMING_PREFIX
from ingest_pipeline.logic.reconcile import (
    Action,
    ActionKind,
    ListedObject,
    execution_input,
    execution_name,
)
from ingest_pipeline.models import ObjectVersion, iso_ms, parse_time

REDRIVE_WINDOW = timedelta(days=14)
TRIGGER_SOURCE = "ingestctl.reprocess"
# The reconciler's MissedEventLookbackHours default (template.yaml), inside the record TTL.
MISSED_LOOKBACK = timedelta(hours=72)


@dataclass(frozen=True)
class Decision:
    object: ObjectVersion
    action: str  # start | redrive | take-over | start-missed | skip
    reason: str
    attempt: int = 0
    execution_arn: str | None = None


def decide(
    record: dict[str, Any], execution: workflow.ExecutionStatus | None, now: datetime
) -> Decision:
    """What to do with one state record (pure; ``execution`` is its last execution)."""
    obj = ObjectVersion(record["bucket_name"], record["object_key"], record["version_id"])
    status, attempt = record.get("status"), int(record.get("attempt", 0))
    arn = record.get("execution_arn")
    if status == "SUCCEEDED":
        return Decision(obj, "skip", "already SUCCEEDED", attempt, arn)
    if status == "FAILED":
        why = f"FAILED ({record.get('error_class')} {record.get('error_code')})"
        return Decision(
            obj,
            "start",
            f"{why}: its execution ended in a Fail state after recording it, so a redrive "
            "would only fail again; a new execution re-claims the object",
            attempt,
            arn,
        )
    if status != "RUNNING":
        return Decision(obj, "skip", f"unknown status {status}", attempt, arn)
    if arn and is_express_execution(str(arn)):
        return _decide_express(record, obj, now)
    return _decide_standard(obj, attempt, arn, execution, now)


def _decide_standard(
    obj: ObjectVersion,
    attempt: int,
    arn: str | None,
    execution: workflow.ExecutionStatus | None,
    now: datetime,
) -> Decision:
    """A RUNNING record of a Standard execution: by what DescribeExecution says of it."""
    if execution is not None and execution.status == "RUNNING":
        return Decision(obj, "skip", f"RUNNING: execution {arn} is still running", attempt, arn)
    ended = execution.status if execution else "not found"
    if (
        execution is not None
        and execution.status in {"FAILED", "TIMED_OUT", "ABORTED"}
        and execution.stop_date is not None
        and now - execution.stop_date <= REDRIVE_WINDOW
        and execution.redrive_status in (None, "REDRIVABLE")
    ):
        return Decision(
            obj,
            "redrive",
            f"RUNNING but its execution ended {ended} without recording: redrive resumes it "
            "from the failed state under the same ARN (it still owns the claim)",
            attempt,
            arn,
        )
    detail = (execution.redrive_reason if execution else None) or (
        "more than 14 days ago" if execution and execution.stop_date else "no such execution"
    )
    return Decision(
        obj,
        "take-over",
        f"RUNNING but its execution is {ended} and cannot be redriven ({detail}): a new "
        "execution takes the claim over",
        attempt,
        arn,
    )


def _decide_express(record: dict[str, Any], obj: ObjectVersion, now: datetime) -> Decision:
    """A RUNNING record of an Express execution: by its lease, not by the execution."""
    attempt, arn = int(record.get("attempt", 0)), record.get("execution_arn")
    lease = timedelta(seconds=int(record.get("lease_seconds", 300)))
    claimed = parse_time(record.get("claimed_at"))
    if claimed is None:
        return Decision(
            obj,
            "take-over",
            "RUNNING with no claim time: a new execution takes the claim over",
            attempt,
            arn,
        )
    if now < claimed + lease:
        return Decision(
            obj,
            "skip",
            f"RUNNING: Express execution {arn} may still be running until "
            f"{iso_ms(claimed + lease)} (its lease); Express executions cannot be described",
            attempt,
            arn,
        )
    return Decision(
        obj,
        "take-over",
        f"RUNNING, and its Express execution's lease ended at {iso_ms(claimed + lease)}: it "
        "ended without recording (Express executions cannot be redriven), so a new execution "
        "takes the claim over",
        attempt,
        arn,
    )


@dataclass(frozen=True)
class Result:
    decision: Decision
    outcome: str  # started | already-started | redriven | skipped | dry-run
    execution_arn: str | None = None
    note: str | None = None


def select_records(
    table: str,
    bucket: str,
    *,
    key: str | None = None,
    prefix: str | None = None,
    error_class: str | None = None,
    version_id: str | None = None,
) -> list[dict[str, Any]]:
    """Records to consider: every version of ``key``; or the open (FAILED, RETRYABLE,
    RUNNING) records under ``prefix`` and/or of ``error_class``."""
    if key is not None:
        records = state.records_for_key(table, bucket, key)
    else:
        records = [
            item
            for open_state in ("FAILED", "RETRYABLE", "RUNNING")
            for item in state.query_open_items(table, open_state)
        ]
    out = []
    for record in records:
        if version_id and record.get("version_id") != version_id:
            continue
        if prefix and not str(record.get("object_key", "")).startswith(prefix):
            continue
        if error_class and record.get("error_class") != error_class.upper():
            continue
        if record.get("bucket_name") != bucket:
            continue
        out.append(record)
    return out


def reprocess(
    records: list[dict[str, Any]],
    *,
    state_machine_arn: str,
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[Result]:
    now = now or datetime.now(UTC)
    results = []
    for record in records:
        arn = record.get("execution_arn")
        described = (
            arn is not None
            and record.get("status") == "RUNNING"
            and not is_express_execution(str(arn))
        )
        execution = workflow.describe_execution(str(arn)) if described else None
        decision = decide(record, execution, now)
        if decision.action == "skip" or dry_run:
            results.append(Result(decision, "skipped" if decision.action == "skip" else "dry-run"))
            continue
        if decision.action == "redrive":
            try:
                workflow.redrive_execution(str(arn))
                results.append(Result(decision, "redriven", arn))
                continue
            except Exception as exc:  # e.g. the endpoint has no RedriveExecution (local cloud)
                decision = Decision(
                    decision.object,
                    "take-over",
                    f"redrive refused ({exc}); a new execution takes the claim over",
                    decision.attempt,
                    arn,
                )
        stale_before = iso_ms(now) if decision.action == "take-over" else ""
        action = Action(
            ActionKind.REPROCESS,
            decision.object,
            decision.attempt,
            execution_name(ActionKind.REPROCESS, decision.object, decision.attempt),
            stale_before=stale_before,
            reason=decision.reason,
        )
        started = workflow.start_execution(
            state_machine_arn,
            action.execution_name,
            execution_input(
                action,
                source=TRIGGER_SOURCE,
                event_id=action.execution_name,
                event_time=iso_ms(now),
                reprocess=decision.action == "start",
            ),
        )
        results.append(
            Result(
                decision,
                "already-started" if started.already else "started",
                started.execution_arn,
                "an execution of this name exists: this attempt was reprocessed already"
                if started.already
                else None,
            )
        )
    return results


def _listing_prefix(key: str | None, prefix: str | None) -> str | None:
    """Where to look for unrecorded objects: only ever under ``incoming/``."""
    if key is not None:
        return key if key.startswith(INCOMING_PREFIX) else None
    wanted = prefix or ""
    if wanted.startswith(INCOMING_PREFIX):
        return wanted
    return INCOMING_PREFIX if INCOMING_PREFIX.startswith(wanted) else None


def select_unrecorded(
    table: str,
    bucket: str,
    *,
    key: str | None = None,
    prefix: str | None = None,
    version_id: str | None = None,
    now: datetime | None = None,
    lookback: timedelta = MISSED_LOOKBACK,
) -> list[ListedObject]:
    """Objects under ``incoming/`` (``key``, or under ``prefix``) with no state record: the
    current version of each, written within ``lookback``, by its identity version (what the
    workflow's ResolveObjectVersion and the reconciler compute)."""
    if key is None and prefix is None:
        return []
    where = _listing_prefix(key, prefix)
    if where is None:
        return []
    now = now or datetime.now(UTC)
    listed = [
        ListedObject(ObjectVersion(bucket, listed_key, version), modified)
        for listed_key, version, modified in s3.list_current_versions(bucket, where, now - lookback)
        if (key is None or listed_key == key) and (version_id in (None, version))
    ]
    if not listed:
        return []
    known = state.existing_keys(table, (item.object for item in listed))
    return [item for item in listed if (item.object.pk, item.object.sk) not in known]


def start_unrecorded(
    listed: list[ListedObject],
    *,
    state_machine_arn: str,
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[Result]:
    """Start each unrecorded object as the reconciler's missed-object scan would: same
    execution name and input shape, so the two never start it twice."""
    now = now or datetime.now(UTC)
    results = []
    for item in listed:
        name = execution_name(ActionKind.START_MISSED, item.object)
        decision = Decision(
            item.object,
            "start-missed",
            f"under {INCOMING_PREFIX}, written {iso_ms(item.last_modified)}, no state record "
            "(its S3 event never arrived, or its execution could not record a claim): "
            "started as the reconciler starts a missed object",
        )
        if dry_run:
            results.append(Result(decision, "dry-run"))
            continue
        action = Action(ActionKind.START_MISSED, item.object, 0, name, reason=decision.reason)
        started = workflow.start_execution(
            state_machine_arn,
            name,
            execution_input(action, source=TRIGGER_SOURCE, event_id=name, event_time=iso_ms(now)),
        )
        results.append(
            Result(
                decision,
                "already-started" if started.already else "started",
                started.execution_arn,
                "an execution of this name exists: the reconciler (or an earlier reprocess) "
                "started this object already"
                if started.already
                else None,
            )
        )
    return results
