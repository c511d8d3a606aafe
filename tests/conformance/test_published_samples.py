"""Event samples published by others (``samples/``, sources in README.md), end to end.

Each sample reaches the pipeline the way it would in production: as a dead letter in the
rule's dead-letter queue (with the attributes EventBridge sets), then ``ingestctl redrive``.
Only what cannot be the same here is changed: the bucket is ours, the key is put under
``incoming/orders/`` and uploaded with a valid CSV, and a version id the sample names is
replaced by the one S3 gave our upload (a sample without one keeps none). Everything else is
the published text.

Every sample ends one of two ways, asserted on what a user sees:
* **processed**: the state record SUCCEEDED, the output under ``processed/``, the queue empty;
* **refused**: the message is still in the queue, with a status and a reason that says why.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus, unquote_plus

import boto3
import pytest

from ingest_tools.local_pipeline import Pipeline
from ingest_tools.recovery.redrive import RedriveOptions, Redriver, RedriveReport
from tests.support import sample_file

pytestmark = [pytest.mark.e2e, pytest.mark.conformance]

SAMPLES = Path(__file__).parent / "samples"
GOOD = sample_file("orders-good.csv")
PREFIX = "incoming/orders/"


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text())


def dlq(p: Pipeline) -> str:
    return p.stack.outputs["EventDeliveryDLQUrl"]


def rule_attributes(p: Pipeline, code: str = "THROTTLING") -> dict[str, Any]:
    """What EventBridge sets on a rule dead letter after its retries (AWS docs / seed 004)."""
    values = {
        "RULE_ARN": p.stack.outputs["ObjectCreatedRuleArn"],
        "TARGET_ARN": p.stack.outputs["PipelineStateMachineArn"],
        "ERROR_CODE": code,
        "ERROR_MESSAGE": "Rate Exceeded.",
        "EXHAUSTED_RETRY_CONDITION": "MaximumRetryAttempts",
        "RETRY_ATTEMPTS": "185",
    }
    return {k: {"DataType": "String", "StringValue": v} for k, v in values.items()}


def dead_letter(p: Pipeline, body: Any, attributes: dict[str, Any] | None = None) -> None:
    text = body if isinstance(body, str) else json.dumps(body)
    kwargs: dict[str, Any] = {"QueueUrl": dlq(p), "MessageBody": text}
    if attributes:
        kwargs["MessageAttributes"] = attributes
    p.sqs.send_message(**kwargs)


def redrive(p: Pipeline, **options: Any) -> RedriveReport:
    settings = {
        "queue_url": dlq(p),
        "redrive_source": p.stack.outputs["RedriveEventSource"],
        "ledger_table": p.table,
        **options,
    }
    return Redriver(
        RedriveOptions(**settings), sqs=p.sqs, events=p.events, dynamodb=p.ddb, stepfunctions=p.sfn
    ).run()


def depth(p: Pipeline) -> int:
    attributes = p.sqs.get_queue_attributes(
        QueueUrl=dlq(p),
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(v) for v in attributes.values())


def upload(p: Pipeline, key: str) -> str:
    return p.put(key, GOOD)


# --- adapters: the published sample, pointed at our bucket and an uploaded object ---------


def eventbridge_object_created(p: Pipeline, name: str) -> tuple[Any, str, str]:
    event = sample(name)
    key = PREFIX + event["detail"]["object"]["key"]
    version = upload(p, key)
    event["detail"]["bucket"]["name"] = p.bucket
    event["resources"] = [f"arn:aws:s3:::{p.bucket}"]
    event["detail"]["object"]["key"] = key
    if "version-id" in event["detail"]["object"]:
        event["detail"]["object"]["version-id"] = version
    return event, key, version


def cloudtrail_envelope(record: dict[str, Any]) -> dict[str, Any]:
    """A CloudTrail log record as EventBridge delivers it ("AWS API Call via CloudTrail")."""
    return {
        "version": "0",
        "id": "3bd0f9b4-7a1b-4c55-9f0a-2f7c5c0e6a11",
        "detail-type": "AWS API Call via CloudTrail",
        "source": "aws.s3",
        "account": "123456789012",
        "time": record.get("eventTime", "2026-11-23T00:00:00Z"),
        "region": record.get("awsRegion", "us-east-1"),
        "resources": [],
        "detail": record,
    }


def cloudtrail(p: Pipeline, event: dict[str, Any]) -> tuple[Any, str, str]:
    request = event["detail"]["requestParameters"]
    key = PREFIX + request["key"].rsplit("/", 1)[-1]
    version = upload(p, key)
    request.update({"bucketName": p.bucket, "key": key})
    response = event["detail"].get("responseElements") or {}
    if "x-amz-version-id" in response:
        response["x-amz-version-id"] = version
    return event, key, version


def notification_record(p: Pipeline, name: str, records: Any) -> tuple[Any, str, str]:
    record = records["Records"][0]
    encoded = record["s3"]["object"]["key"]
    key = PREFIX + unquote_plus(encoded)
    version = upload(p, key)
    record["s3"]["bucket"]["name"] = p.bucket
    record["s3"]["object"]["key"] = quote_plus(PREFIX, safe="/") + encoded  # still encoded
    if "versionId" in record["s3"]["object"]:
        record["s3"]["object"]["versionId"] = version
    return records, key, version


def lambda_on_failure(payload: Any) -> dict[str, Any]:
    """An asynchronous invocation's on-failure destination record (AWS docs shape)."""
    return {
        "version": "1.0",
        "timestamp": "2026-11-23T08:00:00.000Z",
        "requestContext": {
            "requestId": "c2f5b7d1-3c9e-4f0a-8b6d-2a1e4c7f9b03",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:s3-handler:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3,
        },
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
        "responsePayload": {"errorType": "ClientError", "errorMessage": "SlowDown"},
    }


