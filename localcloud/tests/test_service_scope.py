"""A call to a service outside the local cloud's scope fails as AWS fails a caller without
access to it, naming the service (features/service_scope.py): from a function, from a state
machine's task (optimized and aws-sdk integrations, caught by a Catch), from the test
process and from the HTTP endpoint's clients (both the administrator). A function's call names
its role wherever the function runs: on a thread of the cloud, or in an environment process,
whose call reaches the HTTP endpoint signed with its role session's credentials."""

from __future__ import annotations

import json
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

HANDLER = """\
import json

import boto3


def handler(event, context):
    if event["service"] == "comprehend":
        boto3.client("comprehend").detect_sentiment(Text="I love it", LanguageCode="en")
    else:
        boto3.client("bedrock-runtime").invoke_model(
            modelId="anthropic.claude-v2", body=json.dumps({"prompt": "hi"})
        )
    return "answered"
"""


def _task(resource: str, parameters: dict[str, Any], error: str) -> dict[str, Any]:
    catch = {"ErrorEquals": [error], "ResultPath": "$.error", "Next": "Caught"}
    return {
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": resource,
                "Parameters": parameters,
                "Catch": [catch],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }


BEDROCK = _task(
    "arn:aws:states:::bedrock:invokeModel",
    {"ModelId": "anthropic.claude-v2", "Body": {"prompt": "hi"}},
    "Bedrock.AccessDeniedException",
)
COMPREHEND = _task(
    "arn:aws:states:::aws-sdk:comprehend:detectSentiment",
    {"Text": "I love it", "LanguageCode": "en"},
    "Comprehend.ComprehendException",  # Comprehend does not model AccessDeniedException
)


def _machine(name: str, definition: dict[str, Any]) -> str:
    return f"""\
  {name}:
    Type: AWS::Serverless::StateMachine
    Properties:
      Policies:
        - ComprehendBasicAccessPolicy: {{}}
      Definition: {json.dumps(definition)}
"""


@pytest.fixture(scope="module")
def cloud(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LocalCloud]:
    template = f"""\
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Resources:
  Caller:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      Handler: index.handler
      Timeout: 10
      Policies:
        - ComprehendBasicAccessPolicy: {{}}
      InlineCode: |
{textwrap.indent(HANDLER, " " * 8)}
{_machine("BedrockMachine", BEDROCK)}{_machine("ComprehendMachine", COMPREHEND)}\
  ToKinesis:
    Type: AWS::Events::Rule
    Properties:
      EventPattern: {{source: [scope.test]}}
      Targets:
        - Id: stream
          Arn: !Sub arn:aws:kinesis:${{AWS::Region}}:${{AWS::AccountId}}:stream/orders
"""
    path: Path = tmp_path_factory.mktemp("scope") / "template.yaml"
    path.write_text(template)
    with LocalCloud(path, stack_name="service-scope") as running:
        running.serve(port=0)
        yield running


def _invoke(cloud: LocalCloud, service: str) -> dict[str, Any]:
    response = boto3.client("lambda").invoke(
        FunctionName=cloud.functions["Caller"], Payload=json.dumps({"service": service})
    )
    assert response.get("FunctionError") == "Unhandled", response
    payload: dict[str, Any] = json.loads(response["Payload"].read())
    return payload


def test_a_function_calling_comprehend_is_refused_naming_the_service(cloud: LocalCloud) -> None:
    error = _invoke(cloud, "comprehend")
    assert error["errorType"] == "ClientError", error  # Comprehend's model has no such class
    message = error["errorMessage"]
    assert "when calling the DetectSentiment operation: User: arn:aws:sts::" in message
    function = boto3.client("lambda").get_function(FunctionName=cloud.functions["Caller"])
    role = function["Configuration"]["Role"].rsplit("/", 1)[-1]
    assert f":assumed-role/{role}/" in message  # the function's role
    assert "is not authorized to perform: comprehend:DetectSentiment" in message
    assert "the local cloud does not run Amazon Comprehend: test this call against AWS" in message


def test_a_function_calling_bedrock_is_refused_on_the_model(cloud: LocalCloud) -> None:
    error = _invoke(cloud, "bedrock")
    assert error["errorType"] == "AccessDeniedException", error  # bedrock-runtime's class
    message = error["errorMessage"]
    assert (
        "is not authorized to perform: bedrock:InvokeModel on resource: "
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-v2"
    ) in message
    assert "the local cloud does not run Amazon Bedrock Runtime" in message


def _caught(cloud: LocalCloud, machine: str) -> dict[str, Any]:
    sfn = boto3.client("stepfunctions")
    arn = cloud.outputs.get(machine) or next(
        m["stateMachineArn"]
        for m in sfn.list_state_machines()["stateMachines"]
        if machine in m["stateMachineArn"]
    )
    execution = sfn.start_execution(stateMachineArn=arn, input="{}")["executionArn"]
    cloud.settle()
    described = sfn.describe_execution(executionArn=execution)
    assert described["status"] == "SUCCEEDED", described
    error: dict[str, Any] = json.loads(described["output"])["error"]
    return error


