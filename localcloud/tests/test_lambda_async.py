"""Lambda asynchronous invocation as AWS runs it (features/lambda_async.py): 202 at once, the
handler in the background, function errors retried MaximumRetryAttempts times after 1 then
2 minutes (on the virtual clock), then the invocation record to the OnFailure destination and
the event to the dead-letter queue with RequestID / ErrorCode / ErrorMessage; OnSuccess gets
the record of a success. S3 notifications and SNS subscriptions go through the same queue.
Sends are made as the function's execution role, which Lambda checks when it is configured.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud
from localcloud.features.lambda_async import async_invocations
from localcloud.runtime import AsyncInvocation

pytestmark = [pytest.mark.e2e]

TEMPLATE = Path(__file__).parent / "templates" / "lambda_async" / "template.yaml"
LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "lambda.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(TEMPLATE, stack_name="lambda-async") as running:
        yield running


def messages(cloud: LocalCloud, output: str, count: int) -> list[dict[str, Any]]:
    """Receive ``count`` messages of the queue whose URL is stack output ``output``."""
    sqs, got = boto3.client("sqs"), []
    for _ in range(10):
        reply = sqs.receive_message(
            QueueUrl=cloud.outputs[output],
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        for message in reply.get("Messages", []):
            sqs.delete_message(
                QueueUrl=cloud.outputs[output], ReceiptHandle=message["ReceiptHandle"]
            )
            got.append(message)
        if len(got) >= count:
            break
    assert len(got) == count, got
    return got


def invoke_async(cloud: LocalCloud, logical_id: str, event: Any) -> AsyncInvocation:
    """Invoke with InvocationType=Event, wait for the background run, return its record."""
    name = cloud.functions[logical_id]
    log = async_invocations(cloud.runtime)
    before = len(log.of(name))
    reply = boto3.client("lambda").invoke(
        FunctionName=name, InvocationType="Event", Payload=json.dumps(event).encode()
    )
    assert reply["StatusCode"] == 202
    assert reply["Payload"].read() == b""
    log.drain()
    item = log.of(name)[before]
    assert reply["ResponseMetadata"]["RequestId"] == item.request_id  # the invocation's own
    return item


def attrs(message: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {k: (v["DataType"], v["StringValue"]) for k, v in message["MessageAttributes"].items()}


def test_a_failing_function_is_tried_three_times_then_dead_lettered(cloud: LocalCloud) -> None:
    name = cloud.functions["FailingFunction"]
    before, slept = cloud.invocation_count(name), cloud.clock.slept

    item = invoke_async(cloud, "FailingFunction", {"order": 7})

    assert cloud.invocation_count(name) - before == 3  # the first attempt and 2 retries
    assert (item.status, item.condition, item.attempts) == ("FAILED", "RetriesExhausted", 3)
    assert item.retry_delays == [60.0, 120.0]  # AWS: one minute, then two
    assert cloud.clock.slept - slept >= 180.0  # on the virtual clock: no real wait
    (message,) = messages(cloud, "DeadLetterQueueUrl", 1)
    assert json.loads(message["Body"]) == {"order": 7}  # the event itself
    assert attrs(message) == {
        "RequestID": ("String", item.request_id),
        "ErrorCode": ("Number", "200"),
        "ErrorMessage": ("String", "cannot process {'order': 7}"),
    }
    handler_ids = {
        r["event"].get("order") for r in cloud.runtime.invocations if r["function"] == name
    }
    assert handler_ids == {7}


def test_on_failure_destination_gets_the_invocation_record(cloud: LocalCloud) -> None:
    name = cloud.functions["DestinedFunction"]
    before = cloud.invocation_count(name)

    item = invoke_async(cloud, "DestinedFunction", {"fail": "bad input"})

    assert cloud.invocation_count(name) - before == 2  # MaximumRetryAttempts: 1
    (message,) = messages(cloud, "FailureQueueUrl", 1)
    record = json.loads(message["Body"])
    assert record["version"] == "1.0"
    assert record["timestamp"].endswith("Z")
    assert record["requestContext"] == {
        "requestId": item.request_id,
        "functionArn": f"{item.function_arn}:$LATEST",
        "condition": "RetriesExhausted",
        "approximateInvokeCount": 2,
    }
    assert record["requestPayload"] == {"fail": "bad input"}
    assert record["responseContext"] == {
        "statusCode": 200,
        "executedVersion": "$LATEST",
        "functionError": "Unhandled",
    }
    assert record["responsePayload"]["errorType"] == "RuntimeError"
    assert record["responsePayload"]["errorMessage"] == "asked to fail: bad input"
    messages(cloud, "SuccessQueueUrl", 0)


def test_on_success_destination_gets_the_response(cloud: LocalCloud) -> None:
    item = invoke_async(cloud, "DestinedFunction", {"order": 1})

    assert (item.status, item.attempts, item.retry_delays) == ("SUCCEEDED", 1, [])
    (message,) = messages(cloud, "SuccessQueueUrl", 1)
    record = json.loads(message["Body"])
    assert record["requestContext"]["condition"] == "Success"
    assert record["requestContext"]["approximateInvokeCount"] == 1
    assert record["responseContext"] == {"statusCode": 200, "executedVersion": "$LATEST"}
    # the handler's context had the invocation's request id
    assert record["responsePayload"] == {"processed": {"order": 1}, "requestId": item.request_id}
    messages(cloud, "FailureQueueUrl", 0)


def test_maximum_retry_attempts_0_gives_one_attempt(cloud: LocalCloud) -> None:
    name = cloud.functions["NoRetryFunction"]
    before = cloud.invocation_count(name)

    item = invoke_async(cloud, "NoRetryFunction", {"fail": "once"})

    assert cloud.invocation_count(name) - before == 1
    assert (item.condition, item.retry_delays) == ("RetriesExhausted", [])
    (message,) = messages(cloud, "NoRetryDeadLetterQueueUrl", 1)
    assert json.loads(message["Body"]) == {"fail": "once"}


def test_s3_notifications_invoke_through_the_asynchronous_queue(cloud: LocalCloud) -> None:
    name = cloud.functions["UploadFunction"]
    before = cloud.invocation_count(name)

    boto3.client("s3").put_object(Bucket=cloud.outputs["UploadsBucket"], Key="a.csv", Body=b"x")
    async_invocations(cloud.runtime).drain()

    assert cloud.invocation_count(name) - before == 3
    (message,) = messages(cloud, "UploadsDeadLetterQueueUrl", 1)
    record = json.loads(message["Body"])["Records"][0]
    assert record["eventSource"] == "aws:s3"
    assert record["s3"]["object"]["key"] == "a.csv"
    assert attrs(message)["ErrorCode"] == ("Number", "200")


def test_sns_subscriptions_invoke_through_the_asynchronous_queue(cloud: LocalCloud) -> None:
    topic = cloud.outputs["NotificationsTopic"]
    boto3.client("sns").publish(
        TopicArn=topic,
        Message=json.dumps({"hello": "world"}),
        Subject="greeting",
        MessageAttributes={"kind": {"DataType": "String", "StringValue": "test"}},
    )
    async_invocations(cloud.runtime).drain()

    (message,) = messages(cloud, "NotificationsSuccessQueueUrl", 1)
    record = json.loads(message["Body"])
    sns = record["requestPayload"]["Records"][0]["Sns"]
    assert record["requestContext"]["condition"] == "Success"
    assert (sns["TopicArn"], sns["Subject"]) == (topic, "greeting")
    assert json.loads(sns["Message"]) == {"hello": "world"}
    assert sns["MessageAttributes"] == {"kind": {"Type": "String", "Value": "test"}}
    assert record["requestPayload"]["Records"][0]["EventSubscriptionArn"].startswith(topic)


def test_a_role_without_send_message_cannot_configure_the_queue(cloud: LocalCloud) -> None:
    """Lambda checks the execution role when a dead-letter queue or a destination is set."""
    lam, iam = boto3.client("lambda"), boto3.client("iam")
    role = iam.create_role(
        RoleName="async-no-send", AssumeRolePolicyDocument=json.dumps(LAMBDA_TRUST)
    )["Role"]["Arn"]
    queue = boto3.client("sqs").get_queue_attributes(
        QueueUrl=cloud.outputs["DeadLetterQueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    existing = lam.get_function(FunctionName=cloud.functions["FailingFunction"])
    with pytest.raises(ClientError) as refused:
        lam.create_function(
            FunctionName="async-no-send",
            Role=role,
            Runtime="python3.13",
            Handler="async_handlers.fail",
            Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18},
            DeadLetterConfig={"TargetArn": queue},
        )
    error = refused.value.response["Error"]
    assert error["Code"] == "InvalidParameterValueException"
    assert error["Message"] == (
        "The provided execution role does not have permissions to call SendMessage on SQS"
    )
    assert "async-no-send" not in {f["FunctionName"] for f in lam.list_functions()["Functions"]}

    name = cloud.functions["NoRetryFunction"]
    lam.update_function_configuration(FunctionName=name, Role=role)
    try:
        with pytest.raises(ClientError, match="does not have permissions to call SendMessage"):
            lam.update_function_configuration(
                FunctionName=name, DeadLetterConfig={"TargetArn": queue}
            )
        with pytest.raises(ClientError, match="does not have permissions to call SendMessage"):
            lam.put_function_event_invoke_config(
                FunctionName=name, DestinationConfig={"OnFailure": {"Destination": queue}}
            )
    finally:
        lam.update_function_configuration(FunctionName=name, Role=existing["Configuration"]["Role"])


def test_a_refused_dead_letter_send_loses_the_event_visibly(cloud: LocalCloud) -> None:
    """Permission taken away after the configuration: AWS deletes the event and counts it in
    DeadLetterErrors; here it is also in the invocation's ``lost``."""
    iam_client, lam = boto3.client("iam"), boto3.client("lambda")
    name = cloud.functions["NoRetryFunction"]
    role = lam.get_function_configuration(FunctionName=name)["Role"].rsplit("/", 1)[-1]
    deny = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Deny", "Action": "sqs:SendMessage", "Resource": "*"}],
    }
    iam_client.put_role_policy(
        RoleName=role, PolicyName="deny-dlq", PolicyDocument=json.dumps(deny)
    )
    try:
        item = invoke_async(cloud, "NoRetryFunction", {"fail": "lost"})
    finally:
        iam_client.delete_role_policy(RoleName=role, PolicyName="deny-dlq")

    assert item.sent == []
    ((kind, target, error),) = item.lost
    assert kind == "DeadLetter"
    assert target.endswith(":" + cloud.outputs["NoRetryDeadLetterQueueUrl"].rsplit("/", 1)[-1])
    assert "AccessDenied" in error
    messages(cloud, "NoRetryDeadLetterQueueUrl", 0)
    stats = boto3.client("cloudwatch").get_metric_statistics(
        Namespace="AWS/Lambda",
        MetricName="DeadLetterErrors",
        Dimensions=[{"Name": "FunctionName", "Value": name}],
        StartTime="2000-01-01T00:00:00Z",
        EndTime="2100-01-01T00:00:00Z",
        Period=86400,
        Statistics=["Sum"],
    )
    assert sum(p["Sum"] for p in stats["Datapoints"]) == 1


