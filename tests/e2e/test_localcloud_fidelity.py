"""The local cloud answers as AWS does where moto 5.2.5 does not (``localcloud/fixes/``,
``localcloud/features/``); TestEventPattern's answers are in
test_localcloud_fidelity_event_patterns.py.

Each test fails with the corresponding patch removed (checked by uninstalling it).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from ingest_tools.local_pipeline import Pipeline
from ingest_tools.recovery.redrive import RedriveOptions, Redriver
from tests.support import queue_arn, role_allowing, sample_file, wait_for

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")
MiB = 1024 * 1024


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
    completed = p.s3.complete_multipart_upload(
        Bucket=p.bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts}
    )
    version = completed["VersionId"]
    p.cloud.settle()

    deliveries = p.deliveries_for(key)
    assert len(deliveries) == 1  # moto alone: a Put event, then CompleteMultipartUpload
    detail = deliveries[0].event["detail"]
    assert detail["reason"] == "CompleteMultipartUpload"
    assert detail["object"]["version-id"] == version
    assert detail["object"]["size"] == len(body)
    assert detail["object"]["etag"] == completed["ETag"].strip('"')  # the "<md5>-2" of 2 parts
    (execution,) = p.executions_for(key)
    assert p.wait(execution.exec_arn).status == "SUCCEEDED"


def test_a_copy_sends_one_object_created_event_with_reason_copy_object(p: Pipeline) -> None:
    version, _ = p.ingest("incoming/orders/original.csv", GOOD)
    key = "incoming/orders/copy.csv"
    copied = p.s3.copy_object(
        Bucket=p.bucket,
        Key=key,
        CopySource={
            "Bucket": p.bucket,
            "Key": "incoming/orders/original.csv",
            "VersionId": version,
        },
    )
    p.cloud.settle()

    (delivery,) = p.deliveries_for(key)
    assert delivery.event["detail"]["reason"] == "CopyObject"
    assert delivery.event["detail"]["object"]["version-id"] == copied["VersionId"]
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


def queue_with_dlq(p: Pipeline, name: str, max_receives: int = 2) -> tuple[str, str, str, str]:
    """A queue whose redrive policy moves a message after ``max_receives`` receives:
    (queue url, queue arn, dlq url, dlq arn)."""
    dlq_url = p.sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dlq_arn = queue_arn(p, dlq_url)
    policy = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receives}
    url = p.sqs.create_queue(
        QueueName=name,
        Attributes={"RedrivePolicy": json.dumps(policy), "VisibilityTimeout": "0"},
    )["QueueUrl"]
    return url, queue_arn(p, url), dlq_url, dlq_arn


def dead_letter(p: Pipeline, url: str, body: str, max_receives: int = 2, **kwargs: Any) -> None:
    """Send ``body`` and receive it without deleting until the redrive policy moves it."""
    p.sqs.send_message(QueueUrl=url, MessageBody=body, **kwargs)
    for _ in range(max_receives + 1):  # the receive after the last allowed one moves it
        p.sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)


def last_task(p: Pipeline, dlq_arn: str, status: str = "COMPLETED") -> dict[str, Any]:
    def done() -> Any:
        results = p.sqs.list_message_move_tasks(SourceArn=dlq_arn)["Results"]
        return results[0] if results and results[0]["Status"] == status else None

    task: dict[str, Any] = wait_for(done, what=f"the move task to be {status}")
    return task


def error_of(call: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as raised:
        call(**kwargs)
    error = raised.value.response["Error"]
    return error["Code"], error["Message"]


def test_queue_dead_letters_are_moved_back_to_their_source_queue(p: Pipeline) -> None:
    work_url, work_arn, dlq_url, dlq_arn = queue_with_dlq(p, "work")
    attributes = {"kind": {"DataType": "String", "StringValue": "reconcile"}}
    dead_letter(p, work_url, '{"run": 1}', MessageAttributes=attributes)

    (dead,) = p.sqs.receive_message(
        QueueUrl=dlq_url, MessageSystemAttributeNames=["All"], VisibilityTimeout=0
    )["Messages"]
    assert dead["Attributes"]["DeadLetterQueueSourceArn"] == work_arn

    handle = p.sqs.start_message_move_task(SourceArn=dlq_arn)["TaskHandle"]
    task = last_task(p, dlq_arn)
    assert handle and "TaskHandle" not in task  # the handle is listed while RUNNING only
    assert task["ApproximateNumberOfMessagesMoved"] == 1
    assert task["ApproximateNumberOfMessagesToMove"] == 1
    assert "DestinationArn" not in task
    (back,) = p.sqs.receive_message(QueueUrl=work_url, MessageAttributeNames=["All"])["Messages"]
    assert back["Body"] == '{"run": 1}'
    assert back["MessageAttributes"] == attributes
    assert "Messages" not in p.sqs.receive_message(QueueUrl=dlq_url)


def test_a_move_task_refuses_a_source_that_is_no_dead_letter_queue(p: Pipeline) -> None:
    _, work_arn, _, dlq_arn = queue_with_dlq(p, "work")
    start = p.sqs.start_message_move_task

    assert error_of(start, SourceArn=work_arn) == (
        "InvalidParameterValue",
        "Source queue must be configured as a Dead Letter Queue.",
    )
    assert error_of(start, SourceArn=work_arn + "-gone") == (
        "ResourceNotFoundException",
        "The resource that you specified for the SourceArn parameter doesn't exist.",
    )
    assert error_of(start, SourceArn=dlq_arn, DestinationArn=work_arn + "-gone")[0] == (
        "ResourceNotFoundException"
    )
    assert error_of(start, SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=501)[0] == (
        "InvalidParameterValue"
    )


def test_a_move_task_to_a_destination_and_a_cancelled_one(p: Pipeline) -> None:
    work_url, _, _, dlq_arn = queue_with_dlq(p, "work")
    other_url = p.sqs.create_queue(QueueName="other")["QueueUrl"]
    for n in range(3):
        dead_letter(p, work_url, f"m{n}")

    # 1 message a second: the task is seen RUNNING, with its handle, and is cancelled.
    handle = p.sqs.start_message_move_task(
        SourceArn=dlq_arn, DestinationArn=queue_arn(p, other_url), MaxNumberOfMessagesPerSecond=1
    )["TaskHandle"]
    running = last_task(p, dlq_arn, "RUNNING")
    assert running["TaskHandle"] == handle and running["MaxNumberOfMessagesPerSecond"] == 1
    assert error_of(p.sqs.start_message_move_task, SourceArn=dlq_arn)[0] == (
        "InvalidParameterValue"  # one active task per source queue
    )
    p.sqs.cancel_message_move_task(TaskHandle=handle)
    cancelled = last_task(p, dlq_arn, "CANCELLED")
    assert 1 <= cancelled["ApproximateNumberOfMessagesMoved"] < 3
    moved = p.sqs.receive_message(QueueUrl=other_url, MaxNumberOfMessages=10)["Messages"]
    assert len(moved) == cancelled["ApproximateNumberOfMessagesMoved"]
    assert error_of(p.sqs.cancel_message_move_task, TaskHandle=handle)[0] == (
        "ResourceNotFoundException"  # no longer running
    )


def test_a_message_sent_straight_to_the_dlq_has_no_source_to_go_back_to(p: Pipeline) -> None:
    _, _, dlq_url, dlq_arn = queue_with_dlq(p, "work")
    p.sqs.send_message(QueueUrl=dlq_url, MessageBody="direct")

    p.sqs.start_message_move_task(SourceArn=dlq_arn)

    task = last_task(p, dlq_arn, "FAILED")
    assert task["FailureReason"] == "CouldNotDetermineMessageSource"
    (still,) = p.sqs.receive_message(QueueUrl=dlq_url)["Messages"]
    assert still["Body"] == "direct"


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


def test_sdk_s3_errors_are_named_as_aws_names_them(p: Pipeline) -> None:
    """An aws-sdk:s3 task fails with "S3.NoSuchKeyException", the name AWS documents
    ("Handling errors in AWS SDK integrations"), so a Catch on it routes the execution."""
    definition = {
        "StartAt": "ReadObject",
        "States": {
            "ReadObject": {
                "Type": "Task",
                "Resource": "arn:aws:states:::aws-sdk:s3:getObject",
                "Parameters": {"Bucket": p.bucket, "Key": "incoming/missing.csv"},
                "Catch": [{"ErrorEquals": ["S3.NoSuchKeyException"], "Next": "Missing"}],
                "End": True,
            },
            "Missing": {"Type": "Succeed"},
        },
    }
    machine = p.sfn.create_state_machine(
        name="sdk-error-names",
        definition=json.dumps(definition),
        roleArn=role_allowing("sdk-error-names", ["s3:GetObject", "s3:ListBucket"]),
    )["stateMachineArn"]
    arn = p.sfn.start_execution(stateMachineArn=machine, name="missing", input="{}")["executionArn"]
    run = p.wait(arn)
    assert run.status == "SUCCEEDED"
    assert [e["type"] for e in run.history if e["type"] == "TaskFailed"] == ["TaskFailed"]


def test_a_start_execution_task_starts_the_execution(p: Pipeline) -> None:
    """A states:startExecution task (the request-response integration) starts the other
    state machine with ``Input`` given as an object, as the developer guide's example does;
    its result carries the new execution's ARN."""
    role = role_allowing("start-execution", ["states:StartExecution"])
    child = p.sfn.create_state_machine(
        name="started-child",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn=role,
    )["stateMachineArn"]
    parent_definition = {
        "StartAt": "StartChild",
        "States": {
            "StartChild": {
                "Type": "Task",
                "Resource": "arn:aws:states:::states:startExecution",
                "Parameters": {
                    "StateMachineArn": child,
                    "Name": "child-of-parent",
                    "Input": {"greeting": "hello", "parent.$": "$$.Execution.Id"},
                },
                "ResultSelector": {"executionArn.$": "$.ExecutionArn"},
                "End": True,
            }
        },
    }
    parent = p.sfn.create_state_machine(
        name="starting-parent", definition=json.dumps(parent_definition), roleArn=role
    )["stateMachineArn"]
    arn = p.sfn.start_execution(stateMachineArn=parent, name="parent", input="{}")["executionArn"]
    run = p.wait(arn)
    assert run.status == "SUCCEEDED", run.cause
    assert run.output is not None
    started = p.sfn.describe_execution(executionArn=run.output["executionArn"])
    assert started["name"] == "child-of-parent"
    assert json.loads(started["input"]) == {"greeting": "hello", "parent": arn}


