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
from botocore.exceptions import ClientError
from moto.sns.models import sns_backends

from localcloud.cloud import LocalCloud
from localcloud.features.lambda_async import AsyncInvocation, async_invocations
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
    5xx metric filters of the CDN_DASHBOARD namespace on that log group."""
    apigw = boto3.client("apigateway")
    api = apigw.create_rest_api(name="orders")["id"]
    root = apigw.get_resources(restApiId=api)["items"][0]["id"]
    apigw.put_method(restApiId=api, resourceId=root, httpMethod="GET", authorizationType="NONE")
    apigw.put_integration(restApiId=api, resourceId=root, httpMethod="GET", type="MOCK")
    apigw.create_deployment(restApiId=api, stageName="prod")
    apigw.create_domain_name(
        domainName="api.example.com",
        regionalCertificateArn="arn:aws:acm:us-east-1:123456789012:certificate/x",
    )
    apigw.create_base_path_mapping(
        domainName="api.example.com", restApiId=api, stage="prod", basePath="orders"
    )

    reply = boto3.client("lambda").invoke(FunctionName=cloud.functions["LambdaFunction"])
    assert "FunctionError" not in reply, reply["Payload"].read()
    result = json.loads(reply["Payload"].read())
    assert result == {
        "statusCode": 200,
        "body": "Custom domain names and associated API IDs found and categorized.",
    }, result
    stage = apigw.get_stage(restApiId=api, stageName="prod")
    assert stage["accessLogSettings"]["destinationArn"].endswith(
        "log-group:/aws/api-gateway/access-logs"
    )
    filters = boto3.client("logs").describe_metric_filters(
        logGroupName="/aws/api-gateway/access-logs"
    )["metricFilters"]
    metrics = {
        f["filterName"]: (
            f["metricTransformations"][0]["metricNamespace"],
            f["metricTransformations"][0]["metricName"],
        )
        for f in filters
    }
    assert metrics == {
        "CountHTTP200": ("CDN_DASHBOARD", "HTTP-200"),
        "CountHTTP4XX": ("CDN_DASHBOARD", "HTTP-4XX"),
        "CountHTTP5XX": ("CDN_DASHBOARD", "HTTP-5XX"),
    }


def cloudtrail_eventbridge_lambda_dynamodb_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: with the allowed CIDRs in the table, ``aws ec2 advertise-byoip-cidr --cidr`` a
    CIDR that is not allowed; within seconds ``describe-byoip-cidrs`` shows it
    ``provisioned`` again (the rule's Lambda withdrew it) and the topic is told."""
    boto3.client("dynamodb").put_item(
        TableName=_physical(cloud, "DynamoDBTable"),
        Item={"id": {"S": "Allowed_CIDRs"}, "CIDRs": {"L": [{"S": "2001:db8:1::/48"}]}},
    )
    ec2 = boto3.client("ec2")
    ec2.advertise_byoip_cidr(Cidr="2001:db8:2::/48")
    cloud.deliveries.drain()

    def withdrawn() -> bool:
        cidrs = ec2.describe_byoip_cidrs(MaxResults=10)["ByoipCidrs"]
        return any(c["Cidr"] == "2001:db8:2::/48" and c["State"] == "provisioned" for c in cidrs)

    wait_for(withdrawn, "the advertisement to be withdrawn", timeout=5)


