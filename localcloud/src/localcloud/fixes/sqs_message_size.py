"""Fix: SendMessage and SendMessageBatch count a message's size as SQS does.

AWS: a message may be 1 MiB, 1,048,576 bytes (256 KiB until 2025; SendMessage,
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html:
"The maximum size is 1 MiB or 1,048,576 bytes"), or less when the queue's
MaximumMessageSize says so, and "All parts of the message attribute, including Name, Type,
and Value, are part of the message size restriction (1 MiB or 1,048,576 bytes)"
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/
API_MessageAttributeValue.html). SendMessageBatch: "The maximum allowed individual message
size and the maximum total payload size (the sum of the individual lengths of all of the
batched messages) are both 1 MiB". Refused as AWS answers (HTTP 400):

* SendMessage: ``InvalidParameterValue`` "One or more parameters are invalid. Reason:
  Message must be shorter than <MaximumMessageSize> bytes.";
* SendMessageBatch: ``BatchRequestTooLong`` (``AWS.SimpleQueueService.BatchRequestTooLong``
  in the JSON protocol) "Batch requests cannot be longer than 1048576 bytes. You have sent
  <n> bytes.".

moto 5.2 (sqs/models.py ``_validate_message``, ``send_message_batch``) has both errors but
counts only the body, in characters: a body of 600,000 "é" (1.2 MB) or a 1 MB body with a
100 KB attribute is accepted. The sizes are counted here, at the API (SQSResponse), so
moto's own deliveries to queues keep their behaviour.
"""

from __future__ import annotations

from typing import Any

from moto.sqs.constants import MAXIMUM_MESSAGE_LENGTH
from moto.sqs.exceptions import BatchRequestTooLong, InvalidParameterValue
from moto.sqs.responses import SQSResponse

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "message_size"]


def _bytes(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    return len(value) if isinstance(value, bytes | bytearray) else 0


def message_size(body: Any, attributes: dict[str, Any] | None) -> int:
    """The body's UTF-8 bytes plus every attribute's name, data type and value."""
    size = _bytes(body)
    for name, attribute in (attributes or {}).items():
        value = attribute.get("StringValue")
        value = attribute.get("BinaryValue") if value is None else value
        size += _bytes(name) + _bytes(attribute.get("DataType")) + _bytes(value)
    return size


def _build(rt: Runtime) -> Targets:
    send_message = SQSResponse.send_message
    send_message_batch = SQSResponse.send_message_batch

    def checked_send_message(self: SQSResponse) -> Any:
        queue = self.sqs_backend.get_queue(self._get_queue_name())
        limit = int(queue.maximum_message_size)  # type: ignore[attr-defined]
        size = message_size(self._get_param("MessageBody"), self._get_param("MessageAttributes"))
        if size > limit:
            raise InvalidParameterValue(
                "One or more parameters are invalid. Reason: Message must be shorter than "
                f"{limit} bytes."
            )
        return send_message(self)

    def checked_send_message_batch(self: SQSResponse) -> Any:
        entries = self._get_param("Entries") or []
        total = sum(message_size(e.get("MessageBody"), e.get("MessageAttributes")) for e in entries)
        if total > MAXIMUM_MESSAGE_LENGTH:
            raise BatchRequestTooLong(total)
        return send_message_batch(self)

    return {
        (SQSResponse, "send_message"): checked_send_message,
        (SQSResponse, "send_message_batch"): checked_send_message_batch,
    }


PATCHES = [
    Patch(
        name="sqs-message-size",
        kind=Kind.FIX,
        reason="SendMessage/SendMessageBatch count a message as its body's UTF-8 bytes plus "
        "its attributes' names, types and values, as SQS does (moto: body characters only).",
        test="localcloud/tests/test_quotas.py::test_send_message_counts_utf8_bytes_and_attributes",
        build=_build,
        upstream="no moto issue found (searched 2026-11-25): moto sqs/models.py "
        "_validate_message and send_message_batch measure len(MessageBody) (LocalStack had "
        "the same gap: localstack/localstack#7147)",
    )
]
