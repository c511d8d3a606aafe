"""README steps of serverless-patterns batch c (see serverless_patterns/__init__.py): what a
user runs after ``sam deploy``, with boto3 against the local cloud, and what they should see."""

from __future__ import annotations

import json
from typing import Any

import boto3
from botocore.config import Config

from localcloud.cloud import LocalCloud
from localcloud.features.lambda_async import async_invocations
from serverless_patterns import Pattern, Steps, function_log, wait_for

# StartSyncExecution's endpoint is ``sync-states.<region>``: a local endpoint takes it without
# the host prefix (AWS_DISABLE_HOST_PREFIX_INJECTION=true for the AWS CLI).
SYNC = Config(inject_host_prefix=False)


# ---------------------------------------------------------------- helpers
def ended(sfn: Any, execution_arn: str) -> dict[str, Any] | None:
    """``describe-execution`` once the execution is no longer RUNNING."""
    described: dict[str, Any] = sfn.describe_execution(executionArn=execution_arn)
    return described if described["status"] != "RUNNING" else None


def invocations(cloud: LocalCloud, function: str) -> list[dict[str, Any]]:
    """The function's finished in-process invocations (event and outcome)."""
    return [r for r in cloud.runtime.invocations if r["function"] == function and "outcome" in r]


def receive_all(queue_url: str, expected: int) -> list[dict[str, Any]]:
    """``receive-message`` until ``expected`` messages have come (deleting them)."""
    sqs, got = boto3.client("sqs"), []

    def probe() -> list[dict[str, Any]] | None:
        reply = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        for message in reply.get("Messages", []):
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            got.append(message)
        return got if len(got) >= expected else None

    wait_for(probe, f"{expected} message(s) in {queue_url}", timeout=10)
    return got


def log_messages(group: str) -> list[dict[str, Any]]:
    """``aws logs tail GROUP``: every event of the group, each message parsed as JSON."""
    events = boto3.client("logs").filter_log_events(logGroupName=group)["events"]
    return [json.loads(e["message"]) for e in events]