Case = Callable[[Pipeline], tuple[Any, dict[str, Any] | None, str, str]]


def _native(name: str) -> Case:
    def build(p: Pipeline) -> tuple[Any, dict[str, Any] | None, str, str]:
        event, key, version = eventbridge_object_created(p, name)
        return event, rule_attributes(p), key, version

    return build


def _cloudtrail_record(name: str) -> Case:
    def build(p: Pipeline) -> tuple[Any, dict[str, Any] | None, str, str]:
        event, key, version = cloudtrail(p, cloudtrail_envelope(sample(name)))
        return event, rule_attributes(p), key, version

    return build


def _seed_002_dlq_body(p: Pipeline) -> tuple[Any, dict[str, Any] | None, str, str]:
    event, key, version = cloudtrail(p, sample("seed-002-cloudtrail-putobject-dlq-body.json"))
    return event, rule_attributes(p), key, version


def _seed_002_resend_entry(p: Pipeline) -> tuple[Any, dict[str, Any] | None, str, str]:
    """Seed 002's PutEvents entry (source "retry") as the event EventBridge made of it."""
    (entry,) = sample("seed-002-resend-entries.json")
    event = {
        "version": "0",
        "id": "b7c1e0d2-5a4f-4e3b-9c8d-7f6e5d4c3b2a",
        "detail-type": entry["DetailType"],
        "source": entry["Source"],
        "account": "123456789012",
        "time": entry["Time"],
        "region": "ap-northeast-1",
        "resources": entry["Resources"],
        "detail": json.loads(entry["Detail"]),
    }
    event, key, version = cloudtrail(p, event)
    return event, rule_attributes(p), key, version


def _lambda_notification(name: str) -> Case:
    def build(p: Pipeline) -> tuple[Any, dict[str, Any] | None, str, str]:
        records, key, version = notification_record(p, name, sample(name))
        return lambda_on_failure(records), None, key, version

    return build


