"""Fix: a bucket policy's Condition is not ignored on object reads and writes.

moto's S3 object handler (s3/responses.py, "Enforces policy when creating new objects")
asks ``FakeBucket.get_permission``, whose evaluator (iam/access_control.py) ignores
``Condition``: the usual TLS-only statement (``Deny`` ``s3:*`` to ``"*"`` when
``aws:SecureTransport`` is ``false``) then denies every PutObject and GetObject, also over
HTTPS. On AWS it denies only plain-HTTP requests. The local cloud's IAM
(iam/enforcement.py) evaluates bucket policies with their conditions for every principal, so
moto's partial check answers "no opinion" here instead of a wrong "denied".
"""

from __future__ import annotations

from typing import Any

from moto.s3.models import FakeBucket

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _build(rt: Runtime) -> Targets:
    from moto.iam.access_control import PermissionResult

    def get_permission(self: FakeBucket, action: str, resource: str) -> Any:
        return PermissionResult.NEUTRAL

    return {(FakeBucket, "get_permission"): get_permission}


PATCHES = [
    Patch(
        name="s3-bucket-policy-conditions",
        kind=Kind.FIX,
        reason="moto's object-level bucket-policy check ignores Condition, so a TLS-only "
        "bucket policy denied every object call; bucket policies are evaluated by the local "
        "cloud's IAM instead.",
        test="tests/e2e/test_localcloud_iam.py::test_a_tls_only_bucket_accepts_https_writes",
        build=_build,
        upstream="getmoto/moto iam/access_control.py: 'TODO add support for the Resource and "
        "Condition parts of IAM policies'",
    )
]