def test_a_bedrock_invoke_model_task_fails_into_its_catch(cloud: LocalCloud) -> None:
    error = _caught(cloud, "BedrockMachine")
    assert error["Error"] == "Bedrock.AccessDeniedException"
    assert "is not authorized to perform: bedrock:InvokeModel" in error["Cause"]
    assert "the local cloud does not run Amazon Bedrock Runtime" in error["Cause"]


def test_an_aws_sdk_comprehend_task_fails_into_its_catch(cloud: LocalCloud) -> None:
    error = _caught(cloud, "ComprehendMachine")
    assert error["Error"] == "Comprehend.ComprehendException"  # as AWS names S3.S3Exception
    assert "comprehend:DetectSentiment" in error["Cause"]
    assert "the local cloud does not run Amazon Comprehend" in error["Cause"]


def test_the_administrators_calls_are_refused(cloud: LocalCloud) -> None:
    with pytest.raises(ClientError) as refused:
        boto3.client("rekognition").detect_labels(Image={"Bytes": b"kitten"})
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    message = refused.value.response["Error"]["Message"]
    assert (
        "User: arn:aws:sts::123456789012:assumed-role/LocalCloudAdministrator/local is not "
        "authorized to perform: rekognition:DetectLabels because"
    ) in message
    assert "Amazon Rekognition" in message
    with pytest.raises(ClientError) as ec2:
        boto3.client("ec2").describe_instances()
    assert ec2.value.response["Error"]["Code"] == "UnauthorizedOperation"
    assert "the local cloud does not run Amazon EC2" in ec2.value.response["Error"]["Message"]
    assert boto3.client("s3").list_buckets()["ResponseMetadata"]["HTTPStatusCode"] == 200


def _send(
    cloud: LocalCloud, signing_name: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, str]:
    """A SigV4-signed request to the HTTP endpoint, as an SDK outside the process sends it
    (the SDK in this process is refused before it sends anything)."""
    url = cloud.describe()["endpoint"] + path
    request = AWSRequest(method="POST", url=url, data=body, headers=headers)
    credentials = boto3.Session().get_credentials()
    assert credentials is not None
    SigV4Auth(credentials, signing_name, "us-east-1").add_auth(request)
    try:
        sent = urllib.request.Request(url, body, dict(request.headers), method="POST")  # noqa: S310
        with urllib.request.urlopen(sent) as response:  # noqa: S310 - the cloud's endpoint
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_rule_target_outside_the_scope_is_refused(cloud: LocalCloud) -> None:
    entry = {"Source": "scope.test", "DetailType": "order", "Detail": "{}"}
    events: Any = boto3.client("events")
    assert events.put_events(Entries=[entry])["FailedEntryCount"] == 0
    cloud.deliveries.drain()
    (delivery,) = [d for d in cloud.deliveries.all() if ":kinesis:" in d.target_arn]
    assert delivery.status == "DROPPED", delivery  # no dead-letter queue
    assert delivery.error_code == "NO_PERMISSIONS", delivery
    assert "kinesis:PutRecord" in (delivery.error_message or ""), delivery
    assert "the local cloud does not run Amazon Kinesis" in (delivery.error_message or "")


def test_an_http_request_outside_the_scope_is_refused(cloud: LocalCloud) -> None:
    json_headers = {
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": "Comprehend_20171127.DetectSentiment",
    }
    status, body = _send(
        cloud, "comprehend", "/", b'{"Text": "hi", "LanguageCode": "en"}', json_headers
    )
    assert status == 400
    assert json.loads(body)["__type"] == "AccessDeniedException"
    assert "comprehend:DetectSentiment" in body and "Amazon Comprehend" in body

    form = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
    status, body = _send(cloud, "ec2", "/", b"Action=DescribeInstances&Version=2016-11-15", form)
    assert status == 403
    assert "<Code>UnauthorizedOperation</Code>" in body and "ec2:DescribeInstances" in body

    rest = {"Content-Type": "application/json"}
    status, body = _send(cloud, "bedrock", "/model/m/invoke", b"{}", rest)
    assert status == 403
    assert "bedrock:InvokeModel" in body and "Amazon Bedrock Runtime" in body

    status, body = _send(cloud, "sts", "/", b"Action=GetCallerIdentity&Version=2011-06-15", form)
    assert status == 200, body  # in the scope: moto answers


def test_the_services_of_a_signing_name_are_looked_up_once_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request outside the scope over HTTP (every call of a function in an environment
    process) is matched to botocore's models of its signing name: an index of the signing
    names is made once per process from the models' metadata (the head of each file), and
    only the models of the signing name asked for are loaded, not every model (seconds)."""
    import botocore.session

    from localcloud.features import service_scope

    read: list[str] = []
    get_service_model = botocore.session.Session.get_service_model

    def counted(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        read.append(name)
        return get_service_model(self, name, *args, **kwargs)

    monkeypatch.setattr(botocore.session.Session, "get_service_model", counted)
    service_scope._models.cache_clear()
    service_scope._services_by_signing_name.cache_clear()
    bedrock = {m.service_name for m in service_scope._models("bedrock")}
    assert "bedrock-runtime" in bedrock  # signed as "bedrock"
    assert sorted(read) == sorted(bedrock)  # those models only
    read.clear()
    assert [m.service_name for m in service_scope._models("comprehend")] == ["comprehend"]
    assert read == ["comprehend"]
