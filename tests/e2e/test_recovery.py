"""Dead-letter redrive, DLQ inspection and reprocessing through the local cloud.

Dead letters are made the way AWS makes them: a rule delivery fails (an injected
NO_PERMISSIONS, which skips retries) and EventBridge puts the event in the rule's DLQ with
its attributes. Redriven events go back through the real rule to the state machine.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ingest_pipeline.errors import AccessDeniedError
from ingest_tools import cli
from ingest_tools.local_pipeline import Pipeline
from ingest_tools.recovery.redrive import RedriveOptions, Redriver
from tests.support import EVENTS, cli_json, sample_file, wait_for

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    return pipeline


def dlq_url(p: Pipeline) -> str:
    return p.stack.outputs["EventDeliveryDLQUrl"]


def queue_depth(p: Pipeline, url: str) -> int:
    attributes = p.sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def visible(p: Pipeline, url: str) -> int:
    attributes = p.sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def dead_letter(p: Pipeline, keys: list[str]) -> dict[str, str]:
    """Upload ``keys`` while the rule's deliveries fail with NO_PERMISSIONS: key -> version."""
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=len(keys))
    versions = {key: p.put(key, GOOD) for key in keys}
    p.cloud.settle()
    assert queue_depth(p, dlq_url(p)) == len(keys)
    assert all(p.record(k, v) is None for k, v in versions.items())
    return versions


def redriver(p: Pipeline, **options: Any) -> Redriver:
    settings = {
        "queue_url": dlq_url(p),
        "redrive_source": p.stack.outputs["RedriveEventSource"],
        "ledger_table": p.table,
        **options,
    }
    return Redriver(RedriveOptions(**settings), sqs=p.sqs, events=p.events, dynamodb=p.ddb)


def assert_each_processed_once(p: Pipeline, versions: dict[str, str]) -> None:
    for key, version in versions.items():
        record = p.record(key, version)
        assert record is not None and (record["status"], record["attempt"]) == ("SUCCEEDED", 1)
        assert record["trigger_source"] == "ingest-pipeline.redrive"
        assert len(p.executions_for(key)) == 1, key


def test_redrive_refuses_futile_errors_until_forced(p: Pipeline) -> None:
    versions = dead_letter(p, [f"incoming/orders/denied-{i}.csv" for i in range(3)])

    report = redriver(p).run()
    counts = report.counts()
    assert (counts["refused"], counts["sent"]) == (3, 0)
    totals = report.totals()
    assert (totals["refused"], totals["leftInQueue"], totals["moved"]) == (3, 3, 0)
    assert report.exit_status == 1  # refused "until the cause is fixed" is not a success
    reasons = {o.reason for o in report.outcomes.values()}
    assert all("NO_PERMISSIONS" in r and "--force" in r for r in reasons if r)
    assert queue_depth(p, dlq_url(p)) == 3  # nothing consumed
    wait_for(
        lambda: p.sqs.receive_message(QueueUrl=dlq_url(p), VisibilityTimeout=0).get("Messages")
    )

    forced = redriver(p, force=True).run()
    assert forced.counts()["sent"] == 3
    assert (forced.totals()["moved"], forced.exit_status) == (3, 0)
    p.cloud.settle()
    assert queue_depth(p, dlq_url(p)) == 0
    assert_each_processed_once(p, versions)


def test_partial_put_events_failures_lose_nothing_and_send_nothing_twice(p: Pipeline) -> None:
    versions = dead_letter(p, [f"incoming/orders/batch-{i:02d}.csv" for i in range(40)])
    dlq_events = {}
    for message in p.cloud.deliveries.find(lambda d: d.status == "DEAD_LETTERED"):
        dlq_events[message.event["detail"]["object"]["key"]] = message.event["id"]
    p.cloud.faults.fail_put_events_entries("InternalFailure", ratio=0.3, seed=11)

    report = redriver(p, force=True, concurrency=3, entry_attempts=2).run()

    counts = report.counts()
    assert report.entry_failures["InternalFailure"] > 0  # entries did fail, and were retried
    assert counts["failed"] > 0 and counts["sent"] + counts["failed"] == 40
    failed = {o.object_key for o in report.outcomes.values() if o.status == "failed"}
    p.cloud.settle()
    assert queue_depth(p, dlq_url(p)) == counts["failed"]  # what failed is still there

    p.cloud.faults.clear()
    again = redriver(p, force=True).run()
    assert again.counts()["sent"] == counts["failed"]
    assert {o.object_key for o in again.outcomes.values()} == failed
    p.cloud.settle()
    assert queue_depth(p, dlq_url(p)) == 0
    assert_each_processed_once(p, versions)
    redriven = [
        d.event for d in p.cloud.deliveries.all() if d.event["source"] == "ingest-pipeline.redrive"
    ]
    assert len(redriven) == 40  # each message reached the bus exactly once
    for event in redriven:
        provenance = event["detail"]["redrive"]
        key = event["detail"]["object"]["key"]
        assert provenance["originalSource"] == "aws.s3"
        assert provenance["originalEventId"] == dlq_events[key]
        assert provenance["errorCode"] == "NO_PERMISSIONS"


