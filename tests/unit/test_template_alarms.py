"""Alarms that page: read from the SAM-transformed template, as CloudFormation receives it.

Every alarm notifies the operations topic when it fires and when it clears; every topic is
encrypted with a customer-managed key (rotation on) whose policy lets CloudWatch alarms of
this account publish (the AWS-managed alias/aws/sns key cannot); and every role allowed to
publish to a topic may also use that topic's key, without which its Publish fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from ingest_tools.local_pipeline import ROOT, TEMPLATE
from localcloud.stack import load_template, localize, sam_transform

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    packaged = localize(
        load_template(TEMPLATE), ROOT, lambda path: {"Bucket": "artifacts", "Key": path.name}
    )
    transformed = sam_transform(packaged, region="us-east-1")
    return dict(transformed["Resources"])


def _of_type(resources: dict[str, Any], rtype: str) -> dict[str, dict[str, Any]]:
    return {k: v.get("Properties", {}) for k, v in resources.items() if v["Type"] == rtype}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _statements(role: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for policy in role.get("Policies", []):
        yield from _listed(policy["PolicyDocument"]["Statement"])


def test_every_alarm_notifies_operations_when_it_fires_and_when_it_clears(
    resources: dict[str, Any],
) -> None:
    alarms = _of_type(resources, "AWS::CloudWatch::Alarm")
    assert alarms
    for name, alarm in alarms.items():
        assert {"Ref": "OperationsTopic"} in alarm.get("AlarmActions", []), name
        assert {"Ref": "OperationsTopic"} in alarm.get("OKActions", []), name
        assert alarm.get("ActionsEnabled", True) is not False, name
        assert "ingestctl" in alarm["AlarmDescription"], f"{name}: say what to run"


def test_every_topic_key_lets_cloudwatch_alarms_publish(resources: dict[str, Any]) -> None:
    topics = _of_type(resources, "AWS::SNS::Topic")
    assert topics
    for name, topic in topics.items():
        key_ref = topic["KmsMasterKeyId"]
        assert isinstance(key_ref, dict), f"{name}: alias/aws/sns cannot be used by CloudWatch"
        key_id = key_ref["Fn::GetAtt"][0]
        key = resources[key_id]
        assert key["Type"] == "AWS::KMS::Key"
        assert key["Properties"]["EnableKeyRotation"] is True
        grants = [
            s
            for s in key["Properties"]["KeyPolicy"]["Statement"]
            if s["Effect"] == "Allow"
            and s.get("Principal", {}).get("Service") == "cloudwatch.amazonaws.com"
        ]
        assert len(grants) == 1, f"{key_id}: one grant for CloudWatch alarms"
        (grant,) = grants
        assert set(_listed(grant["Action"])) == {"kms:Decrypt", "kms:GenerateDataKey*"}
        assert grant["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}
        assert ":alarm:" in str(grant["Condition"]["ArnLike"]["aws:SourceArn"])


def test_every_publisher_may_use_the_topic_key(resources: dict[str, Any]) -> None:
    topic_keys = {
        name: props["KmsMasterKeyId"]["Fn::GetAtt"][0]
        for name, props in _of_type(resources, "AWS::SNS::Topic").items()
    }
    publishers = 0
    for role_name, role in _of_type(resources, "AWS::IAM::Role").items():
        statements = list(_statements(role))
        published = {
            topic
            for s in statements
            if s["Effect"] == "Allow" and "sns:Publish" in _listed(s["Action"])
            for topic in topic_keys
            if topic in str(s["Resource"])
        }
        for topic in published:
            publishers += 1
            key = {"Fn::GetAtt": [topic_keys[topic], "Arn"]}
            usable = {
                action
                for s in statements
                if s["Effect"] == "Allow" and key in _listed(s["Resource"])
                for action in _listed(s["Action"])
            }
            assert {"kms:GenerateDataKey*", "kms:Decrypt"} <= usable, f"{role_name} -> {topic}"
    assert publishers >= 3  # the state machine (both topics) and the reconciler


def _dashboard(resources: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The dashboard body with ${...} references replaced by their names, and those names."""
    (board,) = _of_type(resources, "AWS::CloudWatch::Dashboard").values()
    text = board["DashboardBody"]["Fn::Sub"]
    references = set(re.findall(r"\$\{([^}]+)\}", text))
    return json.loads(re.sub(r"\$\{([^}]+)\}", r"\1", text)), references


def test_every_alarm_is_on_the_dashboard(resources: dict[str, Any]) -> None:
    _, references = _dashboard(resources)
    alarms = set(_of_type(resources, "AWS::CloudWatch::Alarm"))
    assert {ref.removesuffix(".Arn") for ref in references if ref.endswith(".Arn")} == alarms


def test_the_cost_per_object_uses_each_functions_memory(resources: dict[str, Any]) -> None:
    """The dashboard's cost expression weighs each function's Duration by its MemorySize."""
    body, _ = _dashboard(resources)
    (cost_widget,) = [
        w for w in body["widgets"] if "cost per object" in w["properties"].get("title", "")
    ]
    rows = cost_widget["properties"]["metrics"]
    expression = next(r[0]["expression"] for r in rows if r[0].get("id") == "cost")
    durations = {
        row[-1]["id"]: row[3] for row in rows if isinstance(row[0], str) and row[1] == "Duration"
    }
    weights = dict(re.findall(r"FILL\((d\w), 0\) \* (\d+)", expression))
    assert set(weights) == set(durations)
    functions = _of_type(resources, "AWS::Lambda::Function")
    for metric_id, function in durations.items():
        assert int(weights[metric_id]) == functions[function]["MemorySize"], function
    assert "0.000025" in expression and "0.0000133334" in expression  # tools/.../cost.py


def test_scheduler_alarms_watch_the_reconcile_schedules_own_group(
    resources: dict[str, Any],
) -> None:
    (schedule,) = _of_type(resources, "AWS::Scheduler::Schedule").values()
    group = schedule["GroupName"]
    assert group == {"Ref": "ReconcileScheduleGroup"}  # not the account's default group
    watched = {
        alarm["MetricName"]: alarm["Dimensions"]
        for alarm in _of_type(resources, "AWS::CloudWatch::Alarm").values()
        if alarm["Namespace"] == "AWS/Scheduler"
    }
    assert set(watched) == {"TargetErrorCount", "InvocationDroppedCount"}
    for dimensions in watched.values():
        assert dimensions == [{"Name": "ScheduleGroup", "Value": group}]