def cw_sns_secretsmanager(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: create a secret in Secrets Manager; "you will soon receive a notification
    about the key you created" (the rule's SNS topic, subscribed by email)."""
    boto3.client("secretsmanager").create_secret(Name="demo/api-key", SecretString="s3cr3t")
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
    (put-item), updated (update-item) and deleted (delete-item, then get-schedule answers
    ResourceNotFoundException)."""
    scheduler = boto3.client("scheduler")
    table = cloud.outputs["TableName"]
    target = cloud.outputs["TargetLambdaArn"]

    def schedule(name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = scheduler.get_schedule(Name=name)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceNotFoundException":
                raise
            return None
        return found

    auto = wait_for(lambda: schedule("auto-test-schedule"), "auto-test-schedule", timeout=10)
    assert auto["ScheduleExpression"].startswith("at(")
    assert auto["Target"]["Arn"] == target
    assert auto["State"] == "ENABLED"
    fired = _fire(cloud, "auto-test-schedule")
    assert fired.status == "DELIVERED", fired
    (run,) = _finished(cloud, "ScheduledTaskExecutor")
    assert run.status == "SUCCEEDED", run
    assert run.response == {"statusCode": 200, "body": "Task completed"}
    assert json.loads(run.payload)["message"] == "Auto-created test schedule"

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
    assert json.loads(created["Target"]["Input"]) == {"message": "Hello from my schedule"}

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
    CreateSnapshot fails; the topic receives the error notification, the function purges the
    old snapshots (none) and ends."""
    fired = _fire(cloud, _physical(cloud, "FSxEventBridgeScheduler"))
    assert fired.status == "DELIVERED", fired
    (run,) = _finished(cloud, cloud.functions["SnapshotLambda"])
    assert run.status == "SUCCEEDED", run.response
    notes = _notifications(cloud, cloud.outputs["SNSTopic"])
    errors = [m for m, s in notes if s == "Error Notification: CreateSnapshot"]
    assert len(errors) == 1, notes
    assert errors[0].startswith(
        "Error while creating a snapshot from the Source VolumeId = x-sourcevolumeid\nError = "
    )


def eventbridge_rule_to_ssm_automation_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: launch an EC2 instance; a new execution of the
    ``AWSSupport-ConfigureEC2Metadata`` Automation document runs against it."""
    ec2 = boto3.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]
    cloud.deliveries.drain()
    ssm = boto3.client("ssm")

    def executions() -> list[dict[str, Any]]:
        runs = ssm.describe_automation_executions()["AutomationExecutionMetadataList"]
        return [r for r in runs if r["DocumentName"] == "AWSSupport-ConfigureEC2Metadata"]

    (run,) = wait_for(executions, "the automation execution", timeout=5)
    assert run["Target"] == instance["InstanceId"] or instance["InstanceId"] in json.dumps(run)


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
    ``Schedule: rate(1 minute)`` event: an EventBridge rule with a schedule expression)."""
    function = cloud.functions["ScheduledFunction"]
    (run,) = _finished(cloud, function)
    assert run.status == "SUCCEEDED"
    assert run.response is True


def eventbridge_sfn(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: launch an EC2 instance: an execution goes to "It's Running"; stop it: a
    second one to "It's Stopped"; terminate it: a third to "It's Gone"."""
    ec2 = boto3.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0][
        "InstanceId"
    ]
    machine = cloud.outputs["EC2StateWatcherArn"]
    branches = []
    for count, change in enumerate((None, ec2.stop_instances, ec2.terminate_instances), 1):
        if change is not None:
            change(InstanceIds=[instance])
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
    message is the EC2 state-change event."""
    ec2 = boto3.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)
    cloud.deliveries.drain()
    (run,) = _finished(cloud, "LambdaFunction")
    record = json.loads(run.payload)["Records"][0]
    event = json.loads(record["Sns"]["Message"])
    assert event["detail-type"] == "EC2 Instance State-change Notification"


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
    email topic: none here (" No Inactive Functions"). A rule's schedule expression is not
    fired by the local cloud, so the execution is started as the rule's target does: its
    state machine, with its Input (ListTargetsByRule)."""
    (target,) = boto3.client("events").list_targets_by_rule(Rule=cloud.outputs["EventRuleName"])[
        "Targets"
    ]
    assert target["Arn"] == cloud.outputs["StepFunctionArn"]
    sfn = boto3.client("stepfunctions")
    started = sfn.start_execution(stateMachineArn=target["Arn"], input=target["Input"])
    (execution,) = _ended_executions(target["Arn"])
    assert execution["executionArn"] == started["executionArn"]
    described = sfn.describe_execution(executionArn=started["executionArn"])
    assert described["status"] == "SUCCEEDED", described
    assert _states_entered(started["executionArn"]).count("GetFunction") == 1  # GetFunction's
    topic = _physical(cloud, "MySNSTopic")
    (message, subject), *rest = _notifications(cloud, topic)
    assert not rest
    assert message == " No Inactive Functions"
    assert (
        subject == f"Inactive Lambda functions list | {cloud.region} | Account - {cloud.account_id}"
    )
    assert json.loads(described["output"])["MessageId"]


def inspector_eventbridge_multi_destinations(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing/Validation: deploy a function with vulnerable packages; Amazon Inspector
    reports its findings: the CRITICAL and HIGH ones are stored in the DynamoDB table, and the
    CRITICAL one scoring over 8 is mailed through the topic."""
    table = cloud.outputs["DynamoDBTableName"]
    dynamodb = boto3.client("dynamodb")

    def stored() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = dynamodb.scan(TableName=table)["Items"]
        return items if len(items) >= 2 else []

    items = wait_for(stored, "two findings in the table", timeout=5)
    assert {i["Severity"]["S"] for i in items} == {"CRITICAL", "HIGH"}


def lambda_athena_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: invoke the function with a query, a database and an S3 output location, and
    see in its logs what Athena returns. Athena is outside the local cloud's scope (moto
    answers an empty result set): the function's StartQueryExecution and GetQueryResults,
    allowed by its AthenaQueryPolicy on the ``primary`` workgroup, go through and it answers
    as the README's code does."""
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
    assert "FunctionError" not in reply, reply["Payload"].read()
    assert json.loads(reply["Payload"].read()) == {"statusCode": 200, "body": "OK"}


