"""Fix: GetObject of a key whose current version is a delete marker says so.

S3 answers a GET (no version id) of such a key 404 NoSuchKey *with* the headers
``x-amz-delete-marker: true`` and ``x-amz-version-id`` (the marker's): "If the current version
of the object is a delete marker, Amazon S3 behaves as if the object was deleted and includes
x-amz-delete-marker: true in the response" (GetObject, API reference). A client tells a key
that was deleted, whose older versions may still matter, from one that never existed without
listing its versions. moto adds the headers to HeadObject only (s3/responses.py
``head_object``); its GetObject answers a bare NoSuchKey.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from moto.core.responses import ActionResult
from moto.s3.exceptions import MissingKey
from moto.s3.models import FakeDeleteMarker
from moto.s3.responses import S3Response

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

if TYPE_CHECKING:
    from moto.core.common_types import TYPE_RESPONSE

__all__ = ["PATCHES"]

_GET_OBJECT = S3Response.get_object


def get_object(self: S3Response) -> TYPE_RESPONSE:
    try:
        return _GET_OBJECT(self)
    except MissingKey as missing:
        if self.querystring.get("versionId"):
            raise
        bucket = self.backend.get_bucket(self.bucket_name)
        versions = bucket.keys.getlist(self.parse_key_name(), default=[])
        if not versions or not isinstance(versions[-1], FakeDeleteMarker):
            raise
        status, headers, body = self.serialized(ActionResult(missing))
        headers["x-amz-delete-marker"] = "true"
        headers["x-amz-version-id"] = str(versions[-1].version_id)
        return status, headers, body


def _build(rt: Runtime) -> Targets:
    return {(S3Response, "get_object"): get_object}


PATCHES = [
    Patch(
        name="s3-get-delete-marker",
        kind=Kind.FIX,
        reason="GetObject of a key whose current version is a delete marker answers 404 with "
        "x-amz-delete-marker: true and the marker's version id, as S3 does (moto: HEAD only).",
        test="localcloud/tests/test_s3_delete_marker.py"
        "::test_get_of_a_deleted_key_says_it_was_deleted",
        build=_build,
        upstream="no moto issue found (searched 2026-11-27): s3/responses.py get_object",
    )
]
