"""Fix: GetBucketNotificationConfiguration reports EventBridgeConfiguration.

moto keeps ``EventBridgeConfiguration`` on PUT but leaves it out of GET, so a
read-modify-write of the notifications (adding a queue) turns EventBridge delivery off. AWS
returns the (empty) element while EventBridge delivery is on (S3 API Reference,
NotificationConfiguration).
"""

from __future__ import annotations

from typing import Any

from moto.core.responses import ActionResult
from moto.s3.responses import S3Response

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_GET_BUCKET_NOTIFICATION = S3Response.get_bucket_notification


def _get_bucket_notification(self: S3Response) -> Any:
    config = self.backend.get_bucket_notification_configuration(self.bucket_name)
    if config is None or getattr(config, "event_bridge", None) is None:
        return _GET_BUCKET_NOTIFICATION(self)
    serialize = self.serialized

    def with_event_bridge(result: Any) -> Any:
        if isinstance(result, ActionResult) and isinstance(result.result, dict):
            result = ActionResult({**result.result, "EventBridgeConfiguration": {}})
        return serialize(result)

    self.serialized = with_event_bridge  # type: ignore[method-assign]
    try:
        return _GET_BUCKET_NOTIFICATION(self)
    finally:
        del self.serialized


def _build(rt: Runtime) -> Targets:
    return {(S3Response, "get_bucket_notification"): _get_bucket_notification}


PATCHES = [
    Patch(
        name="s3-notification-eventbridge",
        kind=Kind.FIX,
        reason="GetBucketNotificationConfiguration returns EventBridgeConfiguration when it is "
        "on, so a read-modify-write keeps EventBridge delivery on.",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_adding_a_queue_notification_keeps_eventbridge_delivery_on",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto s3/responses.py "
        "get_bucket_notification",
    )
]
