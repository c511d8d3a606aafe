"""A running local pipeline: the deployed template plus the verbs tests and scripts use."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import boto3
from boto3.dynamodb.types import TypeDeserializer
from moto import mock_aws

from ingest_tools.localcloud import engine
from ingest_tools.localcloud.stack import DeployedStack, deploy, put_public_parameter
from ingest_tools.localcloud.transformer import apply_input_transformer

ROOT = Path(__file__).resolve().parents[3]
TEMPLATE = ROOT / "template.yaml"
EVENTS = ROOT / "events"
REGION = "us-east-1"
MOTO_CONFIG: Any = {
    "stepfunctions": {"execute_state_machine": True},
    "lambda": {"use_docker": False},
}
LOCAL_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "POWERTOOLS_TRACE_DISABLED": "1",
    "POWERTOOLS_METRICS_NAMESPACE": "S3IngestPipelineLocal",
    "POWERTOOLS_SERVICE_NAME": "s3-ingest-pipeline",
}
T = TypeVar("T")


def load_event(name: str) -> Any:
    """A sample event from events/ (the same files `sam local invoke -e` uses)."""
    return json.loads((EVENTS / name).read_text())


def wait_for(
    probe: Callable[[], T | None], *, timeout: float = 10.0, interval: float = 0.01, what: str = ""
) -> T:
    """Poll ``probe`` until it returns something truthy; TimeoutError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what or probe}")
        time.sleep(interval)


@dataclass
class Execution:
    arn: str
    status: str
    output: dict[str, Any] | None
    error: str | None
    cause: str | None
    history: list[dict[str, Any]]

    @property
    def path(self) -> list[str]:
        """State names in the order they were entered."""
        return [
            e["stateEnteredEventDetails"]["name"]
            for e in self.history
            if e["type"].endswith("StateEntered")
        ]

    def invocations(self, resource: str) -> int:
        return sum(
            1
            for e in self.history
            if e["type"] == "TaskScheduled"
            and e["taskScheduledEventDetails"]["resource"] == resource
        )


class Pipeline:
    """The deployed stack plus the verbs the tests use."""

    def __init__(self, stack: DeployedStack) -> None:
        self.stack = stack
        self.s3 = boto3.client("s3", region_name=REGION)
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.ddb = boto3.client("dynamodb", region_name=REGION)
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.sns = boto3.client("sns", region_name=REGION)
        self.events = boto3.client("events", region_name=REGION)
        self.bucket = stack.outputs["IngestBucketName"]
        self.state_machine = stack.outputs["PipelineStateMachineArn"]
        self.table = stack.outputs["ObjectStateTableName"]
        self.functions = stack.functions
        self._inboxes = {
            topic: self._subscribe(stack.outputs[topic])
            for topic in ("OperationsTopicArn", "DataQualityTopicArn")
        }

    # --- S3 and the rule's input ------------------------------------------------------
    def put(self, key: str, body: bytes) -> str:
        return str(self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)["VersionId"])

    def s3_event(self, key: str, version_id: str) -> dict[str, Any]:
        event = load_event("eventbridge/s3-object-created.json")
        event["id"] = str(uuid.uuid4())
        event["detail"]["bucket"]["name"] = self.bucket
        event["detail"]["object"].update({"key": key, "version-id": version_id})
        return dict(event)

    def rule_input(self, event: dict[str, Any]) -> dict[str, Any]:
        """The state machine input exactly as the template's rule target would build it."""
        rule_arn = self.stack.outputs["ObjectCreatedRuleArn"]
        rule_name = rule_arn.rsplit("/", 1)[-1]
        (target,) = self.events.list_targets_by_rule(Rule=rule_name)["Targets"]
        return dict(json.loads(apply_input_transformer(event, target["InputTransformer"])))

    # --- executions -------------------------------------------------------------------
    def start(self, execution_input: dict[str, Any], name: str | None = None) -> str:
        return str(
            self.sfn.start_execution(
                stateMachineArn=self.state_machine,
                name=name or uuid.uuid4().hex,
                input=json.dumps(execution_input),
            )["executionArn"]
        )

    def wait(self, arn: str, timeout: float = 20.0) -> Execution:
        described = wait_for(
            lambda: (
                (d := self.sfn.describe_execution(executionArn=arn))["status"] != "RUNNING" and d
            ),
            timeout=timeout,
            what=f"execution {arn}",
        )
        history = self.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        output = described.get("output")
        return Execution(
            arn=arn,
            status=described["status"],
            output=json.loads(output) if output else None,
            error=described.get("error"),
            cause=described.get("cause"),
            history=history,
        )

    def ingest(self, key: str, body: bytes) -> tuple[str, Execution]:
        """Upload, build the rule's input from the S3 event, run the workflow to the end."""
        version = self.put(key, body)
        return version, self.wait(self.start(self.rule_input(self.s3_event(key, version))))

    # --- observations -----------------------------------------------------------------
    def record(self, key: str, version_id: str) -> dict[str, Any] | None:
        item = self.ddb.get_item(
            TableName=self.table,
            Key={"pk": {"S": f"s3://{self.bucket}/{key}"}, "sk": {"S": f"v#{version_id}"}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return None
        deserializer = TypeDeserializer()
        return {k: deserializer.deserialize(v) for k, v in item.items()}

    def read(self, key: str) -> bytes:
        return bytes(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def versions(self, key: str) -> int:
        listed = self.s3.list_object_versions(Bucket=self.bucket, Prefix=key)
        return sum(1 for v in listed.get("Versions", []) if v["Key"] == key)

    def keys(self, prefix: str) -> list[str]:
        listed = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return [o["Key"] for o in listed.get("Contents", [])]

    def notifications(self, topic: str) -> list[dict[str, Any]]:
        """SNS messages sent to ``OperationsTopicArn`` or ``DataQualityTopicArn`` so far."""
        queue_url = self._inboxes[topic]
        out = []
        while True:
            got = self.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
            messages = got.get("Messages", [])
            if not messages:
                return out
            for message in messages:
                envelope = json.loads(message["Body"])
                out.append(
                    {
                        "subject": envelope.get("Subject"),
                        "message": json.loads(envelope["Message"]),
                        "attributes": {
                            k: v["Value"] for k, v in envelope.get("MessageAttributes", {}).items()
                        },
                    }
                )
                self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

    def _subscribe(self, topic_arn: str) -> str:
        name = "inbox-" + topic_arn.rsplit(":", 1)[-1][-40:]
        url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self.sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn)
        return str(url)


POWERTOOLS_LAYER = (
    "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-arm64:1"
)


POWERTOOLS_LAYER_PARAMETER = "/aws/service/powertools/python/arm64/python3.13/3.37.0"


@contextmanager
def local_pipeline(template: Path = TEMPLATE) -> Iterator[Pipeline]:
    """Deploy ``template`` into an embedded moto with the engine hooks; yield the driver."""
    from ingest_pipeline.dal.s3 import s3_client

    saved = {name: os.environ.get(name) for name in LOCAL_ENV}
    os.environ.update(LOCAL_ENV)
    engine.install()
    try:
        with mock_aws(config=MOTO_CONFIG):
            s3_client.cache_clear()  # a client bound to this mock
            put_public_parameter(POWERTOOLS_LAYER_PARAMETER, POWERTOOLS_LAYER, region=REGION)
            stack = deploy(template, region=REGION)
            try:
                yield Pipeline(stack)
            finally:
                stack.restore_environment()
    finally:
        engine.uninstall()
        engine.reset()
        s3_client.cache_clear()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
