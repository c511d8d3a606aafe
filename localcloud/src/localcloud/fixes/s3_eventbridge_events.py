"""Fix: S3 sends EventBridge events shaped as AWS sends them, to the default bus only.

moto (s3/notifications.py ``_send_event_bridge_message``) gives every S3 event the same id
and sequencer and a numeric ``time``, omits ``etag`` and ``reason``, sends to every bus, and
sends "Object Tags Added" for the tags PutObject / CopyObject / multipart completion set.
AWS: a unique id, an ISO ``time``, ``etag``, an increasing ``sequencer`` per key, ``reason``
(PutObject, CopyObject, CompleteMultipartUpload, ...), the default bus only, and "Object Tags
Added" only for the tagging API (S3 User Guide, "EventBridge event message structure").
The event then goes through the rules as any other (moto's ``Rule.send_to_targets``, which
the rule-delivery feature replaces).
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
import uuid
from typing import Any

from moto.events import models as events_models
from moto.s3 import notifications as s3_notifications
from moto.s3.responses import S3Response

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "next_sequencer"]

_PUT_OBJECT_TAGGING = S3Response.put_object_tagging
_sequencer = itertools.count(0x0062F0F0A0000000)
_tagging_api = threading.local()  # .active: inside a PutObjectTagging request
_S3_REASONS = {
    "Put": "PutObject",
    "Post": "PostObject",
    "Copy": "CopyObject",
    "CompleteMultipartUpload": "CompleteMultipartUpload",
}


def next_sequencer() -> str:
    """An S3 event's ``sequencer``: increasing across the process's events (hex, 16 digits)."""
    return f"{next(_sequencer):016X}"


def _put_object_tagging(self: S3Response) -> Any:
    """moto tags every new object through the backend method that sends "Object Tags Added":
    only the tagging API's request is marked as sending it."""
    _tagging_api.active = True
    try:
        return _PUT_OBJECT_TAGGING(self)
    finally:
        _tagging_api.active = False


def _send_event_bridge_message(account_id: str, bucket: Any, event_name: str, key: Any) -> None:
    try:
        detail_type = s3_notifications._detail_type(event_name)
    except ValueError:
        return
    if detail_type == "Object Tags Added" and not getattr(_tagging_api, "active", False):
        return  # moto's tagging inside PutObject / CopyObject: no event on AWS
    action = event_name.rsplit(":", maxsplit=1)[-1]
    obj: dict[str, Any] = {"key": key.name, "size": key.size, "etag": key.etag.replace('"', "")}
    if key.version_id and key.version_id != "null":
        obj["version-id"] = key.version_id
    obj["sequencer"] = next_sequencer()
    detail: dict[str, Any] = {
        "version": "0",
        "bucket": {"name": bucket.name},
        "object": obj,
        "request-id": uuid.uuid4().hex[:16].upper(),
        "requester": account_id,
        "source-ip-address": "127.0.0.1",
        "reason": _S3_REASONS.get(action, action),
    }
    if detail_type == "Object Deleted":
        detail["deletion-type"] = (
            "Delete Marker Created" if action == "DeleteMarkerCreated" else "Permanently Deleted"
        )
    event = {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": "aws.s3",
        "account": account_id,
        "time": dt.datetime.now(tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": bucket.region_name,
        "resources": [bucket.arn],
        "detail": detail,
    }
    backend = events_models.events_backends[account_id][bucket.region_name]
    bus = backend.event_buses.get("default")
    for rule in list(bus.rules.values() if bus is not None else ()):
        rule.send_to_targets(event)


def _build_s3_events(rt: Runtime) -> Targets:
    return {
        (s3_notifications, "_send_event_bridge_message"): _send_event_bridge_message,
        (S3Response, "put_object_tagging"): _put_object_tagging,
    }


PATCHES = [
    Patch(
        name="s3-eventbridge-events",
        kind=Kind.FIX,
        reason="S3 events shaped as AWS sends them: unique id, ISO time, etag, increasing "
        "sequencer, reason; default bus only; Object Tags Added only for the tagging API.",
        test="tests/e2e/test_event_graph.py::test_s3_sends_the_event_types_aws_sends",
        build=_build_s3_events,
        when="event_delivery",
        upstream="related to getmoto/moto#7363 (S3 EventBridge events); the shape "
        "differences are not reported yet",
    ),
]
