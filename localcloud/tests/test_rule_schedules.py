"""EventBridge rules with a ScheduleExpression, fired on demand as EventBridge fires them
(features/scheduler.py ``Schedules.fire_rule``): the Scheduled Event to each target through
the rule delivery (Input, the target's role), nothing for a DISABLED rule, and no event of a
bus matches a schedule-only rule. And a Scheduler schedule whose target has no Input."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from localcloud.cloud import LocalCloud
from localcloud.features.lambda_async import async_invocations

pytestmark = [pytest.mark.e2e]

TEMPLATE = Path(__file__).parent / "templates" / "rule_schedules" / "template.yaml"
WHEN = dt.datetime(2026, 11, 21, 10, 5, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(TEMPLATE, stack_name="rule-schedules") as running:
        yield running


def rule(cloud: LocalCloud, logical_id: str) -> str:
    """The physical name of the rule SAM made for an event (``<resource><event>``)."""
    assert cloud.stack is not None
    return cloud.stack.resources[logical_id]


def test_function_schedule_event_runs_with_the_scheduled_event(cloud: LocalCloud) -> None:
    assert cloud.schedules is not None
    name = rule(cloud, "TickerTick")
    function = cloud.functions["Ticker"]
    log = async_invocations(cloud.runtime)
    before = len(log.of(function))

    (delivery,) = cloud.schedules.fire_rule(name, scheduled_time=WHEN)

    assert delivery.status == "DELIVERED", delivery
    assert delivery.target_arn.endswith(f":function:{function}")
    log.drain()
    (run,) = log.of(function)[before:]
    assert run.status == "SUCCEEDED", run
    arn = f"arn:aws:events:{cloud.region}:{cloud.account_id}:rule/{name}"
    assert run.response == {
        "version": "0",
        "id": delivery.event_id,
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": cloud.account_id,
        "time": "2026-11-21T10:05:00Z",
        "region": cloud.region,
        "resources": [arn],
        "detail": {},
    }
    assert list(run.response) == list(json.loads(run.payload))  # AWS's key order

    # by ARN too; each firing is a new event
    (again,) = cloud.schedules.fire_rule(arn)
    assert again.status == "DELIVERED", again
    assert again.event_id != delivery.event_id
    log.drain()
    assert len(log.of(function)) == before + 2


def test_state_machine_target_runs_with_the_rule_input(cloud: LocalCloud) -> None:
    assert cloud.schedules is not None
    (delivery,) = cloud.schedules.fire_rule(rule(cloud, "WorkflowNightly"))

    assert delivery.status == "DELIVERED", delivery
    assert delivery.execution_arn is not None
    cloud.settle()
    described = boto3.client("stepfunctions").describe_execution(
        executionArn=delivery.execution_arn
    )
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["input"]) == {"job": "nightly"}
    assert json.loads(described["output"]) == {"job": "nightly"}


def test_disabled_rule_does_not_fire(cloud: LocalCloud) -> None:
    assert cloud.schedules is not None
    name = rule(cloud, "IdleNever")
    assert boto3.client("events").describe_rule(Name=name)["State"] == "DISABLED"

    assert cloud.schedules.fire_rule(name) == []

    async_invocations(cloud.runtime).drain()
    assert async_invocations(cloud.runtime).of(cloud.functions["Idle"]) == []


def test_bus_events_do_not_match_a_schedule_only_rule(cloud: LocalCloud) -> None:
    """A rule with a ScheduleExpression and no EventPattern runs on its schedule only (moto
    matched every event to it)."""
    function = cloud.functions["Ticker"]
    log = async_invocations(cloud.runtime)
    before = len(log.of(function))
    out = boto3.client("events").put_events(
        Entries=[{"Source": "demo.app", "DetailType": "anything", "Detail": "{}"}]
    )
    assert out["FailedEntryCount"] == 0
    cloud.settle()
    assert len(log.of(function)) == before
    assert not cloud.deliveries.find(lambda d: d.event_id == out["Entries"][0]["EventId"])


def test_fire_rule_refuses_what_is_not_a_scheduled_rule(cloud: LocalCloud) -> None:
    assert cloud.schedules is not None
    events = boto3.client("events")
    events.put_rule(Name="on-demand-only", EventPattern=json.dumps({"source": ["demo.app"]}))
    with pytest.raises(ValueError, match="has no ScheduleExpression"):
        cloud.schedules.fire_rule("on-demand-only")
    with pytest.raises(LookupError, match="no rule 'missing'"):
        cloud.schedules.fire_rule("missing")


def test_scheduler_target_without_input_gets_empty_json(cloud: LocalCloud) -> None:
    """Scheduler's target Input is optional: without it the target gets '{}' (moto's
    StartExecution refused '' with a 500, retried until the invocation was dropped)."""
    assert cloud.schedules is not None
    (fired,) = cloud.schedules.fire("workflow-no-input")

    assert fired.status == "DELIVERED", fired
    assert fired.attempts == 1
    assert fired.inputs == ["{}"]
    cloud.settle()
    described = boto3.client("stepfunctions").describe_execution(
        executionArn=fired.result["executionArn"]
    )
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["input"]) == {}