def test_context_timestamps_are_formatted_as_aws_formats_them(p: Pipeline) -> None:
    """$$.State.EnteredTime is "2026-01-01T00:00:00.123Z" on AWS (moto: isoformat()). The
    claim stores it as claimed_at and the reconciler compares it as a string."""
    version, run = p.ingest("incoming/orders/timestamps.csv", GOOD)
    assert run.status == "SUCCEEDED", run.cause
    record = p.record("incoming/orders/timestamps.csv", version)
    assert record is not None
    for name in ("claimed_at", "first_seen_at", "completed_at"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record[name]), record[name]


def test_a_mapped_queue_is_polled_not_invoked_inside_send_message(p: Pipeline) -> None:
    """Lambda polls an SQS event source and honours ReportBatchItemFailures. moto invokes
    the function inside SendMessage, on the sender's thread, and deletes every message the
    function did not fail on as a whole, including those it reported as failed."""
    queue = p.sqs.create_queue(QueueName="esm-probe")["QueueUrl"]
    arn = p.sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    function = p.stack.functions["ReconcileFunction"]
    lam = boto3.client("lambda", region_name=p.cloud.region)
    mapping = lam.create_event_source_mapping(
        EventSourceArn=arn,
        FunctionName=function,
        BatchSize=10,
        Enabled=True,
        FunctionResponseTypes=["ReportBatchItemFailures"],
    )
    try:
        before = len(p.cloud.runtime.invocations)
        p.sqs.send_message(QueueUrl=queue, MessageBody="not a run message")
        sender = threading.current_thread().name
        assert [r for r in p.cloud.runtime.invocations[before:] if r["thread"] == sender] == []

        wait_for(
            lambda: [r for r in p.cloud.runtime.invocations[before:] if r["function"] == function],
            what="the poller to invoke the function",
        )
        counts = p.sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
        held = int(counts["ApproximateNumberOfMessages"])
        held += int(counts["ApproximateNumberOfMessagesNotVisible"])
        assert held == 1  # reported as a batch item failure: it stays in the queue
    finally:
        lam.delete_event_source_mapping(UUID=mapping["UUID"])


