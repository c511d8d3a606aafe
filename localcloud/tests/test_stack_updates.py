"""UpdateStack as CloudFormation makes it: a SAM template transformed server-side, resources
created and updated in dependency order, retained resources kept, inline code updated; and the
functions then run the code the update deployed (a published version, the code it was
published with)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

SAM = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Greeter:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.13
      Handler: index.handler
      AutoPublishAlias: live
      InlineCode: |
        def handler(event, context):
            return {"says": "one", "version": context.function_version}
Outputs:
  Name: {Value: !Ref Greeter}
"""
PLAIN = """\
AWSTemplateFormatVersion: "2010-09-09"
Resources:
  Role:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Statement: [{Effect: Allow, Principal: {Service: lambda.amazonaws.com},
                     Action: sts:AssumeRole}]
  Plain:
    Type: AWS::Lambda::Function
    Properties:
      Runtime: python3.13
      Handler: index.handler
      Role: !GetAtt Role.Arn
      Code:
        ZipFile: |
          def handler(event, context):
              return "one"
"""


@pytest.fixture
def sam(tmp_path: Path) -> Iterator[LocalCloud]:
    (tmp_path / "template.yaml").write_text(SAM)
    with LocalCloud(tmp_path / "template.yaml", stack_name="updated") as cloud:
        yield cloud


def invoke(function: str, qualifier: str = "$LATEST") -> object:
    reply = boto3.client("lambda").invoke(FunctionName=function, Qualifier=qualifier)
    assert "FunctionError" not in reply, reply
    return json.loads(reply["Payload"].read())


def update(stack: str, body: str) -> None:
    boto3.client("cloudformation").update_stack(
        StackName=stack, TemplateBody=body, Capabilities=["CAPABILITY_IAM"]
    )


def test_a_sam_update_runs_the_new_code(sam: LocalCloud) -> None:
    function = sam.functions["Greeter"]
    assert invoke(function) == {"says": "one", "version": "$LATEST"}
    changed = SAM.replace('"one"', '"two"') + "  Alias: {Value: !Ref GreeterAliaslive}\n"
    update("updated", changed)
    assert invoke(function) == {"says": "two", "version": "$LATEST"}
    assert sam.outputs["Alias"].endswith(f"function:{function}:live")  # the stack, refreshed
    stack = boto3.client("cloudformation").describe_stacks(StackName="updated")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"


def test_a_new_version_publishes_the_updated_code(sam: LocalCloud) -> None:
    function = sam.functions["Greeter"]
    update("updated", SAM.replace('"one"', '"two"'))
    lam = boto3.client("lambda")
    assert lam.get_alias(FunctionName=function, Name="live")["FunctionVersion"] == "2"
    latest = lam.get_function(FunctionName=function)["Configuration"]["CodeSha256"]
    second = lam.get_function(FunctionName=function, Qualifier="2")["Configuration"]
    assert second["CodeSha256"] == latest
    assert invoke(function, "live") == {"says": "two", "version": "2"}


def test_a_retained_version_outlives_the_update(sam: LocalCloud) -> None:
    function = sam.functions["Greeter"]
    update("updated", SAM.replace('"one"', '"two"'))
    versions = boto3.client("lambda").list_versions_by_function(FunctionName=function)
    assert [v["Version"] for v in versions["Versions"]] == ["$LATEST", "1", "2"]
    assert invoke(function, "1") == {"says": "one", "version": "1"}  # its own code
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        invoke(function, "3")


def test_a_local_code_uri_is_refused_in_a_template_sent_to_cloudformation(
    sam: LocalCloud,
) -> None:
    local = SAM.split("      InlineCode:", maxsplit=1)[0] + "      CodeUri: src/\n"
    with pytest.raises(ClientError, match="ValidationError") as refused:
        update("updated", local)
    assert (
        "Greeter.CodeUri 'src/': a template sent to CloudFormation names its code by an S3 URI"
        in str(refused.value)
    )
    assert invoke(sam.functions["Greeter"]) == {"says": "one", "version": "$LATEST"}


