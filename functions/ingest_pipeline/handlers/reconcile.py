"""ReconcileFunction: one reconciliation run per schedule run (SQS, partial batch responses).

EventBridge Scheduler sends ``{"run": {"scheduleArn", "scheduledTime", "executionId",
"attempt"}, "task": "reconcile"}`` to the reconcile queue (template.yaml). Scheduler and SQS
both deliver at least once, so each message first claims its run in the state table with a
conditional write keyed on schedule ARN + scheduled time (``dal.state.claim_run``):

* claimed: the run executes (``logic.reconcile`` plans it; each action is itself idempotent);
* already SUCCEEDED: a duplicate delivery, skipped (and counted on the run item);
* RUNNING under a live lease: a batch item failure, so SQS delivers it again later.

A run that fails is marked FAILED and its message reported as a batch item failure: the next
delivery runs it again. After ``maxReceiveCount`` deliveries it lands in the run DLQ. The
partial batch response is ``ingest_pipeline.sqs_batch`` (the powertools batch utility's SQS
behaviour, without its import cost); a batch in which every message failed fails the
invocation, so SQS retries it and ReconcileFunctionErrorsAlarm sees it.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from ingest_pipeline.config import ReconcileSettings
from ingest_pipeline.dal import s3, state
from ingest_pipeline.logic import reconcile
from ingest_pipeline.logic.reconcile import Action, ActionKind, ListedObject, Plan
from ingest_pipeline.models import (
    ObjectVersion,
    OpenRecord,
    OpenState,
    ReconcileRequest,
    RunAttr,
    ScheduleRun,
    parse_event,
)
from ingest_pipeline.observability import handler_imported, logger, metrics, tracer
from ingest_pipeline.sqs_batch import PartialBatchResponse, SqsMessage, process_batch

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

TRIGGER_SOURCE = "ingest-pipeline.reconcile"
RUN_RECORD_DAYS = 30

_METRICS = {
    "retried": "ObjectsRetried",
    "recovered": "ClaimsRecovered",
    "missedStarted": "MissedObjectsStarted",
    "escalated": "ObjectsEscalated",
    "alreadyStarted": "ExecutionsAlreadyStarted",
    "deferred": "ReconcileDeferred",
}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> PartialBatchResponse:
    settings = ReconcileSettings.from_env()

    def handle(message: SqsMessage) -> dict[str, Any]:
        request = parse_event(message.json_body(), ReconcileRequest)
        return run_once(request.run, settings, now=datetime.now(UTC))

    return process_batch(event, handle, on_failure=_log_failed_message)


def _log_failed_message(message: SqsMessage, error: Exception) -> None:
    logger.warning(
        "reconcile message failed: SQS delivers it again, then moves it to ReconcileDLQ",
        message_id=message.message_id,
        receive_count=message.receive_count,
        error_type=type(error).__name__,
        error=str(error),
    )


def run_once(run: ScheduleRun, settings: ReconcileSettings, *, now: datetime) -> dict[str, Any]:
    """Claim the schedule run, execute it, record the outcome."""
    logger.set_correlation_id(f"{run.schedule_arn}@{run.scheduled_time}")
    logger.append_keys(schedule_execution_id=run.execution_id)
    key = state.RunKey(run.schedule_arn, run.scheduled_time)
    expires = int((now + timedelta(days=RUN_RECORD_DAYS)).timestamp())
    claim, item = state.claim_run(
        settings.table,
        key,
        execution_id=run.execution_id,
        now=now,
        lease_seconds=settings.run_lease_seconds,
        expires_at=expires,
    )
    if claim is state.RunClaim.DONE:
        metrics.add_metric(name="DuplicateRunDeliveries", unit=MetricUnit.Count, value=1)
        logger.info("schedule run already done: duplicate delivery skipped", run=item)
        return {"outcome": "duplicate"}
    if claim is state.RunClaim.IN_PROGRESS:
        raise reconcile.RunInProgressError(
            f"schedule run {run.scheduled_time} is being run by another delivery"
        )
    claimed_at = str((item or {})[RunAttr.CLAIMED_AT])
    try:
        summary = execute(run, settings, now=now)
    except Exception as exc:
        state.fail_run(settings.table, key, claimed_at=claimed_at, now=now, error=repr(exc))
        logger.exception("reconcile run failed")
        raise
    state.finish_run(settings.table, key, claimed_at=claimed_at, now=now, summary=summary)
    for name, metric in _METRICS.items():
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=summary[name])
    # Every run reports it (0: no claim past its lease), so the alarm on it sees each run.
    metrics.add_metric(
        name="ExpiredClaimAgeSeconds",
        unit=MetricUnit.Seconds,
        value=summary["expiredClaimAgeSeconds"],
    )
    logger.info("reconcile run", outcome="done", **summary)
    return {"outcome": "done", **summary}


def plan_run(
    settings: ReconcileSettings, now: datetime
) -> tuple[Plan, dict[ObjectVersion, OpenRecord]]:
    policy = settings.policy
    plan = Plan()
    open_records: dict[ObjectVersion, OpenRecord] = {}
    for open_state in (OpenState.RETRYABLE, OpenState.RUNNING):
        records = list(state.query_open(settings.table, open_state))
        open_records.update({r.object: r for r in records})
        reconcile.plan_open_records(records, now, policy, plan)
    oldest, newest = reconcile.missed_window(now, policy)
    listed = [
        ListedObject(ObjectVersion(settings.bucket, key, version), modified)
        for key, version, modified in s3.list_current_versions(
            settings.bucket, settings.incoming_prefix, oldest
        )
        if modified < newest
    ]
    known = state.existing_keys(settings.table, (item.object for item in listed))
    reconcile.plan_missed(listed, known, now, policy, plan)
    return reconcile.limit(plan, policy), open_records


def execute(run: ScheduleRun, settings: ReconcileSettings, *, now: datetime) -> dict[str, Any]:
    plan, open_records = plan_run(settings, now)
    done: Counter[str] = Counter()
    for action in plan.actions:
        if action.kind is ActionKind.ESCALATE:
            if escalate(open_records[action.object], action.reason, settings, now):
                done["escalated"] += 1
            continue
        done[start(action, run, settings)] += 1
    return {
        "retried": done["retried"],
        "recovered": done["recovered"],
        "missedStarted": done["missedStarted"],
        "escalated": done["escalated"],
        "alreadyStarted": done["alreadyStarted"],
        "waitingBackoff": plan.waiting,
        "runningLeased": plan.leased,
        "deferred": plan.deferred,
        "expiredClaimAgeSeconds": round(plan.expired_claim_age_seconds),
    }


_STARTED = {
    ActionKind.RETRY: "retried",
    ActionKind.RECOVER: "recovered",
    ActionKind.START_MISSED: "missedStarted",
}


# start() and escalate() import the Step Functions / SNS adapter and the failure report when a
# run first needs them: most runs find nothing to do, and every run is a cold start (one each
# schedule period), so they stay out of its init (issue 12's cold start budget).
def start(action: Action, run: ScheduleRun, settings: ReconcileSettings) -> str:
    """Start the action's execution; returns the summary entry it counts in."""
    from ingest_pipeline.dal import workflow

    started = workflow.start_execution(
        settings.state_machine_arn,
        action.execution_name,
        reconcile.execution_input(
            action,
            source=TRIGGER_SOURCE,
            event_id=run.execution_id,
            event_time=run.scheduled_time,
        ),
    )
    logger.info(
        "execution started" if not started.already else "execution already started",
        action=action.kind.value,
        object_key=action.object.key,
        version_id=action.object.version_id,
        execution_arn=started.execution_arn,
        reason=action.reason,
    )
    return "alreadyStarted" if started.already else _STARTED[action.kind]


def escalate(record: OpenRecord, reason: str, settings: ReconcileSettings, now: datetime) -> bool:
    """Mark the record escalated (once), then tell operations; undo the mark if SNS fails."""
    from ingest_pipeline.dal import workflow
    from ingest_pipeline.logic.failure import console_url

    if not state.escalate(settings.table, record, now, reason):
        return False
    console = console_url(record.execution_arn) if record.execution_arn else None
    message = reconcile.escalation_message(record, reason, console)
    try:
        workflow.publish(settings.operations_topic_arn, message["subject"], message["message"])
    except Exception:
        state.undo_escalation(settings.table, record, now)
        raise
    logger.warning("object escalated", object_key=record.object.key, reason=reason)
    return True


handler_imported(__name__)  # last: freezes what the import made (a cold start)
