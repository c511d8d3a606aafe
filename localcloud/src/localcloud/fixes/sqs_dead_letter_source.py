"""Fix: a message moved to a dead-letter queue by a redrive policy records its source queue.

When a queue's redrive policy moves a message to its dead-letter queue (maxReceiveCount
reached), SQS records the source queue, ``DeadLetterQueueSourceArn``, returned by
ReceiveMessage when asked for (or for All), and used by StartMessageMoveTask without a
``DestinationArn`` to send the message back. moto moves the message inside ReceiveMessage
(``dead_letter_queue.add_message``) and forgets where it came from. The queue a ReceiveMessage
request reads is noted per thread (``SQSResponse.receive_message``), so ``Queue.add_message``
can record the source; the map is cleared when the cloud stops.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.core.responses import ActionResult
from moto.sqs.models import Message, Queue
from moto.sqs.responses import SQSResponse

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_ADD_MESSAGE = Queue.add_message
_RECEIVE_MESSAGE_RESPONSE = SQSResponse.receive_message
_receiving = threading.local()  # .queue: the queue this thread's ReceiveMessage reads


def _build(rt: Runtime) -> Targets:
    sources = rt.dead_letter_sources  # message id -> the queue its redrive policy moved it from

    def _add_message(self: Queue, message: Message) -> None:
        source = getattr(_receiving, "queue", None)
        if source is not None and source.dead_letter_queue is self:
            sources[message.id] = source.queue_arn
        _ADD_MESSAGE(self, message)

    def _receive_message_response(self: SQSResponse) -> Any:
        # None when there is no such queue: moto answers the request as it does
        _receiving.queue = self.sqs_backend.queues.get(self._get_queue_name())
        try:
            answer = _RECEIVE_MESSAGE_RESPONSE(self)
        finally:
            _receiving.queue = None
        params = ("AttributeNames", "MessageSystemAttributeNames")
        names = {name for param in params for name in self._get_param(param) or []}
        if not isinstance(answer, ActionResult) or not {"All", "DeadLetterQueueSourceArn"} & names:
            return answer
        for message in (answer.result or {}).get("Messages", []):  # type: ignore[union-attr]
            source = sources.get(message["MessageId"])
            if source is not None:
                message.setdefault("Attributes", {})["DeadLetterQueueSourceArn"] = source
        return answer

    rt.on_close(sources.clear)
    return {
        (Queue, "add_message"): _add_message,
        (SQSResponse, "receive_message"): _receive_message_response,
    }


PATCHES = [
    Patch(
        name="sqs-dead-letter-source",
        kind=Kind.FIX,
        reason="A message moved by a redrive policy records DeadLetterQueueSourceArn, returned "
        "by ReceiveMessage (moto forgets the source).",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_queue_dead_letters_are_moved_back_to_their_source_queue",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto sqs/models.py "
        "(DeadLetterQueueSourceArn)",
    ),
]
