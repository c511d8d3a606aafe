"""Fix: CompleteMultipartUpload honours If-Match, as on AWS.

moto honours ``If-None-Match: *`` on CompleteMultipartUpload but not ``If-Match``. AWS
completes the upload only while the object's ETag is the one given, and answers 412
PreconditionFailed otherwise (S3 User Guide, "Conditional writes"). The pipeline's
newest-version-wins write of a large output relies on it.
"""

from __future__ import annotations

from typing import Any

from moto.s3.exceptions import MissingKey, PreconditionFailed
from moto.s3.responses import S3Response

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_KEY_RESPONSE_POST = S3Response._key_response_post


def _key_response_post(  # noqa: PLR0917 - moto's signature
    self: S3Response,
    request: Any,
    body: bytes,
    bucket_name: str,
    query: dict[str, Any],
    key_name: str,
) -> Any:
    if_match = self.headers.get("If-Match")
    if query.get("uploadId") and if_match:
        current = self.backend.get_object(bucket_name, key_name)
        if current is None:
            raise MissingKey(key=key_name)
        if current.etag.replace('"', "") != if_match.replace('"', ""):
            raise PreconditionFailed("If-Match")
    return _KEY_RESPONSE_POST(self, request, body, bucket_name, query, key_name)


def _build(rt: Runtime) -> Targets:
    return {(S3Response, "_key_response_post"): _key_response_post}


PATCHES = [
    Patch(
        name="s3-conditional-complete-multipart",
        kind=Kind.FIX,
        reason="CompleteMultipartUpload with If-Match answers 412 unless the object's ETag "
        "matches (moto ignores If-Match there).",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_complete_multipart_upload_honours_if_match",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto s3/responses.py "
        "_key_response_post (If-Match)",
    )
]