def test_an_alarm_pages_operations_when_it_fires_and_when_it_clears(p: Pipeline) -> None:
    """An alarm's state change reaches its SNS actions with CloudWatch's notification; the
    deployed alarms page the operations topic with what to run."""
    name = p.stack.resources["DeadLetterAlarm"]
    cloudwatch = boto3.client("cloudwatch", region_name=p.cloud.region)
    cloudwatch.set_alarm_state(
        AlarmName=name,
        StateValue="ALARM",
        StateReason="Threshold Crossed: 1 datapoint [3.0] was greater than the threshold (0.0).",
    )
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="Back to normal.")
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="Still normal.")

    notes = p.notifications("OperationsTopicArn")
    states = [(n["message"]["OldStateValue"], n["message"]["NewStateValue"]) for n in notes]
    assert states[1:] == [("ALARM", "OK")]  # no second OK: only state changes notify
    assert states[0][1] == "ALARM"
    fired = notes[0]
    assert fired["subject"].startswith(f'ALARM: "{name}" in ')
    assert fired["message"]["AlarmName"] == name
    assert "ingestctl redrive EventDeliveryDLQ" in fired["message"]["AlarmDescription"]
    assert fired["message"]["Trigger"]["MetricName"] == "ApproximateNumberOfMessagesVisible"


