"""An S3 event notification is the record the User Guide documents ("Event message
structure"), with the key URL-encoded as a form value and its "/" kept
(fixes/s3_notification_records.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

TEMPLATE = Path(__file__).parent / "templates" / "s3_notifications" / "template.yaml"
KEY = "incoming/orders 2026/ä+b.csv"


def records(queue: str, count: int) -> list[dict[str, Any]]:
    sqs, found = boto3.client("sqs"), []
    while len(found) < count:
        reply = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        assert reply.get("Messages"), f"{len(found)} of {count} notifications"
        for message in reply["Messages"]:
            body = json.loads(message["Body"])
            found += body.get("Records", [])  # s3:TestEvent has none
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
    return found


def test_a_notification_is_the_documented_record() -> None:
    with LocalCloud(TEMPLATE, stack_name="s3-records") as cloud:
        bucket, queue = cloud.outputs["Bucket"], cloud.outputs["Inbox"]
        s3 = boto3.client("s3")
        first = s3.put_object(Bucket=bucket, Key=KEY, Body=b"a,b\n")
        second = s3.put_object(Bucket=bucket, Key=KEY, Body=b"a,b\n1,2\n")
        created_1, created_2 = records(queue, 2)

        assert created_1["eventName"] == "ObjectCreated:Put"
        obj = created_1["s3"]["object"]
        assert obj["key"] == "incoming/orders+2026/%C3%A4%2Bb.csv"
        assert unquote_plus(obj["key"]) == KEY  # what a handler does, as AWS's samples do
        assert (obj["size"], obj["versionId"]) == (4, first["VersionId"])
        assert created_2["s3"]["object"]["versionId"] == second["VersionId"]
        assert created_2["s3"]["object"]["sequencer"] > obj["sequencer"]
        assert set(created_1) >= {"userIdentity", "requestParameters", "responseElements"}
        assert created_1["s3"]["bucket"]["ownerIdentity"]["principalId"]


def test_s3_responses_name_their_server() -> None:
    with LocalCloud(TEMPLATE, stack_name="s3-server") as cloud:
        s3 = boto3.client("s3")
        put = s3.put_object(Bucket=cloud.outputs["Bucket"], Key="a.txt", Body=b"a")
        listed = s3.list_objects_v2(Bucket=cloud.outputs["Bucket"])
        for reply in (put, listed):
            assert reply["ResponseMetadata"]["HTTPHeaders"]["server"] == "AmazonS3"
