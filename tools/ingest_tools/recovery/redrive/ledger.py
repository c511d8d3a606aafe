"""The sent ledger: which dead letters a redrive has sent, kept until they are surely deleted.

Before a sent message is deleted, its id is written to the state table (``redrive#<queue
ARN>`` / message id, TTL ``LEDGER_DAYS``). If a run dies after sending but before deleting,
the message becomes visible again; the next run finds it here and deletes it without sending
it twice. Only a message received before (ApproximateReceiveCount > 1) can be here, so the
caller looks up only those.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

__all__ = ["LEDGER_DAYS", "SentLedger"]

LEDGER_DAYS = 15  # longer than SQS's 14-day maximum retention
_WRITE_CHUNK = 25  # BatchWriteItem's limit
_WRITE_ATTEMPTS = 8


class SentLedger:
    """The ledger of one dead-letter queue in one DynamoDB table."""

    def __init__(
        self, dynamodb: Any, table: str, *, queue_arn: str, clock: Callable[[], datetime]
    ) -> None:
        self.ddb = dynamodb
        self.table = table
        self.queue_arn = queue_arn
        self.clock = clock

    def key(self, message_id: str) -> dict[str, Any]:
        return {"pk": {"S": f"redrive#{self.queue_arn}"}, "sk": {"S": message_id}}

    def already_sent(self, message_ids: Iterable[str]) -> set[str]:
        """Which of these messages (at most 100) an earlier run sent (a consistent read)."""
        table = self.table
        got = self.ddb.batch_get_item(
            RequestItems={
                table: {
                    "Keys": [self.key(mid) for mid in message_ids],
                    "ConsistentRead": True,
                }
            }
        )
        sent = {str(item["sk"]["S"]) for item in got.get("Responses", {}).get(table, [])}
        for key in (got.get("UnprocessedKeys") or {}).get(table, {}).get("Keys", []):
            sent.discard(key["sk"]["S"])  # unknown: treated as not sent (the safe side)
        return sent

    def record(self, message_ids: Iterable[str]) -> None:
        """Write these messages as sent; ``RuntimeError`` if DynamoDB keeps throttling (then
        nothing may be deleted)."""
        expires = str(int((self.clock() + timedelta(days=LEDGER_DAYS)).timestamp()))
        sent_at = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        requests = [
            {
                "PutRequest": {
                    "Item": {
                        **self.key(mid),
                        "sent_at": {"S": sent_at},
                        "expires_at": {"N": expires},
                    }
                }
            }
            for mid in message_ids
        ]
        table = self.table
        while requests:
            chunk, requests = requests[:_WRITE_CHUNK], requests[_WRITE_CHUNK:]
            pending: dict[str, Any] = {table: chunk}
            for attempt in range(_WRITE_ATTEMPTS):
                left = self.ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems")
                if not left:
                    break
                pending = left
                time.sleep(min(1.0, 0.05 * 2**attempt))
            else:
                raise RuntimeError("ledger writes kept being throttled; nothing was deleted")
