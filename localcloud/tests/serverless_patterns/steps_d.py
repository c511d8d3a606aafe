"""README steps of serverless-patterns batch d (see serverless_patterns/__init__.py): the
Lambda durable functions patterns (features/lambda_durable.py), what a user runs after
``sam deploy``, with boto3 against the local cloud, and what they should see.

Their handlers import only aws-durable-execution-sdk-python (and boto3), installed here."""

from __future__ import annotations

import json
from typing import Any

import boto3

from localcloud.cloud import LocalCloud
from serverless_patterns import Pattern, Steps, function_log, wait_for


# ---------------------------------------------------------------- helpers
def _invocations(cloud: LocalCloud, function: str) -> int:
    """How many times ``function`` (physical name) has been invoked so far."""
    return sum(1 for r in cloud.runtime.invocations if r["function"] == function)


def _ended_executions(function: str, count: int) -> list[dict[str, Any]] | None:
    """``aws lambda list-durable-executions-by-function``, once ``count`` have ended."""
    found = boto3.client("lambda").list_durable_executions_by_function(FunctionName=function)
    ended = [e for e in found["DurableExecutions"] if e["Status"] != "RUNNING"]
    return ended if len(ended) >= count else None


def _invoke(function: str, payload: dict[str, Any]) -> Any:
    """``aws lambda invoke --function-name <function> --payload ... response.json``."""
    reply = boto3.client("lambda").invoke(
        FunctionName=function, Payload=json.dumps(payload).encode()
    )
    assert not reply.get("FunctionError"), reply
    return json.loads(reply["Payload"].read())


# ---------------------------------------------------------------- patterns
def lambda_durable_esm_and_chaining(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Deployment" 3-4: send a message to the queue; the durable function (its
    ``prod`` alias, through the SQS event source mapping) chains the validation,
    transformation and storage functions, and ``aws dynamodb scan`` shows the stored item:
    the original data (``"data_source": "test.csv"``), the transformed one (``TEST.CSV``),
    the execution id and the timestamps."""
    boto3.client("sqs").send_message(
        QueueUrl=cloud.outputs["DataProcessingQueueUrl"],
        MessageBody='{"data_source": "test.csv", "processing_type": "standard"}',
    )
    table = cloud.outputs["ProcessedDataTable"]
    dynamodb = boto3.client("dynamodb")
    items = wait_for(lambda: dynamodb.scan(TableName=table)["Items"], "a stored item", 60)
    (item,) = items
    assert item["original_data"]["M"]["data_source"] == {"S": "test.csv"}, item
    assert item["data_source"] == {"S": "test.csv"}, item
    assert item["transformed_data"]["M"]["data_source"] == {"S": "TEST.CSV"}, item
    assert item["execution_id"]["S"].startswith("dev-esm-"), item
    assert item["stored_at"]["S"] and item["transformed_data"]["M"]["processed_at"]["S"], item
    function = cloud.outputs["DurableFunctionArn"].rsplit(":", 1)[-1]
    (execution,) = wait_for(lambda: _ended_executions(function, 1), "the execution's end", 60)
    assert execution["Status"] == "SUCCEEDED", execution
    assert execution["FunctionArn"].endswith(":1"), execution  # the alias's version


def lambda_durable_eventbridge_cron_python_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": the Scheduler schedule invokes the ``live`` alias every minute (here:
    one run, fired); the function's log shows the first invocation "Fetching data from
    external API..." then suspending on the 10-second wait, the second "Processing data..."
    with fetch_data skipped (its checkpoint replayed); the durable execution ends with the
    processed data."""
    function = cloud.outputs["DurableCronFunctionName"]
    assert cloud.schedules is not None
    (fired,) = cloud.schedules.fire(cloud.outputs["HourlyCronScheduleArn"].rsplit("/", 1)[-1])
    (execution,) = wait_for(lambda: _ended_executions(function, 1), "the execution's end")
    assert execution["Status"] == "SUCCEEDED", (execution, fired)
    assert _invocations(cloud, function) == 2  # suspended on the wait, then replayed
    # the function's log (its prints; the SDK runs them on its threads)
    lines = [x for x in function_log(function) if x.endswith("...")]
    assert lines == ["Fetching data from external API...", "Processing data..."], lines
    described = boto3.client("lambda").get_durable_execution(
        DurableExecutionArn=execution["DurableExecutionArn"]
    )
    assert json.loads(described["Result"]) == {
        "total": 6,
        "source": "external-api",
        "status": "processed",
    }, described