# ---------------------------------------------------------------- steps
def sam_eventbridge_ebs_snapshot(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": stop the monitored EC2 instance, then find a snapshot of the volume.
    EC2 is outside the local cloud's scope: its StopInstances emits no state-change event, so
    the event EC2 would send is delivered to the rule (as EventBridge does), and the rule's
    built-in CreateSnapshot target must fail with an error naming EC2."""
    instance, volume = pattern.parameters["InstanceId"], pattern.parameters["VolumeId"]
    event = {
        "version": "0",
        "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": "EC2 Instance State-change Notification",
        "source": "aws.ec2",
        "account": cloud.account_id,
        "time": "2024-01-01T00:00:00Z",
        "region": cloud.region,
        "resources": [f"arn:aws:ec2:{cloud.region}:{cloud.account_id}:instance/{instance}"],
        "detail": {"instance-id": instance, "state": "stopping"},
    }
    cloud.redeliver(event)
    cloud.deliveries.drain()
    [delivery] = cloud.deliveries.all()
    assert delivery.target_arn.endswith(":target/create-snapshot")
    assert delivery.input == json.dumps(volume)
    assert delivery.status == "DROPPED", delivery
    assert "EC2" in (delivery.error_message or ""), delivery


def sfn_comprehend_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": start-sync-execution with a message; the answer is SUCCEEDED with the
    message and Comprehend's sentiment analysis (``Sentiment`` and its ``SentimentScore``).
    Comprehend is outside the local cloud's scope: the aws-sdk:comprehend:detectSentiment
    task fails as Comprehend fails a role without access to it, and the execution FAILS with
    Comprehend.ComprehendException (Comprehend models no AccessDeniedException: the SDK's
    base exception, as S3.S3Exception), whose cause is the AccessDenied naming the service."""
    sfn = boto3.client("stepfunctions", config=SYNC)
    message = "I am very happy today."
    answer = sfn.start_sync_execution(
        name="test",
        stateMachineArn=cloud.outputs["StateMachineExpressSyncToComprehend"],
        input=json.dumps({"message": message}),
    )
    assert answer["status"] == "FAILED", answer
    assert answer["name"] == "test"
    assert answer["error"] == "Comprehend.ComprehendException", answer
    assert "is not authorized to perform: comprehend:DetectSentiment" in answer["cause"], answer
    assert "the local cloud does not run Amazon Comprehend" in answer["cause"], answer


def sfn_dynamodb(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": start-execution with an id; the execution SUCCEEDS with the item it
    put and read back as output, and get-item finds the item in the table. The definition
    gives plain strings (``id.$: $.id``) where DynamoDB wants AttributeValues; Step Functions'
    DynamoDB integration takes a string as ``{"S": ...}`` (the Java SDK's
    ``AttributeValue(String)``), which is how the README's typed output comes about
    (fixes/sfn_dynamodb_string_attribute_values.py)."""
    sfn = boto3.client("stepfunctions")
    started = sfn.start_execution(
        name="test",
        stateMachineArn=cloud.outputs["StateMachinetoDDBArn"],
        input='{"id":  "12345" }',
    )
    execution = wait_for(lambda: ended(sfn, started["executionArn"]), "the execution to end")
    assert execution["status"] == "SUCCEEDED", execution
    item = {"description": {"S": "Hello, my id is 12345."}, "id": {"S": "12345"}}
    assert json.loads(execution["output"]) == item
    got = boto3.client("dynamodb").get_item(
        TableName=cloud.outputs["TableName"], Key={"id": {"S": "12345"}}
    )
    assert got["Item"] == item


def sfn_ecs_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": run the state machine with a bucketArray; each item runs an ECS
    Fargate task (ecs:runTask.waitForTaskToken) that reports back with its task token, and
    the results come per bucket. ECS (Fargate tasks) is outside the local cloud's scope: the
    execution must fail with an error naming ECS, ECS.AccessDeniedException, as ECS refuses
    a role without access to it."""
    sfn = boto3.client("stepfunctions")
    started = sfn.start_execution(
        stateMachineArn=cloud.outputs["ActivityStateMachineArn"],
        input=json.dumps({"bucketArray": ["value1", "value2", "value3"]}),
    )
    execution = wait_for(lambda: ended(sfn, started["executionArn"]), "the execution to end")
    assert execution["status"] == "FAILED", execution
    assert execution["error"].startswith("ECS."), execution
    assert execution["error"] == "ECS.AccessDeniedException", execution


def sfn_eventbridge(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": start-execution, then ``aws logs tail`` the log group: the event the
    workflow put on the bus is there (detail-type MyTestMessage, source MyTestApp)."""
    sfn = boto3.client("stepfunctions")
    started = sfn.start_execution(stateMachineArn=cloud.outputs["MyStateMachineArn"])
    execution = wait_for(lambda: ended(sfn, started["executionArn"]), "the execution to end")
    assert execution["status"] == "SUCCEEDED", execution
    cloud.deliveries.drain()
    group = cloud.outputs["MyLogGroup"]
    [event] = wait_for(lambda: log_messages(group), f"an event in {group}")
    assert event["detail-type"] == "MyTestMessage"
    assert event["source"] == "MyTestApp"
    assert event["account"] == cloud.account_id
    assert event["detail"] == {"Message": "Hello from Step Functions!"}
    assert started["executionArn"] in event["resources"]


def sfn_lambda_function_crossaccount(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": start-execution with a payload; the state machine invokes the
    function of the other account (lambda-function.yaml) and succeeds with its answer."""
    sfn = boto3.client("stepfunctions")
    started = sfn.start_execution(
        stateMachineArn=cloud.outputs["StateMachineArn"], input='{ "payload": "testing"}'
    )
    execution = wait_for(lambda: ended(sfn, started["executionArn"]), "the execution to end")
    assert execution["status"] == "SUCCEEDED", execution
    payload = json.loads(execution["output"])["Payload"]
    assert payload == {"statusCode": 200, "body": json.dumps("Hello from Lambda in account B!")}


def sfn_s3(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": start-execution, then ``aws s3 ls my-sfn-bucket-destination``:
    filename.txt is there (the workflow's "Hello World")."""
    sfn = boto3.client("stepfunctions")
    started = sfn.start_execution(stateMachineArn=cloud.outputs["MyStateMachineArn"])
    execution = wait_for(lambda: ended(sfn, started["executionArn"]), "the execution to end")
    assert execution["status"] == "SUCCEEDED", execution
    s3 = boto3.client("s3")
    listed = s3.list_objects_v2(Bucket="my-sfn-bucket-destination")["Contents"]
    assert [o["Key"] for o in listed] == ["filename.txt"]
    body = s3.get_object(Bucket="my-sfn-bucket-destination", Key="filename.txt")["Body"]
    assert body.read() == b"Hello World"


def sfn_sfn(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": start-execution of the parent; it starts the child; each one's log
    group (stack outputs) shows its execution, the child's succeeding after its Wait and
    Parallel states."""
    sfn = boto3.client("stepfunctions")
    started = sfn.start_execution(
        name="test", stateMachineArn=cloud.outputs["ParentStateMachineArn"]
    )
    assert ":express:" in started["executionArn"]
    parent_group = cloud.outputs["ParentStateMachineLogGroupName"]
    child_group = cloud.outputs["ChildStateMachineLogGroupName"]

    def succeeded(group: str) -> list[dict[str, Any]] | None:
        records = log_messages(group)
        return records if any(r["type"] == "ExecutionSucceeded" for r in records) else None

    parent = wait_for(lambda: succeeded(parent_group), f"ExecutionSucceeded in {parent_group}")
    child = wait_for(lambda: succeeded(child_group), f"ExecutionSucceeded in {child_group}")
    assert {r["execution_arn"] for r in parent} == {started["executionArn"]}
    assert "TaskSucceeded" in [r["type"] for r in parent]
    entered = [r["details"]["name"] for r in child if r["type"].endswith("StateEntered")]
    assert entered[0] == "Choice" and "Wait 3 sec" in entered and "Hello World" in entered
    assert "No" not in entered


def sfn_sqs(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": start-execution with a message; the execution SUCCEEDS with
    SendMessage's answer, and receive-message gets the message ({"hello":"world"})."""
    sfn = boto3.client("stepfunctions")
    started = sfn.start_execution(
        name="test",
        stateMachineArn=cloud.outputs["StateMachinetoSQSArn"],
        input='{"message": {"hello" : "world" } }',
    )
    execution = wait_for(lambda: ended(sfn, started["executionArn"]), "the execution to end")
    assert execution["status"] == "SUCCEEDED", execution
    output = json.loads(execution["output"])
    assert output["MD5OfMessageBody"] == "fbc24bcc7a1794758fc1327fcfebdaf6", output
    [message] = receive_all(cloud.outputs["MyQueueURL"], 1)
    assert message["Body"] == '{"hello":"world"}'
    assert message["MessageId"] == output["MessageId"]


def sns_lambda_python_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": publish 10 messages to the topic; the function's log (``sam logs``)
    shows each one processed."""
    function = cloud.outputs["ProcessorFunctionName"]
    sns = boto3.client("sns")
    sent = [json.dumps({"message": f"Test message-{i}"}) for i in range(1, 11)]
    for message in sent:
        sns.publish(TopicArn=cloud.outputs["ProcessingTopicArn"], Message=message)
    async_invocations(cloud.runtime).drain()
    wait_for(lambda: len(invocations(cloud, function)) >= 10, "10 invocations")
    assert all(r["outcome"] == "ok" for r in invocations(cloud, function))
    log = function_log(function)
    processed = sorted(line for line in log if line.startswith("Processed message "))
    assert processed == sorted(f"Processed message {m}" for m in sent)
    assert log.count("done") == 10


def sns_lambda_slack_integration_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: publish to the topic with a subject and a message; the function posts them to
    the Slack webhook. The template's handler (``app.handler``) is not in hello_world/app.py
    (which defines ``lambda_handler``): on AWS every invocation fails with
    Runtime.HandlerNotFound, which is asserted here (no Slack call is made)."""
    function = cloud.outputs["TopicConsumerFunction1Name"]
    boto3.client("sns").publish(
        TopicArn=cloud.outputs["SNStopicARN"], Subject="SAM", Message="Hello from SNS"
    )
    async_invocations(cloud.runtime).drain()
    first = wait_for(lambda: invocations(cloud, function), "the function's invocation")[0]
    assert first["outcome"] == "Runtime.HandlerNotFound", first
    assert first["event"]["Records"][0]["Sns"]["Message"] == "Hello from SNS"
    assert first["event"]["Records"][0]["Sns"]["Subject"] == "SAM"


def sns_sqs(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": publish with subject testSubject and message testMessage; the queue
    holds the SNS notification (Type Notification, the subject, the message, the topic)."""
    topic = cloud.outputs["MySnsTopicArn"]
    boto3.client("sns").publish(TopicArn=topic, Subject="testSubject", Message="testMessage")
    [message] = receive_all(cloud.outputs["MySqsQueueURL"], 1)
    body = json.loads(message["Body"])
    assert body["Type"] == "Notification"
    assert body["TopicArn"] == topic
    assert body["Subject"] == "testSubject"
    assert body["Message"] == "testMessage"


def sns_sqs_fanout(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": publish the three example payloads with MetricType Temperature,
    Humidity and WindSpeed; AllMetricsSqsQueue gets all three, TemperatureSqsQueue and
    HumiditySqsQueue only theirs (raw message delivery: the payload itself)."""
    sns = boto3.client("sns")
    payloads = {
        "Temperature": {"MetricValue": "20 C", "Location": "Bangalore"},
        "Humidity": {"MetricValue": "80%", "Location": "Bangalore"},
        "WindSpeed": {"MetricValue": "45 km/h", "Location": "Bangalore"},
    }
    for metric, payload in payloads.items():
        sns.publish(
            TopicArn=cloud.outputs["SNStopicARN"],
            Message=json.dumps(payload),
            MessageAttributes={"MetricType": {"DataType": "String", "StringValue": metric}},
        )
    everything = receive_all(cloud.outputs["AllMetricsSqsQueueURL"], 3)
    assert sorted(json.loads(m["Body"])["MetricValue"] for m in everything) == sorted(
        p["MetricValue"] for p in payloads.values()
    )
    for output, metric in (
        ("TemperatureSqsQueueURL", "Temperature"),
        ("HumiditySqsQueueURL", "Humidity"),
    ):
        [message] = receive_all(cloud.outputs[output], 1)
        assert json.loads(message["Body"]) == payloads[metric]
        assert message["MessageAttributes"]["MetricType"]["StringValue"] == metric
        extra = boto3.client("sqs").receive_message(QueueUrl=cloud.outputs[output])
        assert not extra.get("Messages"), extra


def sns_sqs_lambda_xray(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": invoke the Producer; its message goes SNS -> SQS -> the Consumer
    (the X-Ray service map of that flow is outside the local cloud: the flow is asserted,
    by the Producer's answer and the Consumer's invocation with the SNS notification)."""
    producer = cloud.outputs["ProducerFunction"].rsplit(":", 1)[-1]
    consumer = cloud.outputs["ConsumerFunction"].rsplit(":", 1)[-1]
    answer = boto3.client("lambda").invoke(FunctionName=producer, Payload=b"{}")
    assert "FunctionError" not in answer, answer["Payload"].read()
    result = json.loads(answer["Payload"].read())
    assert result["statusCode"] == 200
    sent = json.loads(result["body"])
    assert sent.startswith("This message was sent: ")
    consumed = wait_for(lambda: invocations(cloud, consumer), "the Consumer's invocation")
    assert consumed[0]["outcome"] == "ok", consumed[0]
    [record] = consumed[0]["event"]["Records"]
    assert record["eventSourceARN"] == cloud.outputs["SourceSqsQueue"]
    assert json.loads(record["body"])["Message"] == sent


def sqs_lambda_python_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": send 10 messages to the queue; the function's log (``sam logs``)
    shows each one processed, and none is reported as a batch item failure."""
    function = cloud.outputs["ProcessorFunctionName"]
    sqs = boto3.client("sqs")
    sent = [json.dumps({"message": f"Test message-{i}"}) for i in range(1, 11)]
    for body in sent:
        sqs.send_message(QueueUrl=cloud.outputs["ProcessingQueueURL"], MessageBody=body)

    def processed() -> list[str] | None:
        log = function_log(function)
        lines = sorted(line for line in log if line.startswith("Processed message: "))
        return lines if len(lines) >= 10 else None

    assert wait_for(processed, "10 processed messages") == sorted(
        f"Processed message: {b}" for b in sent
    )

    def drained() -> bool:
        # The poller deletes a batch once the invocation returns, a moment after the print.
        attributes = sqs.get_queue_attributes(
            QueueUrl=cloud.outputs["ProcessingQueueURL"], AttributeNames=["All"]
        )["Attributes"]
        counts = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
        return all(attributes[c] == "0" for c in counts)

    wait_for(drained, "the queue emptied by the event source mapping")
    assert all(r["outcome"] == "ok" for r in invocations(cloud, function))


def stepfunctions_bedrock_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": start-sync-execution with a prompt; Claude's answer comes back as the
    output. Bedrock is outside the local cloud's scope: the execution must fail with an error
    whose cause names Bedrock, Bedrock.AccessDeniedException, as Bedrock refuses a role
    without access to it."""
    sfn = boto3.client("stepfunctions", config=SYNC)
    answer = sfn.start_sync_execution(
        name="test",
        stateMachineArn=cloud.outputs["StateMachineExpressSyncToBedrockArn"],
        input=json.dumps({"prompt": "Write 5 lines about how Moon was formed."}),
    )
    assert answer["status"] == "FAILED", answer
    assert answer["error"].startswith("Bedrock."), answer
    assert answer["error"] == "Bedrock.AccessDeniedException", answer
    assert "bedrock" in answer["cause"].lower(), answer


def stepfunctions_eventbridge_schedule_sam_python(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "How it works" (no testing steps): start an execution with a scheduleDate and a
    scheduleTime; it creates the one-time schedule schedule_<execution name> in
    MySchedulesGroup targeting the function; when the schedule fires, the function gets the
    execution's name, date and time."""
    sfn = boto3.client("stepfunctions")
    machine = (
        f"arn:aws:states:{cloud.region}:{cloud.account_id}:stateMachine:CreateScheduleStateMachine"
    )
    request = {"scheduleDate": "2030-01-01", "scheduleTime": "10:00:00"}
    started = sfn.start_execution(stateMachineArn=machine, name="test", input=json.dumps(request))
    execution = wait_for(lambda: ended(sfn, started["executionArn"]), "the execution to end")
    assert execution["status"] == "SUCCEEDED", execution
    schedule = boto3.client("scheduler").get_schedule(
        GroupName="MySchedulesGroup", Name="schedule_test"
    )
    assert schedule["ScheduleExpression"] == "at(2030-01-01T10:00:00)"
    assert schedule["Target"]["Arn"] == cloud.outputs["ScheduleTargetFunction"]
    # the ASL's Target.Input object, sent as its JSON text (fixes/sfn_sdk_json_text_members.py)
    assert json.loads(schedule["Target"]["Input"]) == {"executionId": "test", **request}
    function = cloud.outputs["ScheduleTargetFunction"].rsplit(":", 1)[-1]
    assert cloud.schedules is not None
    [fired] = cloud.schedules.fire("schedule_test", group="MySchedulesGroup")
    assert fired.status == "DELIVERED", fired
    async_invocations(cloud.runtime).drain()
    [invocation] = wait_for(lambda: invocations(cloud, function), "the function's invocation")
    assert invocation["outcome"] == "ok", invocation
    assert invocation["event"] == {"executionId": "test", **request}
    assert function_log(function) == [str(invocation["event"])]


STEPS: dict[str, Steps] = {
    "sam-eventbridge-ebs-snapshot": sam_eventbridge_ebs_snapshot,
    "sfn-comprehend-sam": sfn_comprehend_sam,
    "sfn-dynamodb": sfn_dynamodb,
    "sfn-ecs-sam": sfn_ecs_sam,
    "sfn-eventbridge": sfn_eventbridge,
    "sfn-s3": sfn_s3,
    "sfn-sfn": sfn_sfn,
    "sfn-sqs": sfn_sqs,
    "sns-lambda-python-sam": sns_lambda_python_sam,
    "sns-lambda-slack-integration-SAM": sns_lambda_slack_integration_sam,
    "sns-sqs": sns_sqs,
    "sns-sqs-fanout": sns_sqs_fanout,
    "sns-sqs-lambda-xray": sns_sqs_lambda_xray,
    "sqs-lambda-python-sam": sqs_lambda_python_sam,
    "stepfunctions-bedrock-sam": stepfunctions_bedrock_sam,
    "stepfunctions-eventbridge-schedule-sam-python": stepfunctions_eventbridge_schedule_sam_python,
}

PENDING: dict[str, tuple[Steps, str]] = {
    "sfn-lambda-function-crossaccount": (
        sfn_lambda_function_crossaccount,
        "needs the function of lambda-function.yaml deployed in a second account (and "
        "parameters naming it): the local cloud deploys one template in one account, so the "
        "task fails Lambda.ResourceNotFoundException (Function not found: "
        "...:function:x-lambdafunctionname, looked up in the cloud's own account and region)",
    ),
}
