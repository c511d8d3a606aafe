"""What AWS refuses, the local cloud refuses: one statement removed from template.yaml, and
the refusal a user would meet on their first deploy, classified and paged as on AWS.

Each test deploys a copy of the real template with one grant removed (an identity statement,
a SAM policy template, a queue, bucket or key policy statement) and asserts the end state a
user sees: the execution's path and error, the state record, the SNS message, the dead
letter that is there or lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.cloudwatch.models import cloudwatch_backends

from ingest_tools.local_pipeline import Pipeline
from localcloud.cloud import LocalCloud
from localcloud.stack import StackDeployError
from tests.support import role_allowing, sample_file, template_copy

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")
BAD = sample_file("orders-bad-values.csv")
Edit = Callable[[dict[str, Any]], None]


def without_sid(resource: str, sid: str) -> Edit:
    """Remove the statement ``sid`` from ``resource``'s Policies / PolicyDocument / KeyPolicy."""

    def edit(template: dict[str, Any]) -> None:
        props = template["Resources"][resource]["Properties"]
        documents = [p for p in props.get("Policies", []) if "Statement" in p]
        documents += [props[k] for k in ("PolicyDocument", "KeyPolicy") if k in props]
        found = 0
        for document in documents:
            kept = [s for s in document["Statement"] if s.get("Sid") != sid]
            found += len(document["Statement"]) - len(kept)
            document["Statement"] = kept
        assert found == 1, f"{resource} has no statement {sid}"

    return edit


def without_policy_template(resource: str, name: str, argument: str = "") -> Edit:
    def edit(template: dict[str, Any]) -> None:
        policies = template["Resources"][resource]["Properties"]["Policies"]
        kept = [p for p in policies if not (name in p and argument in json.dumps(p))]
        assert len(kept) == len(policies) - 1, f"{resource}: no single {name} {argument}"
        template["Resources"][resource]["Properties"]["Policies"] = kept

    return edit


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    return pipeline


@pytest.fixture
def deploy(tmp_path: Path) -> Iterator[Callable[..., Pipeline]]:
    clouds: list[LocalCloud] = []

    def start(edit: Edit | None = None, **kwargs: Any) -> Pipeline:
        cloud = LocalCloud(template_copy(tmp_path, edit), **kwargs).start()
        clouds.append(cloud)
        return Pipeline(cloud)

    yield start
    for cloud in clouds:
        cloud.stop()


def test_a_function_without_its_read_grant_is_refused(deploy: Callable[..., Pipeline]) -> None:
    """ProcessFunction's ReadIncoming statement removed: its GetObject is refused with S3's
    AccessDenied, which the pipeline classifies CONFIGURATION, records and pages."""
    p = deploy(without_sid("ProcessFunction", "ReadIncoming"))
    key = "incoming/orders/no-read.csv"
    version, run = p.ingest(key, GOOD)

    assert run.status == "FAILED"
    assert run.path[-4:] == [
        "DescribeConfigurationFailure",
        "RecordConfigurationFailure",
        "NotifyOperations",
        "FailExecution",
    ]
    record = p.record(key, version)
    assert record is not None
    assert (record["status"], record["error_class"], record["error_code"]) == (
        "FAILED",
        "CONFIGURATION",
        "ACCESS_DENIED",
    )
    role = p.stack.resources["ProcessFunctionRole"]
    assert (
        f"assumed-role/{role}/{p.functions['ProcessFunction']} is not authorized to perform: "
        f's3:GetObjectVersion on resource: "arn:aws:s3:::{p.bucket}/{key}" because no '
        "identity-based policy allows the s3:GetObjectVersion action"
    ) in record["error_cause"]
    [page] = p.notifications("OperationsTopicArn")
    assert page["attributes"]["errorClass"] == "CONFIGURATION"
    assert "AccessDenied" in page["message"]["cause"]


def test_a_state_machine_without_its_table_grant_fails_its_claim(
    deploy: Callable[..., Pipeline],
) -> None:
    """The state machine's DynamoDBWritePolicy (a SAM policy template) removed: ClaimObject's
    UpdateItem fails with DynamoDB.AccessDeniedException, classified CONFIGURATION, paged."""
    p = deploy(without_policy_template("PipelineStateMachine", "DynamoDBWritePolicy"))
    key = "incoming/orders/no-claim.csv"
    version, run = p.ingest(key, GOOD)

    assert run.status == "FAILED"
    assert run.path[:2] == ["ClaimObject", "ClassifyError"]
    assert run.error == "DynamoDB.AccessDeniedException"
    role = p.stack.resources["PipelineStateMachineRole"]  # the execution's role, not the rule's
    assert f"assumed-role/{role}/" in (run.cause or "")
    assert "is not authorized to perform: dynamodb:UpdateItem on resource: " in (run.cause or "")
    assert p.record(key, version) is None  # nothing could be written
    [page] = p.notifications("OperationsTopicArn")
    assert page["message"]["errorClass"] == "CONFIGURATION"
    assert page["message"]["error"] == "DynamoDB.AccessDeniedException"