def _sqs_notification_body(p: Pipeline) -> tuple[Any, dict[str, Any] | None, str, str]:
    """The body of Powertools' S3 -> SQS record: what an S3 -> SQS consumer's DLQ holds."""
    body = json.loads(sample("powertools-s3SqsEvent.json")["Records"][0]["body"])
    records, key, version = notification_record(p, "powertools-s3SqsEvent.json", body)
    return records, None, key, version


PROCESSED: dict[str, Case] = {
    "aws-docs-s3-object-created": _native("aws-docs-s3-object-created.json"),
    "aws-docs-s3-object-created-event-version": _native(
        "aws-docs-s3-object-created-event-version.json"
    ),
    "powertools-s3-eventbridge-object-created": _native(
        "powertools-s3EventBridgeNotificationObjectCreatedEvent.json"
    ),
    "seed-002-cloudtrail-dlq-body": _seed_002_dlq_body,
    "seed-002-resend-entry": _seed_002_resend_entry,
    "aws-cdk-cloudtrail-putobject": _cloudtrail_record("aws-cdk-cloudtrail-putobject-record.json"),
    "stratus-cloudtrail-copyobject": _cloudtrail_record(
        "stratus-red-team-cloudtrail-copyobject-record.json"
    ),
    "powertools-s3-notification-via-lambda": _lambda_notification("powertools-s3Event.json"),
    "powertools-s3-decoded-key-via-lambda": _lambda_notification(
        "powertools-s3EventDecodedKey.json"
    ),
    "powertools-s3-notification-via-sqs": _sqs_notification_body,
}


@pytest.mark.parametrize("case", list(PROCESSED), ids=list(PROCESSED))
def test_published_sample_is_redriven_to_a_processed_object(p: Pipeline, case: str) -> None:
    # The upload's own S3 event is dead-lettered too, and dropped here: only the sample runs.
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=1)
    body, attributes, key, version = PROCESSED[case](p)
    p.cloud.settle()
    p.sqs.purge_queue(QueueUrl=dlq(p))
    dead_letter(p, body, attributes)

    report = redrive(p)

    assert report.counts()["sent"] == 1, report.to_dict()
    p.cloud.settle()
    record = p.record(key, version)
    assert record is not None, f"no state record for {key} {version}"
    assert (record["status"], record["outcome"]) == ("SUCCEEDED", "PROCESSED")
    assert record["trigger_source"] == "ingest-pipeline.redrive"
    assert p.read(p.output_key(key)).count(b"\n") == 2
    assert depth(p) == 0


def _event_only(name: str) -> Callable[[Pipeline], tuple[Any, dict[str, Any] | None]]:
    def build(p: Pipeline) -> tuple[Any, dict[str, Any] | None]:
        event = sample(name)
        if isinstance(event.get("detail", {}).get("bucket"), dict):
            event["detail"]["bucket"]["name"] = p.bucket
            event["detail"]["object"]["key"] = PREFIX + event["detail"]["object"]["key"]
        return event, rule_attributes(p)

    return build


def _outposts(p: Pipeline) -> tuple[Any, dict[str, Any] | None]:
    record = sample("aws-docs-cloudtrail-s3outposts-putobject-record.json")
    return cloudtrail_envelope(record), rule_attributes(p)


def _lambda_delete(p: Pipeline) -> tuple[Any, dict[str, Any] | None]:
    return lambda_on_failure(sample("powertools-s3EventDeleteObject.json")), None


def _sqs_redrive_dlq_body(p: Pipeline) -> tuple[Any, dict[str, Any] | None]:
    return sample("powertools-sqsDlqTriggerEvent.json")["Records"][0]["body"], None


def _scheduler(name: str) -> Callable[[Pipeline], tuple[Any, dict[str, Any] | None]]:
    def build(p: Pipeline) -> tuple[Any, dict[str, Any] | None]:
        message = sample(name)
        message = message["Messages"][0] if "Messages" in message else message
        return message["Body"], message["MessageAttributes"]

    return build