def test_inline_code_changes_in_an_update(tmp_path: Path) -> None:
    (tmp_path / "template.yaml").write_text(PLAIN)
    with LocalCloud(tmp_path / "template.yaml", stack_name="plain") as cloud:
        function = cloud.functions["Plain"]
        assert invoke(function) == "one"
        update("plain", PLAIN.replace('"one"', '"two"'))
        assert invoke(function) == "two"


def test_a_retained_resource_outlives_the_update(tmp_path: Path) -> None:
    queues = PLAIN + (
        "  Kept:\n    Type: AWS::SQS::Queue\n    DeletionPolicy: Retain\n"
        "  Gone:\n    Type: AWS::SQS::Queue\n"
    )
    (tmp_path / "template.yaml").write_text(queues)
    with LocalCloud(tmp_path / "template.yaml", stack_name="queues") as cloud:
        kept, gone = cloud.stack.resources["Kept"], cloud.stack.resources["Gone"]  # type: ignore[union-attr]
        update("queues", PLAIN)
        urls = boto3.client("sqs").list_queues().get("QueueUrls", [])
        assert kept in urls and gone not in urls
        assert set(cloud.stack.resources) == {"Role", "Plain"}  # type: ignore[union-attr]


def test_code_in_s3_runs_as_deployed(sam: LocalCloud) -> None:
    """What sam package uploads (a zip in S3, CodeUri s3://...) is the code that runs."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("app.py", "def handler(event, context):\n    return {'from': 's3'}\n")
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="artifacts")
    s3.put_object(Bucket="artifacts", Key="greeter.zip", Body=archive.getvalue())
    packaged = SAM.split("      InlineCode:", maxsplit=1)[0].replace("index.handler", "app.handler")
    update("updated", packaged + "      CodeUri: s3://artifacts/greeter.zip\n")
    assert invoke(sam.functions["Greeter"]) == {"from": "s3"}
    with pytest.raises(ClientError, match="S3 Error Code: NoSuchKey"):
        update("updated", packaged + "      CodeUri: s3://artifacts/missing.zip\n")


MACHINE = """\
AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  Kind: {Type: String, Default: STANDARD}
  Say: {Type: String, Default: one}
Resources:
  Machine:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      StateMachineType: !Ref Kind
      RoleArn: !GetAtt Runner.Arn
      Definition:
        StartAt: Say
        States: {Say: {Type: Pass, Result: {said: !Ref Say}, End: true}}
  Runner:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Statement: [{Effect: Allow, Principal: {Service: states.amazonaws.com},
                     Action: sts:AssumeRole}]
  Starter:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Statement: [{Effect: Allow, Principal: {Service: events.amazonaws.com},
                     Action: sts:AssumeRole}]
      Policies:
        - PolicyName: start
          PolicyDocument:
            Statement: [{Effect: Allow, Action: states:StartExecution, Resource: !Ref Machine}]
  OnPing:
    Type: AWS::Events::Rule
    Properties:
      EventPattern: {source: [ping]}
      Targets: [{Arn: !Ref Machine, Id: machine, RoleArn: !GetAtt Starter.Arn}]
