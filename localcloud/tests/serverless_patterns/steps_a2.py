"""The README steps of more serverless-patterns (as steps_a.py; split for length)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud
from serverless_patterns import Pattern, Steps, function_log, wait_for
from serverless_patterns.steps_a import (
    _ended_executions,
    _finished,
    _fire,
    _function_error,
    _notifications,
    _physical,
    _receive_all,
    _states_entered,
)


def eventbridge_schedule_to_sqs_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: the schedule sends its message to the queue (every 5 minutes; fired here):
    the queue's ApproximateNumberOfMessagesVisible grows, and the message is the schedule's
    input."""
    sqs = boto3.client("sqs")
    url = sqs.get_queue_url(QueueName="EventBridgeTargetQueue")["QueueUrl"]
    fired = _fire(cloud, "SqsSendMessageSchedule")
    assert fired.status == "DELIVERED", fired
    visible = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]["ApproximateNumberOfMessages"]
    assert visible == "1"
    (message,) = _receive_all(url)
    assert message["Body"] == "This message was sent using EventBridge Scheduler!"


def eventbridge_scheduled_lambda(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: the function's logs show a new ``Hello World`` every minute (a
    ``Schedule: rate(1 minute)`` event: an EventBridge rule with a schedule expression). The
    rule is fired for two minutes instead of waiting: two runs, each its Scheduled Event."""
    assert cloud.schedules is not None
    function = cloud.functions["ScheduledFunction"]
    rule = _physical(cloud, "ScheduledFunctionScheduledFunction")
    start = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.UTC)
    for minute in range(2):
        (fired,) = cloud.schedules.fire_rule(
            rule, scheduled_time=start + dt.timedelta(minutes=minute)
        )
        assert fired.status == "DELIVERED", fired
    runs = _finished(cloud, function, 2)
    assert [run.status for run in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert all(run.response is True for run in runs)
    events = [json.loads(run.payload) for run in runs]
    assert {e["detail-type"] for e in events} == {"Scheduled Event"}
    assert sorted(e["time"] for e in events) == ["2026-11-21T10:00:00Z", "2026-11-21T10:01:00Z"]
    assert function_log(function) == ["Hello World", "Hello World"]  # its logs


def _ec2_refused() -> None:
    """The README's launch (console or ``aws ec2 run-instances``) fails as AWS fails an
    identity without access to EC2, naming the service: EC2 is outside the local cloud's
    scope, so the test plays the events EC2 would send (``LocalCloud.emit``)."""
    with pytest.raises(ClientError) as refused:
        boto3.client("ec2").run_instances(ImageId="ami-12345678", MinCount=1, MaxCount=1)
    assert refused.value.response["Error"]["Code"] == "UnauthorizedOperation"
    assert "Amazon EC2" in str(refused.value)


def _ec2_state(cloud: LocalCloud, instance: str, state: str) -> None:
    """EC2's "EC2 Instance State-change Notification" for ``instance`` (its documented shape)."""
    arn = f"arn:aws:ec2:{cloud.region}:{cloud.account_id}:instance/{instance}"
    detail = {"instance-id": instance, "state": state}
    cloud.emit("aws.ec2", "EC2 Instance State-change Notification", detail, [arn])


