"""Redrive of queue-to-queue dead letters whatever way they reached the dead-letter queue, and
the truth about a run in its counts and exit status.

A reconcile-run body can reach ReconcileDLQ without ``DeadLetterQueueSourceArn`` (someone sent
it there with SendMessage). SQS's StartMessageMoveTask without ``DestinationArn`` sends each
message back to its ``DeadLetterQueueSourceArn`` ("If this field is left blank, the messages
will be redriven back to their respective original source queues", SQS API Reference,
StartMessageMoveTask) and cannot place such a message, so redrive names the destination: the
dead-letter queue's only source queue (ListDeadLetterSourceQueues). With none or several,
where a message without a source belongs is ambiguous: it is refused and left in place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest_tools import cli
from ingest_tools.local_pipeline import Pipeline
from ingest_tools.recovery.redrive import RedriveOptions, Redriver
from tests.support import cli_json, sample_file, wait_for

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")
SCHEDULED = "2026-11-21T13:45:00Z"


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    return pipeline


def queue_arn(p: Pipeline, url: str) -> str:
    attributes = p.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return str(attributes["Attributes"]["QueueArn"])


def messages(p: Pipeline, url: str) -> list[dict[str, Any]]:
    """Every message in the queue (hidden for a minute while the test looks)."""
    found: list[dict[str, Any]] = []
    while got := p.sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60, AttributeNames=["All"]
    ).get("Messages"):
        found.extend(dict(m) for m in got)
    return found


def run_body(p: Pipeline, scheduled_time: str = SCHEDULED) -> str:
    """What template.yaml's ReconcileSchedule sends to ReconcileQueue."""
    run = {
        "scheduleArn": p.stack.outputs["ReconcileScheduleArn"],
        "scheduledTime": scheduled_time,
        "executionId": "2b1f4ea1-7c2e-4f57-9d3c-4a8e0f6c2d11",
        "attempt": "1",
    }
    return json.dumps({"run": run, "task": "reconcile"})


def redriver(p: Pipeline, url: str, **options: Any) -> Redriver:
    settings = {
        "queue_url": url,
        "redrive_source": p.stack.outputs["RedriveEventSource"],
        "ledger_table": p.table,
        **options,
    }
    return Redriver(RedriveOptions(**settings), sqs=p.sqs, events=p.events, dynamodb=p.ddb)


def queues_sharing_a_dlq(p: Pipeline, names: list[str]) -> tuple[str, list[str]]:
    """A dead-letter queue named by the redrive policy of each queue in ``names``."""
    dlq = p.sqs.create_queue(QueueName="shared-dlq")["QueueUrl"]
    policy = json.dumps({"deadLetterTargetArn": queue_arn(p, dlq), "maxReceiveCount": 1})
    urls = [
        p.sqs.create_queue(
            QueueName=name, Attributes={"RedrivePolicy": policy, "VisibilityTimeout": "0"}
        )["QueueUrl"]
        for name in names
    ]
    return dlq, urls


# --- the local cloud answers as SQS does --------------------------------------------------


def test_source_queues_are_listed_and_a_move_task_with_a_destination_moves_any_message(
    p: Pipeline,
) -> None:
    dlq, (first, second) = queues_sharing_a_dlq(p, ["first", "second"])
    listed = p.sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"]
    assert sorted(listed) == sorted([first, second])
    assert p.sqs.list_dead_letter_source_queues(QueueUrl=first)["queueUrls"] == []

    p.sqs.send_message(QueueUrl=dlq, MessageBody="straight to the DLQ")  # no source
    p.sqs.start_message_move_task(SourceArn=queue_arn(p, dlq), DestinationArn=queue_arn(p, second))

    def done() -> Any:
        (task,) = p.sqs.list_message_move_tasks(SourceArn=queue_arn(p, dlq))["Results"]
        return task if task["Status"] == "COMPLETED" else None

    task = wait_for(done, what="the move task")
    assert task["DestinationArn"] == queue_arn(p, second)
    assert task["ApproximateNumberOfMessagesMoved"] == 1
    assert [m["Body"] for m in messages(p, second)] == ["straight to the DLQ"]
    assert messages(p, dlq) == []


# --- redrive ------------------------------------------------------------------------------


def test_a_run_sent_straight_to_the_reconcile_dlq_goes_back_and_runs_once(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queue, dlq = p.stack.outputs["ReconcileQueueUrl"], p.stack.outputs["ReconcileDLQUrl"]
    p.sqs.send_message(QueueUrl=dlq, MessageBody=run_body(p))  # no DeadLetterQueueSourceArn
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(p.cloud.describe()))

    status = cli.main(["redrive", "ReconcileDLQ", "--json", "--outputs", str(outputs)])

    report = cli_json(capsys)
    assert status == 0 and report["exitStatus"] == 0
    # (by name: a served cloud's URLs are its endpoint's, as a queue's are the endpoint's)
    assert [u.rsplit("/", 1)[-1] for u in report["sourceQueues"]] == [queue.rsplit("/", 1)[-1]]
    task = report["moveTask"]
    assert task["Status"] == "COMPLETED" and task["DestinationArn"] == queue_arn(p, queue)
    assert report["totals"] == {
        "moved": 1,
        "sent": 0,
        "alreadySent": 0,
        "movedByTask": 1,
        "refused": 0,
        "unreadable": 0,
        "leftInQueue": 0,
        "skipped": 0,
    }
    assert messages(p, dlq) == []
    p.cloud.settle()  # ReconcileQueue's consumer runs it
    run = p.run_record(SCHEDULED)
    assert run is not None and (run["status"], run["claims"]) == ("SUCCEEDED", 1)
    assert messages(p, queue) == []