def test_a_topic_key_grant_removed_silences_the_data_quality_report(
    deploy: Callable[..., Pipeline],
) -> None:
    """The state machine's EncryptNotifications (kms on the topics' key) removed: publishing
    to the encrypted topic fails with SNS's KMSAccessDenied; the file is still quarantined."""
    p = deploy(without_sid("PipelineStateMachine", "EncryptNotifications"))
    key = "incoming/orders/no-key.csv"
    version, run = p.ingest(key, BAD)

    assert run.status == "FAILED"
    assert "NotifyDataQuality" in run.path
    failed = [e for e in run.history if e["type"] == "TaskFailed"]
    assert failed[-1]["taskFailedEventDetails"]["error"] == "SNS.KMSAccessDeniedException"
    # SNS names no action or key, as published (tests/conformance/samples/access-denied-*);
    # the local cloud's decision log says which
    assert (
        "(Service: AWSKMS; Status Code: 400; Error Code: AccessDeniedException;"
        in (failed[-1]["taskFailedEventDetails"]["cause"])
    )
    denied = [d for d in p.cloud.runtime.authorizer.decisions if not d["allowed"]]
    assert [(d["action"], d["reason"]) for d in denied] == [
        ("kms:GenerateDataKey", "no-identity-allow")
    ]
    assert p.notifications("DataQualityTopicArn") == []
    record = p.record(key, version)
    assert record is not None and record["error_class"] == "PERMANENT"


def test_a_queue_policy_without_the_rule_loses_the_dead_letter(
    deploy: Callable[..., Pipeline],
) -> None:
    """The rule DLQ's AllowObjectCreatedRuleOnly removed: EventBridge cannot write the failed
    delivery to the queue, so the event is lost (as on AWS), and the delivery says why."""
    p = deploy(without_sid("EventDeliveryDLQPolicy", "AllowObjectCreatedRuleOnly"))
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", rule="ObjectCreated")
    p.put("incoming/orders/lost.csv", GOOD)
    delivery = p.delivery("incoming/orders/lost.csv")

    assert delivery.status == "DROPPED"
    assert "sqs:sendmessage" in (delivery.error_message or "")
    assert "no resource-based policy allows" in (delivery.error_message or "")
    sqs = boto3.client("sqs")
    queue = p.stack.outputs["EventDeliveryDLQUrl"]
    assert sqs.receive_message(QueueUrl=queue).get("Messages", []) == []


def test_the_template_queue_policy_admits_the_rules_dead_letter(p: Pipeline) -> None:
    """The same failed delivery with the template as it is: the event waits in the DLQ."""
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", rule="ObjectCreated")
    p.put("incoming/orders/kept.csv", GOOD)
    assert p.delivery("incoming/orders/kept.csv").status == "DEAD_LETTERED"


def test_a_key_policy_without_cloudwatch_leaves_the_alarm_unheard(
    deploy: Callable[..., Pipeline],
) -> None:
    """The key's CloudWatchAlarmsPublishToTheTopics removed: the alarm fires but its action
    fails, recorded in the alarm's history as CloudWatch records it; nobody is paged."""
    p = deploy(without_sid("NotificationKey", "CloudWatchAlarmsPublishToTheTopics"))
    name = p.stack.resources["DeadLetterAlarm"]
    boto3.client("cloudwatch").set_alarm_state(
        AlarmName=name, StateValue="ALARM", StateReason="Threshold Crossed"
    )

    assert p.notifications("OperationsTopicArn") == []
    alarm = cloudwatch_backends[p.cloud.account_id][p.cloud.region].alarms[name]
    actions = [h for h in alarm.history if h[0] == "Action"]
    assert len(actions) == 1
    assert actions[0][1].startswith(
        f"Failed to execute action {p.stack.outputs['OperationsTopicArn']}"
    )
    assert 'Received error: "null (Service: AWSKMS; Status Code: 400;' in actions[0][1]
    denied = [d for d in p.cloud.runtime.authorizer.decisions if not d["allowed"]]
    assert [(d["principal"], d["action"], d["reason"]) for d in denied] == [
        ("cloudwatch.amazonaws.com", "kms:GenerateDataKey", "key-policy")
    ]


def test_a_tls_only_bucket_accepts_https_writes(p: Pipeline) -> None:
    """The bucket's DenyInsecureTransport does not apply to HTTPS (every SDK client here)."""
    p.s3.put_object(Bucket=p.bucket, Key="elsewhere/https.csv", Body=GOOD)
    assert p.read("elsewhere/https.csv") == GOOD


