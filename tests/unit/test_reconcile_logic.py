"""Reconciliation planning, the schedule-run model and reprocess decisions (pure logic)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from ingest_pipeline.dal.workflow import ExecutionStatus
from ingest_pipeline.errors import InvalidEventError
from ingest_pipeline.logic.reconcile import (
    ActionKind,
    ListedObject,
    ObjectVersion,
    OpenRecord,
    Plan,
    ReconcilePolicy,
    execution_name,
    iso_ms,
    limit,
    plan_missed,
    plan_open_records,
)
from ingest_pipeline.models import ReconcileRequest, parse_event
from ingest_tools.recovery.reprocess import decide

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
OBJ = ObjectVersion("bucket-a", "incoming/orders/a.csv", "v1")
POLICY = ReconcilePolicy(max_attempts=3, missed_grace_seconds=900, missed_lookback_hours=24)


def failed(attempt: int, retry_in: int) -> OpenRecord:
    return OpenRecord(
        OBJ, "FAILED", True, attempt, "x", retry_after=NOW + timedelta(seconds=retry_in)
    )


def test_retryable_failure_waits_for_its_backoff_then_retries() -> None:
    plan = Plan()
    plan_open_records([failed(1, 60)], NOW, POLICY, plan)
    assert (plan.actions, plan.waiting) == ([], 1)

    plan = Plan()
    plan_open_records([failed(1, -1)], NOW, POLICY, plan)
    (action,) = plan.actions
    assert action.kind is ActionKind.RETRY and action.execution_name.endswith("-a1")


def test_max_attempts_escalates_instead_of_retrying() -> None:
    plan = Plan()
    plan_open_records([failed(3, -1)], NOW, POLICY, plan)
    (action,) = plan.actions
    assert action.kind is ActionKind.ESCALATE and "3 attempts" in action.reason


def test_running_claim_is_recovered_only_after_its_lease() -> None:
    def running(claimed_ago: int) -> OpenRecord:
        return OpenRecord(
            OBJ, "RUNNING", False, 2, "x",
            claimed_at=NOW - timedelta(seconds=claimed_ago), lease_seconds=3600,
        )  # fmt: skip

    plan = Plan()
    plan_open_records([running(3599), running(3601)], NOW, POLICY, plan)
    (action,) = plan.actions
    assert plan.leased == 1 and action.kind is ActionKind.RECOVER
    # The new execution may take over claims older than one lease before now.
    assert action.stale_before == iso_ms(NOW - timedelta(seconds=3600))
    # What the stuck-claim alarm watches: how long the claim has been past its lease.
    assert plan.expired_claim_age_seconds == 1

    plan = Plan()
    plan_open_records([running(3601), running(3600 + 7200), running(60)], NOW, POLICY, plan)
    assert plan.expired_claim_age_seconds == 7200
    plan = Plan()
    plan_open_records([running(60)], NOW, POLICY, plan)
    assert plan.expired_claim_age_seconds == 0


def test_missed_objects_inside_the_window_without_a_record() -> None:
    def listed(key: str, ago: timedelta) -> ListedObject:
        return ListedObject(ObjectVersion("bucket-a", key, "v1"), NOW - ago)

    items = [
        listed("incoming/fresh.csv", timedelta(minutes=5)),  # inside the grace period
        listed("incoming/missed.csv", timedelta(hours=1)),
        listed("incoming/known.csv", timedelta(hours=1)),
        listed("incoming/ancient.csv", timedelta(days=30)),  # record may have expired: never
    ]
    known = {(items[2].object.pk, items[2].object.sk)}
    plan = Plan()
    plan_missed(items, known, NOW, POLICY, plan)
    assert [a.object.key for a in plan.actions] == ["incoming/missed.csv"]
    assert plan.actions[0].kind is ActionKind.START_MISSED


def test_limit_keeps_escalations_and_defers_the_rest() -> None:
    plan = Plan()
    plan_open_records([failed(3, -1)] + [failed(1, -1)] * 3, NOW, POLICY, plan)
    limited = limit(plan, ReconcilePolicy(max_starts_per_run=2))
    assert [a.kind for a in limited.actions].count(ActionKind.ESCALATE) == 1
    assert len(limited.actions) == 3 and limited.deferred == 1


def test_execution_names_are_deterministic_and_valid() -> None:
    name = execution_name(ActionKind.RETRY, OBJ, 2)
    assert name == execution_name(ActionKind.RETRY, ObjectVersion(*vars(OBJ).values()), 2)
    assert name != execution_name(ActionKind.RETRY, OBJ, 3)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,80}", name)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,80}", execution_name(ActionKind.START_MISSED, OBJ))


RUN = {
    "scheduleArn": "arn:aws:scheduler:us-east-1:123456789012:schedule/default/reconcile",
    "scheduledTime": "2026-11-21T12:00:00Z",
    "executionId": "5068e532-bca5-4efc-be63-c93601fe6344",
    "attempt": "1",
}


def test_schedule_run_parses_the_context_attributes() -> None:
    request = parse_event({"run": RUN, "task": "reconcile"}, ReconcileRequest)
    assert request.run.scheduled_time == "2026-11-21T12:00:00Z"


def test_an_unsubstituted_placeholder_is_a_typed_error_naming_the_hyphens() -> None:
    bad = {**RUN, "executionId": "<aws.scheduler.execution_id>"}  # seed 003's typo
    with pytest.raises(InvalidEventError, match="hyphens"):
        parse_event({"run": bad}, ReconcileRequest)


def record(status: str, **extra: object) -> dict[str, object]:
    return {
        "bucket_name": "b", "object_key": "incoming/x.csv", "version_id": "v1",
        "status": status, "attempt": 2, "execution_arn": "arn:aws:states:::execution:m:e",
        **extra,
    }  # fmt: skip


def ended(status: str, days_ago: float, redrive: str | None = "REDRIVABLE") -> ExecutionStatus:
    return ExecutionStatus("arn", status, NOW - timedelta(days=days_ago), redrive, None)


@pytest.mark.parametrize(
    ("rec", "execution", "action"),
    [
        (record("SUCCEEDED"), None, "skip"),
        (record("FAILED", error_class="CONFIGURATION"), None, "start"),
        (record("RUNNING"), ExecutionStatus("arn", "RUNNING", None, None, None), "skip"),
        (record("RUNNING"), ended("ABORTED", 1), "redrive"),
        (record("RUNNING"), ended("TIMED_OUT", 13), "redrive"),
        (record("RUNNING"), ended("FAILED", 15), "take-over"),
        (record("RUNNING"), ended("FAILED", 1, "NOT_REDRIVABLE"), "take-over"),
        (record("RUNNING"), None, "take-over"),
    ],
)
def test_reprocess_decision(
    rec: dict[str, object], execution: ExecutionStatus | None, action: str
) -> None:
    assert decide(rec, execution, NOW).action == action


EXPRESS_ARN = "arn:aws:states:us-east-1:123456789012:express:pipeline:e1:0f3c2b"


@pytest.mark.parametrize(
    ("claimed_seconds_ago", "action"),
    [(10, "skip"), (299, "skip"), (301, "take-over"), (86_400, "take-over")],
)
def test_reprocess_judges_an_express_claim_by_its_lease_alone(
    claimed_seconds_ago: int, action: str
) -> None:
    """An Express execution cannot be described or redriven and runs at most 5 minutes: a
    RUNNING record is live within its 300-s lease and dead after it (never 'redrive')."""
    claimed = iso_ms(NOW - timedelta(seconds=claimed_seconds_ago))
    rec = record("RUNNING", execution_arn=EXPRESS_ARN, claimed_at=claimed, lease_seconds=300)
    decision = decide(rec, None, NOW)
    assert decision.action == action
    assert "Express" in decision.reason


def test_reprocess_never_describes_an_express_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest_pipeline.dal import workflow
    from ingest_tools.recovery import reprocess

    def refuse(arn: str) -> None:
        raise AssertionError(f"DescribeExecution of {arn}: AWS refuses it for Express")

    monkeypatch.setattr(workflow, "describe_execution", refuse)
    claimed = iso_ms(NOW - timedelta(seconds=30))
    rec = record("RUNNING", execution_arn=EXPRESS_ARN, claimed_at=claimed, lease_seconds=300)
    (result,) = reprocess.reprocess([rec], state_machine_arn="arn:sm", dry_run=True, now=NOW)
    assert (result.decision.action, result.outcome) == ("skip", "skipped")
