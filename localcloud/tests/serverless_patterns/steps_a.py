"""README steps of serverless-patterns, batch a (see serverless_patterns/__init__.py).

Each function does, with boto3 against the local cloud, what the pattern's README tells a user
to do after ``sam deploy``, and asserts what the README says they see. What a user reads in
CloudWatch Logs is read here from the in-process invocation's record (its event, its result:
``async_invocations``), and an email to an SNS ``email`` subscription from the topic's sent
notifications (moto records them; nothing is mailed). Schedules are fired on demand
(``cloud.schedules.fire``): the wait for "the next run" of a README.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.sns.models import sns_backends

from localcloud.cloud import LocalCloud
from localcloud.features.lambda_async import async_invocations
from localcloud.runtime import AsyncInvocation
from serverless_patterns import Pattern, Steps, wait_for

# ----------------------------------------------------------------------------- helpers


def _notifications(cloud: LocalCloud, topic_arn: str) -> list[tuple[str, str | None]]:
    """(message, subject) of everything published to ``topic_arn``: what its email
    subscribers receive."""
    topic = sns_backends[cloud.account_id][cloud.region].topics[topic_arn]
    return [(message, subject) for _, message, subject, *_ in topic.sent_notifications]


def _finished(cloud: LocalCloud, function: str, count: int = 1) -> list[AsyncInvocation]:
    """The first ``count`` asynchronous invocations of ``function``, once they have ended."""
    log = async_invocations(cloud.runtime)

    def ended() -> list[AsyncInvocation] | None:
        items = log.of(function)
        done = [i for i in items if i.finished is not None]
        return done[:count] if len(done) >= count else None

    return wait_for(ended, f"{count} asynchronous invocation(s) of {function}", timeout=10)


def _receive_all(queue_url: str, expected: int = 1) -> list[dict[str, Any]]:
    sqs, got = boto3.client("sqs"), []

    def probe() -> list[dict[str, Any]] | None:
        reply = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            AttributeNames=["All"],
        )
        got.extend(reply.get("Messages", []))
        return got if len(got) >= expected else None

    return wait_for(probe, f"{expected} message(s) in {queue_url}", timeout=10)


def _ended_executions(machine: str, count: int = 1) -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions")

    def probe() -> list[dict[str, Any]] | None:
        runs = sfn.list_executions(stateMachineArn=machine)["executions"]
        ended = [r for r in runs if r["status"] != "RUNNING"]
        return ended if len(ended) >= count else None

    return wait_for(probe, f"{count} ended execution(s) of {machine}", timeout=10)


def _physical(cloud: LocalCloud, logical_id: str) -> str:
    """The physical id of the stack's resource ``logical_id``."""
    assert cloud.stack is not None
    return cloud.stack.resources[logical_id]


def _fire(cloud: LocalCloud, schedule: str) -> Any:
    """One run of the EventBridge Scheduler schedule ``schedule`` (instead of its next time)."""
    assert cloud.schedules is not None
    (fired,) = cloud.schedules.fire(schedule)
    return fired


def _states_entered(execution_arn: str) -> list[str]:
    events = boto3.client("stepfunctions").get_execution_history(
        executionArn=execution_arn, maxResults=1000
    )["events"]
    return [
        e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
    ]