def test_event_invoke_config_put_replaces_and_update_merges(cloud: LocalCloud) -> None:
    lam, name = boto3.client("lambda"), cloud.functions["FailingFunction"]
    lam.put_function_event_invoke_config(FunctionName=name, MaximumRetryAttempts=1)
    lam.put_function_event_invoke_config(FunctionName=name, MaximumEventAgeInSeconds=600)
    got = lam.get_function_event_invoke_config(FunctionName=name)
    assert "MaximumRetryAttempts" not in got  # Put overwrites the whole configuration
    assert got["MaximumEventAgeInSeconds"] == 600
    lam.update_function_event_invoke_config(FunctionName=name, MaximumRetryAttempts=0)
    got = lam.get_function_event_invoke_config(FunctionName=name)
    assert (got["MaximumRetryAttempts"], got["MaximumEventAgeInSeconds"]) == (0, 600)
    before = cloud.invocation_count(name)
    try:
        item = invoke_async(cloud, "FailingFunction", {"order": 8})
        assert cloud.invocation_count(name) - before == 1
        assert item.condition == "RetriesExhausted"
        messages(cloud, "DeadLetterQueueUrl", 1)
    finally:
        lam.delete_function_event_invoke_config(FunctionName=name)
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        lam.get_function_event_invoke_config(FunctionName=name)
