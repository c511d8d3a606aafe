"""A dynamodb:* task (the optimized integration) given a plain string where DynamoDB wants an
AttributeValue puts, updates and reads the string attribute {"S": ...}, as Step Functions'
Java SDK AttributeValue(String) takes it (fixes/sfn_dynamodb_string_attribute_values.py;
without it botocore's serializer fails "'str' object has no attribute 'items'")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

TEMPLATE = (
    Path(__file__).parent / "templates" / "sfn_dynamodb_string_attribute_values" / "template.yaml"
)
ITEM = {
    "pk": {"S": "o-1"},
    "greeting": {"S": "Hello, o-1."},
    "typed": {"N": "7"},
    "address": {"M": {"city": {"S": "Lyon"}}},
    "tags": {"L": [{"S": "red"}, {"S": "blue"}]},
    "status": {"S": "shipped"},
}


@pytest.fixture(scope="module")
def run() -> Iterator[tuple[LocalCloud, dict[str, Any]]]:
    with LocalCloud(TEMPLATE, stack_name="sfn-ddb-strings", event_delivery=False) as cloud:
        sfn = boto3.client("stepfunctions")
        arn = sfn.start_execution(
            stateMachineArn=cloud.outputs["MachineArn"],
            input=json.dumps({"id": "o-1", "city": "Lyon"}),
        )["executionArn"]
        assert cloud.runtime.wait_until(
            lambda: sfn.describe_execution(executionArn=arn)["status"] != "RUNNING", timeout=30
        )
        yield cloud, dict(sfn.describe_execution(executionArn=arn))


def test_the_item_has_string_attributes(run: tuple[LocalCloud, dict[str, Any]]) -> None:
    cloud, execution = run
    assert execution["status"] == "SUCCEEDED", (execution.get("error"), execution.get("cause"))
    got = boto3.client("dynamodb").get_item(
        TableName=cloud.outputs["TableName"], Key={"pk": {"S": "o-1"}}
    )
    assert got["Item"] == ITEM


def test_get_item_by_a_string_key_returns_it(run: tuple[LocalCloud, dict[str, Any]]) -> None:
    _, execution = run
    assert json.loads(execution["output"]) == ITEM
