"""Scheduled reconciliation through the local cloud: Scheduler -> SQS -> ReconcileFunction.

Each test arranges a state the pipeline can end up in (a lost S3 event, a claim whose
execution died, a transient failure whose backoff elapsed, retries used up), fires the
schedule the template deploys, and checks DynamoDB, S3, SNS and the executions.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from ingest_pipeline.errors import StorageUnavailableError
from ingest_tools.local_pipeline import Pipeline
from tests.support import load_event, sample_file

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")
LONG_AGO = "2000-01-01T00:00:00.000Z"
PUBLISHED = Path(__file__).resolve().parents[1] / "conformance" / "samples"
# ProcessObject retries StorageUnavailableError 3 times: 4 failing invocations exhaust it.
EXHAUST = 4


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    return pipeline


def sample_event(name: str) -> Any:
    """An event others published (tests/conformance/README.md names the source)."""
    return json.loads((PUBLISHED / name).read_text())


def rule_name(p: Pipeline) -> str:
    return p.stack.outputs["ObjectCreatedRuleArn"].rsplit("/", 1)[-1]


def upload_without_event(p: Pipeline, key: str) -> str:
    """Upload while the rule is disabled: the S3 event is lost, as if never delivered."""
    p.events.disable_rule(Name=rule_name(p))
    try:
        version = p.put(key, GOOD)
        p.cloud.settle()
    finally:
        p.events.enable_rule(Name=rule_name(p))
    return version


def failed_transiently(p: Pipeline, key: str) -> str:
    p.cloud.fail_next("ProcessFunction", StorageUnavailableError("SlowDown"), times=EXHAUST)
    version, run = p.ingest(key, GOOD)
    assert run.status == "FAILED" and "RecordRetryableFailure" in run.path
    return version


def test_missed_event_is_started_once_even_when_the_run_is_delivered_twice(p: Pipeline) -> None:
    key = "incoming/orders/missed.csv"
    version = upload_without_event(p, key)
    assert p.record(key, version) is None and p.executions_for(key) == []

    early = p.reconcile(deliveries=2)  # inside the grace period: not missed yet
    assert p.record(key, version) is None
    assert p.run_record(early)["summary"]["missedStarted"] == 0  # type: ignore[index]

    p.age_object(key, 20 * 60)
    when = p.reconcile(dt.datetime(2026, 11, 21, 10, 15, tzinfo=dt.UTC), deliveries=2)

    record = p.record(key, version)
    assert record is not None
    assert (record["status"], record["attempt"], record["trigger_source"]) == (
        "SUCCEEDED",
        1,
        "ingest-pipeline.reconcile",
    )
    (execution,) = p.executions_for(key)
    assert execution.name.startswith("start-missed-")
    assert p.versions(p.output_key(key)) == 1
    run = p.run_record(when)
    assert run is not None
    assert (run["status"], run["claims"], run["duplicate_deliveries"]) == ("SUCCEEDED", 1, 1)
    assert run["summary"]["missedStarted"] == 1
    assert run["execution_id"] and when == "2026-11-21T10:15:00Z"


def test_a_delivery_that_meets_a_live_run_is_retried_not_dropped(p: Pipeline) -> None:
    mappings, schedules = p.cloud.mappings, p.cloud.schedules
    assert mappings is not None and schedules is not None
    mappings.stop()  # poll by hand
    when = dt.datetime(2026, 11, 21, 11, 0, tzinfo=dt.UTC)
    schedule_arn = p.stack.outputs["ReconcileScheduleArn"]
    # Another delivery of this run holds it (its Lambda is still running).
    p.ddb.put_item(
        TableName=p.table,
        Item={
            "pk": {"S": f"run#{schedule_arn}"},
            "sk": {"S": "2026-11-21T11:00:00Z"},
            "status": {"S": "RUNNING"},
            "claimed_at": {"S": "2026-11-21T11:00:01.000Z"},
            "lease_until": {"S": "2999-01-01T00:00:00.000Z"},
            "claims": {"N": "1"},
        },
    )
    schedules.fire(p.reconcile_schedule, scheduled_time=when)
    assert mappings.poll_once() == 1
    assert mappings.invocations[-1]["failed"]  # a batch item failure: the message stays
    assert p.run_record("2026-11-21T11:00:00Z")["status"] == "RUNNING"  # type: ignore[index]

    # The holder died: its lease expires, and the redelivered message runs the schedule run.
    p.ddb.update_item(
        TableName=p.table,
        Key={"pk": {"S": f"run#{schedule_arn}"}, "sk": {"S": "2026-11-21T11:00:00Z"}},
        UpdateExpression="SET lease_until = :past",
        ExpressionAttributeValues={":past": {"S": LONG_AGO}},
    )
    mappings.drain()
    run = p.run_record("2026-11-21T11:00:00Z")
    assert run is not None and (run["status"], run["claims"]) == ("SUCCEEDED", 2)


def test_stuck_running_claim_is_recovered_after_its_lease(p: Pipeline) -> None:
    key = "incoming/orders/stuck.csv"
    version, stuck = p.abort_while_processing(key, GOOD)
    record = p.record(key, version)
    assert record is not None and (record["status"], record["attempt"]) == ("RUNNING", 1)

    p.reconcile()  # lease (3600 s) not expired: left alone
    assert p.record(key, version)["status"] == "RUNNING"  # type: ignore[index]

    p.set_record(key, version, claimed_at=LONG_AGO)
    recovered = p.reconcile()

    record = p.record(key, version)
    assert record is not None
    assert (record["status"], record["attempt"]) == ("SUCCEEDED", 2)
    # How long it had been past its lease: what the ExpiredClaimsAlarm watches.
    summary = p.run_record(recovered)["summary"]  # type: ignore[index]
    assert summary["recovered"] == 1 and summary["expiredClaimAgeSeconds"] > 3600
    assert record["execution_arn"] != stuck.exec_arn
    first, second = p.executions_for(key)
    assert first.exec_arn == stuck.exec_arn
    assert second.name.startswith("recover-") and second.exec_status == "SUCCEEDED"
    assert second.input_data["request"]["staleBefore"] > LONG_AGO
    # The dead execution's Lambda had finished its write before the execution was lost, so
    # the object was processed twice: the same rows, written again (a claim only fences the
    # record, not a side effect that already happened).
    assert len(p.read(p.output_key(key)).splitlines()) == 2


def test_transient_failure_is_retried_once_its_backoff_elapsed(p: Pipeline) -> None:
    key = "incoming/orders/flaky.csv"
    version = failed_transiently(p, key)
    record = p.record(key, version)
    assert record is not None and record["retry_after"] > record["failed_at"]

    waited = p.reconcile()
    assert p.run_record(waited)["summary"]["waitingBackoff"] == 1  # type: ignore[index]
    assert len(p.executions_for(key)) == 1

    p.set_record(key, version, retry_after=LONG_AGO)
    retried = p.reconcile()

    record = p.record(key, version)
    assert record is not None
    assert (record["status"], record["attempt"]) == ("SUCCEEDED", 2)
    assert "open_state" not in record  # nothing left to reconcile
    assert p.run_record(retried)["summary"]["retried"] == 1  # type: ignore[index]
    assert p.executions_for(key)[-1].name.startswith("retry-")
    assert p.notifications("OperationsTopicArn") == []


def test_retries_exhausted_escalate_to_operations_once(p: Pipeline) -> None:
    key = "incoming/orders/hopeless.csv"
    version = failed_transiently(p, key)
    p.set_record(key, version, attempt=5, retry_after=LONG_AGO)  # five attempts have failed

    first = p.reconcile()
    p.reconcile()  # a later run finds nothing left to escalate

    record = p.record(key, version)
    assert record is not None
    assert (record["status"], record["retryable"], record["open_state"]) == (
        "FAILED",
        False,
        "FAILED",
    )
    assert record["escalated_at"] and "5 attempts" in record["escalation_reason"]
    assert len(p.executions_for(key)) == 1  # no new attempt
    (note,) = p.notifications("OperationsTopicArn")
    assert note["subject"] == f"[ingest] retries exhausted: {key}"
    assert note["message"]["object"] == {"bucket": p.bucket, "key": key, "versionId": version}
    assert f"ingestctl reprocess --key '{key}'" in note["message"]["action"]
    assert p.run_record(first)["summary"]["escalated"] == 1  # type: ignore[index]


def test_malformed_run_message_is_dead_lettered_with_its_reason(p: Pipeline) -> None:
    url = p.stack.outputs["ReconcileQueueUrl"]
    body = {"run": {"scheduleArn": "arn:aws:scheduler:us-east-1:123456789012:schedule/default/x",
                    "scheduledTime": "2026-11-21T10:00:00Z",
                    "executionId": "<aws.scheduler.execution_id>"}}  # fmt: skip
    p.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body))
    assert p.cloud.mappings is not None
    p.cloud.mappings.drain()

    dlq = p.stack.outputs["ReconcileDLQUrl"]
    got = p.sqs.receive_message(QueueUrl=dlq, AttributeNames=["All"])
    (message,) = got["Messages"]
    assert json.loads(message["Body"]) == body
    assert int(message["Attributes"]["ApproximateReceiveCount"]) >= 5
    assert p.sqs.receive_message(QueueUrl=url).get("Messages") is None


def test_a_bad_message_in_a_batch_stays_queued_while_the_run_beside_it_is_done(
    p: Pipeline,
) -> None:
    """Partial batch response: one invocation gets a schedule run and a message that is not
    one (the body of the SQS event powertools publishes). The run is done and its message
    deleted; only the bad message stays, to be delivered again and then dead-lettered."""
    mappings, schedules = p.cloud.mappings, p.cloud.schedules
    assert mappings is not None and schedules is not None
    mappings.stop()  # poll by hand: both messages in one batch
    url = p.stack.outputs["ReconcileQueueUrl"]
    bad_body = sample_event("powertools-sqsEvent.json")["Records"][0]["body"]  # "Test message."
    bad_id = p.sqs.send_message(QueueUrl=url, MessageBody=bad_body)["MessageId"]
    when = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)
    schedules.fire(p.reconcile_schedule, scheduled_time=when)

    assert mappings.poll_once() == 2
    invocation = mappings.invocations[-1]
    assert (invocation["messages"], invocation["failed"], invocation["error"]) == (
        2,
        [bad_id],
        None,
    )
    run = p.run_record("2026-11-21T12:00:00Z")
    assert run is not None and (run["status"], run["claims"]) == ("SUCCEEDED", 1)
    left = p.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
    assert [(m["MessageId"], m["Body"]) for m in left["Messages"]] == [(bad_id, bad_body)]


def test_the_sam_local_invoke_sample_runs_its_schedule_run_once(p: Pipeline) -> None:
    """events/reconcile/scheduled-run.json, invoked as `sam local invoke` would, twice."""
    lam = boto3.client("lambda", region_name=p.cloud.region)
    event = load_event("reconcile/scheduled-run.json")
    run = json.loads(event["Records"][0]["body"])["run"]
    responses = []
    for _ in range(2):
        got = lam.invoke(FunctionName=p.functions["ReconcileFunction"], Payload=json.dumps(event))
        responses.append((got.get("FunctionError"), json.loads(got["Payload"].read())))
    assert responses == [(None, {"batchItemFailures": []})] * 2

    item = p.ddb.get_item(
        TableName=p.table,
        Key={"pk": {"S": f"run#{run['scheduleArn']}"}, "sk": {"S": run["scheduledTime"]}},
        ConsistentRead=True,
    )["Item"]
    assert (item["status"]["S"], item["claims"]["N"], item["duplicate_deliveries"]["N"]) == (
        "SUCCEEDED",
        "1",
        "1",
    )
    assert item["execution_id"]["S"] == run["executionId"]
