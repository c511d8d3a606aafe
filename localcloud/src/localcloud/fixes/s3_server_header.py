"""Fix: every S3 response names its server, ``Server: AmazonS3``, as S3's do.

Code that returns or logs an S3 response's metadata (``ResponseMetadata.HTTPHeaders``) shows
``"server": "AmazonS3"`` on AWS; a published pattern's README checks for it
(lambda-s3-async-lambda). moto's S3 responses (s3/responses.py ``S3Response._send_response``,
through which bucket and object responses pass) say ``Server: amazon.com``, as all of moto's.
"""

from __future__ import annotations

from typing import Any

from moto.s3.responses import S3Response

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _build(rt: Runtime) -> Targets:
    send = S3Response._send_response

    def send_response(cls: type, response: Any) -> Any:
        status, headers, body = send(response)
        for name in [name for name in headers if name.lower() == "server"]:
            del headers[name]
        headers["Server"] = "AmazonS3"
        return status, headers, body

    return {(S3Response, "_send_response"): classmethod(send_response)}


PATCHES = [
    Patch(
        name="s3-server-header",
        kind=Kind.FIX,
        reason="S3 responses carry Server: AmazonS3, as on AWS; moto's say amazon.com.",
        test="localcloud/tests/test_s3_notification_records.py"
        "::test_s3_responses_name_their_server",
        build=_build,
        upstream="not reported yet (moto 5.2.5 s3/responses.py _send_response)",
    )
]
