"""No event lost, whatever its shape; the newest version wins. End to end on the local cloud,
asserting what a user sees: the state record, the object under processed/, the queue, the
notification.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest

from ingest_pipeline import versions
from ingest_pipeline.dal import s3 as s3_dal
from ingest_pipeline.dal import state
from ingest_pipeline.errors import AccessDeniedError
from ingest_pipeline.logic.reconcile import ObjectVersion
from ingest_tools.local_pipeline import Pipeline
from ingest_tools.recovery.redrive import RedriveOptions, Redriver
from tests.support import AWKWARD_KEYS, load_event, sample_file, wait_for

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")
NEWER = GOOD.replace(b"o-1002", b"o-2002")
KEY = "incoming/orders/2026-11-21.csv"


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    return pipeline


def object_created(p: Pipeline, key: str, version: str | None) -> dict[str, Any]:
    """S3's Object Created event for ``key`` (no ``version-id`` when ``version`` is None)."""
    event = copy.deepcopy(load_event("eventbridge/s3-object-created.json"))
    event["detail"]["bucket"]["name"] = p.bucket
    obj = event["detail"]["object"]
    obj.update({"key": key})
    obj.pop("sequencer")
    obj.pop("version-id")
    if version is not None:
        obj["version-id"] = version
    return event


def put_on_bus(p: Pipeline, event: dict[str, Any]) -> None:
    """PutEvents as a tool would (aws.* is reserved, so the redrive source)."""
    answer = p.events.put_events(
        Entries=[
            {
                "Source": p.stack.outputs["RedriveEventSource"],
                "DetailType": event["detail-type"],
                "Detail": json.dumps(event["detail"]),
                "Resources": event["resources"],
            }
        ]
    )
    assert answer["FailedEntryCount"] == 0


def latest_execution(p: Pipeline, key: str) -> Any:
    wait_for(lambda: p.executions_for(key), what=f"an execution for {key}")
    p.cloud.settle()
    return p.wait(p.executions_for(key)[-1].exec_arn)


def test_event_without_version_id_resolves_the_version_before_claiming(p: Pipeline) -> None:
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=1)  # S3's own event: dead-lettered
    version = p.put(KEY, GOOD)
    p.cloud.settle()

    put_on_bus(p, object_created(p, KEY, None))  # the same object, its version unknown
    run = latest_execution(p, KEY)

    assert run.status == "SUCCEEDED"
    assert run.path[:4] == [
        "ClaimObject",
        "SkipDuplicateObject",
        "ResolveObjectVersion",
        "ClaimObject",
    ]
    record = p.record(KEY, version)  # keyed on the version S3 gave the upload
    assert record is not None and record["status"] == "SUCCEEDED"
    assert record["version_id"] == version and record["outcome"] == "PROCESSED"
    assert p.read(p.output_key(KEY)).count(b"\n") == 2


def test_unversioned_bucket_keys_each_write_on_its_content_version(p: Pipeline) -> None:
    p.s3.put_bucket_versioning(Bucket=p.bucket, VersioningConfiguration={"Status": "Suspended"})

    p.s3.put_object(Bucket=p.bucket, Key=KEY, Body=GOOD)
    run1 = latest_execution(p, KEY)
    p.s3.put_object(Bucket=p.bucket, Key=KEY, Body=NEWER)  # an overwrite: new work
    wait_for(lambda: len(p.executions_for(KEY)) == 2, what="the overwrite's execution")
    run2 = latest_execution(p, KEY)

    for run in (run1, run2):
        assert run.status == "SUCCEEDED" and "ResolveObjectVersion" in run.path
    items = p.ddb.query(
        TableName=p.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"s3://{p.bucket}/{KEY}"}},
    )["Items"]
    versions = sorted(i["version_id"]["S"] for i in items)
    assert len(versions) == 2 and all(v.startswith("null.") for v in versions)
    assert {i["status"]["S"] for i in items} == {"SUCCEEDED"}
    assert b"o-2002" in p.read(p.output_key(KEY))

    # The reconciler's listing names the current write with the same identity, so it finds
    # its record and does not take it for a missed event.
    listed = s3_dal.list_current_versions(
        p.bucket, "incoming/", dt.datetime.min.replace(tzinfo=dt.UTC)
    )
    objects = [ObjectVersion(p.bucket, key, version) for key, version, _ in listed]
    assert [o.key for o in objects] == [KEY]
    assert state.existing_keys(p.table, objects) == {(objects[0].pk, objects[0].sk)}


