"""Fix: a JSON object (or array, number, boolean) given for a string or blob member of an
``arn:aws:states:::aws-sdk:<service>:<action>`` task is sent as its JSON text, as on AWS.

Step Functions' AWS SDK integrations take the task's parameters as JSON and map them onto
the API's input shape: a JSON value given where the API wants a string (Scheduler's
``Target.Input``, SQS's ``MessageBody``, Step Functions' ``Input`` ...) is sent as that value's
JSON text, and one given for a blob (S3's ``Body``) as its UTF-8 bytes, so a definition need
not wrap it in ``States.JsonToString``. LocalStack implements this from AWS-validated tests
(localstack/localstack#9872, "aws-sdk:sfn:startExecution requires manual JSON conversion",
fixed by #10174 with ``test_sfn_start_execution_implicit_json_serialisation``, marked
``aws.validated``; the published serverless-patterns template
stepfunctions-eventbridge-schedule-sam-python relies on it for ``aws-sdk:scheduler:
createSchedule``). The text is compact, as the optimized integrations send it
(fixes/sfn_compact_json_bodies.py).

moto's copy of LocalStack's interpreter has an empty ``StateTaskService._normalise_parameters``
and builds its boto3 clients with ``parameter_validation=False``
(asl/utils/boto_client.py), so the object reaches botocore's serializer, which writes a
string member with ``str()``: the schedule's input became the Python repr
``{'executionId': 'test', ...}`` and Lambda refused it when the schedule fired.

Here every aws-sdk task's parameters are walked along the operation's input shape (botocore's
service model; a parameter matches a member by name, PascalCase or the API's camelCase, as in
LocalStack's ``_to_boto_request``), through structures and lists, and only the values are
converted; names, and map values (which LocalStack's validated walk does not enter either),
are left as given. A service or action botocore does not know is left to fail as it does.
"""

from __future__ import annotations

import json
import threading
from functools import cache
from typing import Any

import botocore.session
from botocore import xform_name
from botocore.exceptions import UnknownServiceError
from botocore.model import ListShape, OperationModel, Shape, StringShape, StructureShape
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_aws_sdk as aws_sdk,
)
from moto.stepfunctions.parser.utils import camel_to_snake_case

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "json_text_members", "operation_model"]

_ORIGINAL = aws_sdk.StateTaskServiceAwsSdk._normalise_parameters
_LOCK = threading.Lock()  # concurrent tasks: one loads the model, the others wait for it


def operation_model(service: str, action: str) -> OperationModel | None:
    """``("scheduler", "create_schedule")`` -> the CreateSchedule operation model, loaded once."""
    with _LOCK:
        return _operation_model(service, action)


@cache
def _operation_model(service: str, action: str) -> OperationModel | None:
    try:
        model = botocore.session.get_session().get_service_model(service)
    except UnknownServiceError:
        return None
    name = next((op for op in model.operation_names if xform_name(op) == action), None)
    return model.operation_model(name) if name else None


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _converted(value: Any, shape: Shape) -> Any:
    if isinstance(shape, StructureShape) and isinstance(value, dict):
        json_text_members(value, shape)
    elif isinstance(shape, ListShape) and isinstance(value, list):
        return [_converted(item, shape.member) for item in value]
    elif isinstance(shape, StringShape) and not isinstance(value, str):
        return _json_text(value)
    elif shape.type_name == "blob" and not isinstance(value, (bytes, str)):
        return _json_text(value).encode()
    return value


def json_text_members(parameters: dict[str, Any], shape: StructureShape) -> None:
    """Replace, in place, every value of ``parameters`` given for a string (blob) member of
    ``shape`` that is not a string with its JSON text (bytes), at any depth."""
    members = {camel_to_snake_case(name): member for name, member in shape.members.items()}
    for key, value in parameters.items():
        member = shape.members.get(key) or members.get(camel_to_snake_case(key))
        if member is not None:
            parameters[key] = _converted(value, member)


def _normalise_parameters(
    self: Any,
    parameters: dict[str, Any],
    boto_service_name: str | None = None,
    service_action_name: str | None = None,
) -> None:
    _ORIGINAL(self, parameters, boto_service_name, service_action_name)
    operation = operation_model(
        self._get_boto_service_name(boto_service_name),
        self._get_boto_service_action(service_action_name),
    )
    if operation is not None and isinstance(operation.input_shape, StructureShape):
        json_text_members(parameters, operation.input_shape)


def _build(rt: Runtime) -> Targets:
    return {(aws_sdk.StateTaskServiceAwsSdk, "_normalise_parameters"): _normalise_parameters}


PATCHES = [
    Patch(
        name="sfn-sdk-json-text-members",
        kind=Kind.FIX,
        reason="a JSON value given for a string (blob) member of an aws-sdk task is sent as "
        "its JSON text, as AWS does (moto: botocore without parameter validation writes "
        "str() of the dict, e.g. a schedule's Target.Input as a Python repr).",
        test="localcloud/tests/test_sfn_sdk_json_text_members.py"
        "::test_an_object_for_a_string_member_is_sent_as_its_json_text",
        build=_build,
        upstream="no moto issue found (searched 2026-11-28): moto "
        "StateTaskService._normalise_parameters is empty (LocalStack's maps the values, "
        "localstack/localstack#10174)",
    )
]
