"""Fix: a ``arn:aws:states:::states:startExecution`` task starts the execution and returns
its result, as on AWS.

The Step Functions service integration takes ``StateMachineArn``, ``Name`` and ``Input`` (an
object is sent as its JSON text: "Start a new AWS Step Functions state machine execution",
developer guide, whose example passes ``Input`` as an object with
``AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$``). moto's copy of LocalStack's task
(service/state_task_service_sfn.py) turns ``Input`` into JSON text but then passes the
PascalCase keys straight to boto3, because moto's ``StateTaskService._normalise_parameters``
is empty where LocalStack's maps them onto the API's members (``stateMachineArn``, ``name``,
``input``). botocore's serializer then fails with ``KeyError: 'Input'`` and the task fails
``States.Runtime``: no state machine can start another without ``.sync``.

Its result has the same gap the other way: AWS returns ``{"ExecutionArn", "StartDate"}``
(the service's members, PascalCase, as for every optimized integration), moto the boto3
response's ``executionArn``/``startDate``, so a ``ResultSelector`` on ``$.ExecutionArn`` fails.

Here moto's own ``_to_boto_request`` and ``_from_boto_response`` (the code LocalStack runs at
these points) map them, for the Step Functions integration only.
"""

from __future__ import annotations

from typing import Any

from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_sfn as sfn_task,
)

from localcloud.fixes.sfn_sdk_json_text_members import operation_model
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_ORIGINAL = sfn_task.StateTaskServiceSfn._normalise_parameters
_ORIGINAL_RESPONSE = sfn_task.StateTaskServiceSfn._normalise_response


def _normalise_parameters(
    self: Any,
    parameters: dict[str, Any],
    boto_service_name: str | None = None,
    service_action_name: str | None = None,
) -> None:
    _ORIGINAL(self, parameters, boto_service_name, service_action_name)
    if service_action_name is None:
        operation = operation_model("stepfunctions", self._get_boto_service_action())
        if operation is not None and operation.input_shape is not None:
            self._to_boto_request(parameters, operation.input_shape)


def _normalise_response(
    self: Any,
    response: Any,
    boto_service_name: str | None = None,
    service_action_name: str | None = None,
) -> None:
    _ORIGINAL_RESPONSE(self, response, boto_service_name, service_action_name)
    operation = operation_model(
        "stepfunctions", service_action_name or self._get_boto_service_action()
    )
    if isinstance(response, dict) and operation is not None and operation.output_shape:
        self._from_boto_response(response, operation.output_shape)


def _build(rt: Runtime) -> Targets:
    return {
        (sfn_task.StateTaskServiceSfn, "_normalise_parameters"): _normalise_parameters,
        (sfn_task.StateTaskServiceSfn, "_normalise_response"): _normalise_response,
    }


PATCHES = [
    Patch(
        name="sfn-start-execution-task",
        kind=Kind.FIX,
        reason="a states:startExecution task passes StateMachineArn/Name/Input to "
        "StartExecution as the API's members and returns ExecutionArn/StartDate (moto: the "
        "PascalCase keys reach botocore and the task fails States.Runtime).",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_a_start_execution_task_starts_the_execution",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto "
        "StateTaskService._normalise_parameters is empty (LocalStack's maps the keys)",
    )
]