def test_plain_http_is_refused_by_every_tls_only_policy(p: Pipeline) -> None:
    """Over plain HTTP, aws:SecureTransport is false: each bucket's and queue's
    DenyInsecureTransport refuses even the administrator, with the explicit-deny message."""
    s3, sqs = boto3.client("s3", use_ssl=False), boto3.client("sqs", use_ssl=False)
    calls = {
        bucket: lambda b=p.stack.resources[bucket]: s3.put_object(Bucket=b, Key="k", Body=b"x")
        for bucket in ("IngestBucket", "AccessLogsBucket")
    }
    for queue in ("EventDeliveryDLQ", "ReconcileQueue", "ReconcileDLQ", "ReconcileScheduleDLQ"):
        url = p.stack.resources[queue]
        calls[queue] = lambda u=url: sqs.send_message(QueueUrl=u, MessageBody="x")
    for name, call in calls.items():
        with pytest.raises(ClientError) as refused:
            call()
        error = refused.value.response["Error"]
        assert (error["Code"], refused.value.response["ResponseMetadata"]["HTTPStatusCode"]) == (
            "AccessDenied",
            403,
        ), name
        assert error["Message"].endswith("with an explicit deny in a resource-based policy"), name


def test_the_branches_of_a_parallel_state_act_as_the_state_machines_role(p: Pipeline) -> None:
    """moto runs each branch on a thread of its own: it calls AWS with the execution's role
    (here: no S3 access), not as the administrator."""
    p.s3.put_object(Bucket=p.bucket, Key="elsewhere/x.csv", Body=GOOD)
    read = {
        "Type": "Task",
        "Resource": "arn:aws:states:::aws-sdk:s3:getObject",
        "Parameters": {"Bucket": p.bucket, "Key": "elsewhere/x.csv"},
        "End": True,
    }
    branch = {"StartAt": "Read", "States": {"Read": read}}
    definition = {"StartAt": "Both", "States": {
        "Both": {"Type": "Parallel", "Branches": [branch, branch], "End": True}}}  # fmt: skip
    machine = p.sfn.create_state_machine(
        name="branches-read",
        definition=json.dumps(definition),
        roleArn=role_allowing("branches-read", ["states:StartExecution"]),
    )["stateMachineArn"]
    arn = p.sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]
    run = p.wait(arn)
    assert (run.status, run.error) == ("FAILED", "S3.AccessDeniedException"), run.cause


def test_iam_off_runs_the_template_without_its_grants(deploy: Callable[..., Pipeline]) -> None:
    """``LocalCloud(iam=False)`` (LOCALCLOUD_IAM=off): nothing is authorized, the old way."""
    p = deploy(without_sid("ProcessFunction", "ReadIncoming"), iam=False)
    _, run = p.ingest("incoming/orders/unchecked.csv", GOOD)
    assert run.status == "SUCCEEDED"
    assert p.cloud.runtime.authorizer.decisions == []


def test_a_rule_whose_role_cannot_start_the_workflow_dead_letters_no_permissions(
    p: Pipeline,
) -> None:
    """The rule target's role loses states:StartExecution (its only policy deleted): the
    delivery fails with NO_PERMISSIONS, is not retried, and waits in the rule's DLQ with the
    attributes EventBridge sets."""
    iam = boto3.client("iam")
    role = p.stack.resources["PipelineStateMachineObjectCreatedRole"]
    for name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        iam.delete_role_policy(RoleName=role, PolicyName=name)

    p.put("incoming/orders/not-started.csv", GOOD)
    delivery = p.delivery("incoming/orders/not-started.csv")

    assert (delivery.status, delivery.error_code, delivery.attempts) == (
        "DEAD_LETTERED",
        "NO_PERMISSIONS",
        1,
    )
    [message] = boto3.client("sqs").receive_message(
        QueueUrl=p.stack.outputs["EventDeliveryDLQUrl"], MessageAttributeNames=["All"]
    )["Messages"]
    attributes = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
    assert attributes["ERROR_CODE"] == "NO_PERMISSIONS"
    assert f"assumed-role/{role}/" in attributes["ERROR_MESSAGE"]
    assert "states:StartExecution" in attributes["ERROR_MESSAGE"]
    assert (
        json.loads(message["Body"])["detail"]["object"]["key"] == "incoming/orders/not-started.csv"
    )


def test_a_workflow_whose_role_cannot_deliver_its_logs_is_not_created(tmp_path: Path) -> None:
    """DeliverExecutionLogs removed: Step Functions cannot set up the state machine's log
    delivery with its role, so the stack fails to create, as CloudFormation reports it."""
    template = template_copy(tmp_path, without_sid("PipelineStateMachine", "DeliverExecutionLogs"))
    with pytest.raises(StackDeployError) as failed:
        LocalCloud(template).start()
    assert "PipelineStateMachine (AWS::StepFunctions::StateMachine) CREATE_FAILED" in str(
        failed.value
    )
    assert "The state machine IAM Role is not authorized to access the Log Destination" in str(
        failed.value
    )