def test_concurrent_redrive_moves_everything_in_one_run(p: Pipeline) -> None:
    """Four workers over 60 dead letters with 10% of entries failing once or more: one run
    sends every message once and leaves nothing behind (concurrent deletes used to be lost
    in moto, leaving sent messages to reappear after their visibility timeout)."""
    versions = dead_letter(p, [f"incoming/orders/many-{i:03d}.csv" for i in range(60)])
    p.cloud.faults.fail_put_events_entries("InternalFailure", ratio=0.1, seed=5)

    report = redriver(p, force=True, concurrency=4, entry_attempts=10).run()

    p.cloud.faults.clear()
    counts = report.counts()
    assert report.entry_failures["InternalFailure"] > 0
    assert (counts["sent"], counts["failed"]) == (60, 0)
    p.cloud.settle()
    assert queue_depth(p, dlq_url(p)) == 0
    redriven = [
        d.event["detail"]["object"]["key"]
        for d in p.cloud.deliveries.all()
        if d.event["source"] == "ingest-pipeline.redrive"
    ]
    assert sorted(redriven) == sorted(versions)  # each exactly once
    assert_each_processed_once(p, versions)


def test_redrive_stopped_between_sending_and_deleting_does_not_send_twice(p: Pipeline) -> None:
    versions = dead_letter(p, [f"incoming/orders/killed-{i}.csv" for i in range(12)])
    # The run dies after PutEvents accepted the entries, before SQS deleted the messages.
    p.cloud.faults.fail_operation("sqs", "DeleteMessageBatch", "InternalError", times=1000)
    with pytest.raises(Exception, match="InternalError"):
        redriver(p, force=True, concurrency=1, visibility_timeout=1).run()
    p.cloud.faults.clear()
    p.cloud.settle()
    sent_first = [d for d in p.cloud.deliveries.all() if d.event["source"] != "aws.s3"]
    assert len(sent_first) == 10  # the first batch of ten reached the bus

    # The messages come back after their visibility timeout; the next run finishes the job.
    wait_for(lambda: visible(p, dlq_url(p)) == 12, timeout=10, what="all 12 visible again")
    report = redriver(p, force=True).run()

    counts = report.counts()
    assert (counts["already-sent"], counts["sent"]) == (10, 2)
    p.cloud.settle()
    assert queue_depth(p, dlq_url(p)) == 0
    assert_each_processed_once(p, versions)


def send_fixtures(p: Pipeline) -> tuple[str, dict[str, dict[str, Any]]]:
    url = p.sqs.create_queue(QueueName="fixtures-dlq")["QueueUrl"]
    fixtures = {
        path.stem: json.loads(path.read_text()) for path in sorted((EVENTS / "dlq").glob("*.json"))
    }
    for fixture in fixtures.values():
        attributes: dict[str, Any] = {
            name: {"DataType": value["DataType"], "StringValue": value["StringValue"]}
            for name, value in fixture.get("MessageAttributes", {}).items()
        }
        p.sqs.send_message(QueueUrl=url, MessageBody=fixture["Body"], MessageAttributes=attributes)
    return url, fixtures