def _function_error(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply.get("FunctionError") == "Unhandled", reply
    error: dict[str, Any] = json.loads(reply["Payload"].read())
    return error


# ----------------------------------------------------------------------------- patterns


def cdn_dash_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: "users have to manually trigger the Lambda function" to create the custom
    metrics of the API mappings of the region's custom domain names. A REST API with a stage,
    mapped on a custom domain name, is the precondition ("How it works"); the invocation
    enables the stage's access logs into /aws/api-gateway/access-logs and puts the 200 / 4xx /
    5xx metric filters of the CDN_DASHBOARD namespace on that log group. API Gateway is outside
    the local cloud's scope: the precondition's CreateRestApi is refused as AWS refuses an
    identity without access to API Gateway, and the function, whose GetDomainNames is refused
    the same way, answers statusCode 500 with that error, naming the service, without
    putting any metric filter."""
    apigw = boto3.client("apigateway")
    try:
        apigw.create_rest_api(name="orders")
        raise AssertionError("API Gateway's CreateRestApi answered")
    except ClientError as refused:
        assert refused.response["Error"]["Code"] == "AccessDeniedException", refused.response
        assert "Amazon API Gateway" in refused.response["Error"]["Message"], refused.response

    reply = boto3.client("lambda").invoke(FunctionName=cloud.functions["LambdaFunction"])
    assert "FunctionError" not in reply, reply["Payload"].read()
    result = json.loads(reply["Payload"].read())
    assert result["statusCode"] == 500, result
    assert (
        "(AccessDeniedException) when calling the GetDomainNames operation" in (result["body"])
    ), result
    assert "the local cloud does not run Amazon API Gateway" in result["body"], result
    logs = boto3.client("logs")
    groups = logs.describe_log_groups(logGroupNamePrefix="/aws/api-gateway/access-logs")
    for group in groups["logGroups"]:
        filters = logs.describe_metric_filters(logGroupName=group["logGroupName"])
        assert filters["metricFilters"] == [], filters


def cloudtrail_eventbridge_lambda_dynamodb_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: with the allowed CIDRs in the table, ``aws ec2 advertise-byoip-cidr --cidr`` a
    CIDR that is not allowed; within seconds ``describe-byoip-cidrs`` shows it
    ``provisioned`` again (the rule's Lambda withdrew it) and the topic is told. EC2 is
    outside the local cloud's scope: ``advertise-byoip-cidr`` fails as AWS fails an identity
    without access to EC2 (UnauthorizedOperation), naming the service, so nothing follows."""
    boto3.client("dynamodb").put_item(
        TableName=_physical(cloud, "DynamoDBTable"),
        Item={"id": {"S": "Allowed_CIDRs"}, "CIDRs": {"L": [{"S": "2001:db8:1::/48"}]}},
    )
    ec2 = boto3.client("ec2")
    try:
        ec2.advertise_byoip_cidr(Cidr="2001:db8:2::/48")
        raise AssertionError("EC2's AdvertiseByoipCidr answered")
    except ClientError as refused:
        assert refused.response["Error"]["Code"] == "UnauthorizedOperation", refused.response
        assert "ec2:AdvertiseByoipCidr" in refused.response["Error"]["Message"]
        assert "the local cloud does not run Amazon EC2" in refused.response["Error"]["Message"]


def cw_sns_secretsmanager(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: create a secret in Secrets Manager; "you will soon receive a notification
    about the key you created" (the rule's SNS topic, subscribed by email). Secrets Manager
    is outside the scope: the CreateSecret is refused naming the service, and the CloudTrail
    event the call makes on AWS is emitted (its documented shape; no secret value in it)."""
    with pytest.raises(ClientError) as refused:
        boto3.client("secretsmanager").create_secret(Name="demo/api-key", SecretString="s3cr3t")
    assert "AWS Secrets Manager" in str(refused.value)
    arn = f"arn:aws:secretsmanager:{cloud.region}:{cloud.account_id}:secret:demo/api-key-AbCdEf"
    detail = {
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "accountId": cloud.account_id},
        "eventTime": dt.datetime.now(tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eventSource": "secretsmanager.amazonaws.com",
        "eventName": "CreateSecret",
        "awsRegion": cloud.region,
        "requestParameters": {"name": "demo/api-key"},
        "responseElements": {"arn": arn},
        "readOnly": False,
        "eventType": "AwsApiCall",
        "managementEvent": True,
        "recipientAccountId": cloud.account_id,
    }
    cloud.emit("aws.secretsmanager", "AWS API Call via CloudTrail", detail)
    cloud.deliveries.drain()
    topic = cloud.outputs["MySnsTopicArn"]

    def notified() -> list[tuple[str, str | None]]:
        return [n for n in _notifications(cloud, topic) if "CreateSecret" in n[0]]

    (message, _), *_ = wait_for(notified, "the CreateSecret notification", timeout=5)
    event = json.loads(message)
    assert event["detail"]["eventSource"] == "secretsmanager.amazonaws.com"
    assert event["detail"]["requestParameters"]["name"] == "demo/api-key"


def dynamodb_eventbridge_scheduler(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: the deploy's custom resource puts ``auto-test-schedule`` into the table and
    the stream processor makes it a schedule (``aws scheduler get-schedule``); when it fires,
    ScheduledTaskExecutor logs its payload. Then the README's own schedule is created
    (put-item; fired, ScheduledTaskExecutor gets its payload), updated (update-item) and
    deleted (delete-item, then get-schedule answers ResourceNotFoundException).

    ``auto-test-schedule`` is a race on AWS, not an outcome: the template orders nothing
    between TriggerTestSchedule (which needs only the table and TestScheduleCreator) and the
    mapping StreamProcessorFunctionDynamoDBStream (the function and the table's StreamArn), so
    CloudFormation may create them in either order or at once; and a mapping created first
    still misses the write, since "during event source mapping creation, it may take several
    minutes to start polling events from the stream ... if you specify LATEST as the starting
    position for the stream, the event source mapping could miss events during a create or
    update" (Lambda Developer Guide, "Polling and stream starting positions"). The local cloud
    creates them deterministically in the transformed template's order, TriggerTestSchedule
    first, and a mapping starts at LATEST when it is created: the item is on the stream before
    the mapping's start, the processor never sees it and ``auto-test-schedule`` is never
    created. That is what is asserted here; the README's own steps follow."""
    scheduler = boto3.client("scheduler")
    table = cloud.outputs["TableName"]
    processor = "ScheduleStreamProcessor"

    def schedule(name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = scheduler.get_schedule(Name=name)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceNotFoundException":
                raise
            return None
        return found

    cloud.settle()
    assert schedule("auto-test-schedule") is None
    streams = boto3.client("dynamodbstreams")
    arn = boto3.client("dynamodb").describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    (written,) = streams.get_records(ShardIterator=iterator)["Records"]
    assert written["dynamodb"]["Keys"] == {"scheduleId": {"S": "auto-test-schedule"}}
    assert cloud.mappings is not None
    (start,) = [s.position for s in cloud.mappings.streams._states.values()]
    assert start is not None
    assert int(written["dynamodb"]["SequenceNumber"]) < start
    assert cloud.invocation_count(processor) == 0

    dynamodb = boto3.client("dynamodb")
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)
    first = soon.strftime("at(%Y-%m-%dT%H:%M:%S)")
    later = (soon + dt.timedelta(hours=1)).strftime("at(%Y-%m-%dT%H:%M:%S)")
    dynamodb.put_item(
        TableName=table,
        Item={
            "scheduleId": {"S": "my-test-schedule"},
            "scheduleExpression": {"S": first},
            "payload": {"S": '{"message": "Hello from my schedule"}'},
            "enabled": {"BOOL": True},
        },
    )
    created = wait_for(lambda: schedule("my-test-schedule"), "my-test-schedule", timeout=10)
    assert created["ScheduleExpression"] == first
    assert created["Target"]["Arn"] == cloud.outputs["TargetLambdaArn"]
    assert json.loads(created["Target"]["Input"]) == {"message": "Hello from my schedule"}
    fired = _fire(cloud, "my-test-schedule")
    assert fired.status == "DELIVERED", fired
    (run,) = _finished(cloud, "ScheduledTaskExecutor")
    assert run.status == "SUCCEEDED", run
    assert json.loads(run.payload) == {"message": "Hello from my schedule"}

    dynamodb.update_item(
        TableName=table,
        Key={"scheduleId": {"S": "my-test-schedule"}},
        UpdateExpression="SET scheduleExpression = :expr",
        ExpressionAttributeValues={":expr": {"S": later}},
    )

    def updated() -> bool:
        found = schedule("my-test-schedule")
        return found is not None and found["ScheduleExpression"] == later

    wait_for(updated, "my-test-schedule's new expression", timeout=10)

    dynamodb.delete_item(TableName=table, Key={"scheduleId": {"S": "my-test-schedule"}})
    wait_for(lambda: schedule("my-test-schedule") is None, "my-test-schedule gone", timeout=10)


def eventbridge_lambda_fsx_openzfs_periodic_replication(
    cloud: LocalCloud, pattern: Pattern
) -> None:
    """Testing: on the schedule, the Lambda snapshots the FSx for OpenZFS source volume, and
    "will automatically send notifications for any kinds of failures" to the email topic.
    FSx is outside the local cloud's scope: the fired schedule runs the function, whose
    CreateSnapshot fails (botocore refuses corpus.json's volume id before sending); the topic
    receives the error notification, and the function's purge of the old snapshots fails at
    DescribeSnapshots as AWS fails a role without access to FSx, naming the service: the
    run fails, and Lambda's two retries send the notification again."""
    fired = _fire(cloud, _physical(cloud, "FSxEventBridgeScheduler"))
    assert fired.status == "DELIVERED", fired
    (run,) = _finished(cloud, cloud.functions["SnapshotLambda"])
    assert (run.status, run.attempts) == ("FAILED", 3), run.response
    assert "(AccessDeniedException) when calling the DescribeSnapshots operation" in str(
        run.response
    ), run.response
    assert "the local cloud does not run Amazon FSx" in str(run.response), run.response
    notes = _notifications(cloud, cloud.outputs["SNSTopic"])
    errors = [m for m, s in notes if s == "Error Notification: CreateSnapshot"]
    assert len(errors) == run.attempts, notes
    assert errors[0].startswith(
        "Error while creating a snapshot from the Source VolumeId = x-sourcevolumeid\nError = "
    )


def eventbridge_rule_to_ssm_automation_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: launch an EC2 instance; a new execution of the
    ``AWSSupport-ConfigureEC2Metadata`` Automation document runs against it. EC2 and SSM
    Automation are outside the local cloud's scope: launching the instance fails as AWS
    fails an identity without access to EC2 (UnauthorizedOperation), and so does listing
    the Automation executions (AccessDeniedException), each naming the service."""
    ec2 = boto3.client("ec2")
    try:
        ec2.describe_images(Owners=["amazon"])
        raise AssertionError("EC2's DescribeImages answered")
    except ClientError as refused:
        assert refused.response["Error"]["Code"] == "UnauthorizedOperation", refused.response
        assert "the local cloud does not run Amazon EC2" in refused.response["Error"]["Message"]
    ssm = boto3.client("ssm")
    try:
        ssm.describe_automation_executions()
        raise AssertionError("SSM's DescribeAutomationExecutions answered")
    except ClientError as refused:
        assert refused.response["Error"]["Code"] == "AccessDeniedException", refused.response
        assert "does not run AWS Systems Manager beyond" in refused.response["Error"]["Message"]


def eventbridge_schedule_stepfunctions_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """How it works (no Testing section): the schedule starts the state machine (daily at
    14:24); the run is its one Pass state. The schedule is fired instead of waiting."""
    machine = _physical(cloud, "GitHubTrafficTracker")
    fired = _fire(cloud, _physical(cloud, "GitHubTrafficTrackerSchedule"))
    assert fired.status == "DELIVERED", fired
    (execution,) = _ended_executions(machine)
    assert execution["status"] == "SUCCEEDED"
    described = boto3.client("stepfunctions").describe_execution(
        executionArn=execution["executionArn"]
    )
    assert json.loads(described["output"]) == {"item": json.loads(described["input"])}


def eventbridge_schedule_to_lambda_dlq_sam_python(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing, its three parts: the schedule runs the function (its logs: a success);
    with ``SIMULATE_FAILURE=true`` (update-function-configuration) the next run fails and,
    Lambda's retries exhausted, the event is in the Lambda execution DLQ; with the scheduler
    role's InvokeLambda policy deleted, the next run cannot invoke the function and, the
    scheduler's retries exhausted, lands in the scheduler DLQ."""
    lam, iam = boto3.client("lambda"), boto3.client("iam")
    schedule = cloud.outputs["ScheduleName"]
    function = cloud.outputs["ScheduledFunctionName"]

    fired = _fire(cloud, schedule)
    assert fired.status == "DELIVERED", fired
    (run,) = _finished(cloud, function)
    assert run.status == "SUCCEEDED", run
    assert run.response["statusCode"] == 200
    assert run.response["success"] is True
    assert run.response["message"] == "Scheduled task completed successfully"

    lam.update_function_configuration(
        FunctionName=function,
        Environment={"Variables": {"LOG_LEVEL": "INFO", "SIMULATE_FAILURE": "true"}},
    )
    fired = _fire(cloud, schedule)
    assert fired.status == "DELIVERED", fired
    _, failed = _finished(cloud, function, 2)
    assert failed.status == "FAILED", failed
    assert failed.attempts == 3  # the first attempt and Lambda's 2 retries
    (message,) = _receive_all(cloud.outputs["LambdaExecutionDLQUrl"])
    attributes = message["MessageAttributes"]
    assert attributes["ErrorMessage"]["StringValue"] == (
        "Simulated failure for testing Lambda Execution DLQ flow"
    )
    lam.update_function_configuration(
        FunctionName=function,
        Environment={"Variables": {"LOG_LEVEL": "INFO", "SIMULATE_FAILURE": "false"}},
    )

    iam.delete_role_policy(RoleName=_physical(cloud, "SchedulerRole"), PolicyName="InvokeLambda")
    fired = _fire(cloud, schedule)
    assert fired.status == "DEAD_LETTERED", fired
    (message,) = _receive_all(cloud.outputs["SchedulerDLQUrl"])
    attributes = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
    assert attributes["ERROR_CODE"] == "AccessDeniedException"
    assert attributes["TARGET_ARN"] == cloud.outputs["ScheduledFunctionArn"]
    assert attributes["SCHEDULE_ARN"] == cloud.outputs["ScheduleArn"]


STEPS: dict[str, Steps] = {
    "eventbridge-schedule-stepfunctions-sam": eventbridge_schedule_stepfunctions_sam,
    "cdn-dash-sam": cdn_dash_sam,
    "cloudtrail-eventbridge-lambda-dynamodb-sam": cloudtrail_eventbridge_lambda_dynamodb_sam,
    "cw-sns-secretsmanager": cw_sns_secretsmanager,
    "dynamodb-eventbridge-scheduler": dynamodb_eventbridge_scheduler,
    "eventbridge-lambda-fsx-openzfs-periodic-replication": (
        eventbridge_lambda_fsx_openzfs_periodic_replication
    ),
    "eventbridge-rule-to-ssm-automation-sam": eventbridge_rule_to_ssm_automation_sam,
    # its functions in processes of their own (corpus.json): a configuration update reaches
    # the next environment
    "eventbridge-schedule-to-lambda-dlq-sam-python": eventbridge_schedule_to_lambda_dlq_sam_python,
}

PENDING: dict[str, tuple[Steps, str]] = {}
