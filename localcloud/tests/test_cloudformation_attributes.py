"""What published templates reference, resolved as CloudFormation resolves it: the attributes
each resource type documents (fixes/cloudformation_attributes.py), physical ids of event
buses, Lambda versions and permissions, a topic policy (stack/shims.py) that the IAM layer
evaluates, a SAM AutoPublishAlias, and inline code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from localcloud.cloud import LocalCloud
from localcloud.stack.base import StackDeployError

pytestmark = [pytest.mark.e2e]

TEMPLATE = Path(__file__).parent / "templates" / "cloudformation_attributes" / "template.yaml"


@pytest.fixture
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(TEMPLATE, stack_name="attrs") as running:
        yield running


def test_documented_attributes_resolve(cloud: LocalCloud) -> None:
    out = cloud.outputs
    machine = boto3.client("stepfunctions").describe_state_machine(
        stateMachineArn=out["MachineArn"]
    )
    assert (machine["name"], out["MachineName"]) == (out["MachineArn"].rsplit(":", 1)[1],) * 2
    assert len(out["MachineRevision"]) == 36
    topics = [t["TopicArn"] for t in boto3.client("sns").list_topics()["Topics"]]
    assert out["TopicArn"] in topics
    assert out["TopicArn"].endswith(f":{out['TopicName']}")
    sqs = boto3.client("sqs")
    assert (
        sqs.get_queue_url(QueueName=out["InboxUrl"].rsplit("/", 1)[1])["QueueUrl"]
        == (out["InboxUrl"])
    )
    key = boto3.client("kms").describe_key(KeyId=out["KeyId"])["KeyMetadata"]
    assert key["KeyId"] == out["KeyId"]


def test_physical_ids(cloud: LocalCloud) -> None:
    out = cloud.outputs
    assert out["BusName"] == "orders-bus"
    events = boto3.client("events")
    rules = events.list_rules(EventBusName="orders-bus")["Rules"]
    targets = {
        t["Arn"]
        for rule in rules
        for t in events.list_targets_by_rule(Rule=rule["Name"], EventBusName="orders-bus")[
            "Targets"
        ]
    }
    assert targets == {out["MachineArn"], out["TopicArn"]}  # !Ref Bus, !GetAtt Machine.Arn
    # AutoPublishAlias: version 1 and the alias "live" on it; the alias runs the inline code
    assert out["GreeterVersion"].endswith(":1")
    assert out["GreeterAlias"].endswith(":live")
    answer = boto3.client("lambda").invoke(FunctionName=out["GreeterAlias"], Payload=b"{}")
    assert json.loads(answer["Payload"].read())["greeting"] == "hello"
    resources = boto3.client("cloudformation").describe_stack_resources(StackName="attrs")
    assert all(r.get("PhysicalResourceId") for r in resources["StackResources"])


def test_a_topic_policy_admits_the_rule(cloud: LocalCloud) -> None:
    """EventBridge publishes to the topic because its policy allows events.amazonaws.com; the
    message reaches the queue subscribed to it, and the rule's state machine starts."""
    boto3.client("events").put_events(
        Entries=[
            {
                "Source": "shop",
                "DetailType": "order",
                "Detail": '{"id": 7}',
                "EventBusName": "orders-bus",
            }
        ]
    )
    cloud.settle()
    messages = boto3.client("sqs").receive_message(
        QueueUrl=cloud.outputs["InboxUrl"], WaitTimeSeconds=1
    )["Messages"]
    assert json.loads(messages[0]["Body"])["detail"] == {"id": 7}
    executions = boto3.client("stepfunctions").list_executions(
        stateMachineArn=cloud.outputs["MachineArn"]
    )["executions"]
    assert [e["status"] for e in executions] == ["SUCCEEDED"]


def test_a_topic_policy_for_another_rule_refuses_this_one() -> None:
    """The topic policy replaces the topic's default one: a rule it does not name may not
    publish, and the delivery fails as EventBridge reports it."""
    with LocalCloud(
        TEMPLATE, stack_name="attrs-closed", parameters={"PublishingRule": "other"}
    ) as cloud:
        boto3.client("events").put_events(
            Entries=[
                {
                    "Source": "shop",
                    "DetailType": "order",
                    "Detail": "{}",
                    "EventBusName": "orders-bus",
                }
            ]
        )
        cloud.settle()
        received = boto3.client("sqs").receive_message(QueueUrl=cloud.outputs["InboxUrl"])
        assert "Messages" not in received
        failed = cloud.deliveries.find(lambda d: d.target_arn == cloud.outputs["TopicArn"])
        assert failed and all(d.error_code == "NO_PERMISSIONS" for d in failed)


def test_a_reference_to_nothing_is_refused_as_cloudformation_refuses_it(tmp_path: Path) -> None:
    """SAM names an AutoPublishAlias version GreeterVersion<hash>: ``!Ref GreeterVersion``
    names nothing, and CloudFormation says so (moto raised a KeyError from DescribeStacks)."""
    source = TEMPLATE.read_text().replace("!Ref Greeter.Version", "!Ref GreeterVersion")
    (tmp_path / "template.yaml").write_text(source)
    with (
        pytest.raises(
            StackDeployError,
            match=r"Unresolved resource dependencies "
            r"\[GreeterVersion\] in the Outputs block",
        ),
        LocalCloud(tmp_path / "template.yaml", stack_name="attrs-bad-ref"),
    ):
        pass