def lambda_durable_function_chaining_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": invoke the orchestrator's alias with {"id": "test-123", "name":
    "demo", "value": 5}; it chains step1-add, step2-transform and step3-finalize and answers
    the workflow's output. The README's "Expected output" says value 35 and final_value 40,
    but its step functions compute 5 + 10 = 15, x 2 = 30 (value), + 5 = 35 (final_value:
    step 3 does not change value), as they would on AWS: that is asserted."""
    arn = cloud.outputs["OrchestratorAliasArn"]
    answer = _invoke(arn, {"id": "test-123", "name": "demo", "value": 5})
    assert answer == {
        "workflow": "completed",
        "input": {"id": "test-123", "name": "demo", "value": 5},
        "output": {
            "id": "test-123",
            "name": "demo",
            "step1_completed": True,
            "value": 30,
            "step2_completed": True,
            "transformed_name": "DEMO",
            "step3_completed": True,
            "status": "COMPLETED",
            "final_value": 35,
        },
    }, answer


def lambda_durable_invoke_lambda_sam_python(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": invoke the durable function's alias with the values; it prepares
    them in a step, invokes the processor function (a chained invoke) and answers its
    result."""
    answer = _invoke(
        cloud.outputs["DurableLambdaFunctionAliasArn"], {"values": [10, 20, 30, 40, 50]}
    )
    assert answer["statusCode"] == 200, answer
    assert json.loads(answer["body"]) == {
        "message": "Durable orchestration completed successfully",
        "input_values": [10, 20, 30, 40, 50],
        "processing_result": {
            "operation": "sum_and_average",
            "count": 5,
            "sum": 150,
            "average": 30.0,
            "max": 50,
            "min": 10,
        },
    }, answer


def lambda_durable_parallel_execution_python_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": invoke ``<MathFunction>:live`` with two numbers (the four operations
    run as parallel branches), with a zero divisor (the division step fails, without retry:
    "One or more operations failed"), and with no numbers (both 0: the same)."""
    function = f"{cloud.outputs['MathFunction']}:live"
    assert _invoke(function, {"num1": 10, "num2": 5}) == {
        "Add": 15,
        "Subtract": 5,
        "Multiply": 50,
        "Division": 2.0,
    }
    failed = {"error_details": "One or more operations failed"}
    assert _invoke(function, {"num1": 10, "num2": 0}) == failed
    assert _invoke(function, {}) == failed


def lambda_durable_saga_python_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README "Testing": seed the inventory; invoke ``<orchestrator>:$LATEST`` asynchronously
    with an order: it is CONFIRMED; then with an order over the payment limit: the payment
    step fails (retried by the SDK's default strategy, on the cloud's clock), the inventory
    reservation is compensated and the order is FAILED. The README expects the laptops back
    at available 50, reserved 0, which holds only without the first order: after both, the
    compensation restores what the failed order took (available 48, reserved 2: the
    confirmed order's two laptops stay reserved), as it would on AWS; that is asserted."""
    dynamodb = boto3.client("dynamodb")
    inventory, orders = cloud.outputs["InventoryTableName"], cloud.outputs["OrdersTableName"]
    for item, available in (("ITEM-LAPTOP", "50"), ("ITEM-MOUSE", "100")):
        dynamodb.put_item(
            TableName=inventory,
            Item={"item_id": {"S": item}, "available": {"N": available}, "reserved": {"N": "0"}},
        )
    function = f"{cloud.outputs['OrchestratorFunctionName']}:$LATEST"
    orders_sent = (
        {"order_id": "ORD-001", "customer_id": "CUST-100", "total_amount": "999.99",
         "items": [{"item_id": "ITEM-LAPTOP", "quantity": 2},
                   {"item_id": "ITEM-MOUSE", "quantity": 3}]},
        {"order_id": "ORD-FAIL", "customer_id": "CUST-200", "total_amount": "15000.00",
         "items": [{"item_id": "ITEM-LAPTOP", "quantity": 5}]},
    )  # fmt: skip
    expected = (("ORD-001", "CONFIRMED"), ("ORD-FAIL", "FAILED"))
    for order, (order_id, status) in zip(orders_sent, expected, strict=True):
        reply = boto3.client("lambda").invoke(
            FunctionName=function, InvocationType="Event", Payload=json.dumps(order).encode()
        )
        assert reply["StatusCode"] == 202, reply

        def stored(order_id: str = order_id) -> dict[str, Any] | None:
            got = dynamodb.get_item(TableName=orders, Key={"order_id": {"S": order_id}})
            return got.get("Item")

        item = wait_for(stored, f"order {order_id}", 60)
        assert item["status"] == {"S": status}, item
    laptop = dynamodb.get_item(TableName=inventory, Key={"item_id": {"S": "ITEM-LAPTOP"}})["Item"]
    assert (laptop["available"], laptop["reserved"]) == ({"N": "48"}, {"N": "2"}), laptop
    mouse = dynamodb.get_item(TableName=inventory, Key={"item_id": {"S": "ITEM-MOUSE"}})["Item"]
    assert (mouse["available"], mouse["reserved"]) == ({"N": "97"}, {"N": "3"}), mouse


STEPS: dict[str, Steps] = {
    "lambda-durable-esm-and-chaining": lambda_durable_esm_and_chaining,
    "lambda-durable-eventbridge-cron-python-sam": lambda_durable_eventbridge_cron_python_sam,
    "lambda-durable-function-chaining-sam": lambda_durable_function_chaining_sam,
    "lambda-durable-invoke-lambda-sam-python": lambda_durable_invoke_lambda_sam_python,
    "lambda-durable-parallel-execution-python-sam": lambda_durable_parallel_execution_python_sam,
    "lambda-durable-saga-python-sam": lambda_durable_saga_python_sam,
}

PENDING: dict[str, tuple[Steps, str]] = {}
