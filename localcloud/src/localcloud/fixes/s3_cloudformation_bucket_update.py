"""Fix: a bucket without ``BucketName`` whose ``Tags`` change is updated in place.

CloudFormation updates a bucket's tags in place whether or not the template names the bucket.
moto's ``FakeBucket.update_from_cloudformation_json`` tags it by ``properties["BucketName"]``,
so a template bucket with a generated name (the usual case) failed the whole update with
``KeyError: 'BucketName'`` and the stack rolled back (seen on the second ``sam deploy`` of a
stack whose buckets have Tags). The update is given the bucket's own name when the template
has none (on a copy: the stack's template is not changed).
"""

from __future__ import annotations

from typing import Any

from moto.s3.models import FakeBucket

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_UPDATE = FakeBucket.update_from_cloudformation_json.__func__  # type: ignore[attr-defined]


def _update(  # noqa: PLR0917 - moto's signature
    cls: type[FakeBucket], original_resource: Any, new_resource_name: str,
    cloudformation_json: Any, account_id: str, region_name: str,
) -> FakeBucket:  # fmt: skip
    properties = dict(cloudformation_json.get("Properties") or {})
    properties.setdefault("BucketName", original_resource.name)
    named = {**cloudformation_json, "Properties": properties}
    return _UPDATE(  # type: ignore[no-any-return]
        cls, original_resource, new_resource_name, named, account_id, region_name
    )


def _build(rt: Runtime) -> Targets:
    return {(FakeBucket, "update_from_cloudformation_json"): classmethod(_update)}


PATCHES = [
    Patch(
        name="s3-cloudformation-bucket-update",
        kind=Kind.FIX,
        reason="A template bucket without BucketName whose Tags change is updated in place, "
        "as CloudFormation does (moto: KeyError 'BucketName', the update rolled back).",
        test="localcloud/tests/test_stack_updates.py::"
        "test_a_generated_name_bucket_has_its_tags_updated",
        build=_build,
        upstream="not reported yet (moto 5.2.5 s3/models.py reads properties['BucketName'])",
    )
]
