"""README steps of serverless-patterns batch b (see serverless_patterns/__init__.py).

Each function does, with boto3, what the pattern's README says to do after ``sam deploy``
and asserts what it says the user sees. Where the README subscribes an email address to a
topic, an SQS queue is subscribed instead (the local cloud sends no email): its messages are
what the mailbox would get. Handler logs are printed to the test process, not to CloudWatch
Logs: where a README reads a log group to see that a function ran, the steps read the local
cloud's record of the invocation (its event and outcome) instead.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from typing import Any

import boto3

from localcloud.cloud import LocalCloud
from localcloud.features.lambda_async import async_invocations
from localcloud.runtime import AsyncInvocation
from serverless_patterns import Pattern, Steps, function_log, wait_for

TIMEOUT = 10.0


# --- helpers -------------------------------------------------------------------------------
def invoke(name: str, payload: Any = None, **kwargs: Any) -> tuple[dict[str, Any], Any]:
    """``aws lambda invoke``: the reply (without its payload) and the decoded payload."""
    body = json.dumps({} if payload is None else payload).encode()
    reply = boto3.client("lambda").invoke(FunctionName=name, Payload=body, **kwargs)
    raw = reply.pop("Payload").read()
    return reply, json.loads(raw) if raw else None


def subscribe_queue(topic_arn: str, name: str) -> str:
    """A queue subscribed to ``topic_arn`` (for the README's email subscription): its URL."""
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sns.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": topic_arn}},
            }
        ],
    }
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
    boto3.client("sns").subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn)
    return url


def receive(url: str) -> list[dict[str, Any]]:
    """``aws sqs receive-message``: what the queue holds now (received and deleted)."""
    sqs, got = boto3.client("sqs"), []
    while True:
        reply = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], WaitTimeSeconds=0
        )
        messages = reply.get("Messages", [])
        if not messages:
            return got
        for message in messages:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        got.extend(messages)


def receive_until(url: str, count: int, what: str) -> list[dict[str, Any]]:
    """The queue's messages, once it has received ``count`` of them."""
    got: list[dict[str, Any]] = []

    def enough() -> list[dict[str, Any]] | None:
        got.extend(receive(url))
        return got if len(got) >= count else None

    return wait_for(enough, what, TIMEOUT)


def notification(message: dict[str, Any]) -> Any:
    """The JSON ``Message`` of an SNS notification delivered to a queue."""
    return json.loads(json.loads(message["Body"])["Message"])


def ended_async(cloud: LocalCloud, function: str, count: int = 1) -> list[AsyncInvocation]:
    """The function's asynchronous invocations (S3 notifications, EventBridge targets, Event
    invokes), once ``count`` of them have ended."""
    log = async_invocations(cloud.runtime)

    def ended() -> list[AsyncInvocation] | None:
        done = [i for i in log.of(function) if i.status in ("SUCCEEDED", "FAILED", "ERROR")]
        return done if len(done) >= count else None

    return wait_for(ended, f"{count} asynchronous invocation(s) of {function} to end", TIMEOUT)


def ended_executions(machine: str, count: int) -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions")

    def ended() -> list[dict[str, Any]] | None:
        runs = sfn.list_executions(stateMachineArn=machine)["executions"]
        done = [r for r in runs if r["status"] != "RUNNING"]
        return done if len(done) >= count else None

    return wait_for(ended, f"{count} execution(s) of {machine} to end", TIMEOUT)


def states_entered(execution: str) -> list[str]:
    events = boto3.client("stepfunctions").get_execution_history(executionArn=execution)["events"]
    return [
        e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
    ]


def object_body(bucket: str, key: str) -> bytes | None:
    s3 = boto3.client("s3")
    try:
        return bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except s3.exceptions.NoSuchKey:
        return None


def keys(bucket: str) -> list[str]:
    found = boto3.client("s3").list_objects_v2(Bucket=bucket).get("Contents", [])
    return [o["Key"] for o in found]