def test_a_filtered_redrive_sends_a_sourceless_run_to_the_only_source_queue(p: Pipeline) -> None:
    """With a filter (no move task) the message goes message by message, to the same place."""
    queue, dlq = p.stack.outputs["ReconcileQueueUrl"], p.stack.outputs["ReconcileDLQUrl"]
    p.cloud.mappings.stop()  # type: ignore[union-attr]  # look at ReconcileQueue by hand
    p.sqs.send_message(QueueUrl=dlq, MessageBody=run_body(p))

    report = redriver(p, dlq, max_messages=10).run()

    assert report.move_task is None
    (outcome,) = report.outcomes.values()
    assert (outcome.status, outcome.destination) == ("sent", queue_arn(p, queue))
    assert outcome.origin == p.stack.outputs["ReconcileScheduleArn"]
    assert (report.totals()["moved"], report.exit_status) == (1, 0)
    assert [m["Body"] for m in messages(p, queue)] == [run_body(p)]
    assert messages(p, dlq) == []


def test_a_sourceless_run_in_a_dlq_of_several_queues_is_refused_and_left(p: Pipeline) -> None:
    dlq, (first, second) = queues_sharing_a_dlq(p, ["first", "second"])
    # One message the redrive policy of "second" moved (it knows its source), one sent straight.
    p.sqs.send_message(QueueUrl=second, MessageBody="work")
    for _ in range(2):  # maxReceiveCount 1: the second receive moves it
        p.sqs.receive_message(QueueUrl=second, VisibilityTimeout=0)
    straight = p.sqs.send_message(QueueUrl=dlq, MessageBody=run_body(p))["MessageId"]

    report = redriver(p, dlq).run()

    assert report.move_task is None  # no single destination for the whole queue
    refused = report.outcomes[straight]
    assert refused.status == "refused"
    assert refused.reason and "2 queues name this queue" in refused.reason
    assert "ambiguous" in refused.reason and first in refused.reason
    (sent,) = [o for o in report.outcomes.values() if o.status == "sent"]
    assert sent.destination == queue_arn(p, second)
    assert [m["Body"] for m in messages(p, second)] == ["work"]
    assert [m["MessageId"] for m in messages(p, dlq)] == [straight]  # left in place
    totals = report.totals()
    assert (totals["moved"], totals["refused"], totals["leftInQueue"]) == (1, 1, 1)
    assert report.exit_status == 1


def test_a_sourceless_run_in_a_queue_no_queue_uses_as_dlq_is_refused(p: Pipeline) -> None:
    lone = p.sqs.create_queue(QueueName="lone")["QueueUrl"]
    message_id = p.sqs.send_message(QueueUrl=lone, MessageBody=run_body(p))["MessageId"]

    report = redriver(p, lone, force=True).run()  # --force cannot invent a destination

    outcome = report.outcomes[message_id]
    assert outcome.status == "refused" and outcome.kind == "sqs-redrive-policy"
    assert outcome.reason and "no queue names this queue" in outcome.reason
    assert [m["MessageId"] for m in messages(p, lone)] == [message_id]
    assert report.exit_status == 1


def test_refused_dead_letters_make_the_run_fail_with_counts(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three NO_PERMISSIONS dead letters refused "until the cause is fixed": the run says so
    in its counts and its exit status (a script must not read success)."""
    dlq = p.stack.outputs["EventDeliveryDLQUrl"]
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=3)
    for i in range(3):
        p.put(f"incoming/orders/refused-{i}.csv", GOOD)
    p.cloud.settle()
    p.sqs.send_message(QueueUrl=dlq, MessageBody="not a dead letter")
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(p.cloud.describe()))

    cli.main(["redrive", "EventDeliveryDLQ", "--json", "--outputs", str(outputs)])

    report = cli_json(capsys)
    totals = report["totals"]
    assert (totals["moved"], totals["refused"], totals["unreadable"]) == (0, 3, 1)
    assert totals["leftInQueue"] == 4 and report["exitStatus"] == 1
    assert "moveTask" not in report and "sourceQueues" not in report
    assert len(messages(p, dlq)) == 4

    p.sqs.purge_queue(QueueUrl=dlq)
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=1)
    p.put("incoming/orders/forced.csv", GOOD)
    p.cloud.settle()
    forced = redriver(p, dlq, force=True).run()
    assert forced.totals()["moved"] == 1 and forced.exit_status == 0
    p.cloud.settle()  # the redriven object is processed before the cloud stops


def test_filtered_out_and_dry_run_messages_do_not_fail_the_run(p: Pipeline) -> None:
    dlq = p.stack.outputs["ReconcileDLQUrl"]
    p.sqs.send_message(QueueUrl=dlq, MessageBody=run_body(p))

    dry = redriver(p, dlq, dry_run=True).run()
    assert dry.counts()["dry-run"] == 1 and dry.exit_status == 0

    skipped = redriver(p, dlq, error_codes=frozenset({"THROTTLING"})).run()
    assert skipped.totals()["skipped"] == 1 and skipped.exit_status == 0
    assert len(messages(p, dlq)) == 1
