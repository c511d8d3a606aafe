"""Shared test helpers: sample events and files, polling (never a bare sleep), state records
and queues of a deployed stack arranged as the workflow and AWS leave them."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import boto3
import pytest
from boto3.dynamodb.types import TypeSerializer

from ingest_pipeline.models import iso_ms, state_pk, state_sk
from ingest_tools.doctor import Clients
from ingest_tools.recovery.formats import FailureRecord, parse_message, to_put_events_entry

if TYPE_CHECKING:  # the local cloud loads when a test uses it: test_external_endpoint.py, run
    # alone against another endpoint, imports this module without it (~2.5 s of CPU less)
    from ingest_tools.local_pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"

EVENTS = ROOT / "events"
T = TypeVar("T")

__all__ = [
    "AWKWARD_KEYS",
    "DLQ",
    "DLQ_BUCKET",
    "DLQ_RULE_ARN",
    "DLQ_SFN_ARN",
    "EVENTS",
    "LOG_DELIVERY_POLICIES",
    "REDRIVEN_AT",
    "REDRIVE_SOURCE",
    "ROOT",
    "TEMPLATE",
    "claim_record",
    "cli_json",
    "delete_record",
    "dlq_body",
    "dlq_message",
    "dlq_record",
    "dlq_s3_event",
    "doctor_clients",
    "fail_retryably",
    "load_event",
    "put_events_entry",
    "queue_arn",
    "role_allowing",
    "sample_file",
    "sqs_message",
    "template_copy",
    "wait_for",
]

# Keys whose encoding S3 and EventBridge disagree about in public reports: space, '+', a
# literal '%20', non-ASCII.
AWKWARD_KEYS = [
    "incoming/orders/with space.csv",
    "incoming/orders/plus+sign.csv",
    "incoming/orders/percent%20literal.csv",
    "incoming/orders/d\u00e9j\u00e0-\u6771\u4eac.csv",
]


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


def sample_file(name: str) -> bytes:
    return (EVENTS / "files" / name).read_bytes()


def role_allowing(name: str, actions: list[str], resources: str | list[str] = "*") -> str:
    """A role Step Functions may assume whose one policy allows ``actions`` on ``resources``:
    the local cloud authorizes every call a state machine makes with its role, as AWS does."""
    iam = boto3.client("iam")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "states.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    arn = str(
        iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    )
    allow = {"Effect": "Allow", "Action": actions, "Resource": resources}
    iam.put_role_policy(
        RoleName=name,
        PolicyName="allow",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [allow]}),
    )
    return arn


def template_copy(tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """template.yaml as JSON in ``tmp_path`` (artifact paths made absolute), changed by
    ``edit``: deploy a variant of the real template (a statement removed, a resource added)."""
    from localcloud.stack import load_template

    template = load_template(TEMPLATE)
    template["Globals"]["Function"]["CodeUri"] = str(ROOT / "functions")
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::StateMachine":
            machine = resource["Properties"]
            machine["DefinitionUri"] = str(ROOT / machine["DefinitionUri"])
        elif resource["Type"] == "AWS::Serverless::LayerVersion":
            layer = resource["Properties"]
            layer["ContentUri"] = str(ROOT / layer["ContentUri"])
    if edit is not None:
        edit(template)
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template))
    return path


def cli_json(capsys: pytest.CaptureFixture[str]) -> Any:
    """The JSON document the command printed (Lambda logs of the local cloud share stdout)."""
    out = "\n" + capsys.readouterr().out
    start = max(out.rfind("\n{\n"), out.rfind("\n[\n"))
    return json.JSONDecoder().raw_decode(out[start + 1 :])[0]


def doctor_clients(**clients: Any) -> Clients:
    """``ingestctl doctor``'s clients for unit tests: the fakes given by name, None for the rest."""
    return Clients(**{f.name: clients.get(f.name) for f in dataclasses.fields(Clients)})


def queue_arn(p: Pipeline, url: str) -> str:
    got = p.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return str(got["Attributes"]["QueueArn"])


