"""Partial batch responses for an SQS event source mapping (``ReportBatchItemFailures``).

This does for a standard queue what powertools' ``BatchProcessor(EventType.SQS)`` with
``process_partial_response`` does, and keeps its behaviour:

* the records are handled one by one; one that raises is reported in ``batchItemFailures``
  by its ``messageId`` (SQS delivers it again, then its queue's redrive policy moves it to
  the DLQ), and the others go on;
* when every record failed, the invocation fails (``BatchFailedError``, like powertools'
  ``BatchProcessingError``): SQS retries the whole batch and the function's Errors alarm
  sees it;
* an event that is not an SQS batch is refused with ``InvalidEventError`` before any record
  is handled, so no message is deleted for work that was not done.

Why not the powertools utility: importing ``aws_lambda_powertools.utilities.batch`` imports
every powertools event data class (``utilities/data_classes/__init__``) and asyncio. That was
18 ms of ReconcileFunction's cold start on Python 3.13, the part that put it over issue 12's
+100 ms (``scripts/bench_cold_start.py``). The response shape is Lambda's, documented in
"Handling errors for an SQS event source in Lambda" (``batchItemFailures`` /
``itemIdentifier``); tests drive this module with the SQS event powertools publishes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from msgspec import Struct

from ingest_pipeline.errors import InvalidEventError


class BatchItemFailure(TypedDict):
    itemIdentifier: str


class PartialBatchResponse(TypedDict):
    batchItemFailures: list[BatchItemFailure]


class SqsMessage(Struct, frozen=True):  # a Struct: a dataclass compiles at every import
    """One record of an SQS event: what a record handler needs of it."""

    message_id: str
    body: str
    attributes: Mapping[str, str]

    @property
    def receive_count(self) -> int:
        return int(self.attributes.get("ApproximateReceiveCount", "1"))

    def json_body(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise InvalidEventError(f"SQS message {self.message_id} is not JSON") from exc


class BatchFailedError(RuntimeError):
    """Every record of the batch failed: the invocation fails, SQS retries the batch."""

    def __init__(self, failures: Sequence[tuple[str, BaseException]]) -> None:
        self.failures = tuple(failures)
        summary = "; ".join(f"{mid}: {type(exc).__name__}: {exc}" for mid, exc in self.failures)
        super().__init__(f"all {len(self.failures)} records of the batch failed ({summary})")


def messages(event: Mapping[str, Any]) -> list[SqsMessage]:
    """The batch's records, or InvalidEventError if the event is not an SQS batch."""
    records = event.get("Records") if isinstance(event, Mapping) else None
    if not isinstance(records, list):
        raise InvalidEventError("not an SQS event: it has no Records list")
    parsed: list[SqsMessage] = []
    for index, record in enumerate(records):
        if not isinstance(record, Mapping) or record.get("eventSource") != "aws:sqs":
            raise InvalidEventError(f"Records[{index}] is not an SQS message (eventSource)")
        message_id, body = record.get("messageId"), record.get("body")
        if not isinstance(message_id, str) or not message_id or not isinstance(body, str):
            raise InvalidEventError(f"Records[{index}] has no messageId or body")
        attributes = record.get("attributes")
        parsed.append(
            SqsMessage(message_id, body, attributes if isinstance(attributes, Mapping) else {})
        )
    return parsed


def process_batch(
    event: Mapping[str, Any],
    handle: Callable[[SqsMessage], object],
    *,
    on_failure: Callable[[SqsMessage, Exception], None] | None = None,
) -> PartialBatchResponse:
    """Handle each message; report the ones whose handler raised as batch item failures."""
    batch = messages(event)
    failures: list[tuple[str, BaseException]] = []
    for message in batch:
        try:
            handle(message)
        except Exception as exc:  # reported to SQS as this record's failure
            failures.append((message.message_id, exc))
            if on_failure is not None:
                on_failure(message, exc)
    if batch and len(failures) == len(batch):
        raise BatchFailedError(failures)
    return {"batchItemFailures": [{"itemIdentifier": mid} for mid, _ in failures]}
