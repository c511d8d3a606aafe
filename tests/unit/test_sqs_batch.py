"""Partial batch responses (ingest_pipeline.sqs_batch), driven by the SQS event powertools
publishes (tests/conformance/samples/powertools-sqsEvent.json) and our sam local invoke sample.

Lambda's contract: the messages listed in ``batchItemFailures`` stay in the queue (delivered
again, then moved to the DLQ by its redrive policy); the others are deleted. So a failed
record must be listed, a handled one must not, and an invocation that handled nothing must
fail rather than report success.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest_pipeline.errors import InvalidEventError
from ingest_pipeline.models import ReconcileRequest, parse_event
from ingest_pipeline.sqs_batch import BatchFailedError, SqsMessage, messages, process_batch
from tests.support import load_event

pytestmark = pytest.mark.unit

SAMPLES = Path(__file__).resolve().parents[1] / "conformance" / "samples"
NOT_JSON_ID = "059f36b4-87a3-44ab-83d2-661975830a7d"  # body "Test message."
JSON_ID = "2e1424d4-f796-459a-8184-9c92662be6da"  # body {"message": "foo1"}


def published(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text())


def test_a_record_that_fails_is_reported_and_the_others_are_handled() -> None:
    handled: list[Any] = []
    response = process_batch(
        published("powertools-sqsEvent.json"), lambda m: handled.append(m.json_body())
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": NOT_JSON_ID}]}
    assert handled == [{"message": "foo1"}]


def test_a_batch_where_every_record_failed_fails_the_invocation() -> None:
    """Like powertools' BatchProcessingError: SQS retries the batch, the Errors alarm sees it."""
    seen: list[tuple[str, str]] = []

    def handle(message: SqsMessage) -> None:
        parse_event(message.json_body(), ReconcileRequest)  # neither body is a schedule run

    with pytest.raises(BatchFailedError) as raised:
        process_batch(
            published("powertools-sqsEvent.json"),
            handle,
            on_failure=lambda m, e: seen.append((m.message_id, type(e).__name__)),
        )
    assert [mid for mid, _ in raised.value.failures] == [NOT_JSON_ID, JSON_ID]
    assert seen == [(NOT_JSON_ID, "InvalidEventError"), (JSON_ID, "InvalidEventError")]
    text = str(raised.value)  # what the invocation error (and its log line) says
    assert text.startswith("all 2 records of the batch failed")
    assert f"SQS message {NOT_JSON_ID} is not JSON" in text
    assert f"{JSON_ID}: InvalidEventError: [INVALID_EVENT] invalid ReconcileRequest" in text
    assert "run: Field required" in text


@pytest.mark.parametrize(
    ("event", "error"),
    [
        pytest.param(
            published("powertools-eventBridgeEvent.json"),
            "not an SQS event: it has no Records list",
            id="eventbridge-event",
        ),
        pytest.param(
            published("powertools-s3Event.json"),
            r"Records\[0\] is not an SQS message",
            id="s3-notification",
        ),
        pytest.param(
            {"Records": [{"eventSource": "aws:sqs", "body": "{}"}]},
            r"Records\[0\] has no messageId or body",
            id="no-message-id",
        ),
        pytest.param([], "not an SQS event", id="not-an-object"),
    ],
)
def test_an_event_that_is_not_an_sqs_batch_is_refused_before_any_record_is_handled(
    event: Any, error: str
) -> None:
    handled: list[SqsMessage] = []
    with pytest.raises(InvalidEventError, match=error):
        process_batch(event, handled.append)
    assert handled == []


def test_an_empty_batch_reports_no_failure() -> None:
    assert process_batch({"Records": []}, lambda m: None) == {"batchItemFailures": []}


def test_the_sam_local_invoke_sample_is_one_schedule_run() -> None:
    (message,) = messages(load_event("reconcile/scheduled-run.json"))
    request = parse_event(message.json_body(), ReconcileRequest)
    assert request.run.scheduled_time == "2026-11-21T10:15:00Z"
    assert request.run.attempt == "1" and message.receive_count == 1