"""


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[LocalCloud]:
    (tmp_path / "template.yaml").write_text(MACHINE)
    with LocalCloud(tmp_path / "template.yaml", stack_name="machine") as cloud:
        yield cloud


def test_a_state_machine_is_updated_in_place(machine: LocalCloud) -> None:
    arn = machine.stack.resources["Machine"]  # type: ignore[union-attr]
    assert machine.update({"Say": "two"}) == "UPDATE_COMPLETE"
    assert machine.stack.resources["Machine"] == arn  # type: ignore[union-attr]
    sfn = boto3.client("stepfunctions")
    run = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    machine.settle()
    assert json.loads(sfn.describe_execution(executionArn=run)["output"]) == {"said": "two"}


def test_a_replaced_resource_is_named_anew_by_what_references_it(machine: LocalCloud) -> None:
    old = machine.stack.resources["Machine"]  # type: ignore[union-attr]
    assert machine.update({"Kind": "EXPRESS"}) == "UPDATE_COMPLETE"
    new = machine.stack.resources["Machine"]  # type: ignore[union-attr]
    sfn = boto3.client("stepfunctions")
    assert new != old and sfn.describe_state_machine(stateMachineArn=new)["type"] == "EXPRESS"
    with pytest.raises(ClientError, match="StateMachineDoesNotExist"):
        sfn.describe_state_machine(stateMachineArn=old)
    rule = machine.stack.resources["OnPing"]  # type: ignore[union-attr]
    (target,) = boto3.client("events").list_targets_by_rule(Rule=rule)["Targets"]
    assert target["Arn"] == new
    role = machine.stack.resources["Starter"]  # type: ignore[union-attr]
    policy = boto3.client("iam").get_role_policy(RoleName=role, PolicyName="start")
    assert policy["PolicyDocument"]["Statement"][0]["Resource"] == new


def test_a_named_machine_that_must_be_replaced_rolls_back(tmp_path: Path) -> None:
    named = MACHINE.replace(
        "      StateMachineType:", "      StateMachineName: fixed\n      StateMachineType:"
    )
    (tmp_path / "template.yaml").write_text(named)
    with LocalCloud(tmp_path / "template.yaml", stack_name="named") as cloud:
        assert cloud.update({"Kind": "EXPRESS"}) == "UPDATE_ROLLBACK_COMPLETE"
        sfn = boto3.client("stepfunctions")
        arn = cloud.stack.resources["Machine"]  # type: ignore[union-attr]
        assert sfn.describe_state_machine(stateMachineArn=arn)["type"] == "STANDARD"
        events = boto3.client("cloudformation").describe_stack_events(StackName="named")
        reasons = " ".join(e.get("ResourceStatusReason", "") for e in events["StackEvents"])
        assert "custom-named resource requires replacing" in reasons


SSM = """\
AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  Layer: {Type: "AWS::SSM::Parameter::Value<String>", Default: /team/layer}
  Stage: {Type: String, Default: dev}
Resources:
  Topic: {Type: AWS::SNS::Topic, Properties: {TopicName: !Sub "t-${Stage}"}}
Outputs:
  Layer: {Value: !Ref Layer}
"""


def test_an_ssm_parameter_kept_by_an_update_is_read_again(sam: LocalCloud) -> None:
    """As ``sam deploy`` updates a stack: UsePreviousValue for the parameters it does not
    override. The SSM parameter's name is kept, and read again (its new value)."""
    ssm, cfn = boto3.client("ssm"), boto3.client("cloudformation")
    ssm.put_parameter(Name="/team/layer", Value="v1", Type="String")
    cfn.create_stack(StackName="ssm", TemplateBody=SSM)
    (layer, _) = sorted(cfn.describe_stacks(StackName="ssm")["Stacks"][0]["Parameters"],
                        key=lambda p: p["ParameterKey"])  # fmt: skip
    assert layer == {"ParameterKey": "Layer", "ParameterValue": "/team/layer",
                     "ResolvedValue": "v1"}  # fmt: skip

    ssm.put_parameter(Name="/team/layer", Value="v2", Type="String", Overwrite=True)
    cfn.update_stack(StackName="ssm", TemplateBody=SSM, Parameters=[
        {"ParameterKey": "Layer", "UsePreviousValue": True},
        {"ParameterKey": "Stage", "ParameterValue": "prod"}])  # fmt: skip
    stack = cfn.describe_stacks(StackName="ssm")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    assert stack["Outputs"][0]["OutputValue"] == "v2"