def test_a_bad_file_in_an_unversioned_bucket_is_quarantined(p: Pipeline) -> None:
    """The quarantine copy names the write S3 has (no VersionId: a content version is ours)."""
    p.s3.put_bucket_versioning(Bucket=p.bucket, VersioningConfiguration={"Status": "Suspended"})
    bad = sample_file("orders-bad-values.csv")
    p.s3.put_object(Bucket=p.bucket, Key="incoming/orders/bad.csv", Body=bad)
    run = latest_execution(p, "incoming/orders/bad.csv")
    assert run.status == "FAILED" and "QuarantineObject" in run.path
    assert p.read("quarantine/orders/bad.csv") == bad
    (item,) = p.ddb.query(
        TableName=p.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"s3://{p.bucket}/incoming/orders/bad.csv"}},
    )["Items"]
    assert item["version_id"]["S"].startswith("null.") and item["error_class"]["S"] == "PERMANENT"


def dead_lettered_uploads(
    p: Pipeline, bodies: list[bytes], key: str = KEY
) -> list[tuple[str, dict[str, Any]]]:
    """Upload versions of ``key`` whose events all fail delivery: (version, S3's event) each."""
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=len(bodies))
    versions = [p.put(key, body) for body in bodies]
    p.cloud.settle()
    events = {d.event["detail"]["object"]["version-id"]: d.event for d in p.deliveries_for(key)}
    return [(v, events[v]) for v in versions]


@pytest.mark.parametrize("ordered_by", ["sequencer", "version listing"])
@pytest.mark.parametrize("key", [KEY, AWKWARD_KEYS[-1]], ids=["ascii", "non-ascii"])
def test_older_version_arriving_late_does_not_replace_the_newer_output(
    p: Pipeline, ordered_by: str, key: str
) -> None:
    (v1, event1), (v2, event2) = dead_lettered_uploads(p, [GOOD, NEWER], key)
    if ordered_by == "version listing":  # e.g. reprocess / reconciler inputs carry none
        for event in (event1, event2):
            del event["detail"]["object"]["sequencer"]

    newer = p.wait(p.start(p.rule_input(event2)))
    older = p.wait(p.start(p.rule_input(event1)))  # v1's event arrives last

    output = p.output_key(key)
    assert newer.status == older.status == "SUCCEEDED"
    assert b"o-2002" in p.read(output)  # still v2's rows
    assert p.versions(output) == 1  # v1 never wrote
    late = p.record(key, v1)
    assert late is not None
    assert (late["status"], late["outcome"], late["superseded_by"]) == (
        "SUCCEEDED",
        "SUPERSEDED",
        v2,
    )
    assert p.record(key, v2)["outcome"] == "PROCESSED"  # type: ignore[index]


def test_reprocessing_an_older_version_is_superseded_too(p: Pipeline) -> None:
    v1, _ = p.ingest(KEY, GOOD)
    p.ingest(KEY, NEWER)
    request = p.rule_input(p.s3_event(KEY, v1))
    request["request"]["reprocess"] = True

    run = p.wait(p.start(request))

    assert run.status == "SUCCEEDED"
    assert p.record(KEY, v1)["outcome"] == "SUPERSEDED"  # type: ignore[index]
    assert b"o-2002" in p.read(p.output_key(KEY))
    assert p.versions(p.output_key(KEY)) == 2  # v1's first run, then v2's; nothing after


def test_a_trigger_that_cannot_be_claimed_notifies_operations_and_the_reconciler_finds_it(
    p: Pipeline,
) -> None:
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=1)
    version = p.put(KEY, GOOD)
    p.cloud.settle()
    p.cloud.faults.fail(
        p.functions["ResolveObjectFunction"], AccessDeniedError("HeadObject: AccessDenied")
    )

    put_on_bus(p, object_created(p, KEY, None))
    run = latest_execution(p, KEY)

    assert run.status == "FAILED" and run.error == "AccessDeniedError"
    assert run.path[-2:] == ["NotifyOperations", "FailExecution"]
    assert p.record(KEY, version) is None  # no version known: nothing to key a record on
    (note,) = p.notifications("OperationsTopicArn")
    assert note["message"]["object"]["key"] == KEY  # names the object
    assert note["attributes"]["errorClass"] == "CONFIGURATION"

    # The object is under incoming/ with no record: the reconciler's missed-event scan
    # starts it once the grace period has passed.
    p.age_object(KEY, 20 * 60)
    p.reconcile(dt.datetime(2026, 11, 21, 10, 15, tzinfo=dt.UTC))
    record = p.record(KEY, version)
    assert record is not None and record["status"] == "SUCCEEDED"
    assert record["trigger_source"] == "ingest-pipeline.reconcile"


