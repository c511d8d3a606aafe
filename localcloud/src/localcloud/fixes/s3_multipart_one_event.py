"""Fix: a multipart upload sends one Object Created event, as on AWS.

moto's ``S3Backend.complete_multipart_upload`` stores the object through ``put_object``,
which sends an ObjectCreated:Put notification, and then sends
ObjectCreated:CompleteMultipartUpload: two events, so two executions, per upload. AWS sends
one, reason "CompleteMultipartUpload" (S3 User Guide, "Event notification types", "Using
EventBridge"). The inner ``put_object`` runs with notifications off.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.s3.models import S3Backend

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_COMPLETE_MULTIPART_UPLOAD = S3Backend.complete_multipart_upload
_PUT_OBJECT = S3Backend.put_object
_completing = threading.local()


def _complete_multipart_upload(self: S3Backend, *args: Any, **kwargs: Any) -> Any:
    _completing.active = True
    try:
        return _COMPLETE_MULTIPART_UPLOAD(self, *args, **kwargs)
    finally:
        _completing.active = False


def _put_object(self: S3Backend, *args: Any, **kwargs: Any) -> Any:
    if getattr(_completing, "active", False):
        kwargs["disable_notification"] = True  # the completion sends the one event
    return _PUT_OBJECT(self, *args, **kwargs)


def _build(rt: Runtime) -> Targets:
    return {
        (S3Backend, "complete_multipart_upload"): _complete_multipart_upload,
        (S3Backend, "put_object"): _put_object,
    }


PATCHES = [
    Patch(
        name="s3-multipart-one-event",
        kind=Kind.FIX,
        reason="CompleteMultipartUpload sends one Object Created event (moto: a Put event and "
        "a CompleteMultipartUpload event, two executions per upload).",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_a_multipart_upload_sends_one_object_created_event",
        build=_build,
        upstream="getmoto/moto#7435 meant CompleteMultipartUpload to send one event; "
        "moto 5.2.5 still sends Put first (not reported yet)",
    )
]
