"""DynamoDB Streams event source mappings as Lambda's poller runs them
(features/dynamodb_streams.py): the table's records in order, in batches, with the stream
view type's images; a failing batch bisected and retried, then its invocation record
(DDBStreamBatchInfo) sent to the OnFailure destination; ReportBatchItemFailures checkpoints
at the first failed record; FilterCriteria; the function's role must read the stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

TEMPLATE = Path(__file__).parent / "templates" / "dynamodb_streams" / "template.yaml"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(TEMPLATE, stack_name="dynamodb-streams") as running:
        yield running


def batches(cloud: LocalCloud, logical_id: str) -> list[list[dict[str, Any]]]:
    """The Records of every invocation of the function, oldest first."""
    name = cloud.functions[logical_id]
    return [r["event"]["Records"] for r in cloud.runtime.invocations if r["function"] == name]


def keys(batch: list[dict[str, Any]]) -> list[str]:
    return [r["dynamodb"]["Keys"]["pk"]["S"] for r in batch]


def failure_records(cloud: LocalCloud, output: str) -> list[dict[str, Any]]:
    sqs, got = boto3.client("sqs"), []
    while True:
        reply = sqs.receive_message(QueueUrl=cloud.outputs[output], MaxNumberOfMessages=10)
        if not reply.get("Messages"):
            return got
        for message in reply["Messages"]:
            sqs.delete_message(
                QueueUrl=cloud.outputs[output], ReceiptHandle=message["ReceiptHandle"]
            )
            got.append(json.loads(message["Body"]))


def test_the_handler_sees_inserts_modifies_and_removes_in_order(cloud: LocalCloud) -> None:
    dynamodb, table = boto3.client("dynamodb"), cloud.outputs["OrdersTable"]
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "o-1"}, "qty": {"N": "1"}})
    dynamodb.update_item(
        TableName=table,
        Key={"pk": {"S": "o-1"}},
        UpdateExpression="SET qty = :q",
        ExpressionAttributeValues={":q": {"N": "2"}},
    )
    dynamodb.delete_item(TableName=table, Key={"pk": {"S": "o-1"}})
    cloud.settle()

    records = [r for batch in batches(cloud, "RecorderFunction") for r in batch]
    assert [r["eventName"] for r in records] == ["INSERT", "MODIFY", "REMOVE"]
    stream_arn = boto3.client("dynamodb").describe_table(TableName=table)["Table"][
        "LatestStreamArn"
    ]
    for r in records:
        assert r["eventSource"] == "aws:dynamodb"
        assert r["eventSourceARN"] == stream_arn
        assert r["awsRegion"] == cloud.region
        assert r["dynamodb"]["Keys"] == {"pk": {"S": "o-1"}}
        assert r["dynamodb"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
        assert isinstance(r["dynamodb"]["ApproximateCreationDateTime"], float)
        assert r["dynamodb"]["SizeBytes"] > 0
    numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    assert numbers == sorted(numbers)
    insert, modify, remove = (r["dynamodb"] for r in records)
    assert "OldImage" not in insert
    assert insert["NewImage"] == {"pk": {"S": "o-1"}, "qty": {"N": "1"}}
    assert modify["OldImage"] == {"pk": {"S": "o-1"}, "qty": {"N": "1"}}
    assert modify["NewImage"] == {"pk": {"S": "o-1"}, "qty": {"N": "2"}}
    assert remove["OldImage"] == {"pk": {"S": "o-1"}, "qty": {"N": "2"}}
    assert "NewImage" not in remove


@contextmanager
def paused(cloud: LocalCloud, function: str) -> Iterator[None]:
    """The function's stream mapping disabled meanwhile (its records wait on the stream), so
    that what is written meanwhile is read at once when it is enabled again, however busy the
    machine is."""
    lam = boto3.client("lambda")
    (mapping,) = lam.list_event_source_mappings(FunctionName=cloud.functions[function])[
        "EventSourceMappings"
    ]
    lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    try:
        yield
    finally:
        lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=True)


def test_a_filter_hands_over_only_matching_records(cloud: LocalCloud) -> None:
    dynamodb, table = boto3.client("dynamodb"), cloud.outputs["OrdersTable"]
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "f-1"}, "kind": {"S": "gift"}})
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "f-2"}, "kind": {"S": "plain"}})
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "f-1"}, "kind": {"S": "gift"}})  # MODIFY
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "f-3"}, "kind": {"S": "gift"}})
    cloud.settle()

    handed = [r for batch in batches(cloud, "FilteredFunction") for r in batch]
    assert keys(handed) == ["f-1", "f-3"]
    assert {r["eventName"] for r in handed} == {"INSERT"}


def test_a_failing_batch_is_bisected_retried_then_sent_to_the_on_failure_destination(
    cloud: LocalCloud,
) -> None:
    dynamodb, table = boto3.client("dynamodb"), cloud.outputs["JobsTable"]
    with paused(cloud, "FailingFunction"):  # the four records in one batch, as a burst is
        for key in ("j-1", "j-2", "j-3"):
            item = {"pk": {"S": key}}
            if key == "j-3":
                item["poison"] = {"BOOL": True}
            dynamodb.put_item(TableName=table, Item=item)
        dynamodb.put_item(TableName=table, Item={"pk": {"S": "j-4"}})
    cloud.settle()

    seen = [keys(batch) for batch in batches(cloud, "FailingFunction")]
    # bisected at each failure: j-1 and j-2 succeed; j-3 fails alone until MaximumRetryAttempts
    # (2) are spent, is sent to the destination, and j-4 follows it
    assert seen == [
        ["j-1", "j-2", "j-3", "j-4"],
        ["j-1", "j-2"],
        ["j-3", "j-4"],
        ["j-3"],
        ["j-3"],
        ["j-4"],
    ]

    (record,) = failure_records(cloud, "JobFailuresUrl")
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert record["requestContext"]["functionArn"].endswith(
        ":function:" + cloud.functions["FailingFunction"]
    )
    assert record["responseContext"]["functionError"] == "Unhandled"
    info = record["DDBStreamBatchInfo"]
    assert info["batchSize"] == 1
    assert info["startSequenceNumber"] == info["endSequenceNumber"]
    assert (
        info["streamArn"]
        == boto3.client("dynamodb").describe_table(TableName=table)["Table"]["LatestStreamArn"]
    )
    assert info["shardId"].startswith("shardId-")


def test_report_batch_item_failures_checkpoints_at_the_first_failed_record(
    cloud: LocalCloud,
) -> None:
    dynamodb, table = boto3.client("dynamodb"), cloud.outputs["TasksTable"]
    with paused(cloud, "PartialFunction"):  # the three records in one batch
        for key in ("t-1", "fail-2", "t-3"):
            dynamodb.put_item(TableName=table, Item={"pk": {"S": key}, "n": {"N": "1"}})
    cloud.settle()

    seen = batches(cloud, "PartialFunction")
    assert [keys(batch) for batch in seen] == [["t-1", "fail-2", "t-3"], ["fail-2", "t-3"]]
    assert "NewImage" not in seen[0][0]["dynamodb"]  # KEYS_ONLY
    (record,) = failure_records(cloud, "TaskFailuresUrl")
    info = record["DDBStreamBatchInfo"]
    assert info["batchSize"] == 2  # fail-2 and what followed it
    assert info["startSequenceNumber"] == seen[1][0]["dynamodb"]["SequenceNumber"]
    assert info["endSequenceNumber"] == seen[1][1]["dynamodb"]["SequenceNumber"]


def test_a_role_that_may_not_read_the_stream_gets_nothing(cloud: LocalCloud) -> None:
    dynamodb, table = boto3.client("dynamodb"), cloud.outputs["TasksTable"]
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "r-1"}})
    cloud.settle()

    assert cloud.invocation_count(cloud.functions["NoReadFunction"]) == 0
    assert cloud.mappings is not None
    denied = [s.denied for s in cloud.mappings.streams._states.values() if s.denied]
    assert len(denied) == 1
    assert "dynamodb:DescribeStream" in denied[0]