def _rule_docs_attributes(p: Pipeline) -> tuple[Any, dict[str, Any] | None]:
    documented = sample("aws-docs-eventbridge-rule-dlq-attributes.json")["MessageAttributes"]
    attributes = {k: v for k, v in documented.items() if v["StringValue"] is not None}
    attributes["RULE_ARN"] = rule_attributes(p)["RULE_ARN"]  # our rule, not MyTestRule
    event, _, _ = eventbridge_object_created(p, "aws-docs-s3-object-created.json")
    return event, attributes


REFUSED: dict[str, tuple[Callable[[Pipeline], tuple[Any, dict[str, Any] | None]], str, str]] = {
    "aws-docs-object-deleted": (
        _event_only("aws-docs-archive-s3-object-deleted.json"),
        "unroutable",
        "no enabled rule",
    ),
    "aws-docs-object-deleted-lifecycle": (
        _event_only("aws-docs-archive-s3-object-deleted-lifecycle.json"),
        "unroutable",
        "no enabled rule",
    ),
    "aws-docs-object-restore-completed": (
        _event_only("aws-docs-archive-s3-object-restore-completed.json"),
        "unroutable",
        "no enabled rule",
    ),
    "powertools-object-deleted": (
        _event_only("powertools-s3EventBridgeNotificationObjectDeletedEvent.json"),
        "unroutable",
        "no enabled rule",
    ),
    "powertools-object-expired": (
        _event_only("powertools-s3EventBridgeNotificationObjectExpiredEvent.json"),
        "unroutable",
        "no enabled rule",
    ),
    "powertools-object-restore-completed": (
        _event_only("powertools-s3EventBridgeNotificationObjectRestoreCompletedEvent.json"),
        "unroutable",
        "no enabled rule",
    ),
    "powertools-ec2-event": (
        _event_only("powertools-eventBridgeEvent.json"),
        "unroutable",
        "no enabled rule",
    ),
    "aws-docs-s3-outposts-cloudtrail": (_outposts, "unroutable", "no enabled rule"),
    "powertools-s3-delete-notification-via-lambda": (
        _lambda_delete,
        "not-replayable",
        "names no new object version",
    ),
    "powertools-sqs-dlq-body-not-json": (_sqs_redrive_dlq_body, "unreadable", "not JSON"),
    "aws-docs-scheduler-dlq": (
        _scheduler("aws-docs-scheduler-dlq-receive-message.json"),
        "refused",
        "AWS.SimpleQueueService.NonExistentQueue",
    ),
    "seed-004-scheduler-dlq": (
        _scheduler("seed-004-scheduler-dlq-message.json"),
        "refused",
        "AccessDeniedException",
    ),
    "aws-docs-rule-dlq-no-permissions": (_rule_docs_attributes, "refused", "NO_PERMISSIONS"),
}


@pytest.mark.parametrize("case", list(REFUSED), ids=list(REFUSED))
def test_published_sample_that_cannot_be_processed_stays_in_the_queue_with_a_reason(
    p: Pipeline, case: str
) -> None:
    build, status, reason = REFUSED[case]
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=1)  # in case the case uploads
    body, attributes = build(p)
    p.cloud.settle()
    p.sqs.purge_queue(QueueUrl=dlq(p))
    dead_letter(p, copy.deepcopy(body), attributes)
    executions_before = len(p.executions_for(PREFIX + "example-key"))

    report = redrive(p)

    (outcome,) = report.outcomes.values()
    assert outcome.status.value == status, report.to_dict()
    assert reason in (outcome.reason or ""), outcome.reason
    assert report.counts()["sent"] == 0
    assert depth(p) == 1  # nothing deleted
    p.cloud.settle()
    assert len(p.executions_for(PREFIX + "example-key")) == executions_before


def test_documented_no_permissions_dead_letter_is_processed_once_forced(p: Pipeline) -> None:
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=1)
    event, attributes = _rule_docs_attributes(p)
    p.cloud.settle()
    p.sqs.purge_queue(QueueUrl=dlq(p))
    dead_letter(p, event, attributes)

    report = redrive(p, force=True)

    assert report.counts()["sent"] == 1
    p.cloud.settle()
    key = event["detail"]["object"]["key"]
    record = p.record(key, event["detail"]["object"]["version-id"])
    assert record is not None and record["status"] == "SUCCEEDED"
    assert depth(p) == 0


