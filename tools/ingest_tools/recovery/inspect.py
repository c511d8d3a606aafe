"""``ingestctl inspect QUEUE``: what a dead-letter queue holds, without consuming it.

Messages are received with a short visibility timeout, parsed (``formats.parse_message``),
counted, and made visible again at once. Nothing is deleted. Receiving does increase each
message's ApproximateReceiveCount, as any peek at SQS does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ingest_tools.recovery.formats import UnreadableMessageError, futile_reason, parse_message

AGE_BUCKETS = [(3600, "< 1 h"), (86400, "< 1 day"), (7 * 86400, "< 7 days")]


def _age_bucket(seconds: float) -> str:
    for limit, label in AGE_BUCKETS:
        if seconds < limit:
            return label
    return ">= 7 days"


@dataclass
class QueueSummary:
    queue_url: str
    approximate_total: int
    inspected: int = 0
    by_error_code: Counter[str] = field(default_factory=Counter)
    by_origin: Counter[str] = field(default_factory=Counter)
    by_target: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    by_age: Counter[str] = field(default_factory=Counter)
    refused: int = 0
    not_replayable: int = 0
    unreadable: list[dict[str, str]] = field(default_factory=list)
    oldest: datetime | None = None
    newest: datetime | None = None
    samples: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "queueUrl": self.queue_url,
            "approximateMessages": self.approximate_total,
            "inspected": self.inspected,
            "byErrorCode": dict(self.by_error_code.most_common()),
            "byOrigin": dict(self.by_origin.most_common()),
            "byTarget": dict(self.by_target.most_common()),
            "byKind": dict(self.by_kind.most_common()),
            "byAge": dict(self.by_age.most_common()),
            "oldest": self.oldest.isoformat() if self.oldest else None,
            "newest": self.newest.isoformat() if self.newest else None,
            "wouldBeRefused": self.refused,
            "notReplayable": self.not_replayable,
            "unreadable": self.unreadable,
            "samples": self.samples,
        }


def inspect_queue(
    sqs: Any, queue_url: str, *, limit: int = 1000, now: datetime | None = None
) -> QueueSummary:
    now = now or datetime.now(UTC)
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    summary = QueueSummary(queue_url, int(attributes.get("ApproximateNumberOfMessages", 0)))
    handles: list[str] = []
    seen: set[str] = set()
    try:
        while summary.inspected < limit:
            got = sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=min(10, limit - summary.inspected),
                VisibilityTimeout=60,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            messages = got.get("Messages", [])
            if not messages:
                break
            for message in messages:
                handles.append(message["ReceiptHandle"])
                if message["MessageId"] in seen:
                    continue
                seen.add(message["MessageId"])
                summary.inspected += 1
                _count(summary, message, now)
    finally:
        for start in range(0, len(handles), 10):
            sqs.change_message_visibility_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": h, "VisibilityTimeout": 0}
                    for i, h in enumerate(handles[start : start + 10])
                ],
            )
    return summary


def _count(summary: QueueSummary, message: dict[str, Any], now: datetime) -> None:
    try:
        record = parse_message(message)
    except UnreadableMessageError as exc:
        summary.unreadable.append({"messageId": exc.message_id, "reason": exc.reason})
        summary.by_kind["unreadable"] += 1
        return
    code = record.error_code or "unknown"
    summary.by_error_code[code] += 1
    summary.by_origin[record.origin] += 1
    summary.by_target[record.target_arn or "unknown"] += 1
    summary.by_kind[record.kind.value + (" (via SNS)" if record.wrapped_in_sns else "")] += 1
    if record.sent_at is not None:
        summary.by_age[_age_bucket((now - record.sent_at).total_seconds())] += 1
        summary.oldest = min(filter(None, [summary.oldest, record.sent_at]))
        summary.newest = max(filter(None, [summary.newest, record.sent_at]))
    if not record.replayable:
        summary.not_replayable += 1
    elif futile_reason(record):
        summary.refused += 1
    if code not in summary.samples:
        summary.samples[code] = {
            "messageId": record.message_id,
            "kind": record.kind.value,
            "object": record.object.key if record.object else None,
            "errorMessage": (record.error_message or "")[:300],
            "retryAttempts": record.retry_attempts,
            "notReplayable": record.not_replayable_reason,
            "futile": futile_reason(record),
        }


def render(summary: QueueSummary) -> str:
    lines = [
        f"queue     {summary.queue_url}",
        f"messages  ~{summary.approximate_total} in the queue, {summary.inspected} inspected",
    ]
    if summary.oldest and summary.newest:
        oldest, newest = (
            f"{summary.oldest:%Y-%m-%d %H:%M:%S}Z",
            f"{summary.newest:%Y-%m-%d %H:%M:%S}Z",
        )
        lines.append(f"age       oldest {oldest}, newest {newest}")

    def table(title: str, counts: Counter[str]) -> None:
        if not counts:
            return
        width = max(len(k) for k in counts)
        lines.append("")
        lines.append(title)
        lines.extend(f"  {k.ljust(width)}  {v:>6}" for k, v in counts.most_common())

    table("by error code", summary.by_error_code)
    table("by rule / schedule", summary.by_origin)
    table("by target", summary.by_target)
    table("by kind", summary.by_kind)
    table("by age", summary.by_age)
    lines.append("")
    lines.append(
        f"redrive   {summary.refused} would be refused without --force, "
        f"{summary.not_replayable} cannot be replayed, {len(summary.unreadable)} unreadable"
    )
    for code, sample in summary.samples.items():
        lines.append(
            f"sample    [{code}] {sample['object'] or ''} {sample['errorMessage']}".rstrip()
        )
    for bad in summary.unreadable[:5]:
        lines.append(f"unreadable {bad['messageId']}: {bad['reason']}")
    return "\n".join(lines)
