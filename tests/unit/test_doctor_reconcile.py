"""ingestctl doctor's reconcile checks: schedule periods, and the open state records
(stale claims, overdue retries) judged with the deployed policy and schedule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ingest_tools.doctor import reconcile
from ingest_tools.doctor.checks import Context
from ingest_tools.doctor.report import Check, Status
from tests.support import doctor_clients

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "period"),
    [
        ("rate(15 minutes)", timedelta(minutes=15)),
        ("rate(1 minute)", timedelta(minutes=1)),
        ("rate(2 hours)", timedelta(hours=2)),
        ("rate(1 day)", timedelta(days=1)),
        ("cron(0/15 * * * ? *)", None),
        ("at(2026-11-23T12:00:00)", None),
        (None, None),
    ],
)
def test_schedule_period(expression: str | None, period: timedelta | None) -> None:
    assert reconcile.schedule_period(expression) == period


class FakeTable:
    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items

    def query(self, **kwargs: Any) -> dict[str, Any]:
        assert kwargs["IndexName"] == "OpenStateIndex"
        return {"Items": self.items.get(kwargs["ExpressionAttributeValues"][":s"]["S"], [])}


class FakeLambda:
    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        return {"Environment": {"Variables": {
            "OBJECT_STATE_TABLE": "t", "PIPELINE_STATE_MACHINE_ARN": "arn", "INGEST_BUCKET": "b",
            "OPERATIONS_TOPIC_ARN": "arn", "RECONCILE_MAX_ATTEMPTS": "3",
        }}}  # fmt: skip


class FakeScheduler:
    def get_schedule(self, Name: str, GroupName: str) -> dict[str, Any]:
        assert (GroupName, Name) == ("ops", "reconcile")
        return {"ScheduleExpression": "rate(5 minutes)"}


def item(key: str, **values: Any) -> dict[str, Any]:
    raw = {"bucket_name": "b", "object_key": key, "version_id": "v1", **values}
    return {
        k: {"N": str(v)} if isinstance(v, int) and not isinstance(v, bool) else
        {"BOOL": v} if isinstance(v, bool) else {"S": v}
        for k, v in raw.items()
    }  # fmt: skip


def open_checks(items: dict[str, list[dict[str, Any]]]) -> dict[str, Check]:
    context = Context(
        clients=doctor_clients(
            dynamodb=FakeTable(items), lambda_=FakeLambda(), scheduler=FakeScheduler()
        ),
        outputs={
            "ObjectStateTableName": "t",
            "ReconcileFunctionName": "f",
            "ReconcileScheduleArn": "arn:aws:scheduler:r:1:schedule/ops/reconcile",
        },
        stack="s",
        now=NOW,
    )
    return {c.name: c for c in reconcile.open_records(context)}


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_open_records_use_the_deployed_policy_and_schedule_period() -> None:
    running = [
        item("incoming/live.csv", status="RUNNING", claimed_at=ago(minutes=30), lease_seconds=3600),
        item("incoming/late.csv", status="RUNNING", claimed_at=ago(minutes=65), lease_seconds=3600),
    ]
    retryable = [
        item("incoming/waiting.csv", status="FAILED", retryable=True, attempt=1,
             retry_after=ago(minutes=-5)),
        item("incoming/exhausted.csv", status="FAILED", retryable=True, attempt=3,
             retry_after=ago(minutes=11)),
    ]  # fmt: skip
    found = open_checks({"RUNNING": running, "RETRYABLE": retryable})

    stale, overdue = found["stale-claims"], found["overdue-retries"]
    # The schedule runs every 5 minutes: two periods (10 min) of grace.
    assert stale.status is Status.WARN and stale.data["graceSeconds"] == 600
    assert stale.detail == "1 claim RUNNING past its lease: incoming/late.csv (5 min)"
    assert "ingestctl reprocess --key 'incoming/late.csv'" in stale.action
    # RECONCILE_MAX_ATTEMPTS=3 from the function's environment: attempt 3 awaits escalation,
    # due 11 minutes ago, beyond the grace.
    assert overdue.status is Status.FAIL
    (record,) = overdue.data["records"]
    assert (record["key"], record["action"]) == ("incoming/exhausted.csv", "ESCALATE")


def test_no_open_records_pass() -> None:
    found = open_checks({})
    assert found["stale-claims"].status is found["overdue-retries"].status is Status.PASS
