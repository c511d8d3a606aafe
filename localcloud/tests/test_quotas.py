"""The local cloud refuses payloads over AWS's quotas, with AWS's errors.

A small standalone SAM stack (not the app's template): one Python function that returns
``{"blob": "x" * size}``, a queue, a table and two state machines. Each test asserts what a
caller of AWS sees (error code, HTTP status, message; an execution's status and error). The
fixes: localcloud/fixes/sfn_execution_input_quota.py, lambda_invoke_payload_quotas.py,
eventbridge_put_events_size.py, sqs_message_size.py (each test named by a fix fails without
it, LOCALCLOUD_WITHOUT=<name>). moto itself enforces Step Functions' payload quota inside an
execution and DynamoDB's item size: their tests pin that behaviour.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud

pytestmark = pytest.mark.e2e

KiB, MiB = 1024, 1024 * 1024
SFN_QUOTA = 256 * KiB  # 262144 UTF-8 bytes

FUNCTION = """
def handler(event, context):
    return {"blob": "x" * int(event.get("size", 0))}
"""

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  BlobFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: code/
      Handler: localcloud_quota_blob.handler
      Runtime: python3.13
      Timeout: 30
  Queue:
    Type: AWS::SQS::Queue
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
  Blob:
    Type: AWS::Serverless::StateMachine
    Properties:
      Type: STANDARD
      DefinitionSubstitutions: {FunctionArn: !GetAtt BlobFunction.Arn}
      Policies: [{LambdaInvokePolicy: {FunctionName: !Ref BlobFunction}}]
      Definition:
        StartAt: MakeBlob
        States:
          MakeBlob:
            Type: Task
            Resource: arn:aws:states:::lambda:invoke
            Parameters: {FunctionName: "${FunctionArn}", "Payload.$": "$"}
            ResultSelector: {"blob.$": "$.Payload.blob"}
            ResultPath: $.made
            Catch:
              - ErrorEquals: [States.ALL]
                ResultPath: $.error
                Next: Caught
            End: true
          Caught: {Type: Pass, End: true}
Outputs:
  Function: {Value: !Ref BlobFunction}
  QueueUrl: {Value: !Ref Queue}
  Table: {Value: !Ref Table}
  Blob: {Value: !Ref Blob}
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    root = tmp_path_factory.mktemp("quota-stack")
    (root / "code").mkdir()
    (root / "code" / "localcloud_quota_blob.py").write_text(FUNCTION)
    (root / "template.yaml").write_text(TEMPLATE)
    with LocalCloud(root / "template.yaml", stack_name="quota-test", event_delivery=False) as c:
        yield c


def error_of(call: Any, **kwargs: Any) -> tuple[str, int, str]:
    with pytest.raises(ClientError) as raised:
        call(**kwargs)
    response = raised.value.response
    status = response["ResponseMetadata"]["HTTPStatusCode"]
    return response["Error"]["Code"], status, response["Error"]["Message"]


def padded(size: int, char: str = "x") -> str:
    """A JSON object of exactly ``size`` UTF-8 bytes: {"p": "<char>..."}."""
    filler = (size - len('{"p": ""}')) // len(char.encode())
    text = json.dumps({"p": char * filler}, ensure_ascii=False)
    assert len(text.encode()) == size
    return text


# --- Step Functions ------------------------------------------------------------------


def test_start_execution_refuses_an_input_over_the_quota(cloud: LocalCloud) -> None:
    sfn, machine = boto3.client("stepfunctions"), cloud.outputs["Blob"]
    message = (
        "1 validation error detected: Value at 'input' failed to satisfy constraint: "
        "Member must have size less than or equal to 262144 bytes in UTF-8 encoding"
    )

    for too_big in (padded(SFN_QUOTA + 1), padded(SFN_QUOTA + 1, "é")):  # bytes, not chars
        refused = error_of(sfn.start_execution, stateMachineArn=machine, input=too_big)
        assert refused == ("ValidationException", 400, message)
    assert sfn.list_executions(stateMachineArn=machine)["executions"] == []

    started = sfn.start_execution(
        stateMachineArn=machine, name=uuid.uuid4().hex, input=padded(SFN_QUOTA)
    )
    assert started["executionArn"]


def run(cloud: LocalCloud, execution_input: dict[str, Any]) -> Any:
    sfn = boto3.client("stepfunctions")
    arn = sfn.start_execution(
        stateMachineArn=cloud.outputs["Blob"],
        name=uuid.uuid4().hex,
        input=json.dumps(execution_input),
    )["executionArn"]

    def ended() -> dict[str, Any] | None:
        described = sfn.describe_execution(executionArn=arn)
        return None if described["status"] == "RUNNING" else described

    described = cloud.runtime.wait_until(ended, 20)
    assert described, f"{arn} did not end in 20 s"
    output = described.get("output")
    return SimpleNamespace(
        status=described["status"],
        error=described.get("error"),
        cause=described.get("cause"),
        output=json.loads(output) if output else None,
        history=sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"],
    )


def test_a_task_result_over_the_quota_fails_the_task_with_data_limit_exceeded(
    cloud: LocalCloud,
) -> None:
    """The Lambda task's result is over 256 KiB: the task fails with
    States.DataLimitExceeded (TaskFailed), which the Catch on States.ALL routes, as recorded
    on AWS (LocalStack's aws.validated snapshot test_states_errors
    ::test_service_task_lambada_catch_state_all_data_limit_exceeded_on_large_utf8_response)."""
    result = run(cloud, {"size": SFN_QUOTA + 1})

    assert result.status == "SUCCEEDED"
    (failed,) = [e for e in result.history if e["type"] == "TaskFailed"]
    assert failed["taskFailedEventDetails"]["error"] == "States.DataLimitExceeded"
    assert failed["taskFailedEventDetails"]["cause"] == (
        "The state/task 'lambda' returned a result with a size exceeding the maximum number "
        "of bytes service limit."
    )
    assert result.output is not None
    assert result.output["error"]["Error"] == "States.DataLimitExceeded"


def test_a_state_output_over_the_quota_fails_the_execution_despite_a_catch(
    cloud: LocalCloud,
) -> None:
    """Result and input fit, the state's output (input + result at $.made) does not: the
    terminal States.DataLimitExceeded fails the execution; no Catch applies ("DataLimitExceeded
    is a terminal error that can't be caught by the States.ALL error type")."""
    half = SFN_QUOTA // 2
    result = run(cloud, {"size": half, "pad": "y" * half})

    assert result.status == "FAILED"
    assert result.error == "States.DataLimitExceeded"
    assert result.cause is not None  # moto names the task's resource type, 'lambda'
    assert result.cause.endswith(
        "returned a result with a size exceeding the maximum number of bytes service limit."
    )
    assert "PassStateEntered" not in [e["type"] for e in result.history]


# --- Lambda --------------------------------------------------------------------------


def test_invoke_refuses_requests_and_responses_over_the_quotas(cloud: LocalCloud) -> None:
    lam, function = boto3.client("lambda"), cloud.outputs["Function"]

    assert error_of(lam.invoke, FunctionName=function, Payload=padded(6 * MiB + 1)) == (
        "RequestEntityTooLargeException",
        413,
        "Request must be smaller than 6291456 bytes for the InvokeFunction operation",
    )
    refused_event = error_of(
        lam.invoke, FunctionName=function, InvocationType="Event", Payload=padded(MiB + 1)
    )
    assert refused_event == (
        "RequestEntityTooLargeException",
        413,
        f"{MiB + 1} byte payload is too large for the Event invocation type (limit {MiB} bytes)",
    )
    before = cloud.invocation_count(function)
    queued = lam.invoke(FunctionName=function, InvocationType="Event", Payload=padded(MiB))
    assert queued["StatusCode"] == 202
    cloud.settle()  # the accepted one runs in the background, as on Lambda
    assert cloud.invocation_count(function) == before + 1  # the refused ones never ran

    # the response: {"blob": "x..."} is size + 12 bytes; AWS's quota is 6,291,556 bytes
    fits = lam.invoke(FunctionName=function, Payload=json.dumps({"size": 6 * MiB + 88}))
    assert fits.get("FunctionError") is None
    assert len(fits["Payload"].read()) == 6 * MiB + 100

    too_big = lam.invoke(FunctionName=function, Payload=json.dumps({"size": 6 * MiB + 89}))
    assert (too_big["StatusCode"], too_big["FunctionError"]) == (200, "Unhandled")
    assert json.loads(too_big["Payload"].read()) == {
        "errorMessage": "Response payload size exceeded maximum allowed payload size "
        "(6291556 bytes).",
        "errorType": "Function.ResponseSizeTooLarge",
    }


# --- EventBridge ---------------------------------------------------------------------


def entry(detail_bytes: int, **extra: Any) -> dict[str, Any]:
    return {"Source": "quota.test", "DetailType": "Sized", "Detail": padded(detail_bytes), **extra}


def test_put_events_refuses_entries_over_the_quota(cloud: LocalCloud) -> None:
    """Entry size as EventBridge calculates it: Source + DetailType + Detail (+ Resources,
    + 14 for Time), summed over the request's entries; 1 MiB fits, one byte more does not."""
    events = boto3.client("events")
    overhead = len("quota.test") + len("Sized")  # 15
    resource = "arn:aws:s3:::bucket"
    first = entry(MiB // 2 - overhead - 14 - len(resource), Time=1, Resources=[resource])
    exactly: list[Any] = [first, entry(MiB // 2 - overhead)]

    accepted = events.put_events(Entries=exactly)
    assert accepted["FailedEntryCount"] == 0

    exactly[1]["Detail"] = padded(MiB // 2 - overhead + 1)
    assert error_of(events.put_events, Entries=exactly) == (
        "ValidationException",
        400,
        "Total size of the entries in the request is over the limit.",
    )


# --- SQS -----------------------------------------------------------------------------


def test_send_message_counts_utf8_bytes_and_attributes(cloud: LocalCloud) -> None:
    sqs, url = boto3.client("sqs"), cloud.outputs["QueueUrl"]
    too_long = (
        "InvalidParameterValue",
        400,
        "One or more parameters are invalid. Reason: Message must be shorter than 1048576 bytes.",
    )
    attribute: Any = {"DataType": "String", "StringValue": "v" * 1000}  # 4 + 6 + 1000 bytes
    attribute_bytes = len("meta") + len("String") + 1000

    assert error_of(sqs.send_message, QueueUrl=url, MessageBody="é" * (MiB // 2 + 1)) == too_long
    assert (
        error_of(
            sqs.send_message,
            QueueUrl=url,
            MessageBody="x" * (MiB - attribute_bytes + 1),
            MessageAttributes={"meta": attribute},
        )
        == too_long
    )
    sqs.send_message(
        QueueUrl=url,
        MessageBody="x" * (MiB - attribute_bytes),
        MessageAttributes={"meta": attribute},
    )

    batch = [
        {"Id": str(n), "MessageBody": "x" * (MiB // 2), "MessageAttributes": {"meta": attribute}}
        for n in range(2)
    ]
    sent = MiB + 2 * attribute_bytes
    assert error_of(sqs.send_message_batch, QueueUrl=url, Entries=batch) == (
        "AWS.SimpleQueueService.BatchRequestTooLong",
        400,
        f"Batch requests cannot be longer than 1048576 bytes. You have sent {sent} bytes.",
    )
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    assert counts["Attributes"]["ApproximateNumberOfMessages"] == "1"


# --- DynamoDB ------------------------------------------------------------------------


def test_put_and_update_item_refuse_items_over_400_kb(cloud: LocalCloud) -> None:
    """AWS: "The maximum item size in DynamoDB is 400 KB" (1 KB = 1024 bytes; developerguide
    Constraints.html), names + values. moto refuses these itself, with AWS's messages (at
    405,000 bytes: below 409,600, so an item between the two fails locally only)."""
    ddb, table = boto3.client("dynamodb"), cloud.outputs["Table"]

    put = error_of(
        ddb.put_item, TableName=table, Item={"pk": {"S": "big"}, "v": {"S": "x" * 410_000}}
    )
    assert put == ("ValidationException", 400, "Item size has exceeded the maximum allowed size")

    ddb.put_item(TableName=table, Item={"pk": {"S": "grows"}, "v": {"S": "x" * 300_000}})
    update = error_of(
        ddb.update_item,
        TableName=table,
        Key={"pk": {"S": "grows"}},
        UpdateExpression="SET w = :w",
        ExpressionAttributeValues={":w": {"S": "y" * 150_000}},
    )
    assert update == (
        "ValidationException",
        400,
        "Item size to update has exceeded the maximum allowed size",
    )
