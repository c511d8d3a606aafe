"""Redrive benchmark: ``ingestctl redrive`` against seed 002's ``resend()``, same local cloud.

    python scripts/bench_redrive.py [--messages 10000] [--failure-ratio 0.05] [--visibility 5]

For each tool, in the same embedded local cloud (moto, from template.yaml):

1. the event-delivery DLQ is filled with ``--messages`` EventBridge rule dead letters (S3
   "Object Created" events with RULE_ARN, TARGET_ARN, ERROR_CODE=THROTTLING, ...), one object
   key each;
2. PutEvents rejects a seeded ``--failure-ratio`` of entries (InternalFailure), the same
   pattern for both tools;
3. the tool runs until the DLQ is empty. Seed 002's loop leaves a batch in the queue when
   any of its entries fails, so it is called again whenever the queue still holds messages
   (after they become visible again: the DLQ's visibility timeout, as deployed: SQS's
   default 30 s; ``--visibility`` overrides it).
   Wall time includes those waits: they are part of how that loop works;
4. every redriven event reaches a sink queue through a rule on the default bus (the pipeline
   rule is disabled so 10,000 executions do not dominate the measurement), and each object
   key is counted: lost = keys never delivered, duplicated = deliveries beyond the first.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Dict  # noqa: UP035 - Dict: the seed's own annotation

import boto3

from ingest_tools.recovery.redrive import RedriveOptions, Redriver
from localcloud.cloud import REGION, LocalCloud

TARGET_RATIO = 3.0
logger = logging.getLogger("seed002")
logger.propagate = False  # its errors are counted (below), not printed one by one


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.messages[record.getMessage()] += 1


SEED_ERRORS = _Count()
logger.addHandler(SEED_ERRORS)


# --- seed 002's resend loop, as published; adapted only to take its clients (the article
# --- creates `sqs` and `cloudwatch_events` at module level). Its bug is the point of the
# --- comparison: one failed entry leaves the whole batch in the queue, to be sent again.
# fmt: off
def new_entry(msg: Dict, source: str) -> Dict:  # noqa: UP006
    """CloudWatch Event用のEntryを作成します"""
    return {
        "Time": msg["time"],
        "Source": source,
        "Resources": msg["resources"],
        "DetailType": msg["detail-type"],
        "Detail": json.dumps(msg["detail"]),
    }


def resend(queue_name: str, sqs, cloudwatch_events):  # type: ignore[no-untyped-def]
    """DLQからメッセージを取り出してCloudWatch Eventに投げます"""
    queue = sqs.get_queue_by_name(QueueName=queue_name)
    retry_source_name = "retry"
    while True:
        messages_to_delete = []
        entries = []
        for message in queue.receive_messages(MaxNumberOfMessages=10):
            entries.append(new_entry(json.loads(message.body), retry_source_name))
            messages_to_delete.append(
                {"Id": message.message_id, "ReceiptHandle": message.receipt_handle}
            )
        # メッセージがないならキューが空
        if len(messages_to_delete) == 0:
            break

        # CloudWatchEventに送る
        res = cloudwatch_events.put_events(Entries=entries)
        if res["FailedEntryCount"] > 0:
            logger.error("put events failed", extra={"response": res})
            continue
        delete_res = queue.delete_messages(Entries=messages_to_delete)
        if "Failed" in delete_res:
            logger.error("delete message failed", extra={"response": delete_res})
# fmt: on


def fill_dlq(cloud: LocalCloud, sqs: Any, url: str, n: int, run: str) -> list[str]:
    out = cloud.outputs
    bucket, keys = out["IngestBucketName"], []
    for start in range(0, n, 10):
        entries = []
        for i in range(start, min(n, start + 10)):
            key = f"incoming/orders/redrive-bench/{run}/{i:05d}.csv"
            keys.append(key)
            event = {
                "version": "0",
                "id": str(uuid.uuid4()),
                "detail-type": "Object Created",
                "source": "aws.s3",
                "account": cloud.account_id,
                "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "region": REGION,
                "resources": [f"arn:aws:s3:::{bucket}"],
                "detail": {
                    "version": "0",
                    "bucket": {"name": bucket},
                    "object": {"key": key, "size": 176, "version-id": uuid.uuid4().hex},
                    "reason": "PutObject",
                },
            }
            attributes = {
                "RULE_ARN": out["ObjectCreatedRuleArn"],
                "TARGET_ARN": out["PipelineStateMachineArn"],
                "ERROR_CODE": "THROTTLING",
                "ERROR_MESSAGE": "Rate exceeded",
                "EXHAUSTED_RETRY_CONDITION": "MaximumRetryAttempts",
                "RETRY_ATTEMPTS": "185",
            }
            entries.append(
                {
                    "Id": str(i),
                    "MessageBody": json.dumps(event),
                    "MessageAttributes": {
                        k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()
                    },
                }
            )
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    return keys


def depth(sqs: Any, url: str) -> int:
    a = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(a["ApproximateNumberOfMessages"]) + int(a["ApproximateNumberOfMessagesNotVisible"])


def drain_sink(cloud: LocalCloud, sqs: Any, url: str) -> Counter[str]:
    cloud.deliveries.drain(timeout=600)
    seen: Counter[str] = Counter()
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        messages = got.get("Messages", [])
        if not messages:
            return seen
        for message in messages:
            seen[json.loads(message["Body"])["detail"]["object"]["key"]] += 1
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )


def measure(
    name: str, keys: list[str], seen: Counter[str], seconds: float, calls: int
) -> dict[str, Any]:
    lost = sum(1 for k in keys if seen[k] == 0)
    duplicated = sum(max(0, seen[k] - 1) for k in keys)
    return {
        "tool": name,
        "messages": len(keys),
        "seconds": round(seconds, 2),
        "messages_per_s": round(len(keys) / seconds, 1),
        "lost": lost,
        "duplicated": duplicated,
        "runs": calls,
    }


def bench(
    n: int, ratio: float, visibility: int, seed: int, concurrency: int
) -> list[dict[str, Any]]:
    with LocalCloud() as cloud:
        out = cloud.outputs
        sqs = boto3.client("sqs", region_name=REGION)
        sqs_resource = boto3.resource("sqs", region_name=REGION)
        events = boto3.client("events", region_name=REGION)
        ddb = boto3.client("dynamodb", region_name=REGION)
        dlq = out["EventDeliveryDLQUrl"]
        if visibility is not None:
            sqs.set_queue_attributes(
                QueueUrl=dlq, Attributes={"VisibilityTimeout": str(visibility)}
            )
        events.disable_rule(Name=out["ObjectCreatedRuleArn"].rsplit("/", 1)[-1])
        sink = sqs.create_queue(QueueName="redrive-bench-sink")["QueueUrl"]
        sink_arn = sqs.get_queue_attributes(QueueUrl=sink, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        events.put_rule(
            Name="redrive-bench-sink",
            EventPattern=json.dumps({"source": [out["RedriveEventSource"], "retry"]}),
        )
        events.put_targets(Rule="redrive-bench-sink", Targets=[{"Id": "sink", "Arn": sink_arn}])
        results = []

        # --- ingestctl redrive
        keys = fill_dlq(cloud, sqs, dlq, n, "ours")
        cloud.faults.fail_put_events_entries("InternalFailure", ratio=ratio, seed=seed)
        started, runs = time.perf_counter(), 0
        while depth(sqs, dlq):
            runs += 1
            Redriver(
                RedriveOptions(
                    queue_url=dlq,
                    redrive_source=out["RedriveEventSource"],
                    concurrency=concurrency,
                    visibility_timeout=60,
                    ledger_table=out["ObjectStateTableName"],
                ),
                sqs=sqs,
                events=events,
                dynamodb=ddb,
            ).run()
        ours_s = time.perf_counter() - started
        results.append(
            measure("ingestctl redrive", keys, drain_sink(cloud, sqs, sink), ours_s, runs)
        )

        # --- seed 002 resend()
        keys = fill_dlq(cloud, sqs, dlq, n, "seed")
        cloud.faults.fail_put_events_entries("InternalFailure", ratio=ratio, seed=seed)
        queue_name = dlq.rsplit("/", 1)[-1]
        started, runs = time.perf_counter(), 0
        while depth(sqs, dlq):
            runs += 1
            resend(queue_name, sqs_resource, events)
            while depth(sqs, dlq) and not sqs.receive_message(
                QueueUrl=dlq, MaxNumberOfMessages=1, VisibilityTimeout=0
            ).get("Messages"):
                time.sleep(0.05)  # failed batches are invisible until their timeout passes
        seed_s = time.perf_counter() - started
        results.append(
            measure("seed 002 resend()", keys, drain_sink(cloud, sqs, sink), seed_s, runs)
        )
        cloud.faults.clear()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--failure-ratio", type=float, default=0.05)
    parser.add_argument(
        "--visibility",
        type=int,
        default=None,
        help="override the DLQ's visibility timeout (s); default: as deployed (SQS's 30 s)",
    )
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--seed", type=int, default=2002)
    args = parser.parse_args(argv)
    print(
        f"redrive benchmark: {args.messages} DLQ messages, {args.failure_ratio:.0%} of PutEvents "
        f"entries failing, DLQ visibility timeout "
        f"{'as deployed (30 s)' if args.visibility is None else f'{args.visibility} s'}",
        flush=True,
    )
    with Path(os.devnull).open("w") as devnull, contextlib.redirect_stdout(devnull):
        results = bench(
            args.messages, args.failure_ratio, args.visibility, args.seed, args.concurrency
        )
    print(f"  {'tool':<20}{'msgs/s':>9}{'seconds':>9}{'lost':>6}{'dup':>7}{'runs':>6}")
    for r in results:
        print(
            f"  {r['tool']:<20}{r['messages_per_s']:>9.1f}{r['seconds']:>9.1f}"
            f"{r['lost']:>6}{r['duplicated']:>7}{r['runs']:>6}"
        )
    if SEED_ERRORS.messages:
        logged = ", ".join(f"{text!r} x{n}" for text, n in SEED_ERRORS.messages.items())
        print(f"  seed 002 logged: {logged}")
    ours, seed = results
    ratio = ours["messages_per_s"] / seed["messages_per_s"]
    met = ratio >= TARGET_RATIO and ours["lost"] == 0 and ours["duplicated"] == 0
    print(
        f"  throughput {ratio:.1f}x seed 002 (target >= {TARGET_RATIO:.0f}x, 0 lost, 0 duplicated)"
        f"  {'met' if met else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
