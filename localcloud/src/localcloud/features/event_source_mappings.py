"""SQS event source mappings that poll like Lambda does.

moto 5.2 invokes the mapped function synchronously inside SendMessage
(sqs/models.py:577, ``Queue.add_message``) with no ReportBatchItemFailures handling. Here,
instead, a poller (``EventSourceMappings``) receives batches of up to ``BatchSize`` messages
(with the queue's visibility timeout), builds the SQS event Lambda builds, invokes the
function (RequestResponse) and then:

* no function error: deletes the batch, except - when ``FunctionResponseTypes`` contains
  ``ReportBatchItemFailures`` - the messages listed in ``batchItemFailures``. A response
  that names an unknown id or is malformed fails the whole batch, as on AWS;
* function error: deletes nothing.

Messages not deleted become visible again. On the cloud's virtual clock the visibility
timeout has elapsed at once (visibility reset to 0); in real time they wait it out. moto's
receive applies the queue's redrive policy (maxReceiveCount -> dead-letter queue).

The ``sqs-event-source-mappings`` patch detaches mappings from moto's synchronous path as
they are created.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any

from moto.awslambda.models import LambdaBackend
from moto.awslambda.utils import get_backend
from moto.sqs.models import sqs_backends

from localcloud import clients
from localcloud.features.delivery import queue_url
from localcloud.features.dynamodb_streams import StreamMappings, reported_failures
from localcloud.iam import enforcement as iam
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Clock, Runtime

__all__ = ["PATCHES", "EventSourceMappings"]


def _build(rt: Runtime) -> Targets:
    create = LambdaBackend.create_event_source_mapping

    def create_detached(self: LambdaBackend, spec: dict[str, Any]) -> Any:
        esm = create(self, spec)
        for queue in sqs_backends[self.account_id][self.region_name].queues.values():
            queue.lambda_event_source_mappings.pop(esm.function_arn, None)
        return esm

    return {(LambdaBackend, "create_event_source_mapping"): create_detached}


PATCHES = [
    Patch(
        name="sqs-event-source-mappings",
        kind=Kind.FEATURE,
        reason="SQS event source mappings poll in batches with ReportBatchItemFailures, as Lambda "
        "does (moto invokes the function synchronously inside SendMessage, no partial batches).",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_a_mapped_queue_is_polled_not_invoked_inside_send_message",
        build=_build,
    )
]


def _record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    attributes = message.get("Attributes", {})
    body = message["Body"]
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
            **{
                name: attributes.get(name, "")
                for name in ("SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")
            },
            # a FIFO queue's, and a standard (fair) queue's message sent with a group id
            **{
                name: attributes[name]
                for name in ("SequenceNumber", "MessageGroupId", "MessageDeduplicationId")
                if name in attributes
            },
        },
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": value.get("BinaryValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value["DataType"],
            }
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": hashlib.md5(body.encode()).hexdigest(),  # noqa: S324 - SQS's own checksum
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


class EventSourceMappings:
    """Polls every enabled SQS event source mapping of one account/region."""

    def __init__(self, account_id: str, region: str, clock: Clock) -> None:
        self.account_id, self.region, self.clock = account_id, region, clock
        self._sqs = clients.client("sqs", region, clients.ONE_ATTEMPT)
        self._lambda = clients.client("lambda", region, clients.ONE_ATTEMPT)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._busy = threading.Lock()
        self.invocations: list[dict[str, Any]] = []
        self._queue_urls: dict[str, str] = {}
        #: DynamoDB stream mappings (features/dynamodb_streams.py), polled and drained here too
        self.streams = StreamMappings(account_id, region, clock)

    def _mappings(self) -> list[Any]:
        # the simple backend without Docker
        mappings = get_backend(self.account_id, self.region)._event_source_mappings.values()
        return [esm for esm in mappings if esm.enabled and ":sqs:" in esm.event_source_arn]

    def poll_once(self) -> int:
        """One receive + invoke per mapping; returns how many messages were handed over."""
        with self._busy:
            handled = sum(self._poll(esm) for esm in self._mappings())
            return handled + self.streams.poll_once()

    def _poll(self, esm: Any) -> int:
        """The mapping reads and deletes with the function's execution role, as Lambda does."""
        function = get_backend(self.account_id, self.region).get_function(esm.function_arn)
        caller = iam.role(function.role, function.function_name)
        queue_name = esm.event_source_arn.rsplit(":", 1)[-1]
        queue = sqs_backends[self.account_id][self.region].queues.get(queue_name)
        if queue is not None and not queue.messages:
            return 0  # a look at the backend, not a ReceiveMessage: idle polling costs nothing
        url = queue_url(esm.event_source_arn, self._queue_urls)
        with iam.acting_as(caller):
            got = self._sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=min(int(esm.batch_size or 10), 10),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
        messages = got.get("Messages", [])
        if not messages:
            return 0
        event = {"Records": [_record(m, esm.event_source_arn, self.region) for m in messages]}
        response = self._lambda.invoke(
            FunctionName=esm.function_arn,
            InvocationType="RequestResponse",
            Payload=json.dumps(event).encode(),
        )
        payload = response["Payload"].read()
        result = json.loads(payload) if payload else None
        by_id = {m["MessageId"]: m for m in messages}
        if response.get("FunctionError"):
            failed: set[str] | None = None
        elif "ReportBatchItemFailures" in (esm.function_response_types or []):
            failed = reported_failures(result, lambda i: str(i) if i and i in by_id else None)
        else:
            failed = set()
        if failed is None:
            failed = set(by_id)
        self.invocations.append(
            {
                "function": esm.function_arn,
                "messages": len(messages),
                "failed": sorted(failed),
                "error": response.get("FunctionError"),
            }
        )
        with iam.acting_as(caller):
            self._settle(url, by_id, failed)
        return len(messages)

    def _settle(self, url: str, by_id: dict[str, Any], failed: set[str]) -> None:
        for message_id, message in by_id.items():
            if message_id in failed:
                if not self.clock.scale:  # virtual clock: the visibility timeout has passed
                    with iam.acting_as(None):  # the clock's doing, not a call Lambda makes
                        self._sqs.change_message_visibility(
                            QueueUrl=url,
                            ReceiptHandle=message["ReceiptHandle"],
                            VisibilityTimeout=0,
                        )
            else:
                self._sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def drain(self, timeout: float = 10.0) -> None:
        """Poll until every mapped queue is empty (TimeoutError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while self.poll_once() or self._visible_backlog():
            if time.monotonic() > deadline:
                raise TimeoutError(f"event source mappings still busy after {timeout}s")

    def _visible_backlog(self) -> int:
        queues = sqs_backends[self.account_id][self.region].queues
        names = [esm.event_source_arn.rsplit(":", 1)[-1] for esm in self._mappings()]
        visible = sum(queues[n].approximate_number_of_messages for n in names if n in queues)
        return self.streams.backlog() + visible

    def start(self, interval: float = 0.02) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                try:
                    if not self.poll_once():
                        self._stop.wait(interval)
                except Exception:  # keep polling; the failure is in the function's logs
                    self._stop.wait(interval)

        self._stop.clear()
        self._thread = threading.Thread(target=loop, name="esm-poller", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
