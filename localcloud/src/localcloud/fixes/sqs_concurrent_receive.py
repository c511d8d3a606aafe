"""Fix: concurrent ReceiveMessage / DeleteMessage / ChangeMessageVisibility on one queue.

AWS: any number of consumers may read one queue at once; within its visibility timeout a
message received by one consumer is not returned to another ("Amazon SQS visibility
timeout", SQS Developer Guide: "Immediately after a message is received, it remains in the
queue. To prevent other consumers from processing the message again, Amazon SQS sets a
visibility timeout"), and concurrent calls never fail because of each other.

moto 5.2 (sqs/models.py) takes no lock in ``SQSBackend.receive_message``: it reads the visible
messages, then marks each one received, so two receivers that read at once both take the
same message; ``queue.pending_messages.remove(message)`` in both raises ``KeyError``; and
``Queue.pending_message_groups`` iterates the pending set while another receiver adds to it
(``RuntimeError: Set changed size during iteration``). DeleteMessage and
ChangeMessageVisibility read and rewrite the same list and set. The local cloud serves calls
from many threads, so these calls on one queue hold the queue's own ``Queue._messages_lock``
(a ``Condition`` on an ``RLock``, which ``Queue.add_message`` already takes to append: sends
need it only for that, as in moto). A long poll does not keep it: moto waits in
``Queue.wait_for_messages``, a ``Condition.wait`` on that lock, which releases it entirely
(every level this thread holds) while waiting and takes it back after, so sends and deletes
go on meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.sqs.models import SQSBackend

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

# Backend calls that read and change a queue's messages (all take queue_name first).
_SERIALIZED = (
    "receive_message",
    "delete_message",
    "delete_message_batch",
    "change_message_visibility",
    "change_message_visibility_batch",
    "purge_queue",
)


def _serialized(name: str) -> Callable[..., Any]:
    original = getattr(SQSBackend, name)

    def call(self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        with self.get_queue(queue_name)._messages_lock:
            return original(self, queue_name, *args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _build(rt: Runtime) -> Targets:
    return {(SQSBackend, name): _serialized(name) for name in _SERIALIZED}


PATCHES = [
    Patch(
        name="sqs-concurrent-receive",
        kind=Kind.FIX,
        reason="ReceiveMessage, DeleteMessage, ChangeMessageVisibility (and batches, "
        "PurgeQueue) on one queue are serialized: concurrent receivers never get one message "
        "twice nor fail (moto: duplicates, KeyError, 'Set changed size during iteration').",
        test="localcloud/tests/test_sqs_concurrency.py"
        "::test_concurrent_receivers_get_each_message_exactly_once",
        build=_build,
        upstream="no moto issue found (searched 2026-11-27): moto sqs/models.py "
        "SQSBackend.receive_message and Queue.pending_message_groups take no lock",
    ),
]