def lambda_bedrock_dynamodb_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """Usage: invoke ``lambda-processor`` with a query; the query and Bedrock's answer are
    stored in the table (``aws dynamodb scan``). Bedrock is outside the local cloud's scope:
    the function fails at its Converse call (allowed by its bedrock:InvokeModel statement on
    the model) with an error naming Bedrock, and nothing is stored."""
    reply = boto3.client("lambda").invoke(
        FunctionName="lambda-processor",
        Payload=json.dumps({"query": "What is the capital of France?"}).encode(),
    )
    error = _function_error(reply)
    assert error["errorType"] not in ("AccessDeniedException", "NotImplementedError"), error
    assert "bedrock" in error["errorMessage"].lower(), error
    table = cloud.outputs["Outputtable"]
    assert boto3.client("dynamodb").scan(TableName=table)["Items"] == []


def lambda_comprehend(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: ``aws lambda invoke --payload '{"text":"I am very happy"}'`` returns
    Comprehend's prediction and scores. Comprehend is outside the local cloud's scope: moto's
    DetectSentiment answers one canned sentiment (NEUTRAL) whatever the text, so the
    README's POSITIVE cannot hold; the answer's shape is asserted."""
    reply = boto3.client("lambda").invoke(
        FunctionName=cloud.outputs["LambdaFunctionName"],
        InvocationType="RequestResponse",
        Payload=json.dumps({"text": "I am very happy"}).encode(),
    )
    assert "FunctionError" not in reply
    result = json.loads(reply["Payload"].read())
    assert result["comprehend_prediction"] == "NEUTRAL"  # moto's canned answer
    assert set(result["comprehend_scores"]) == {"Positive", "Negative", "Neutral", "Mixed"}


STEPS: dict[str, Steps] = {
    "eventbridge-schedule-to-sqs-sam": eventbridge_schedule_to_sqs_sam,
    "eventbridge-sns": eventbridge_sns,
    "eventbridge-sqs": eventbridge_sqs,
    "eventbridge-stepfunction-lambda-getfunctionstatus": (
        eventbridge_stepfunction_lambda_getfunctionstatus
    ),
    "lambda-comprehend": lambda_comprehend,
}

_NO_CLOUDTRAIL = (
    "the local cloud emits no 'AWS API Call via CloudTrail' events: no API call (here {call}) "
    "puts a CloudTrail event on the default bus, so the rule never matches"
)
_NO_EC2_EVENTS = (
    "EC2 is outside the local cloud's scope: moto's RunInstances/StopInstances/"
    "TerminateInstances succeed but no 'EC2 Instance State-change Notification' event reaches "
    "EventBridge (nothing in features/ emits aws.ec2 events), so the rule never fires"
)

PENDING: dict[str, tuple[Steps, str]] = {
    "cdn-dash-sam": (
        cdn_dash_sam,
        "iam/actions.py required(): API Gateway calls need apigateway:<Operation> on '*' "
        "(e.g. apigateway:GetDomainNames), where AWS authorizes apigateway:GET/PATCH on "
        "arn:aws:apigateway:<region>::/domainnames...; the role's AWS-managed "
        "AmazonAPIGatewayAdministrator (apigateway:* on arn:aws:apigateway:*::/*) is therefore "
        "refused, and the function answers statusCode 500 'AccessDeniedException ... "
        "GetDomainNames' without touching the stage or the metric filters",
    ),
    "cloudtrail-eventbridge-lambda-dynamodb-sam": (
        cloudtrail_eventbridge_lambda_dynamodb_sam,
        "EC2 BYOIP is outside the local cloud's scope and fails as no service does: moto 5.2.5 "
        "has no AdvertiseByoipCidr, and the call raises moto's raw NotImplementedError ('The "
        "advertise_byoip_cidr action has not been implemented', moto/core/responses.py) into "
        "the caller instead of a service error; and "
        + _NO_CLOUDTRAIL.format(call="AdvertiseByoipCidr"),
    ),
    "cw-sns-secretsmanager": (
        cw_sns_secretsmanager,
        _NO_CLOUDTRAIL.format(call="secretsmanager CreateSecret")
        + "; the topic gets no notification",
    ),
    "dynamodb-eventbridge-scheduler": (
        dynamodb_eventbridge_scheduler,
        "DynamoDB stream event source mappings do not run: features/event_source_mappings.py "
        "polls SQS only, and moto's own path (LambdaBackend.send_dynamodb_items -> "
        "LambdaFunction.invoke) needs Docker ('error running docker'), so "
        "ScheduleStreamProcessor is never invoked and neither auto-test-schedule nor "
        "my-test-schedule is created",
    ),
    "eventbridge-lambda-fsx-openzfs-periodic-replication": (
        eventbridge_lambda_fsx_openzfs_periodic_replication,
        "FSx is outside the local cloud's scope and fails as no service does: after the "
        "CreateSnapshot error notification, the handler's DescribeSnapshots raises moto's raw "
        "NotImplementedError ('The describe_snapshots action has not been implemented') and "
        "the run fails (3 attempts) instead of ending; CreateSnapshot itself is refused by "
        "botocore's validation of corpus.json's SourceVolumeID 'x-sourcevolumeid', which the "
        "deploy accepts although the template's AllowedPattern is ^fsvol-[A-Za-z0-9]+ "
        "(CloudFormation would refuse it)",
    ),
    "eventbridge-rule-to-ssm-automation-sam": (
        eventbridge_rule_to_ssm_automation_sam,
        _NO_EC2_EVENTS + "; and SSM Automation is outside the scope: an "
        "automation-definition rule target is handed to moto's send_to_targets, which ignores "
        "it, and DescribeAutomationExecutions raises moto's raw NotImplementedError",
    ),
    "eventbridge-schedule-stepfunctions-sam": (
        eventbridge_schedule_stepfunctions_sam,
        "features/scheduler.py Schedules._invoke: a target without Input is sent as '' (AWS: "
        "Scheduler's default input, '{}' for a JSON templated target); moto's StartExecution "
        "fails on input '' (JSONDecodeError, a 500), which is retried 185 times and the "
        "invocation DROPPED: no execution",
    ),
    "eventbridge-schedule-to-lambda-dlq-sam-python": (
        eventbridge_schedule_to_lambda_dlq_sam_python,
        "UpdateFunctionConfiguration's Environment never reaches the in-process handler: the "
        "functions share the process's os.environ, set once at deploy "
        "(stack/deploy.py _register_handlers/_function_environment), so SIMULATE_FAILURE=true "
        "is not seen and the second run succeeds instead of reaching the Lambda DLQ (the "
        "first run and the scheduler-DLQ part pass)",
    ),
    "eventbridge-scheduled-lambda": (
        eventbridge_scheduled_lambda,
        "an EventBridge rule's ScheduleExpression (SAM 'Schedule' event) is never fired: "
        "features/scheduler.py fires only EventBridge Scheduler schedules (Schedules.fire), and "
        "nothing fires or exposes a rule's schedule, so the function is never invoked",
    ),
    "eventbridge-sfn": (eventbridge_sfn, _NO_EC2_EVENTS + ": no execution starts"),
    "eventbridge-sns-lambda": (
        eventbridge_sns_lambda,
        _NO_EC2_EVENTS + ": nothing is published to the topic, the function never runs",
    ),
    "inspector-eventbridge-multi-destinations": (
        inspector_eventbridge_multi_destinations,
        "Amazon Inspector is outside the local cloud's scope: nothing scans the function or "
        "emits 'Inspector2 Finding' events (source aws.inspector2), so neither rule fires and "
        "the table stays empty",
    ),
    "lambda-athena-sam": (
        lambda_athena_sam,
        "iam/actions.py required(): Athena calls need athena:<Operation> on '*', where AWS "
        "authorizes them on the workgroup (arn:aws:athena:<region>:<account>:workgroup/primary "
        "for a query without WorkGroup); the function's AthenaQueryPolicy (scoped to that "
        "workgroup) is refused: AccessDeniedException on athena:StartQueryExecution",
    ),
    "lambda-bedrock-dynamodb-sam": (
        lambda_bedrock_dynamodb_sam,
        "iam/actions.py required(): bedrock-runtime Converse needs bedrock:Converse on '*', "
        "where AWS authorizes bedrock:InvokeModel on the model "
        "(arn:aws:bedrock:<region>::foundation-model/<modelId>), so the function's "
        "InvokeModel statement is refused (AccessDeniedException on bedrock:Converse); past "
        "IAM, moto 5.2.5 has no Converse and raises its raw NotImplementedError ('The "
        "converse action has not been implemented') into the handler",
    ),
}