# --- the patterns --------------------------------------------------------------------------
def lambda_comprehend_language_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: ``aws lambda invoke`` with a text; the response is "The detected language
    (dominant language) is English." Comprehend is outside the local cloud's scope: the
    function is deployed and invoked (StatusCode 200, $LATEST), and its call to Comprehend
    fails as AWS fails a role without access to it (AccessDeniedException, a ClientError in
    Python), with a function error naming the service and its operation."""
    reply, payload = invoke(
        cloud.outputs["LambdaFunctionName"],
        {"text": "Tomorrow will be a warm sunny day", "sl": "en", "tl": "de"},
        InvocationType="RequestResponse",
    )
    assert reply["StatusCode"] == 200
    assert reply["ExecutedVersion"] == "$LATEST"
    assert reply.get("FunctionError") == "Unhandled", payload
    assert payload["errorType"] == "ClientError", payload
    assert "when calling the DetectDominantLanguage operation" in payload["errorMessage"]
    assert "(AccessDeniedException)" in payload["errorMessage"], payload
    assert "the local cloud does not run Amazon Comprehend" in payload["errorMessage"], payload


def lambda_esm_sqs_filters_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: publish events/testMessage.json to the topic (SNSArn); every queue gets it and
    each function runs when its mapping's filter matches: the test message matches every
    filter, so all six functions run (the README's log groups), each once, with it."""
    message = (pattern.dir / "events" / "testMessage.json").read_text()
    boto3.client("sns").publish(TopicArn=cloud.outputs["SNSArn"], Message=message)
    suffixes = ["NoFilter", "Prefix", "IP", "AnythingBut", "And", "Or"]
    functions = {s: cloud.functions[f"EsmSqsFilterFunction{s}"] for s in suffixes}

    def all_ran() -> bool:
        return all(cloud.invocation_count(f) >= 1 for f in functions.values())

    wait_for(all_ran, "every filtered function to run", TIMEOUT)
    assert cloud.mappings is not None
    cloud.mappings.drain(TIMEOUT)
    for suffix, function in functions.items():
        runs = [r for r in cloud.runtime.invocations if r["function"] == function]
        assert len(runs) == 1, (suffix, runs)
        (record,) = runs[0]["event"]["Records"]
        assert json.loads(record["body"]) == json.loads(message), suffix
        assert runs[0]["outcome"] == "ok", (suffix, runs[0])


def _edited_generator(cloud: LocalCloud, pattern: Pattern) -> None:
    """The README's step 3: the function's code with "bus_a", "bus_b" and "bus_c" replaced
    by the ARNs of the three buses, deployed as the console's Deploy does
    (UpdateFunctionCode with the zip of the edited app.py)."""
    source = (pattern.dir / "src" / "app.py").read_text()
    for placeholder, output in (
        ("bus_a", "BlueBankBusARN"),
        ("bus_b", "RedBankBusARN"),
        ("bus_c", "GreenBankBusARN"),
    ):
        source = source.replace(f'"{placeholder}"', json.dumps(cloud.outputs[output]))
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as code:
        code.writestr("app.py", source)
    boto3.client("lambda").update_function_code(
        FunctionName=cloud.outputs["Lambdafunction"], ZipFile=archive.getvalue()
    )


def lambda_eventbridge_sns_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: subscribe to the four topics, put the buses' ARNs in the function's code,
    invoke it a few times; each invocation puts one event on a random bus, reportable or not.
    The Reserve Bank's topic gets every reportable event, whatever its bank; each bank's
    warehouse topic gets a copy of every event of its own bus, and no other."""
    _edited_generator(cloud, pattern)
    sns = boto3.client("sns")
    topics = {o: o.removesuffix("TopicName") for o in cloud.outputs if o.endswith("TopicName")}
    arns = {t["TopicArn"].rsplit(":", 1)[-1]: t["TopicArn"] for t in sns.list_topics()["Topics"]}
    queues = {
        bank: subscribe_queue(arns[cloud.outputs[output]], f"{bank}-mailbox")
        for output, bank in topics.items()
    }
    assert set(queues) == {"BlueBank", "RedBank", "GreenBank", "ReserveBank"}
    bank_of_bus = {
        cloud.outputs["BlueBankBusARN"]: "BlueBank",
        cloud.outputs["RedBankBusARN"]: "RedBank",
        cloud.outputs["GreenBankBusARN"]: "GreenBank",
    }
    sent: list[tuple[str, str, bool]] = []  # (event id, bank, reportable)

    def covered() -> bool:  # "a few times": until every bank sent both kinds of event
        return {(bank, r) for _, bank, r in sent} == {
            (bank, r) for bank in bank_of_bus.values() for r in (True, False)
        }

    while not covered():
        assert len(sent) < 100, sent
        before = len(function_log(cloud.outputs["Lambdafunction"]))
        reply, payload = invoke(cloud.outputs["Lambdafunction"])
        assert "FunctionError" not in reply, payload
        assert payload == {"statusCode": 200, "body": json.dumps("Event Unterwegs!")}
        out = "\n".join(function_log(cloud.outputs["Lambdafunction"])[before:])  # its log
        (event_id,) = re.findall(r"'EventId': '([^']+)'", out)
        bus = re.search(r"Current Bus:  (\S+)", out)
        reportable = re.search(r"Is transaction resportable:  (\w+)", out)
        assert bus and reportable, out
        sent.append((event_id, bank_of_bus[bus.group(1)], reportable.group(1) == "Yes"))
    cloud.deliveries.drain()
    expected = {
        "ReserveBank": {e for e, _, reportable in sent if reportable},
        **{
            b: {e for e, bank, _ in sent if bank == b} for b in ("BlueBank", "RedBank", "GreenBank")
        },
    }
    for bank, url in queues.items():
        got = receive_until(url, len(expected[bank]), f"{bank}'s notifications")
        events = [notification(m) for m in got]
        assert {e["id"] for e in events} == expected[bank], bank
        assert len(events) == len(expected[bank]), bank
        for event in events:
            assert event["detail-type"] == "Bank transaction"
            assert event["detail"]["customer_name"] == "John Smith"


def lambda_extension_telemetryapi_s3(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: invoke the sample function; its logs, captured by the layer's Telemetry API
    extension, are stored in the bucket (objects ``<function name>-<time>.log``)."""
    function = cloud.functions["SampleFunction1"]
    bucket = cloud.outputs["LogExtensionsBucket"]

    def invoked_and_stored() -> list[str]:
        """An invocation; the logs stored so far (the extension stores what the Telemetry
        API sent it when its next INVOKE comes: the previous invocation's lines)."""
        reply, payload = invoke(function)
        assert "FunctionError" not in reply, payload
        assert json.loads(payload["body"]) == {"message": "Sample App 1 Return"}
        return [k for k in keys(bucket) if k.startswith(f"{function}-")]

    logs = wait_for(invoked_and_stored, "the function's logs in the bucket", TIMEOUT)
    bodies = b"".join(object_body(bucket, k) or b"" for k in logs)
    assert b"Sample App 1 Log" in bodies