def claim_record(p: Pipeline, key: str, claimed_at: datetime) -> str:
    """A state record as ClaimObject leaves it (statemachines/pipeline.asl.yaml, the same
    SET) for an execution that then died: RUNNING, claimed at ``claimed_at``, nothing
    recorded since. Returns the (made-up) version id it is for."""
    version = uuid.uuid4().hex
    execution = f"{p.state_machine.replace(':stateMachine:', ':execution:')}:{uuid.uuid4().hex}"
    now = iso_ms(claimed_at)
    item = {
        "pk": state_pk(p.bucket, key),
        "sk": state_sk(version),
        "status": "RUNNING",
        "open_state": "RUNNING",
        "attempt": 1,
        "execution_arn": execution,
        "claimed_at": now,
        "updated_at": now,
        "lease_seconds": 3600,
        "first_seen_at": now,
        "bucket_name": p.bucket,
        "object_key": key,
        "version_id": version,
        "trigger_source": "aws.s3",
    }
    serializer = TypeSerializer()
    p.ddb.put_item(TableName=p.table, Item={k: serializer.serialize(v) for k, v in item.items()})
    return version


def fail_retryably(p: Pipeline, key: str, retry_after: datetime, attempt: int = 1) -> str:
    """A state record as RecordRetryableFailure leaves it after ``attempt`` attempts."""
    version = claim_record(p, key, retry_after - timedelta(minutes=1))
    failed_at = iso_ms(retry_after - timedelta(seconds=30))
    p.set_record(
        key,
        version,
        status="FAILED",
        open_state="RETRYABLE",
        retryable=True,
        attempt=attempt,
        error_class="TRANSIENT",
        error_name="StorageUnavailableError",
        error_code="STORAGE_UNAVAILABLE",
        error_cause="SlowDown",
        failed_at=failed_at,
        updated_at=failed_at,
        retry_after=iso_ms(retry_after),
    )
    return version


def delete_record(p: Pipeline, key: str, version: str) -> None:
    p.ddb.delete_item(
        TableName=p.table,
        Key={"pk": {"S": state_pk(p.bucket, key)}, "sk": {"S": state_sk(version)}},
    )


#: The dead-letter messages of events/dlq/ (each one SQS message as ReceiveMessage returns
#: it), and the bucket, rule and state machine they name.
DLQ = EVENTS / "dlq"
DLQ_BUCKET = "example-ingest-bucket"
DLQ_RULE_ARN = (
    "arn:aws:events:us-east-1:123456789012:rule/"
    "s3-ingest-pipeline-PipelineStateMachineObjectCreated-1NQ7XKZ0L7Q3M"
)
DLQ_SFN_ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:PipelineStateMachine-8Hq2VxRk4TcL"
#: What ``put_events_entry`` redrives with.
REDRIVE_SOURCE = "ingest-pipeline.redrive"
REDRIVEN_AT = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def dlq_message(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DLQ / name).read_text())
    return loaded


def dlq_record(name: str) -> FailureRecord:
    return parse_message(dlq_message(name))


def dlq_body(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(dlq_message(name)["Body"])
    return body


def dlq_s3_event() -> dict[str, Any]:
    """The S3 Object Created event inside rule-s3-object-created.json."""
    return dlq_body("rule-s3-object-created.json")


def sqs_message(
    body: str | Mapping[str, Any],
    attributes: Mapping[str, str] | None = None,
    *,
    message_id: str = "11111111-2222-4333-8444-555555555555",
) -> dict[str, Any]:
    """A boto3-shaped SQS message around ``body`` (a dict is sent as JSON)."""
    message: dict[str, Any] = {
        "MessageId": message_id,
        "ReceiptHandle": f"AQEB-{message_id}",
        "Body": body if isinstance(body, str) else json.dumps(body),
        "Attributes": {"SentTimestamp": "1795248000000", "ApproximateReceiveCount": "3"},
    }
    if attributes is not None:
        message["MessageAttributes"] = {
            name: {"StringValue": value, "DataType": "String"} for name, value in attributes.items()
        }
    return message


def put_events_entry(record: FailureRecord, bus: str = "default") -> dict[str, Any]:
    """The redrive entry of ``record`` (``to_put_events_entry``, REDRIVE_SOURCE, REDRIVEN_AT)."""
    return to_put_events_entry(
        record, redrive_source=REDRIVE_SOURCE, event_bus_name=bus, redriven_at=REDRIVEN_AT
    )


#: SAM ``Policies`` for a state machine with a CloudWatch Logs destination: what Step
#: Functions needs to set up the log delivery with its role (the local cloud, as AWS, refuses
#: to create it otherwise). Template YAML, to indent under the state machine's Properties.
LOG_DELIVERY_POLICIES = """\
Policies:
  - Statement:
      - Effect: Allow
        Action:
          - logs:CreateLogDelivery
          - logs:GetLogDelivery
          - logs:UpdateLogDelivery
          - logs:DeleteLogDelivery
          - logs:ListLogDeliveries
          - logs:PutResourcePolicy
          - logs:DescribeResourcePolicies
          - logs:DescribeLogGroups
        Resource: "*"
"""
