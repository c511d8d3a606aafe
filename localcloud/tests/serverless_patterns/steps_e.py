"""README steps of serverless-patterns batch e (see serverless_patterns/__init__.py): what a
user runs after ``sam deploy``, with boto3 against the local cloud, and what they should see."""

from __future__ import annotations

import json

import boto3

from localcloud.cloud import LocalCloud
from serverless_patterns import Pattern, Steps, function_log, wait_for


def sqs_lambda_tenant_isolation_sam_py(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing, step 1: the queue's URL from the stack outputs (the README's query names
    OutputKey ``MyQueueUrl``; the template's output is ``QueueUrl``, so the query as written
    prints nothing). Step 2: one message per tenant, with ``--message-group-id``
    tenant-blue / tenant-green. Step 3: the SQS processor reads each record's MessageGroupId
    and invokes the tenant-isolated function asynchronously with it as TenantId; its log
    shows each tenant's request ("Processing request for tenant: ...") and AWS writes each
    environment, so each tenant, to a log stream of its own (``aws logs``); each tenant's
    invocations are those Lambda ran for that tenant."""
    assert "MyQueueUrl" not in cloud.outputs
    queue_url = cloud.outputs["QueueUrl"]
    sqs = boto3.client("sqs")
    for tenant in ("tenant-blue", "tenant-green"):
        sqs.send_message(
            QueueUrl=queue_url,
            MessageBody='{"data": "test payload"}',
            MessageGroupId=tenant,
        )
    isolated = "tenant-isolated-processor"
    expected = [f"Processing request for tenant: {t}" for t in ("tenant-blue", "tenant-green")]
    wait_for(
        lambda: all(line in function_log(isolated) for line in expected),
        "the tenant-isolated function's log lines",
    )
    cloud.settle()
    lines = function_log("sqs-processor") + function_log(isolated)
    for tenant in ("tenant-blue", "tenant-green"):
        assert f"Invoked tenant-isolated function for messagegroup: {tenant}" in lines, lines
        assert f"Processing request for tenant: {tenant}" in lines, lines
    assert 'Event data: {"data": "test payload"}' in lines, lines
    found = boto3.client("logs").filter_log_events(logGroupName=f"/aws/lambda/{isolated}")
    streams: dict[str, set[str]] = {}  # tenant -> the streams its lines are in
    for event in found["events"]:
        if event["message"].startswith("Processing request for tenant: "):
            tenant = event["message"].rsplit(" ", 1)[-1]
            streams.setdefault(tenant, set()).add(event["logStreamName"])
    assert len(streams["tenant-blue"] | streams["tenant-green"]) == 2, streams
    runs = [r for r in cloud.runtime.invocations if r["function"] == isolated]
    assert sorted(r["tenant"] for r in runs) == ["tenant-blue", "tenant-green"]
    assert all(r["outcome"] == "ok" for r in runs), runs


def fifo_sqs_redrive(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing, step 1: a JSON message to MyOriginalQueue.fifo (``--message-group-id
    group1``). Steps 2-3: MyOriginalQueueFunction raises, so after its one receive
    (maxReceiveCount 1) the message is in MyDeadLetterQueue.fifo and the function's log
    shows the failure. Step 4: ``aws sqs start-message-move-task`` from the DLQ to
    MyReProcessQueue.fifo. Steps 5-6: ReProcessQueueFunction processes it ("Message redriven
    from DLQ"), and no queue holds a message any more."""
    sqs = boto3.client("sqs")
    body = '{"id":123,"name":"John","data":{"age":30,"job":"Developer"}}'
    sqs.send_message(
        QueueUrl=cloud.outputs["MyOriginalQueueUrl"], MessageBody=body, MessageGroupId="group1"
    )
    urls = {
        name: sqs.get_queue_url(QueueName=f"{name}.fifo")["QueueUrl"]
        for name in ("MyOriginalQueue", "MyDeadLetterQueue", "MyReProcessQueue")
    }

    def held() -> dict[str, int]:
        """Each queue's messages, visible or in flight (the console's two columns)."""
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        counts = {}
        for name, url in urls.items():
            found = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
            counts[name] = sum(map(int, found.values()))
        return counts

    in_dlq = {"MyOriginalQueue": 0, "MyDeadLetterQueue": 1, "MyReProcessQueue": 0}
    wait_for(lambda: held() == in_dlq, "the message in the dead-letter queue", 90)
    failed = function_log("MyOriginalQueueFunction")
    assert any("Exception: Failed to process message" in line for line in failed), failed
    task = sqs.start_message_move_task(
        SourceArn=cloud.outputs["MyDeadLetterQueueArn"],
        DestinationArn=cloud.outputs["MyReProcessQueueArn"],
    )
    assert task["TaskHandle"]
    wait_for(
        lambda: "Message redriven from DLQ" in function_log("ReProcessQueueFunction"),
        "ReProcessQueueFunction's log line",
    )
    wait_for(lambda: set(held().values()) == {0}, "every queue empty")
    processed = function_log("ReProcessQueueFunction")
    assert f"Processed message: {json.loads(body)}" in processed, processed


PENDING: dict[str, tuple[Steps, str]] = {}


def lambda_layer(cloud: LocalCloud, pattern: Pattern) -> None:
    """Testing: "Test" PyMySQLLayerLambdaFunction: it runs (its layer puts pymysql on its
    path); "Test" PyMySQLNoLayerLambdaFunction, the same code without the layer: "Unable to
    import module 'app': No module named 'pymysql'". Each function runs in its own
    environment process (corpus.json: environments "process"), as on Lambda."""
    lam = boto3.client("lambda")
    ok = lam.invoke(FunctionName=cloud.outputs["PyMySQLLayerLambdaFunctionName"])
    assert "FunctionError" not in ok and json.loads(ok["Payload"].read()) is True
    failed = lam.invoke(FunctionName=cloud.outputs["PyMySQLNoLayerLambdaFunctionName"])
    assert failed["FunctionError"] == "Unhandled"
    error = json.loads(failed["Payload"].read())
    assert error["errorType"] == "Runtime.ImportModuleError"
    assert error["errorMessage"] == "Unable to import module 'app': No module named 'pymysql'"


STEPS: dict[str, Steps] = {
    "fifo-sqs-redrive": fifo_sqs_redrive,
    "lambda-layer": lambda_layer,
    "sqs-lambda-tenant-isolation-sam-py": sqs_lambda_tenant_isolation_sam_py,
}
