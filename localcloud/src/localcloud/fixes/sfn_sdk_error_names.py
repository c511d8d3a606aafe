"""Fix: aws-sdk integration errors of S3 are named ``S3.<Error>Exception``, as on AWS.

moto's aws-sdk task (service/state_task_service_aws_sdk.py, ``_SERVICE_ERROR_NAMES``) maps
only dynamodb and sfn to their documented prefixes; an S3 error comes out as
``s3.NoSuchKeyException`` where AWS documents ``S3.NoSuchKeyException`` ("Handling errors in
AWS SDK integrations"), so a Catch on ``S3.NoSuchKeyException`` never matches.

Regression test: an ``arn:aws:states:::aws-sdk:s3:getObject`` task on a missing key fails
with ``S3.NoSuchKeyException``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_aws_sdk as aws_sdk,
)

from localcloud.patching import Kind, Patch, Targets

if TYPE_CHECKING:
    from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _build(rt: Runtime) -> Targets:
    return {
        (aws_sdk, "_SERVICE_ERROR_NAMES"): {**aws_sdk._SERVICE_ERROR_NAMES, "s3": "S3"},
    }


PATCHES = [
    Patch(
        name="sfn-sdk-error-names",
        kind=Kind.FIX,
        reason="aws-sdk S3 errors are 'S3.<Error>Exception' as AWS documents "
        "(moto: 's3.<Error>Exception'), so Catch blocks match.",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_sdk_s3_errors_are_named_as_aws_names_them",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto "
        "state_task_service_aws_sdk._SERVICE_ERROR_NAMES",
    )
]
