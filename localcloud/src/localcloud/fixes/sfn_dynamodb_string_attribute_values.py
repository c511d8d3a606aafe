"""Fix: a JSON string given where an ``arn:aws:states:::dynamodb:*`` task wants an
``AttributeValue`` is the string attribute ``{"S": ...}``, as on AWS.

Step Functions' optimized DynamoDB integration builds its request with the AWS SDK for Java
1.x (its failures read "... (Service: AmazonDynamoDBv2; Status Code: 400; Error Code: ...;
Request ID: ...; Proxy: null)", the SDK's AmazonServiceException format; LocalStack's
AWS-validated snapshot test_task_service_dynamodb.snapshot.json records them). That SDK's
``com.amazonaws.services.dynamodbv2.model.AttributeValue`` has the constructor
``AttributeValue(String s)``, which sets ``S``, so a task's ``"id.$": "$.id"`` of a string
value puts ``{"id": {"S": "12345"}}``: the published serverless-patterns template sfn-dynamodb
(written by AWS) puts and gets ``{"id.$": "$.id"}`` and its README shows the execution
SUCCEEDED with the item ``{"description": {"S": ...}, "id": {"S": "123456"}}``; users report
the same for strings in a list (aws/aws-cdk#17375: "the automatic marshaling only works for
lists of strings -- an error is given if other types are in the list"). Only strings are
taken so; a number, boolean or untyped object stays a refusal.

moto's task (service/state_task_service_dynamodb.py) passes the parameters to botocore as
they are; without parameter validation its serializer calls ``.items()`` on the string and
the task failed ``DynamoDB.AmazonDynamoDBException`` with the cause
``'str' object has no attribute 'items'``.

Here the parameters of the optimized DynamoDB tasks are walked along the operation's input
shape (``Item``, ``Key``, ``ExpressionAttributeValues``, ``Expected`` ..., and inside ``M``
and ``L``), and a string where an ``AttributeValue`` is expected becomes ``{"S": string}``.
The SDK integration (``aws-sdk:dynamodb:*``) is not concerned.
"""

from __future__ import annotations

from typing import Any

from botocore.model import ListShape, MapShape, Shape, StructureShape
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_dynamodb as dynamodb_task,
)

from localcloud.fixes.sfn_sdk_json_text_members import operation_model
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "typed"]

_ORIGINAL = dynamodb_task.StateTaskServiceDynamoDB._normalise_parameters
_ATTRIBUTE_VALUE = "AttributeValue"


def typed(value: Any, shape: Shape) -> Any:
    """``value`` with every string given for an AttributeValue of ``shape`` as ``{"S": ...}``."""
    if shape.name == _ATTRIBUTE_VALUE and isinstance(value, str):
        return {"S": value}
    if isinstance(shape, StructureShape) and isinstance(value, dict):
        members = shape.members
        return {k: typed(v, members[k]) if k in members else v for k, v in value.items()}
    if isinstance(shape, MapShape) and isinstance(value, dict):
        return {k: typed(v, shape.value) for k, v in value.items()}
    if isinstance(shape, ListShape) and isinstance(value, list):
        return [typed(item, shape.member) for item in value]
    return value


def _normalise_parameters(
    self: Any,
    parameters: dict[str, Any],
    boto_service_name: str | None = None,
    service_action_name: str | None = None,
) -> None:
    _ORIGINAL(self, parameters, boto_service_name, service_action_name)
    operation = operation_model("dynamodb", self._get_boto_service_action(service_action_name))
    if operation is not None and isinstance(operation.input_shape, StructureShape):
        parameters.update(typed(parameters, operation.input_shape))


def _build(rt: Runtime) -> Targets:
    return {
        (dynamodb_task.StateTaskServiceDynamoDB, "_normalise_parameters"): _normalise_parameters
    }


PATCHES = [
    Patch(
        name="sfn-dynamodb-string-attribute-values",
        kind=Kind.FIX,
        reason='a string given for an AttributeValue of a dynamodb:* task is {"S": ...}, as '
        "AWS's Java SDK AttributeValue(String) takes it (moto: botocore's serializer fails "
        "\"'str' object has no attribute 'items'\").",
        test="localcloud/tests/test_sfn_dynamodb_string_attribute_values.py"
        "::test_the_item_has_string_attributes",
        build=_build,
        upstream="no moto issue found (searched 2026-11-28): "
        "state_task_service_dynamodb.py passes the parameters to botocore unchanged",
    )
]
