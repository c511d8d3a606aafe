"""Fix: aws-sdk integration errors are named ``<Service>.<Error>Exception`` as on AWS.

AWS names them after the service's SDK client in PascalCase ("Handling errors in AWS SDK
integrations": ``S3.NoSuchKeyException``, ``DynamoDb.ResourceNotFoundException``,
``Sfn.ExecutionDoesNotExistException``, ``Rekognition.AccessDeniedException``). moto's aws-sdk
task (service/state_task_service_aws_sdk.py) knows only dynamodb and sfn and keeps any other
service's ARN name as it is, so an S3 error comes out as ``s3.NoSuchKeyException`` and a Catch
on ``S3.NoSuchKeyException`` never matches.

The name here is the service's botocore ``serviceId`` with each word's capitals kept only at
word starts, as the SDKs' generated client names are made (``DynamoDB`` -> ``DynamoDb``,
``SFN`` -> ``Sfn``, ``Secrets Manager`` -> ``SecretsManager``).

Regression tests: an ``aws-sdk:s3:getObject`` task on a missing key fails with
``S3.NoSuchKeyException``; the published s3-eventbridge-sfn pattern without its Rekognition
policy fails with ``Rekognition.AccessDeniedException``.
"""

from __future__ import annotations

import functools
import re

import botocore.session
from botocore.exceptions import UnknownServiceError
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_aws_sdk as aws_sdk,
)

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "service_error_name"]

# An aws-sdk ARN's service name -> botocore's, where they differ (moto's own overrides).
_BOTOCORE_NAMES = aws_sdk.StateTaskServiceAwsSdk._SERVICE_NAME_SFN_TO_BOTO_OVERRIDES
_TOKENS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


@functools.cache
def service_error_name(service_name: str) -> str:
    """``rekognition`` -> ``Rekognition``, ``dynamodb`` -> ``DynamoDb``, ``s3`` -> ``S3``."""
    name = service_name.lower()
    try:
        model = botocore.session.get_session().get_service_model(_BOTOCORE_NAMES.get(name, name))
    except UnknownServiceError:
        return service_name
    return "".join(t[:1].upper() + t[1:].lower() for t in _TOKENS.findall(model.service_id))


def _build(rt: Runtime) -> Targets:
    return {
        (aws_sdk.StateTaskServiceAwsSdk, "_normalise_service_error_name"): staticmethod(
            service_error_name
        ),
    }


PATCHES = [
    Patch(
        name="sfn-sdk-error-names",
        kind=Kind.FIX,
        reason="aws-sdk errors are '<Service>.<Error>Exception' with the SDK's PascalCase "
        "service name, as AWS documents (moto: only DynamoDb and Sfn; 's3.<Error>Exception', "
        "'rekognition.<Error>Exception'), so Catch blocks match.",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_sdk_s3_errors_are_named_as_aws_names_them",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto "
        "state_task_service_aws_sdk._SERVICE_ERROR_NAMES",
    )
]
