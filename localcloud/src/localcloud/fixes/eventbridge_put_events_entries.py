"""Fix: PutEvents rejects reserved ``aws.*`` sources per entry, as EventBridge does.

moto accepts any source. AWS rejects an entry whose source starts with ``aws.`` with
``NotAuthorizedForSourceException`` (FailedEntryCount > 0), without failing the call; a
redrive that replays an S3 event as ``aws.s3`` must see that, not a silent success. Entry
faults (``Faults.fail_put_events_entries``) are applied here too, before moto handles the
rest of the entries.
"""

from __future__ import annotations

from typing import Any

from moto.events.models import EventsBackend

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_PUT_EVENTS = EventsBackend.put_events


def _build_put_events(rt: Runtime) -> Targets:
    def put_events(self: EventsBackend, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(events) > 10:
            return _PUT_EVENTS(self, events)  # moto raises the ValidationException
        entries: list[dict[str, Any]] = []
        for entry in events:
            if str(entry.get("Source") or "").startswith("aws."):
                code, message = "NotAuthorizedForSourceException", "Not authorized for the source."
            elif (injected := rt.faults.take_entry()) is not None:
                code, message = injected, f"Injected entry failure: {injected}"
            else:
                (result,) = _PUT_EVENTS(self, [entry])
                entries.append(result)
                continue
            entries.append({"ErrorCode": code, "ErrorMessage": message})
        return entries

    return {(EventsBackend, "put_events"): put_events}


PATCHES = [
    Patch(
        name="eventbridge-put-events-entries",
        kind=Kind.FIX,
        reason="PutEvents rejects entries with a reserved aws.* source per entry "
        "(NotAuthorizedForSourceException), as AWS does; moto accepts them. Also applies "
        "injected per-entry faults.",
        test="tests/e2e/test_event_graph.py::test_put_events_rejects_reserved_sources_per_entry",
        build=_build_put_events,
        upstream="no moto issue found (searched 2026-11-23): moto events/models.py "
        "EventsBackend.put_events",
    ),
]
