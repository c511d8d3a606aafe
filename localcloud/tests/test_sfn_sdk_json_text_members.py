"""An aws-sdk task given a JSON object for a string member (SQS's MessageBody, also inside
SendMessageBatch's Entries) or a blob member (S3's Body) sends the object's JSON text, as
Step Functions does (fixes/sfn_sdk_json_text_members.py; without it botocore, which moto's
interpreter runs without parameter validation, writes the Python repr ``{'order': ...}``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

TEMPLATE = Path(__file__).parent / "templates" / "sfn_sdk_json_text_members" / "template.yaml"
ORDER = {"id": "o-1", "qty": 2, "gift": True}


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(TEMPLATE, stack_name="sfn-sdk-json-text", event_delivery=False) as running:
        sfn = boto3.client("stepfunctions")
        arn = sfn.start_execution(
            stateMachineArn=running.outputs["MachineArn"], input=json.dumps({"order": ORDER})
        )["executionArn"]
        assert running.runtime.wait_until(
            lambda: sfn.describe_execution(executionArn=arn)["status"] != "RUNNING", timeout=30
        )
        run = sfn.describe_execution(executionArn=arn)
        assert run["status"] == "SUCCEEDED", (run.get("error"), run.get("cause"))
        yield running


def bodies(cloud: LocalCloud) -> list[str]:
    sqs, got = boto3.client("sqs"), []
    while reply := sqs.receive_message(
        QueueUrl=cloud.outputs["QueueUrl"], MaxNumberOfMessages=10
    ).get("Messages"):
        for message in reply:
            sqs.delete_message(
                QueueUrl=cloud.outputs["QueueUrl"], ReceiptHandle=message["ReceiptHandle"]
            )
            got.append(message["Body"])
    return got


def test_an_object_for_a_string_member_is_sent_as_its_json_text(cloud: LocalCloud) -> None:
    """MessageBody at the top level and in each entry of a list of structures; a string
    stays as it was given."""
    assert sorted(bodies(cloud)) == sorted(
        [
            '{"order":{"id":"o-1","qty":2,"gift":true},"source":"send"}',
            '{"order":{"id":"o-1","qty":2,"gift":true},"source":"batch"}',
            "plain text",
        ]
    )


def test_an_object_for_a_blob_member_is_stored_as_its_json_text(cloud: LocalCloud) -> None:
    body = boto3.client("s3").get_object(Bucket=cloud.outputs["BucketName"], Key="order.json")
    assert json.loads(body["Body"].read()) == {"order": ORDER}
