"""The console's queues: every SQS queue with its counts and what it is the dead-letter queue
of, and one queue's messages, peeked.

The list is read through the AWS APIs, as the SQS console does: ListQueues, GetQueueAttributes
(counts, RedrivePolicy), and, for "whose dead-letter queue", the other queues' RedrivePolicy,
EventBridge rules' targets' DeadLetterConfig (ListEventBuses, ListRules, ListTargetsByRule) and
EventBridge Scheduler schedules' (ListSchedules, GetSchedule).

A queue's messages are read from moto's queue object directly, never with ReceiveMessage:
receiving would hide each message for its visibility timeout and count a receive (the SQS
console's "poll for messages" does both; this page changes nothing). Each message carries the
queue's redrive command (``ConsoleExtensions.redrive``, console/extensions.py).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import shlex
from typing import Any

from botocore.exceptions import ClientError

from localcloud.console.data import NotFound, _client, _positive
from localcloud.console.extensions import Cloud

__all__ = ["MAX_MESSAGES", "default_redrive", "queue", "queues"]

MAX_MESSAGES = 1000
_COUNTS = {
    "ApproximateNumberOfMessages": "messages",
    "ApproximateNumberOfMessagesNotVisible": "inFlight",
    "ApproximateNumberOfMessagesDelayed": "delayed",
}


def _name(reference: str) -> str:
    """A queue's name from its URL, ARN or name."""
    text = reference.strip().rstrip("/")
    return text.rsplit(":" if text.startswith("arn:") else "/", 1)[-1]


def _dead_letter_sources(cloud: Cloud, attributes: dict[str, dict[str, str]]) -> Any:
    """DLQ ARN -> {"queues": [source queue ARNs], "rules": [...], "schedules": [...]}."""
    found: dict[str, dict[str, list[Any]]] = {}

    def add(dlq: str | None, kind: str, item: Any) -> None:
        if dlq:
            found.setdefault(dlq, {"queues": [], "rules": [], "schedules": []})[kind].append(item)

    for attrs in attributes.values():
        policy = attrs.get("RedrivePolicy")
        if policy:
            with contextlib.suppress(ValueError):
                add(json.loads(policy).get("deadLetterTargetArn"), "queues", attrs.get("QueueArn"))
    events = _client(cloud, "events")
    with contextlib.suppress(ClientError):
        buses = [b["Name"] for b in events.list_event_buses().get("EventBuses", [])]
        for bus in buses:
            for page in events.get_paginator("list_rules").paginate(EventBusName=bus):
                for rule in page.get("Rules", []):
                    targets = events.list_targets_by_rule(Rule=rule["Name"], EventBusName=bus)
                    for target in targets.get("Targets", []):
                        dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
                        add(dlq, "rules", {"rule": rule.get("Arn"), "target": target.get("Id")})
    scheduler = _client(cloud, "scheduler")
    with contextlib.suppress(ClientError):
        for page in scheduler.get_paginator("list_schedules").paginate():
            for item in page.get("Schedules", []):
                got = scheduler.get_schedule(Name=item["Name"], GroupName=item["GroupName"])
                dlq = ((got.get("Target") or {}).get("DeadLetterConfig") or {}).get("Arn")
                add(dlq, "schedules", got.get("Arn"))
    return found


def _listing(cloud: Cloud) -> tuple[dict[str, dict[str, str]], dict[str, Any]]:
    sqs = _client(cloud, "sqs")
    attributes: dict[str, dict[str, str]] = {}
    for page in sqs.get_paginator("list_queues").paginate():
        for url in page.get("QueueUrls", []):
            try:
                got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
            except ClientError:  # deleted meanwhile
                continue
            attributes[url] = got.get("Attributes", {})
    return attributes, _dead_letter_sources(cloud, attributes)