def test_inspect_and_dry_run_read_every_format_and_consume_nothing(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, fixtures = send_fixtures(p)
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(p.cloud.describe()))

    assert cli.main(["inspect", url, "--json", "--outputs", str(outputs)]) == 0
    summary = cli_json(capsys)
    assert summary["inspected"] == len(fixtures)
    assert summary["byErrorCode"]["NO_PERMISSIONS"] == 1
    assert summary["byKind"]["scheduler"] == 2
    assert summary["byKind"]["eventbridge-rule (via SNS)"] == 1
    assert len(summary["unreadable"]) == 2
    assert queue_depth(p, url) == len(fixtures)

    assert cli.main(["redrive", url, "--dry-run", "--json", "--outputs", str(outputs)]) == 1
    report = cli_json(capsys)
    left = {item["status"] for item in report["leftInQueue"]}
    # The fixtures' S3 events name example-ingest-bucket, which no rule of this stack routes:
    # the dry run says so (a real run would leave them in the queue) and shows the entry.
    assert report["counts"]["sent"] == 0 and {"dry-run", "unreadable", "refused"} <= left
    unroutable = [i for i in report["leftInQueue"] if i["status"] == "unroutable"]
    assert unroutable and all("no enabled rule" in i["reason"] for i in unroutable)
    assert any(i["entry"].get("Source") == "ingest-pipeline.redrive" for i in unroutable)
    assert queue_depth(p, url) == len(fixtures)  # a dry run consumes nothing


def test_redrive_leaves_unreadable_and_unsendable_messages_in_place(p: Pipeline) -> None:
    url, fixtures = send_fixtures(p)
    report = redriver(p, queue_url=url, force=True).run()

    counts = report.counts()
    assert counts["unreadable"] == 2
    assert counts["not-replayable"] >= 1  # the Kinesis batch without its records
    left = sum(counts[s] for s in ("unreadable", "not-replayable", "failed", "refused"))
    assert queue_depth(p, url) == left == len(fixtures) - counts["sent"]
    remaining: set[str] = set()
    while True:
        got = p.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60)
        if not got.get("Messages"):
            break
        remaining |= {m["MessageId"] for m in got["Messages"]}
    left_ids = {o.message_id for o in report.outcomes.values() if o.status != "sent"}
    assert remaining == left_ids  # exactly the messages not sent are still in the queue


def test_reprocess_a_configuration_failure_after_the_fix(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "incoming/orders/denied.csv"
    p.cloud.fail_next("ProcessFunction", AccessDeniedError("AccessDenied"))
    version, run = p.ingest(key, GOOD)
    assert run.status == "FAILED"
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(p.cloud.describe()))

    assert cli.main(["reprocess", "--key", key, "--json", "--outputs", str(outputs)]) == 0
    (row,) = cli_json(capsys)
    assert (row["action"], row["outcome"]) == ("start", "started")
    assert "Fail state" in row["reason"]
    p.cloud.settle()
    record = p.record(key, version)
    assert record is not None and (record["status"], record["attempt"]) == ("SUCCEEDED", 2)
    assert record["trigger_source"] == "ingestctl.reprocess"

    assert cli.main(["reprocess", "--key", key, "--json", "--outputs", str(outputs)]) == 0
    (again,) = cli_json(capsys)
    assert (again["action"], again["outcome"]) == ("skip", "skipped")
    assert len(p.executions_for(key)) == 2


def test_reprocess_a_dead_claim_redrives_or_takes_it_over(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "incoming/orders/aborted.csv"
    version, _ = p.abort_while_processing(key, GOOD)
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(p.cloud.describe()))

    command = ["reprocess", "--key", key, "--json", "--outputs", str(outputs)]
    if p.stack.outputs["WorkflowType"] == "EXPRESS":
        # No DescribeExecution or redrive for Express: within its 300-s lease the execution
        # may still be running, so nothing is started; after it, the claim is taken over.
        assert cli.main(command) == 0
        (row,) = cli_json(capsys)
        assert row["action"] == "skip" and "lease" in row["reason"]
        assert len(p.executions_for(key)) == 1
        claimed = datetime.now(UTC) - timedelta(seconds=301)
        p.set_record(key, version, claimed_at=claimed.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
        assert cli.main(command) == 0
        (row,) = cli_json(capsys)
        assert row["action"] == "take-over" and "Express" in row["reason"]
    else:
        assert cli.main(command) == 0
        (row,) = cli_json(capsys)
        # An aborted execution within 14 days is redrivable; the local cloud (like moto and
        # LocalStack) has no RedriveExecution, so the tool says so and takes the claim over.
        assert row["action"] == "take-over" and "redrive refused" in row["reason"]
    p.cloud.settle()
    record = p.record(key, version)
    assert record is not None and (record["status"], record["attempt"]) == ("SUCCEEDED", 2)