def test_content_version_identity_matches_what_resolve_computes(p: Pipeline) -> None:
    p.s3.put_bucket_versioning(Bucket=p.bucket, VersioningConfiguration={"Status": "Suspended"})
    p.s3.put_object(Bucket=p.bucket, Key=KEY, Body=GOOD)
    run = latest_execution(p, KEY)
    head = p.s3.head_object(Bucket=p.bucket, Key=KEY)
    expected = versions.content_version(head["ETag"], head["LastModified"])
    assert run.output["object"]["versionId"] == expected  # type: ignore[index]
    assert p.record(KEY, expected) is not None


def _redriver(p: Pipeline, queue: str, **options: Any) -> Redriver:
    settings = {
        "queue_url": p.stack.outputs[queue],
        "redrive_source": p.stack.outputs["RedriveEventSource"],
        "ledger_table": p.table,
        **options,
    }
    return Redriver(RedriveOptions(**settings), sqs=p.sqs, events=p.events, dynamodb=p.ddb)


def cloudtrail_dead_letter(
    p: Pipeline, key: str, event_name: str = "PutObject", bucket: str | None = None
) -> None:
    """Seed 002's CloudTrail-shaped event, dead-lettered by our rule as EventBridge does."""
    message = load_event("dlq/rule-cloudtrail-putobject.json")
    event = json.loads(message["Body"])
    detail = event["detail"]
    detail["eventName"] = event_name
    detail["requestParameters"].update({"bucketName": bucket or p.bucket, "key": key})
    del detail["responseElements"]["x-amz-version-id"]  # an unversioned trail entry
    p.sqs.send_message(
        QueueUrl=p.stack.outputs["EventDeliveryDLQUrl"],
        MessageBody=json.dumps(event),
        MessageAttributes={
            "RULE_ARN": {
                "DataType": "String",
                "StringValue": p.stack.outputs["ObjectCreatedRuleArn"],
            },
            "TARGET_ARN": {
                "DataType": "String",
                "StringValue": p.stack.outputs["PipelineStateMachineArn"],
            },
            "ERROR_CODE": {"DataType": "String", "StringValue": "THROTTLING"},
        },
    )


def dlq_depth(p: Pipeline) -> int:
    attributes = p.sqs.get_queue_attributes(
        QueueUrl=p.stack.outputs["EventDeliveryDLQUrl"],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(v) for v in attributes.values())


def test_cloudtrail_dead_letter_is_redriven_to_a_processed_object(p: Pipeline) -> None:
    p.cloud.faults.fail_delivery("NO_PERMISSIONS", times=1)
    version = p.put(KEY, GOOD)
    p.cloud.settle()
    p.sqs.purge_queue(QueueUrl=p.stack.outputs["EventDeliveryDLQUrl"])
    cloudtrail_dead_letter(p, KEY)

    report = _redriver(p, "EventDeliveryDLQUrl").run()

    assert report.counts()["sent"] == 1
    p.cloud.settle()
    record = p.record(KEY, version)
    assert record is not None and record["status"] == "SUCCEEDED"
    assert record["trigger_source"] == "ingest-pipeline.redrive"
    assert p.read(p.output_key(KEY)).count(b"\n") == 2
    assert dlq_depth(p) == 0
    (delivered,) = [d for d in p.deliveries_for(KEY) if d.status == "DELIVERED"]
    provenance = delivered.event["detail"]["redrive"]
    assert provenance["originalDetailType"] == "AWS API Call via CloudTrail"


@pytest.mark.parametrize(
    ("event_name", "bucket"),
    [("DeleteObject", None), ("PutObject", "someone-elses-bucket")],
    ids=["delete-event", "other-bucket"],
)
def test_a_dead_letter_no_rule_would_route_stays_in_the_queue(
    p: Pipeline, event_name: str, bucket: str | None
) -> None:
    cloudtrail_dead_letter(p, KEY, event_name, bucket)

    report = _redriver(p, "EventDeliveryDLQUrl").run()

    assert report.counts()["unroutable"] == 1 and report.counts()["sent"] == 0
    (outcome,) = report.outcomes.values()
    assert "no enabled rule" in (outcome.reason or "") and "--force" in (outcome.reason or "")
    assert dlq_depth(p) == 1  # left in the queue, not deleted
    assert p.executions_for(KEY) == []