def eventbridge_sfn(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: launch an EC2 instance: an execution goes to "It's Running"; stop it: a
    second one to "It's Stopped"; terminate it: a third to "It's Gone". The launch is
    refused naming EC2 (out of scope); EC2's three state-change events are emitted."""
    _ec2_refused()
    machine = cloud.outputs["EC2StateWatcherArn"]
    branches = []
    for count, state in enumerate(("running", "stopped", "terminated"), 1):
        _ec2_state(cloud, "i-0123456789abcdef0", state)
        cloud.deliveries.drain()
        newest = _ended_executions(machine, count)[0]
        assert newest["status"] == "SUCCEEDED", newest
        branches.append(_states_entered(newest["executionArn"])[-1])
    assert branches == ["It's Running", "It's Stopped", "It's Gone"]


def eventbridge_sns(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: subscribe an email-json endpoint to the topic, ``aws events put-events
    --entries file://event.json``: the event is delivered to the subscriber, as the README's
    example payload shows (the EventBridge event as the notification's Message)."""
    sns = boto3.client("sns")
    topic = cloud.outputs["MySnsTopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="email-json", Endpoint="someone@example.com")
    entries = json.loads((pattern.dir / "event.json").read_text())
    out = boto3.client("events").put_events(Entries=entries)
    assert out["FailedEntryCount"] == 0, out
    cloud.deliveries.drain()
    (message, _), *rest = wait_for(lambda: _notifications(cloud, topic), "the notification")
    assert not rest
    event = json.loads(message)
    assert event["source"] == "demo.cli"
    assert event["detail-type"] == "transaction"
    assert event["detail"] == {"msg": "test"}
    assert event["account"] == cloud.account_id
    assert event["id"] == out["Entries"][0]["EventId"]


def eventbridge_sns_lambda(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: start or stop an EC2 instance; the function's logs show the SNS event whose
    message is the EC2 state-change event. The start is refused naming EC2 (out of scope);
    the event EC2 sends is emitted."""
    _ec2_refused()
    _ec2_state(cloud, "i-0123456789abcdef0", "pending")
    cloud.deliveries.drain()
    (run,) = _finished(cloud, "LambdaFunction")
    record = json.loads(run.payload)["Records"][0]
    event = json.loads(record["Sns"]["Message"])
    assert event["detail-type"] == "EC2 Instance State-change Notification"
    assert event["detail"] == {"instance-id": "i-0123456789abcdef0", "state": "pending"}


def eventbridge_sqs(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: ``aws events put-events --entries file://event.json``, then ``aws sqs
    receive-message``: the message is the EventBridge event."""
    entries = json.loads((pattern.dir / "event.json").read_text())
    out = boto3.client("events").put_events(Entries=entries)
    assert out["FailedEntryCount"] == 0, out
    cloud.deliveries.drain()
    (message,) = _receive_all(cloud.outputs["SQSqueueURL"])
    event = json.loads(message["Body"])
    assert event["source"] == "demo.sqs"
    assert event["detail-type"] == "transaction"
    assert event["detail"] == {"msg": "test"}
    assert event["id"] == out["Entries"][0]["EventId"]


def eventbridge_stepfunction_lambda_getfunctionstatus(cloud: LocalCloud, pattern: Pattern) -> None:
    """How it works (no Testing section): the daily rule starts the state machine with its
    payload; the run lists the region's functions (ListFunctions, the combining Lambda),
    gets each one's state (GetFunction in a Map) and publishes the inactive ones to the
    email topic: none here (" No Inactive Functions"). The rule is fired instead of waiting
    for midnight: it starts its target, the state machine, with the rule's payload."""
    assert cloud.schedules is not None
    (started,) = cloud.schedules.fire_rule(cloud.outputs["EventRuleName"])
    assert started.status == "DELIVERED", started
    assert started.target_arn == cloud.outputs["StepFunctionArn"]
    sfn = boto3.client("stepfunctions")
    (execution,) = _ended_executions(started.target_arn)
    assert execution["executionArn"] == started.execution_arn
    described = sfn.describe_execution(executionArn=execution["executionArn"])
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["input"]) == {
        "Function_ARN_List_existing": {"lambda_arn_list_combined": []},
        "NextMarker": None,
    }
    assert _states_entered(execution["executionArn"]).count("GetFunction") == 1  # GetFunction's
    topic = _physical(cloud, "MySNSTopic")
    (message, subject), *rest = _notifications(cloud, topic)
    assert not rest
    assert message == " No Inactive Functions"
    assert (
        subject == f"Inactive Lambda functions list | {cloud.region} | Account - {cloud.account_id}"
    )
    assert json.loads(described["output"])["MessageId"]


def _finding(cloud: LocalCloud, severity: str, score: float, cve: str) -> dict[str, Any]:
    """An "Inspector2 Finding" detail for the vulnerable function (the documented shape,
    its fields the rules and the function read)."""
    function = cloud.functions["VulnerableLambdaFunction"]
    arn = f"arn:aws:lambda:{cloud.region}:{cloud.account_id}:function:{function}"
    return {
        "awsAccountId": cloud.account_id,
        "description": f"{cve} in a package of the function's requirements.",
        "findingArn": f"arn:aws:inspector2:{cloud.region}:{cloud.account_id}:finding/{cve}",
        "inspectorScore": score,
        "packageVulnerabilityDetails": {"vulnerabilityId": cve, "source": "NVD"},
        "resources": [{"id": arn, "type": "AWS_LAMBDA_FUNCTION"}],
        "severity": severity,
        "status": "ACTIVE",
        "title": f"{cve} - requests",
        "type": "PACKAGE_VULNERABILITY",
    }


def inspector_eventbridge_multi_destinations(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing/Validation: deploy a function with vulnerable packages; Amazon Inspector
    reports its findings: the CRITICAL and HIGH ones are stored in the DynamoDB table, and the
    CRITICAL one scoring over 8 is mailed through the topic. Inspector is outside the scope:
    its findings (a CRITICAL 9.8, a HIGH 7.5 and a MEDIUM 5.3) are emitted as it sends them."""
    findings = [("CRITICAL", 9.8, "CVE-2018-18074"), ("HIGH", 7.5, "CVE-2023-32681")]
    for severity, score, cve in [*findings, ("MEDIUM", 5.3, "CVE-2024-35195")]:
        cloud.emit("aws.inspector2", "Inspector2 Finding", _finding(cloud, severity, score, cve))
    cloud.deliveries.drain()
    _finished(cloud, cloud.functions["WriteToDynamoDBFunction"], 2)
    items = boto3.client("dynamodb").scan(TableName=cloud.outputs["DynamoDBTableName"])["Items"]
    assert sorted((i["Severity"]["S"], i["Score"]["N"]) for i in items) == [
        ("CRITICAL", "9.8"),
        ("HIGH", "7.5"),
    ]
    (mailed,) = _notifications(cloud, _physical(cloud, "VulnerabilityNotifierTopic"))
    assert json.loads(mailed[0])["detail"]["severity"] == "CRITICAL"


def lambda_athena_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: invoke the function with a query, a database and an S3 output location, and
    see in its logs what Athena returns. Athena is outside the local cloud's scope: the
    function's StartQueryExecution fails as AWS fails a role without access to Athena
    (AccessDeniedException, a ClientError in Python), naming the service, and the invocation
    is a function error."""
    reply = boto3.client("lambda").invoke(
        FunctionName=cloud.outputs["AthenaQueryFunction"],
        Payload=json.dumps(
            {
                "dbQuery": "SELECT * FROM orders limit 2;",
                "dbName": "sales",
                "s3OutputLocation": "s3://sabsden/athena/results/",
            }
        ).encode(),
    )
    error = _function_error(reply)
    assert error["errorType"] == "ClientError", error
    assert (
        "(AccessDeniedException) when calling the StartQueryExecution operation"
        in (error["errorMessage"])
    ), error
    assert "the local cloud does not run Amazon Athena" in error["errorMessage"], error


def lambda_bedrock_dynamodb_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Usage: invoke ``lambda-processor`` with a query; the query and Bedrock's answer are
    stored in the table (``aws dynamodb scan``). Bedrock is outside the local cloud's scope:
    the function's Converse call fails as AWS fails a role without access to Bedrock
    (AccessDeniedException on bedrock:InvokeModel, the model), naming the service, and
    nothing is stored."""
    reply = boto3.client("lambda").invoke(
        FunctionName="lambda-processor",
        Payload=json.dumps({"query": "What is the capital of France?"}).encode(),
    )
    error = _function_error(reply)
    assert error["errorType"] == "AccessDeniedException", error
    assert (
        "is not authorized to perform: bedrock:InvokeModel on resource: " in (error["errorMessage"])
    ), error
    assert "the local cloud does not run Amazon Bedrock Runtime" in error["errorMessage"], error
    table = cloud.outputs["Outputtable"]
    assert boto3.client("dynamodb").scan(TableName=table)["Items"] == []


def lambda_comprehend(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: ``aws lambda invoke --payload '{"text":"I am very happy"}'`` returns
    Comprehend's prediction and scores. Comprehend is outside the local cloud's scope: the
    function's DetectSentiment fails as AWS fails a role without access to Comprehend
    (AccessDeniedException, a ClientError in Python: Comprehend models no such exception),
    naming the service, and the invocation is a function error."""
    reply = boto3.client("lambda").invoke(
        FunctionName=cloud.outputs["LambdaFunctionName"],
        InvocationType="RequestResponse",
        Payload=json.dumps({"text": "I am very happy"}).encode(),
    )
    error = _function_error(reply)
    assert error["errorType"] == "ClientError", error
    assert (
        "(AccessDeniedException) when calling the DetectSentiment operation"
        in (error["errorMessage"])
    ), error
    assert "comprehend:DetectSentiment" in error["errorMessage"], error
    assert "the local cloud does not run Amazon Comprehend" in error["errorMessage"], error


STEPS: dict[str, Steps] = {
    "eventbridge-schedule-to-sqs-sam": eventbridge_schedule_to_sqs_sam,
    "eventbridge-scheduled-lambda": eventbridge_scheduled_lambda,
    "eventbridge-sfn": eventbridge_sfn,
    "eventbridge-sns": eventbridge_sns,
    "eventbridge-sns-lambda": eventbridge_sns_lambda,
    "eventbridge-sqs": eventbridge_sqs,
    "eventbridge-stepfunction-lambda-getfunctionstatus": (
        eventbridge_stepfunction_lambda_getfunctionstatus
    ),
    "lambda-comprehend": lambda_comprehend,
    "lambda-athena-sam": lambda_athena_sam,
    "lambda-bedrock-dynamodb-sam": lambda_bedrock_dynamodb_sam,
    "inspector-eventbridge-multi-destinations": inspector_eventbridge_multi_destinations,
}

PENDING: dict[str, tuple[Steps, str]] = {}
