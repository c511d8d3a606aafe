"""moto's SQS, made to scale to the queue depths the benchmarks and recovery tools use.

moto 5.2 (sqs/models.py) answers every call with passes over all of a queue's messages, and
each message check reads the clock through ``datetime`` (``unix_time_millis``): a
10,000-message dead-letter queue costs seconds per call, and filling or draining it is
quadratic. Same rules, cheaper bookkeeping (line numbers: moto 5.2.x):

* ``Message.visible`` / ``Message.delayed`` (models.py:189, 196) and ``Queue.messages``
  (models.py:548) compare against ``time.time()``, read once per pass;
* ``SendMessage`` reads one attribute (ContentBasedDeduplication) from ``Queue.attributes``
  (models.py:876), which also counts the queue three times (the Approximate* attributes).
  During a send those counts are not computed; GetQueueAttributes still computes them;
* ``Queue.delete_message`` (models.py:613) searches every message's receipt handles twice.
  Receipt handles are indexed as moto issues them (``Message.mark_received``);
* the retention check in ``ReceiveMessage`` (models.py:1282) computes every queue attribute
  to read MessageRetentionPeriod, once per message looked at. It reads the one attribute.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

from moto.sqs.exceptions import ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_ORIG_MARK_RECEIVED = Message.mark_received
_ORIG_SEND_MESSAGE = SQSBackend.send_message

_counting = threading.local()  # .off: inside SendMessage, Approximate* counts are not read
_handles: weakref.WeakValueDictionary[str, Message] = weakref.WeakValueDictionary()


def _now_ms() -> float:
    return time.time() * 1000.0


def _messages(self: Queue) -> list[Message]:
    now = _now_ms()
    return [m for m in self._messages if now > m.visible_at and not now < m.delayed_until]


def _count(name: str, keep: Any) -> property:
    def count(self: Queue) -> int:
        if getattr(_counting, "off", False):
            return 0
        now = _now_ms()
        return sum(1 for m in self._messages if keep(m, now))

    count.__name__ = name
    return property(count)


_COUNTS = {
    "approximate_number_of_messages": lambda m, now: (
        now > m.visible_at and not now < m.delayed_until
    ),
    "approximate_number_of_messages_not_visible": lambda m, now: not now > m.visible_at,
    "approximate_number_of_messages_delayed": lambda m, now: now < m.delayed_until,
}


def _send_message(self: SQSBackend, *args: Any, **kwargs: Any) -> Any:
    _counting.off = True
    try:
        return _ORIG_SEND_MESSAGE(self, *args, **kwargs)
    finally:
        _counting.off = False


def _mark_received(self: Message, *args: Any, **kwargs: Any) -> None:
    _ORIG_MARK_RECEIVED(self, *args, **kwargs)
    _handles[self.receipt_handle] = self  # type: ignore[index]


def _delete_message(self: Queue, receipt_handle: str) -> None:
    if receipt_handle in self.deleted_messages:
        return  # already deleted: deleting again succeeds, as on AWS
    message = _handles.get(receipt_handle)
    if message is None:
        raise ReceiptHandleIsInvalid()
    try:
        self._messages.remove(message)  # identity: Message has no __eq__
    except ValueError:
        raise ReceiptHandleIsInvalid() from None
    self.pending_messages.discard(message)
    self.deleted_messages.update(message.all_receipt_handles)  # type: ignore[arg-type]


def _retention_check(self: SQSBackend, queue_name: str, message: Message) -> bool:
    queue: Any = self.get_queue(queue_name)
    sent_ms = message.sent_timestamp or 0
    return bool(int(queue.message_retention_period) + sent_ms / 1000 > time.time())


def _build(rt: Runtime) -> Targets:
    rt.on_close(_handles.clear)
    return {
        (Message, "visible"): property(lambda message: _now_ms() > message.visible_at),
        (Message, "delayed"): property(lambda message: _now_ms() < message.delayed_until),
        (Message, "mark_received"): _mark_received,
        (Queue, "messages"): property(_messages),
        (Queue, "delete_message"): _delete_message,
        (SQSBackend, "send_message"): _send_message,
        (SQSBackend, "is_message_valid_based_on_retention_period"): _retention_check,
        **{(Queue, name): _count(name, keep) for name, keep in _COUNTS.items()},
    }


PATCHES = [
    Patch(
        name="sqs-bookkeeping",
        kind=Kind.SPEEDUP,
        reason="SQS calls read the clock once per pass, index receipt handles and skip unread "
        "counts: deep queues stay linear (moto: seconds per call at 10,000 messages).",
        test="tests/e2e/test_localcloud_moto_speedups.py"
        "::test_sqs_counts_deletes_and_receipt_handles",
        build=_build,
    )
]
