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

from ingest_pipeline.dal import state, workflow
from ingest_pipeline.logic.failure import is_express_execution
from ingest_pipeline.logic.reconcile import (
    Action,
    ActionKind,
    execution_input,
    execution_name,
)
from ingest_pipeline.models import ObjectVersion, iso_ms, parse_time

REDRIVE_WINDOW = timedelta(days=14)
TRIGGER_SOURCE = "ingestctl.reprocess"


@dataclass(frozen=True)
class Decision:
    object: ObjectVersion
    action: str  # start | redrive | take-over | skip
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
