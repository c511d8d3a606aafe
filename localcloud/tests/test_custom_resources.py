"""Lambda-backed custom resources on the local cloud (features/cloudformation_custom_resources.py,
stack/custom_resources.py): the provider runs in-process and answers on its ResponseURL with
``cfnresponse`` (inline code), ``requests`` or ``urllib``; Data reaches ``Fn::GetAtt``; FAILED,
no response and a timeout fail the deploy with CloudFormation's reasons; UpdateStack sends
Update, DeleteStack and stopping the cloud send Delete.

The published pattern dynamodb-eventbridge-scheduler (serverless-patterns, ``Custom::
TestSchedule``) is deployed unchanged from its copy kept in published/serverless-patterns.
"""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from localcloud.cloud import LocalCloud
from localcloud.stack import StackDeployError

pytestmark = [pytest.mark.e2e]

PATTERN = (
    Path(__file__).parent
    / "published/serverless-patterns/dynamodb-eventbridge-scheduler/template.yaml"
)

# A provider that logs each request (one JSON line in ResourceProperties.Log) and answers with
# cfnresponse as ResourceProperties.Answer says: SUCCESS (Data: Greeting), FAILED, or nothing.
CFNRESPONSE_PROVIDER = """\
import json
import time

import cfnresponse


def handler(event, context):
    props = event["ResourceProperties"]
    with open(props["Log"], "a") as log:
        log.write(json.dumps(event) + "\\n")
    answer = props.get("Answer", "SUCCESS")
    if answer == "SLEEP":
        time.sleep(3)
        return
    if answer == "NOTHING":
        return
    if answer == "FAILED" or (answer == "FAILED_DELETE" and event["RequestType"] == "Delete"):
        cfnresponse.send(event, context, cfnresponse.FAILED, {}, reason="no such thing")
        return
    physical = event.get("PhysicalResourceId") or "thing-" + props["Name"]
    if props.get("Replace") == "true" and event["RequestType"] == "Update":
        physical = physical + "-replaced"
    data = {"Greeting": "hello " + props["Name"] + " x" + props["Count"]}
    cfnresponse.send(event, context, cfnresponse.SUCCESS, data, physicalResourceId=physical)
"""

REQUESTS_PROVIDER = """\
import json
import urllib.request

import requests


def handler(event, context):
    body = {
        "Status": "SUCCESS",
        "PhysicalResourceId": "by-" + event["ResourceProperties"]["Client"],
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "Data": {"Client": event["ResourceProperties"]["Client"]},
    }
    if event["ResourceProperties"]["Client"] == "requests":
        requests.put(event["ResponseURL"], data=json.dumps(body), headers={"content-type": ""})
    else:
        request = urllib.request.Request(
            event["ResponseURL"], data=json.dumps(body).encode(), method="PUT"
        )
        urllib.request.urlopen(request).read()
"""


def _template(
    tmp_path: Path,
    *,
    answer: str = "SUCCESS",
    extra: str = "",
    timeout: int | None = None,
) -> Path:
    service_timeout = f"\n      ServiceTimeout: {timeout}" if timeout else ""
    text = f"""\
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Resources:
  Provider:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      Handler: index.handler
      Timeout: 10
      InlineCode: |
{textwrap.indent(CFNRESPONSE_PROVIDER, " " * 8)}
  Thing:
    Type: Custom::Thing
    Properties:
      ServiceToken: !GetAtt Provider.Arn{service_timeout}
      Log: {tmp_path / "requests.jsonl"}
      Answer: {answer}
      Name: demo
      Count: 3
{extra}
Outputs:
  Greeting:
    Value: !GetAtt Thing.Greeting
  ThingId:
    Value: !Ref Thing
"""
    path = tmp_path / "template.yaml"
    path.write_text(text)
    return path