TAGGED = """\
AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  Team: {Type: String, Default: a}
Resources:
  Box:
    Type: AWS::S3::Bucket
    Properties: {Tags: [{Key: team, Value: !Ref Team}]}
Outputs:
  Box: {Value: !Ref Box}
"""


def test_a_generated_name_bucket_has_its_tags_updated(sam: LocalCloud) -> None:
    cfn = boto3.client("cloudformation")
    cfn.create_stack(StackName="tagged", TemplateBody=TAGGED)
    cfn.update_stack(StackName="tagged", TemplateBody=TAGGED,
                     Parameters=[{"ParameterKey": "Team", "ParameterValue": "b"}])  # fmt: skip
    stack = cfn.describe_stacks(StackName="tagged")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    tags = boto3.client("s3").get_bucket_tagging(Bucket=stack["Outputs"][0]["OutputValue"])
    assert {"Key": "team", "Value": "b"} in tags["TagSet"]


CONDITIONAL = """\
AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  Email: {Type: String, Default: ""}
  Stage: {Type: String, Default: dev}
Conditions:
  HasEmail: !Not [!Equals [!Ref Email, ""]]
Resources:
  Topic: {Type: AWS::SNS::Topic, Properties: {TopicName: !Sub "alerts-${Stage}"}}
  Mail:
    Type: AWS::SNS::Subscription
    Condition: HasEmail
    Properties: {TopicArn: !Ref Topic, Protocol: email, Endpoint: !Ref Email}
"""


def test_a_resource_of_a_false_condition_is_left_out_of_an_update(sam: LocalCloud) -> None:
    cfn, sns = boto3.client("cloudformation"), boto3.client("sns")

    def subscriptions() -> list[str]:
        return [s["Endpoint"] for s in sns.list_subscriptions()["Subscriptions"]]

    def update(**values: str) -> str:
        cfn.update_stack(StackName="cond", TemplateBody=CONDITIONAL, Parameters=[
            {"ParameterKey": k, "ParameterValue": v} for k, v in values.items()])  # fmt: skip
        return str(cfn.describe_stacks(StackName="cond")["Stacks"][0]["StackStatus"])

    cfn.create_stack(StackName="cond", TemplateBody=CONDITIONAL)
    assert update(Email="", Stage="prod") == "UPDATE_COMPLETE"
    assert "ops@example.com" not in subscriptions()
    assert update(Email="ops@example.com", Stage="prod") == "UPDATE_COMPLETE"
    assert "ops@example.com" in subscriptions()
    assert update(Email="", Stage="prod") == "UPDATE_COMPLETE"
    assert "ops@example.com" not in subscriptions()


def test_a_stack_is_deleted_dependents_first(sam: LocalCloud) -> None:
    """Six queues with their policies (moto deleted in any order: a policy after its queue
    failed the DeleteStack)."""
    pairs = "".join(
        f"  Q{i}: {{Type: AWS::SQS::Queue}}\n"
        f"  P{i}:\n    Type: AWS::SQS::QueuePolicy\n    Properties:\n"
        f"      Queues: [!Ref Q{i}]\n      PolicyDocument: {{Statement: [{{Effect: Allow, "
        f"Principal: {{Service: sns.amazonaws.com}}, Action: 'sqs:SendMessage', "
        f"Resource: !GetAtt Q{i}.Arn}}]}}\n"
        for i in range(6)
    )
    cfn = boto3.client("cloudformation")
    made = cfn.create_change_set(
        StackName="pairs",
        ChangeSetName="c",
        ChangeSetType="CREATE",
        TemplateBody=f"Resources:\n{pairs}",
    )  # as sam deploy
    cfn.execute_change_set(ChangeSetName=made["Id"])
    cfn.delete_stack(StackName="pairs")
    (summary,) = [s for s in cfn.list_stacks()["StackSummaries"] if s["StackName"] == "pairs"]
    assert summary["StackStatus"] == "DELETE_COMPLETE", summary
    assert not [u for u in boto3.client("sqs").list_queues().get("QueueUrls", []) if "pairs" in u]