def lambda_s3(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: ``aws lambda invoke``, then the object is in the destination bucket."""
    reply, payload = invoke(cloud.functions["PutObjectFunction"])
    assert reply["StatusCode"] == 200 and "FunctionError" not in reply, payload
    assert payload is True
    bucket = pattern.parameters["DestinationBucketName"]
    body = wait_for(lambda: object_body(bucket, "filename.txt"), "the object", TIMEOUT)
    assert body == b"Hello World"


def lambda_s3_async_lambda(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: invoke SendPayloadFunction with a small payload (it invokes
    MyAsynchronousFunction asynchronously: the response is the 202 of that invocation), then
    with a large one (payload/payload-large.json, not in the published copy: a JSON object
    over the 1 MB asynchronous quota is made here): the response is S3's (it "includes
    AmazonS3"), the payload is an object ``MyPayload_*.json`` of the bucket, whose
    s3:ObjectCreated notification runs MyAsynchronousFunction, which reads it."""
    asynchronous = cloud.functions["AsynchronousFunction"]
    reply, payload = invoke("SendPayloadFunction", {"key": "value"})
    assert "FunctionError" not in reply, payload
    assert payload["statusCode"] == 200
    body = json.loads(payload["body"])
    assert body["StatusCode"] == 202
    (small,) = ended_async(cloud, asynchronous)
    assert json.loads(small.payload) == {"key": "value"}

    large = {f"key{i}": "v" * 1000 for i in range(1500)}  # ~1.5 MB
    reply, payload = invoke("SendPayloadFunction", large)
    assert "FunctionError" not in reply, payload
    assert payload["statusCode"] == 200
    assert "AmazonS3" in payload["body"]
    bucket = pattern.parameters["PayloadBucketName"]
    (key,) = [k for k in keys(bucket) if k.startswith("MyPayload_") and k.endswith(".json")]
    assert json.loads(object_body(bucket, key) or b"") == large
    runs = ended_async(cloud, asynchronous, 2)
    from_s3 = json.loads(runs[1].payload)
    assert from_s3["Records"][0]["s3"]["object"]["key"] == key
    assert runs[1].status == "SUCCEEDED", runs[1]


def lambda_translator(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: ``aws lambda invoke`` with "I am very happy" (en -> de); the output is the
    translation. Translate is outside the local cloud's scope: the function is deployed and
    invoked, and its call to Translate fails as AWS fails a role without access to it
    (AccessDeniedException), with a function error naming the service."""
    reply, payload = invoke(
        cloud.outputs["LambdaFunctionName"],
        {"text": "I am very happy", "sl": "en", "tl": "de"},
        InvocationType="RequestResponse",
    )
    assert reply["StatusCode"] == 200
    assert reply.get("FunctionError") == "Unhandled", payload
    assert payload["errorType"] == "ClientError", payload
    assert "when calling the TranslateText operation" in payload["errorMessage"], payload
    assert "the local cloud does not run Amazon Translate" in payload["errorMessage"], payload


def lambda_version_alias(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: run the function: "Hello from Lambda! version 1", its "dev" alias on version 1
    (VersionDescription "1"). Then UPDATE the stack with the code saying "version 2" and
    VersionDescription "2": "dev" is on version 2, and version 1 is kept."""
    function = cloud.functions["lambdaFunctionAlias"]
    for qualifier in ({}, {"Qualifier": "dev"}):
        reply, payload = invoke(function, **qualifier)
        assert "FunctionError" not in reply, payload
        assert payload["statusCode"] == 200
        assert json.loads(payload["body"]) == {"message": "Hello from Lambda! version 1"}
    lam = boto3.client("lambda")
    alias = lam.get_alias(FunctionName=function, Name="dev")
    assert alias["FunctionVersion"] == "1"
    versions = lam.list_versions_by_function(FunctionName=function)["Versions"]
    assert [v["Version"] for v in versions] == ["$LATEST", "1"]

    # The README's UPDATE: the template with version 2's code and VersionDescription.
    template = pattern.template.read_text()
    updated = template.replace("version 1", "version 2").replace(
        'VersionDescription: "1"', 'VersionDescription: "2"'
    )
    assert updated.count("version 2") == 1 and 'VersionDescription: "2"' in updated
    boto3.client("cloudformation").update_stack(
        StackName=cloud.stack_name, TemplateBody=updated, Capabilities=["CAPABILITY_IAM"]
    )
    alias = lam.get_alias(FunctionName=function, Name="dev")
    assert alias["FunctionVersion"] == "2"
    reply, payload = invoke(function, Qualifier="dev")
    assert json.loads(payload["body"]) == {"message": "Hello from Lambda! version 2"}
    versions = lam.list_versions_by_function(FunctionName=function)["Versions"]
    assert [v["Version"] for v in versions] == ["$LATEST", "1", "2"]
    reply, payload = invoke(function, Qualifier="1")  # kept, with the code it was made of
    assert json.loads(payload["body"]) == {"message": "Hello from Lambda! version 1"}


def rekognition_s3_detectlabels_python(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: put an image into the input bucket; the function (EventBridge rule) calls
    Rekognition DetectLabels and writes its labels to the output bucket as
    ``rekognition-output-<name>.json``. Rekognition is outside the local cloud's scope: the
    upload runs the function, whose DetectLabels fails as AWS fails a role without access to
    Rekognition (AccessDeniedException), naming the service; no labels are written."""
    s3 = boto3.client("s3")
    s3.put_object(Bucket=cloud.outputs["InputBucketName"], Key="kitten.jpg", Body=b"\xff\xd8\xff")
    cloud.deliveries.drain()
    output = cloud.outputs["OutputBucketName"]
    (run,) = ended_async(cloud, cloud.outputs["RekognitionFunctionName"])
    assert run.status == "FAILED", run
    assert run.response["errorType"] == "AccessDeniedException", run.response
    assert "when calling the DetectLabels operation" in run.response["errorMessage"]
    assert "the local cloud does not run Amazon Rekognition" in run.response["errorMessage"]
    assert object_body(output, "rekognition-output-kitten.json") is None


STEPS: dict[str, Steps] = {
    "lambda-version-alias": lambda_version_alias,
    "lambda-s3-async-lambda": lambda_s3_async_lambda,
    "lambda-comprehend-language-sam": lambda_comprehend_language_sam,
    "lambda-esm-sqs-filters-sam": lambda_esm_sqs_filters_sam,
    "lambda-eventbridge-sns-sam": lambda_eventbridge_sns_sam,
    "lambda-s3": lambda_s3,
    "lambda-translator": lambda_translator,
    "rekognition-s3-detectlabels-python": rekognition_s3_detectlabels_python,
}

PENDING: dict[str, tuple[Steps, str]] = {
    "lambda-extension-telemetryapi-s3": (
        lambda_extension_telemetryapi_s3,
        "its extension is published without its execute bit (mode 644 upstream): Lambda does "
        "not start it (Extension.LaunchError, fork/exec ...: permission denied) unless the zip "
        "was made on Windows, and neither does the local cloud; made executable, these steps "
        "pass (test_lambda_extensions.py::"
        "test_the_published_telemetry_extension_runs_once_it_is_executable)",
    ),
}