def _row(url: str, attrs: dict[str, str], sources: dict[str, Any]) -> dict[str, Any]:
    arn = attrs.get("QueueArn", "")
    of = sources.get(arn) or {"queues": [], "rules": [], "schedules": []}
    return {
        "name": _name(url),
        "url": url,
        "arn": arn,
        "fifo": _name(url).endswith(".fifo"),
        **{key: int(attrs.get(name, 0)) for name, key in _COUNTS.items()},
        "deadLetterFor": of,
        "isDeadLetterQueue": any(of.values()),
    }


def queues(cloud: Cloud) -> list[dict[str, Any]]:
    """Every queue, by name: ``name, url, arn, fifo, messages, inFlight, delayed,
    deadLetterFor ({"queues", "rules": [{"rule", "target"}], "schedules"}),
    isDeadLetterQueue``."""
    attributes, sources = _listing(cloud)
    rows = [_row(url, attrs, sources) for url, attrs in attributes.items()]
    return sorted(rows, key=lambda row: row["name"])


def default_redrive(row: dict[str, Any]) -> str | None:
    """The AWS-native command for a dead-letter queue of SQS queues: moves the messages back
    to their source queues."""
    if row["deadLetterFor"]["queues"]:
        return f"aws sqs start-message-move-task --source-arn {shlex.quote(row['arn'])}"
    return None


def _ms_iso(ms: Any) -> str | None:
    if not isinstance(ms, int | float) or not ms:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat()


def _text(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    return value


def _message(message: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "SenderId": message.sender_id,
        "SentTimestamp": str(message.sent_timestamp or ""),
        "ApproximateReceiveCount": str(message.approximate_receive_count),
    }
    for name, value in (
        ("ApproximateFirstReceiveTimestamp", message.approximate_first_receive_timestamp),
        ("MessageGroupId", message.group_id),
        ("MessageDeduplicationId", message.deduplication_id),
        ("SequenceNumber", message.sequence_number),
    ):
        if value:
            attributes[name] = str(value)
    attributes.update({k: str(_text(v)) for k, v in (message.system_attributes or {}).items()})
    message_attributes = {
        name: {
            "dataType": value.get("DataType"),
            "value": _text(value.get("StringValue", value.get("BinaryValue"))),
        }
        for name, value in (message.message_attributes or {}).items()
    }
    return {
        "id": message.id,
        "body": message.body,
        "sent": _ms_iso(message.sent_timestamp),
        "receiveCount": message.approximate_receive_count,
        "visible": bool(message.visible),
        "delayed": bool(message.delayed),
        "attributes": attributes,
        "messageAttributes": message_attributes,
    }


def _backend_queue(cloud: Cloud, name: str) -> Any:
    from moto.sqs.models import sqs_backends

    return sqs_backends[cloud.account_id][cloud.region].queues.get(name)


def queue(cloud: Cloud, reference: str, limit: int = 50) -> dict[str, Any]:
    """One queue (``reference``: its URL, ARN or name): its row (see ``queues``), its
    ``redrive`` command and the first ``limit`` of its messages, oldest first, peeked
    (``messages``: id, body, sent, receiveCount, visible, delayed, attributes,
    messageAttributes, redrive; ``total``: every message it holds)."""
    limit = _positive("limit", limit, MAX_MESSAGES)
    name = _name(reference)
    found = _backend_queue(cloud, name)
    if found is None:
        raise NotFound(f"no queue {reference}")
    attributes, sources = _listing(cloud)
    url = next((u for u in attributes if _name(u) == name), None)
    if url is None:
        raise NotFound(f"no queue {reference}")
    row = _row(url, attributes[url], sources)
    redrive = getattr(getattr(cloud, "console", None), "redrive", None)
    command = redrive(cloud, row["arn"]) if redrive is not None else None
    row["redrive"] = command if command is not None else default_redrive(row)
    held = sorted(found._messages[:], key=lambda m: m.sent_timestamp or 0)
    row["total"] = len(held)
    row["messages"] = [{**_message(m), "redrive": row["redrive"]} for m in held[:limit]]
    return row