def test_a_new_alarm_has_insufficient_data_and_an_update_keeps_its_state(p: Pipeline) -> None:
    """CloudWatch API Reference, PutMetricAlarm: a new alarm is INSUFFICIENT_DATA until it is
    evaluated; updating one overwrites its configuration and leaves its state alone."""
    cloudwatch = boto3.client("cloudwatch", region_name=p.cloud.region)
    deployed = cloudwatch.describe_alarms()["MetricAlarms"]
    assert deployed and {a["StateValue"] for a in deployed} == {"INSUFFICIENT_DATA"}

    alarm = {
        "AlarmName": "queue-depth",
        "Namespace": "AWS/SQS",
        "MetricName": "ApproximateNumberOfMessagesVisible",
        "Statistic": "Maximum",
        "Period": 60,
        "EvaluationPeriods": 1,
        "ComparisonOperator": "GreaterThanThreshold",
    }
    cloudwatch.put_metric_alarm(**alarm, Threshold=0)
    (created,) = cloudwatch.describe_alarms(AlarmNames=["queue-depth"])["MetricAlarms"]
    assert created["StateValue"] == "INSUFFICIENT_DATA"
    assert created["StateReason"] == "Unchecked: Initial alarm creation"

    cloudwatch.set_alarm_state(AlarmName="queue-depth", StateValue="ALARM", StateReason="test")
    cloudwatch.put_metric_alarm(**alarm, Threshold=5)
    (updated,) = cloudwatch.describe_alarms(AlarmNames=["queue-depth"])["MetricAlarms"]
    assert (updated["StateValue"], updated["StateReason"], updated["Threshold"]) == (
        "ALARM",
        "test",
        5.0,
    )
