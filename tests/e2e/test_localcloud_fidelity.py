"""The local cloud answers as AWS does where moto 5.2.5 does not (``localcloud/fidelity.py``).

Each test fails with the corresponding patch removed (checked by uninstalling it).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ingest_tools.localcloud.pipeline import Pipeline
from ingest_tools.recovery.redrive import RedriveOptions, Redriver
from tests.support import load_event, sample_file, wait_for

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")
MiB = 1024 * 1024


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    return pipeline


def test_a_multipart_upload_sends_one_object_created_event(p: Pipeline) -> None:
    key = "incoming/orders/multipart.csv"
    header, row = GOOD.split(b"\n", 1)[0] + b"\n", GOOD.split(b"\n")[1] + b"\n"
    body = header + row * (6 * MiB // len(row) + 1)  # two parts: S3's 5 MiB minimum
    upload = p.s3.create_multipart_upload(Bucket=p.bucket, Key=key)["UploadId"]
    parts = []
    for number, start in enumerate(range(0, len(body), 5 * MiB), start=1):
        etag = p.s3.upload_part(
            Bucket=p.bucket,
            Key=key,
            UploadId=upload,
            PartNumber=number,
            Body=body[start : start + 5 * MiB],
        )["ETag"]
        parts.append({"PartNumber": number, "ETag": etag})
    version = p.s3.complete_multipart_upload(
        Bucket=p.bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts}
    )["VersionId"]
    p.cloud.settle()

    deliveries = p.deliveries_for(key)
    assert len(deliveries) == 1  # moto alone: a Put event, then CompleteMultipartUpload
    detail = deliveries[0].event["detail"]
    assert detail["reason"] == "CompleteMultipartUpload"
    assert detail["object"]["version-id"] == version
    assert detail["object"]["size"] == len(body)
    assert len(p.executions_for(key)) == 1


def test_adding_a_queue_notification_keeps_eventbridge_delivery_on(p: Pipeline) -> None:
    queue_arn = p.sqs.get_queue_attributes(
        QueueUrl=p.sqs.create_queue(QueueName="uploads")["QueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]

    config = p.s3.get_bucket_notification_configuration(Bucket=p.bucket)
    config.pop("ResponseMetadata")
    assert config.get("EventBridgeConfiguration") == {}  # AWS reports it when enabled
    config["QueueConfigurations"] = [{"QueueArn": queue_arn, "Events": ["s3:ObjectCreated:*"]}]
    p.s3.put_bucket_notification_configuration(
        Bucket=p.bucket, NotificationConfiguration=config
    )  # read-modify-write, as a user adding a notification does

    version, run = p.ingest("incoming/orders/after-rmw.csv", GOOD)
    assert run.status == "SUCCEEDED"
    assert p.record("incoming/orders/after-rmw.csv", version) is not None

    # Without EventBridgeConfiguration in the write, delivery stops (as on AWS).
    config.pop("EventBridgeConfiguration")
    p.s3.put_bucket_notification_configuration(Bucket=p.bucket, NotificationConfiguration=config)
    assert "EventBridgeConfiguration" not in p.s3.get_bucket_notification_configuration(
        Bucket=p.bucket
    )
    p.put("incoming/orders/after-off.csv", GOOD)
    p.cloud.settle()
    assert p.deliveries_for("incoming/orders/after-off.csv") == []


def rule_pattern(p: Pipeline) -> str:
    name = p.stack.outputs["ObjectCreatedRuleArn"].rsplit("/", 1)[-1]
    return str(p.events.describe_rule(Name=name)["EventPattern"])


def s3_event(p: Pipeline, **changes: Any) -> dict[str, Any]:
    event = load_event("eventbridge/s3-object-created.json")
    event["detail"]["bucket"]["name"] = p.bucket
    for path, value in changes.items():
        node = event
        *parents, leaf = path.split("__")
        for parent in parents:
            node = node[parent]
        node[leaf] = value
    return dict(event)


@pytest.mark.parametrize(
    ("changes", "matches"),
    [
        ({}, True),
        ({"source": "ingest-pipeline.redrive"}, True),
        ({"detail-type": "AWS API Call via CloudTrail"}, False),
        ({"detail__bucket__name": "someone-elses-bucket"}, False),
        ({"detail__object__key": "processed/orders/x.jsonl"}, False),
        ({"source": "retry"}, False),  # seed 002's redrive source: no rule of ours
    ],
)
def test_test_event_pattern_matches_as_the_rule_does(
    p: Pipeline, changes: dict[str, Any], matches: bool
) -> None:
    answer = p.events.test_event_pattern(
        EventPattern=rule_pattern(p), Event=json.dumps(s3_event(p, **changes))
    )
    assert answer["Result"] is matches


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ({"prefix": "incoming/"}, "incoming/a.csv", True),
        ({"suffix": ".csv"}, "incoming/a.json", False),
        ({"anything-but": {"prefix": "tmp/"}}, "incoming/a.csv", True),
        ({"equals-ignore-case": "INCOMING/A.CSV"}, "incoming/a.csv", True),
        ({"wildcard": "incoming/*/a.csv"}, "incoming/orders/a.csv", True),
        ({"exists": False}, "incoming/a.csv", False),
    ],
)
def test_test_event_pattern_operators(
    p: Pipeline, pattern: dict[str, Any], value: str, matches: bool
) -> None:
    event = s3_event(p, detail__object__key=value)
    answer = p.events.test_event_pattern(
        EventPattern=json.dumps({"detail": {"object": {"key": [pattern]}}}), Event=json.dumps(event)
    )
    assert answer["Result"] is matches


def test_test_event_pattern_rejects_an_event_without_the_required_fields(p: Pipeline) -> None:
    event = s3_event(p)
    del event["account"]
    with pytest.raises(ClientError) as raised:
        p.events.test_event_pattern(EventPattern=rule_pattern(p), Event=json.dumps(event))
    assert raised.value.response["Error"]["Code"] == "ValidationException"


def test_queue_dead_letters_are_moved_back_to_their_source_queue(p: Pipeline) -> None:
    dlq_url = p.sqs.create_queue(QueueName="work-dlq")["QueueUrl"]
    dlq_arn = p.sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    work_url = p.sqs.create_queue(
        QueueName="work",
        Attributes={
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2}),
            "VisibilityTimeout": "0",
        },
    )["QueueUrl"]
    work_arn = p.sqs.get_queue_attributes(QueueUrl=work_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    p.sqs.send_message(
        QueueUrl=work_url,
        MessageBody='{"run": 1}',
        MessageAttributes={"kind": {"DataType": "String", "StringValue": "reconcile"}},
    )
    for _ in range(3):  # received twice, never deleted: the third receive moves it
        p.sqs.receive_message(QueueUrl=work_url, VisibilityTimeout=0)

    (dead,) = p.sqs.receive_message(QueueUrl=dlq_url, AttributeNames=["All"], VisibilityTimeout=0)[
        "Messages"
    ]
    assert dead["Attributes"]["DeadLetterQueueSourceArn"] == work_arn

    with pytest.raises(ClientError):  # only a dead-letter queue of some queue can be a source
        p.sqs.start_message_move_task(SourceArn=work_arn)
    handle = p.sqs.start_message_move_task(SourceArn=dlq_arn)["TaskHandle"]
    wait_for(
        lambda: (
            p.sqs.list_message_move_tasks(SourceArn=dlq_arn)["Results"][0]["Status"] == "COMPLETED"
        ),
        what="the move task",
    )
    (task,) = p.sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=10)["Results"]
    assert task["ApproximateNumberOfMessagesMoved"] == 1 and handle
    (back,) = p.sqs.receive_message(QueueUrl=work_url, MessageAttributeNames=["All"])["Messages"]
    assert back["Body"] == '{"run": 1}'
    assert back["MessageAttributes"]["kind"]["StringValue"] == "reconcile"
    assert "Messages" not in p.sqs.receive_message(QueueUrl=dlq_url)


def test_redrive_of_the_reconcile_dlq_puts_runs_back_on_the_reconcile_queue(
    p: Pipeline,
) -> None:
    # A run message that the reconcile queue's redrive policy moved to ReconcileDLQ.
    queue_url, dlq_url = p.stack.outputs["ReconcileQueueUrl"], p.stack.outputs["ReconcileDLQUrl"]
    p.cloud.mappings.stop()  # type: ignore[union-attr]  # nobody consumes: it will die
    body = json.dumps({"run": {"scheduleArn": "x"}, "task": "reconcile"})
    p.sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    for _ in range(6):  # maxReceiveCount 5 in template.yaml
        p.sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=0)
    dead = p.sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["All"])["Attributes"]
    assert dead["ApproximateNumberOfMessages"] == "1"

    report = Redriver(
        RedriveOptions(queue_url=dlq_url, redrive_source="unused"),
        sqs=p.sqs,
        events=p.events,
    ).run()

    assert report.move_task is not None and report.move_task["Status"] == "COMPLETED"
    assert report.move_task["ApproximateNumberOfMessagesMoved"] == 1
    assert report.counts()["unreadable"] == 0
    (back,) = p.sqs.receive_message(QueueUrl=queue_url)["Messages"]
    assert back["Body"] == body
    assert "Messages" not in p.sqs.receive_message(QueueUrl=dlq_url)


def test_complete_multipart_upload_honours_if_match(p: Pipeline) -> None:
    key = "processed/orders/conditional.jsonl"
    first = p.s3.put_object(Bucket=p.bucket, Key=key, Body=b"v1")["ETag"]
    p.s3.put_object(Bucket=p.bucket, Key=key, Body=b"v2")  # someone else wrote meanwhile

    def complete(if_match: str) -> Any:
        upload = p.s3.create_multipart_upload(Bucket=p.bucket, Key=key)["UploadId"]
        etag = p.s3.upload_part(
            Bucket=p.bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"v3"
        )["ETag"]
        return p.s3.complete_multipart_upload(
            Bucket=p.bucket,
            Key=key,
            UploadId=upload,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]},
            IfMatch=if_match,
        )

    with pytest.raises(ClientError) as raised:
        complete(first)
    assert raised.value.response["Error"]["Code"] == "PreconditionFailed"
    assert p.read(key) == b"v2"
    current = p.s3.head_object(Bucket=p.bucket, Key=key)["ETag"]
    complete(current)
    assert p.read(key) == b"v3"
