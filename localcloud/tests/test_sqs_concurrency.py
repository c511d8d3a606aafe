"""Concurrent consumers of one SQS queue (fixes/sqs_concurrent_receive.py): receivers, some long
polling, that delete and change visibility at the same time never fail, and within the
visibility timeout no message is handed to two of them.

moto's SQS with the local cloud's SQS patches (as ``registry.patch_set`` chooses them, so
``LOCALCLOUD_WITHOUT=sqs-concurrent-receive`` leaves the fix out), called from threads as the
local cloud's server calls it.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from localcloud import registry
from localcloud.patching import PatchSet
from localcloud.runtime import Runtime

pytestmark = [pytest.mark.e2e]

REGION = "us-east-1"
MESSAGES = 300
WORKERS = 8


@pytest.fixture
def sqs() -> Iterator[Any]:
    runtime = Runtime()
    patches = PatchSet(p for p in registry.patch_set() if ".sqs_" in p.module)
    with mock_aws():
        patches.install(runtime)
        try:
            yield boto3.client("sqs", region_name=REGION)
        finally:
            patches.uninstall()
            runtime.close()


def consume(sqs: Any, url: str, worker: int, got: list[str], errors: list[BaseException]) -> None:
    """Receive until the queue has nothing visible left: half the workers long poll, some
    change the visibility of what they got, and they delete one by one or in batches."""
    try:
        while True:
            answer = sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                VisibilityTimeout=60,
                WaitTimeSeconds=1 if worker % 2 else 0,
            )
            messages = answer.get("Messages", [])
            if not messages:
                return
            got.extend(m["Body"] for m in messages)
            entries = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ]
            if worker % 4 < 2:
                sqs.change_message_visibility_batch(
                    QueueUrl=url, Entries=[{**e, "VisibilityTimeout": 120} for e in entries]
                )
            if worker % 3 == 0:
                for entry in entries:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=entry["ReceiptHandle"])
            else:
                deleted = sqs.delete_message_batch(QueueUrl=url, Entries=entries)
                assert not deleted.get("Failed"), deleted["Failed"]
    except BaseException as exc:  # reported by the test
        errors.append(exc)


def test_concurrent_receivers_get_each_message_exactly_once(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="shared")["QueueUrl"]
    bodies = [f"message-{i:03d}" for i in range(MESSAGES)]
    for start in range(0, MESSAGES, 10):
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies[start : start + 10])
            ],
        )
    got: list[list[str]] = [[] for _ in range(WORKERS)]
    errors: list[BaseException] = []
    workers = [
        threading.Thread(target=consume, args=(sqs, url, w, got[w], errors), daemon=True)
        for w in range(WORKERS)
    ]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: races show up in every run
    try:
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join(timeout=30)
    finally:
        sys.setswitchinterval(interval)

    assert not any(thread.is_alive() for thread in workers)  # none stuck
    assert [f"{type(e).__name__}: {str(e)[:120]}" for e in errors] == []
    received = Counter(body for each in got for body in each)
    assert {body: n for body, n in received.items() if n > 1} == {}  # none handed out twice
    assert sorted(received) == bodies
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