def _shape(value: Any) -> Any:
    """The keys and value types of a JSON value (numbers as one type), for comparing shapes."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def test_an_alarm_notification_has_the_published_shape(p: Pipeline) -> None:
    """What a deployed alarm publishes to the operations topic carries every field, with the
    same types and formats, of the notification AWS's Go runtime library ships as test data."""
    published = json.loads(
        sample("aws-lambda-go-cloudwatch-alarm-sns-payload-single-metric.json")["Records"][0][
            "Sns"
        ]["Message"]
    )
    name = p.stack.resources["DeadLetterAlarm"]
    boto3.client("cloudwatch", region_name=p.cloud.region).set_alarm_state(
        AlarmName=name, StateValue="ALARM", StateReason=published["NewStateReason"]
    )
    (note,) = p.notifications("OperationsTopicArn")
    ours = note["message"]

    expected, got = _shape(published), _shape(ours)
    assert {k: got.get(k) for k in expected if k != "Trigger"} == {
        k: v for k, v in expected.items() if k != "Trigger"
    }
    trigger = {k: got["Trigger"].get(k) for k in expected["Trigger"] if k != "Unit"}
    assert trigger == {k: v for k, v in expected["Trigger"].items() if k != "Unit"}
    assert ours["Trigger"]["Unit"] in (None, published["Trigger"]["Unit"])  # null when unset
    date = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000"
    assert re.fullmatch(date, published["StateChangeTime"])
    assert re.fullmatch(date, ours["StateChangeTime"])
    assert ours["Trigger"]["TreatMissingData"].split(":")[0] == "- TreatMissingData"
    assert ours["AlarmArn"].split(":")[:3] == published["AlarmArn"].split(":")[:3]


def _keys(value: Any, path: str = "") -> set[str]:
    """Every key path of a JSON document ("detail.object.key", ...)."""
    if not isinstance(value, dict):
        return set()
    found = set()
    for key, inner in value.items():
        found.add(path + key)
        found |= _keys(inner, f"{path}{key}.")
    return found


@pytest.mark.parametrize(
    "name",
    [
        "aws-docs-s3-object-created.json",
        "powertools-s3EventBridgeNotificationObjectCreatedEvent.json",
    ],
)
def test_doctors_probe_event_is_the_published_object_created_event(p: Pipeline, name: str) -> None:
    """`ingestctl doctor` asks TestEventPattern about an event it builds: it has every field of
    the published one, and the deployed rule answers for the published event (moved to this
    bucket and prefix) exactly as for doctor's."""
    from datetime import UTC, datetime

    from ingest_tools.doctor.checks import object_created_event

    published = sample(name)
    bucket = p.bucket
    probe = object_created_event(
        bucket, f"{PREFIX}probe.csv", account=p.cloud.account_id, region=p.cloud.region,
        now=datetime.now(UTC),
    )  # fmt: skip
    assert _keys(published) <= _keys(probe), sorted(_keys(published) - _keys(probe))

    moved = copy.deepcopy(published)
    moved["detail"]["bucket"]["name"] = bucket
    moved["resources"] = [f"arn:aws:s3:::{bucket}"]
    moved["detail"]["object"]["key"] = f"{PREFIX}published.csv"
    rule = p.stack.outputs["ObjectCreatedRuleArn"].rsplit("/", 1)[-1]
    pattern = p.events.describe_rule(Name=rule)["EventPattern"]

    def matches(event: dict[str, Any]) -> bool:
        result = p.events.test_event_pattern(EventPattern=pattern, Event=json.dumps(event))
        return bool(result["Result"])

    assert matches(moved) and matches(probe)
    moved["detail"]["object"]["key"] = "processed/orders/published.jsonl"
    assert not matches(moved)  # the pipeline's own output does not start it again