def _requests(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "requests.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_inline_cfnresponse_data_reaches_outputs(tmp_path: Path) -> None:
    """cfnresponse (inline code), Data read by Fn::GetAtt in an Output and by a resource
    created after it, the physical id its Ref; the request as CloudFormation sends it."""
    parameter = """\
  Dependent:
    Type: AWS::SSM::Parameter
    Properties:
      Name: /custom/greeting
      Type: String
      Value: !GetAtt Thing.Greeting
"""
    with LocalCloud(_template(tmp_path, extra=parameter), stack_name="custom-ok") as cloud:
        assert cloud.outputs["Greeting"] == "hello demo x3"
        assert cloud.outputs["ThingId"] == "thing-demo"
        value = boto3.client("ssm").get_parameter(Name="/custom/greeting")["Parameter"]["Value"]
        assert value == "hello demo x3"
        resources = boto3.client("cloudformation").describe_stack_resources(
            StackName="custom-ok", LogicalResourceId="Thing"
        )["StackResources"]
        assert [(r["ResourceType"], r["PhysicalResourceId"]) for r in resources] == [
            ("Custom::Thing", "thing-demo")
        ]
        (create,) = _requests(tmp_path)
        provider = cloud.functions["Provider"]
    assert create["RequestType"] == "Create"
    assert create["ResourceType"] == "Custom::Thing"
    assert create["LogicalResourceId"] == "Thing"
    assert create["StackId"].startswith("arn:aws:cloudformation:us-east-1:")
    assert create["ResponseURL"].startswith("http://127.0.0.1:")
    assert create["ServiceToken"].endswith(f":function:{provider}")
    assert create["ResourceProperties"]["ServiceToken"] == create["ServiceToken"]
    assert create["ResourceProperties"]["Count"] == "3"  # property values arrive as strings
    assert "PhysicalResourceId" not in create and "OldResourceProperties" not in create


def test_failed_response_fails_the_deploy_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(StackDeployError) as failed:
        LocalCloud(_template(tmp_path, answer="FAILED"), stack_name="custom-failed").start()
    message = str(failed.value)
    assert "failed resource: Thing (Custom::Thing)" in message
    assert (
        "Received response status [FAILED] from custom resource. Message returned: "
        "no such thing (RequestId: " in message
    )


def test_no_response_within_the_service_timeout_fails_the_deploy(tmp_path: Path) -> None:
    """ServiceTimeout (here 1 s; CloudFormation's default is an hour) ends the wait."""
    began = time.monotonic()
    with pytest.raises(StackDeployError) as failed:
        LocalCloud(_template(tmp_path, answer="SLEEP", timeout=1), stack_name="custom-slow").start()
    assert time.monotonic() - began < 10
    message = str(failed.value)
    assert "failed resource: Thing (Custom::Thing)" in message
    assert "CloudFormation did not receive a response from your Custom Resource." in message
    assert "no response within 1 s" in message


def test_a_provider_that_returns_without_responding_fails_at_once(tmp_path: Path) -> None:
    """No response can come once the function has returned: the wait ends (CloudFormation's
    reason, and what happened locally) instead of lasting the ServiceTimeout's hour."""
    began = time.monotonic()
    with pytest.raises(StackDeployError) as failed:
        LocalCloud(_template(tmp_path, answer="NOTHING"), stack_name="custom-mute").start()
    assert time.monotonic() - began < 10
    assert "CloudFormation did not receive a response from your Custom Resource." in str(
        failed.value
    )
    assert "ended without sending a response" in str(failed.value)


def test_stopping_the_cloud_sends_delete(tmp_path: Path) -> None:
    with LocalCloud(_template(tmp_path), stack_name="custom-stop"):
        assert [r["RequestType"] for r in _requests(tmp_path)] == ["Create"]
    create, delete = _requests(tmp_path)
    assert delete["RequestType"] == "Delete"
    assert delete["PhysicalResourceId"] == "thing-demo"
    assert delete["ResourceProperties"] == create["ResourceProperties"]
    assert delete["RequestId"] != create["RequestId"]


def test_update_stack_sends_update_and_delete_stack_sends_delete(tmp_path: Path) -> None:
    with LocalCloud(_template(tmp_path), stack_name="custom-update"):
        cfn = boto3.client("cloudformation")
        body = cfn.get_template(StackName="custom-update")["TemplateBody"]
        template = body if isinstance(body, dict) else json.loads(body)
        template["Resources"]["Thing"]["Properties"]["Name"] = "renamed"
        cfn.update_stack(StackName="custom-update", TemplateBody=json.dumps(template),
                         Capabilities=["CAPABILITY_IAM"])  # fmt: skip
        outputs = cfn.describe_stacks(StackName="custom-update")["Stacks"][0]["Outputs"]
        assert {o["OutputKey"]: o["OutputValue"] for o in outputs}["Greeting"] == (
            "hello renamed x3"
        )
        cfn.delete_stack(StackName="custom-update")
        kinds = [r["RequestType"] for r in _requests(tmp_path)]
        assert kinds == ["Create", "Update", "Delete"]
    _, update, delete = _requests(tmp_path)
    assert update["PhysicalResourceId"] == "thing-demo"
    assert update["OldResourceProperties"]["Name"] == "demo"
    assert update["ResourceProperties"]["Name"] == "renamed"
    assert delete["PhysicalResourceId"] == "thing-demo"
    assert delete["ResourceProperties"]["Name"] == "renamed"
    assert len(_requests(tmp_path)) == 3  # the deleted stack is not deleted again on stop


def test_a_new_physical_id_on_update_is_a_replacement(tmp_path: Path) -> None:
    """The provider answers Update with another PhysicalResourceId: the old resource then gets
    its Delete (with its own id and properties), and stopping deletes the new one."""
    with LocalCloud(_template(tmp_path), stack_name="custom-replace"):
        cfn = boto3.client("cloudformation")
        body = cfn.get_template(StackName="custom-replace")["TemplateBody"]
        template = body if isinstance(body, dict) else json.loads(body)
        template["Resources"]["Thing"]["Properties"]["Replace"] = "true"
        cfn.update_stack(StackName="custom-replace", TemplateBody=json.dumps(template),
                         Capabilities=["CAPABILITY_IAM"])  # fmt: skip
        thing = cfn.describe_stack_resources(StackName="custom-replace", LogicalResourceId="Thing")
        assert thing["StackResources"][0]["PhysicalResourceId"] == "thing-demo-replaced"
    kinds = [(r["RequestType"], r.get("PhysicalResourceId")) for r in _requests(tmp_path)]
    assert kinds == [
        ("Create", None),
        ("Update", "thing-demo"),
        ("Delete", "thing-demo"),
        ("Delete", "thing-demo-replaced"),
    ]
    assert "Replace" not in _requests(tmp_path)[2]["ResourceProperties"]


def test_a_failed_delete_leaves_the_stack_delete_failed(tmp_path: Path) -> None:
    with LocalCloud(_template(tmp_path, answer="FAILED_DELETE"), stack_name="custom-keep"):
        cfn = boto3.client("cloudformation")
        cfn.delete_stack(StackName="custom-keep")
        stack = cfn.describe_stacks(StackName="custom-keep")["Stacks"][0]
        assert stack["StackStatus"] == "DELETE_FAILED"
        events = cfn.describe_stack_events(StackName="custom-keep")["StackEvents"]
        reasons = [e.get("ResourceStatusReason", "") for e in events]
        assert any(
            r.startswith("Thing: Received response status [FAILED] from custom resource.")
            for r in reasons
        )
    # stopping tries once more, logs the failure and stops all the same
    assert [r["RequestType"] for r in _requests(tmp_path)] == ["Create", "Delete", "Delete"]


def test_requests_and_urllib_reach_the_response_url(tmp_path: Path) -> None:
    """Any HTTP client of the handler reaches the ResponseURL; AWS::CloudFormation::
    CustomResource works too. ``requests`` is not in Lambda's runtime: the function's
    requirements.txt brings it, as ``sam build`` would."""
    (tmp_path / "provider").mkdir()
    (tmp_path / "provider" / "http_provider.py").write_text(REQUESTS_PROVIDER)
    (tmp_path / "provider" / "requirements.txt").write_text("requests==2.34.2\n")
    template = tmp_path / "template.yaml"
    template.write_text("""\
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Resources:
  Provider:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      CodeUri: provider/
      Handler: http_provider.handler
  WithRequests:
    Type: AWS::CloudFormation::CustomResource
    Properties:
      ServiceToken: !GetAtt Provider.Arn
      Client: requests
  WithUrllib:
    Type: Custom::Urllib
    Properties:
      ServiceToken: !GetAtt Provider.Arn
      Client: urllib
Outputs:
  ByRequests:
    Value: !GetAtt WithRequests.Client
  ByUrllib:
    Value: !Ref WithUrllib
""")
    with LocalCloud(template, stack_name="custom-http") as cloud:
        assert cloud.outputs == {"ByRequests": "requests", "ByUrllib": "by-urllib"}


def test_published_pattern_dynamodb_eventbridge_scheduler() -> None:
    """The pattern's Custom::TestSchedule puts the test schedule's item into the table while
    the stack is created (cfnresponse, inline code); the README's steps then read it."""
    with LocalCloud(PATTERN, stack_name="sp") as cloud:
        assert cloud.outputs["TableName"] == "ScheduleConfigs"
        item = boto3.client("dynamodb").get_item(
            TableName="ScheduleConfigs", Key={"scheduleId": {"S": "auto-test-schedule"}}
        )["Item"]
        assert item["scheduleExpression"]["S"].startswith("at(")
