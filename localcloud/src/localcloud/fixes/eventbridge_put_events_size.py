"""Fix: PutEvents refuses a request whose entries are over EventBridge's size quota.

AWS: the entries of one PutEvents request may total 1 MB (256 KB until January 2026: "More
room to build: serverless services now support payloads up to 1 MB",
https://aws.amazon.com/blogs/compute/more-room-to-build-serverless-services-now-support-
payloads-up-to-1-mb). "Calculating Amazon EventBridge PutEvents event entry size"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/calculate-putevents-entry-size.html):
Time, if given, counts 14 bytes; Source, DetailType, Detail and each Resources entry count their
UTF-8 bytes. Measured against AWS by others (2026-03): entries totalling 1,048,576 bytes are
accepted, one byte more fails the whole call, nothing is put: HTTP 400
``ValidationException`` "Total size of the entries in the request is over the limit."

moto 5.2 (events/responses.py ``EventsHandler.put_events``) has no size check at all. The
check is made here, at the API, so only PutEvents callers see it (moto's own S3 -> EventBridge
notifications call the backend).
"""

from __future__ import annotations

from typing import Any

from moto.events.exceptions import ValidationException
from moto.events.responses import EventsHandler

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["MAX_ENTRIES_BYTES", "PATCHES", "entry_size"]

MAX_ENTRIES_BYTES = 1024 * 1024  # 1048576


def entry_size(entry: dict[str, Any]) -> int:
    """A PutEventsRequestEntry's size as EventBridge calculates it."""
    texts = [entry.get(key) for key in ("Source", "DetailType", "Detail")]
    texts += entry.get("Resources") or []
    size = sum(len(text.encode("utf-8")) for text in texts if isinstance(text, str))
    return size + (14 if entry.get("Time") is not None else 0)


def _build(rt: Runtime) -> Targets:
    put_events = EventsHandler.put_events

    def checked_put_events(self: EventsHandler) -> Any:
        entries = self._get_param("Entries") or []
        # more than 10 entries: moto's ValidationException (the model's constraint) first
        if len(entries) <= 10 and sum(entry_size(e) for e in entries) > MAX_ENTRIES_BYTES:
            raise ValidationException("Total size of the entries in the request is over the limit.")
        return put_events(self)

    return {(EventsHandler, "put_events"): checked_put_events}


PATCHES = [
    Patch(
        name="eventbridge-put-events-size",
        kind=Kind.FIX,
        reason="PutEvents fails with AWS's ValidationException when its entries total over "
        "1 MB as EventBridge counts them (moto accepts any size).",
        test="localcloud/tests/test_quotas.py::test_put_events_refuses_entries_over_the_quota",
        build=_build,
        upstream="no moto issue found (searched 2026-11-25): moto events/responses.py "
        "EventsHandler.put_events (LocalStack had the same gap: localstack/localstack#11622)",
    )
]
