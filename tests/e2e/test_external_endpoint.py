"""The pipeline's paths against a stack deployed elsewhere: LocalStack, AWS, `ingestctl local up`.

Skipped unless one of these names the stack:

* ``INGEST_E2E_OUTPUTS=FILE``: the JSON that ``ingestctl local up --outputs FILE`` writes
  (``{"endpoint": ..., "region": ..., "outputs": {...}}``); or
* ``INGEST_E2E_STACK=NAME``: a CloudFormation stack (``sam deploy`` to AWS, or ``samlocal
  deploy`` to LocalStack with ``AWS_ENDPOINT_URL=http://localhost:4566``).

Only public APIs are used: S3 uploads, the state table, the output and quarantine objects
and a queue subscribed to the data-quality topic. Every run writes under its own prefix
(``incoming/orders/e2e-<run id>/``) and deletes the queue and subscription it created; the
objects and records stay, as any upload's would.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer

from tests.support import AWKWARD_KEYS, sample_file, wait_for

pytestmark = pytest.mark.e2e

TIMEOUT = float(os.environ.get("INGEST_E2E_TIMEOUT", "120"))
GOOD = sample_file("orders-good.csv")
BAD = sample_file("orders-bad-values.csv")


@dataclass
class Stack:
    session: Any
    endpoint: str | None
    outputs: dict[str, str]
    prefix: str  # incoming/orders/e2e-<run id>/

    def client(self, service: str) -> Any:
        return self.session.client(service, endpoint_url=self.endpoint)

    @property
    def bucket(self) -> str:
        return self.outputs["IngestBucketName"]

    def put(self, name: str, body: bytes) -> tuple[str, str]:
        key = self.prefix + name
        version = self.client("s3").put_object(Bucket=self.bucket, Key=key, Body=body)
        return key, str(version["VersionId"])

    def record(self, key: str, version: str) -> dict[str, Any] | None:
        item = (
            self.client("dynamodb")
            .get_item(
                TableName=self.outputs["ObjectStateTableName"],
                Key={"pk": {"S": f"s3://{self.bucket}/{key}"}, "sk": {"S": f"v#{version}"}},
                ConsistentRead=True,
            )
            .get("Item")
        )
        return {k: TypeDeserializer().deserialize(v) for k, v in (item or {}).items()} or None

    def final_record(self, key: str, version: str) -> dict[str, Any]:
        def final() -> dict[str, Any] | None:
            record = self.record(key, version)
            return record if record and record["status"] in ("SUCCEEDED", "FAILED") else None

        return dict(
            wait_for(final, timeout=TIMEOUT, interval=0.5, what=f"a final record for {key}")
        )

    def read(self, key: str) -> bytes:
        return bytes(self.client("s3").get_object(Bucket=self.bucket, Key=key)["Body"].read())


def _configured() -> tuple[Any, str | None, dict[str, str]] | None:
    if path := os.environ.get("INGEST_E2E_OUTPUTS"):
        described = json.loads(Path(path).read_text())
        session = boto3.Session(region_name=described.get("region"))
        return session, described.get("endpoint"), dict(described["outputs"])
    if name := os.environ.get("INGEST_E2E_STACK"):
        session = boto3.Session()
        endpoint = os.environ.get("AWS_ENDPOINT_URL")
        stack = session.client("cloudformation", endpoint_url=endpoint).describe_stacks(
            StackName=name
        )["Stacks"][0]
        return session, endpoint, {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    return None


@pytest.fixture(scope="module")
def stack() -> Stack:
    configured = _configured()
    if configured is None:
        pytest.skip("set INGEST_E2E_OUTPUTS or INGEST_E2E_STACK to run against a deployed stack")
    session, endpoint, outputs = configured
    return Stack(session, endpoint, outputs, f"incoming/orders/e2e-{uuid.uuid4().hex[:12]}/")


@pytest.fixture
def data_quality_inbox(stack: Stack) -> Iterator[Any]:
    """A queue subscribed to the data-quality topic; yields a function returning its messages."""
    sqs, sns = stack.client("sqs"), stack.client("sns")
    topic = stack.outputs["DataQualityTopicArn"]
    url = sqs.create_queue(QueueName=f"ingest-e2e-{uuid.uuid4().hex[:12]}")["QueueUrl"]
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
                "Condition": {"ArnEquals": {"aws:SourceArn": topic}},
            }
        ],
    }
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
    subscription = sns.subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"}
    )["SubscriptionArn"]

    def messages() -> list[dict[str, Any]]:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        return [json.loads(m["Body"]) for m in got.get("Messages", [])]

    try:
        yield messages
    finally:
        sns.unsubscribe(SubscriptionArn=subscription)
        sqs.delete_queue(QueueUrl=url)


def test_good_file_is_processed(stack: Stack) -> None:
    key, version = stack.put("good.csv", GOOD)
    record = stack.final_record(key, version)
    assert (record["status"], record["attempt"]) == ("SUCCEEDED", 1)
    output = record["output_key"]
    dataset, _, stem = key.removeprefix("incoming/").removesuffix(".csv").partition("/")
    assert output.startswith(f"processed/{dataset}/ingest_date=")
    assert output.endswith(f"/{stem}.jsonl")
    assert len(stack.read(output).splitlines()) == 2


def test_bad_data_is_quarantined_and_reported(stack: Stack, data_quality_inbox: Any) -> None:
    key, version = stack.put("bad.csv", BAD)
    record = stack.final_record(key, version)
    assert (record["status"], record["error_class"]) == ("FAILED", "PERMANENT")
    assert stack.read(record["quarantine_key"]) == BAD
    received: list[dict[str, Any]] = []

    def reported() -> bool:
        received.extend(data_quality_inbox())
        return any(m.get("object", {}).get("key") == key for m in received)

    wait_for(reported, timeout=TIMEOUT, interval=0.1, what="the data-quality notification")


@pytest.mark.parametrize("name", [k.rsplit("/", 1)[-1] for k in AWKWARD_KEYS])
def test_awkward_keys_are_processed(stack: Stack, name: str) -> None:
    key, version = stack.put(name, GOOD)
    record = stack.final_record(key, version)
    assert record["status"] == "SUCCEEDED" and record["object_key"] == key
    assert len(stack.read(record["output_key"]).splitlines()) == 2
