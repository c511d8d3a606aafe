"""Fix: a stack's ``AWS::KMS::Key`` keeps its ``KeyPolicy`` as the JSON text KMS stores.

CloudFormation passes ``KeyPolicy`` (an object in the template) to CreateKey as a JSON
document. moto's ``Key.create_from_cloudformation_json`` stores the object itself, and every
KMS call that validates the key's policy (DescribeKey, GetKeyPolicy, ...) then fails inside
moto with ``TypeError: the JSON object must be str`` instead of answering.
"""

from __future__ import annotations

import json
from typing import Any

from moto.kms.models import Key

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _build(rt: Runtime) -> Targets:
    create = Key.create_from_cloudformation_json

    def create_key(cls: Any, name: str, cloudformation_json: Any, *args: Any, **kw: Any) -> Any:
        props = cloudformation_json.get("Properties") or {}
        if isinstance(props.get("KeyPolicy"), dict | list):
            cloudformation_json = {
                **cloudformation_json,
                "Properties": {**props, "KeyPolicy": json.dumps(props["KeyPolicy"])},
            }
        return create(name, cloudformation_json, *args, **kw)

    return {(Key, "create_from_cloudformation_json"): classmethod(create_key)}


PATCHES = [
    Patch(
        name="kms-cloudformation-key-policy",
        kind=Kind.FIX,
        reason="A stack's KMS key stores its KeyPolicy as JSON text, as CreateKey does; moto "
        "keeps the template's object and DescribeKey fails with a TypeError.",
        test="localcloud/tests/test_cloudformation_attributes.py"
        "::test_documented_attributes_resolve",
        build=_build,
        upstream="not reported yet (moto 5.2.5 kms/models.py Key.create_from_cloudformation_json)",
    )
]
