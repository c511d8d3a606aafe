"""Fix: a CloudFormation ``AWS::StepFunctions::StateMachine`` is the one the API runs.

moto's ``StateMachine.create_from_cloudformation_json`` (stepfunctions/models.py):

* always writes into ``stepfunctions_backends``, while the API with
  ``execute_state_machine=True`` reads ``stepfunctions_parser_backends``
  (stepfunctions/responses.py): a state machine created by a stack is invisible
  (StateMachineDoesNotExist);
* reads only ``DefinitionString``: ``Definition`` (an object) and
  ``DefinitionSubstitutions`` are ignored, so ``${TableName}`` stays in the definition;
* drops ``StateMachineType``, ``LoggingConfiguration`` and ``TracingConfiguration``: every
  stack's state machine is a STANDARD one that logs nothing, whatever DescribeStateMachine
  would say on AWS.

Here all are honoured, as CreateStateMachine receives them from CloudFormation (the
resource's properties in the API's camelCase shape: ``Level`` -> ``level``,
``Destinations[].CloudWatchLogsLogGroup.LogGroupArn`` -> ``destinations[].
cloudWatchLogsLogGroup.logGroupArn``, ...); a ``StateMachineType`` other than STANDARD or
EXPRESS and an unresolved ``${...}`` fail the resource, as CloudFormation does. A stack
update changes the machine in the executing backend (moto wrote to the other one), and
replaces it where CloudFormation does: a new ``StateMachineName`` or ``StateMachineType``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from moto.stepfunctions import models as sfn_models
from moto.stepfunctions import responses as sfn_responses

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "boolean"]


_TYPES = ("STANDARD", "EXPRESS")


def _camel(value: Any) -> Any:
    """CloudFormation's PascalCase property names -> the API's camelCase (keys only)."""
    if isinstance(value, dict):
        return {k[:1].lower() + k[1:]: _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def boolean(value: Any) -> bool:
    """A CloudFormation Boolean: true/false, or "true"/"false" from a parameter."""
    return value.strip().lower() == "true" if isinstance(value, str) else bool(value)


def _logging(props: dict[str, Any]) -> dict[str, Any] | None:
    """LoggingConfiguration as CreateStateMachine stores it (level OFF and
    includeExecutionData false unless given)."""
    config = _camel(props.get("LoggingConfiguration"))
    if not config:
        return None
    config["level"] = str(config.get("level") or "OFF")
    config["includeExecutionData"] = boolean(config.get("includeExecutionData", False))
    return dict(config)


def _definition(props: dict[str, Any], name: str) -> tuple[str, str]:
    """(definition, type) as CreateStateMachine gets them; ValueError as CloudFormation fails."""
    definition: str = props.get("DefinitionString") or ""
    if not definition and "Definition" in props:
        definition = json.dumps(props["Definition"])
    for key, value in (props.get("DefinitionSubstitutions") or {}).items():
        definition = definition.replace(f"${{{key}}}", str(value))
    leftover = re.findall(r"\$\{[A-Za-z0-9_]+\}", definition or "")
    if leftover:
        raise ValueError(f"Unresolved DefinitionSubstitutions {leftover} in state machine {name}")
    machine_type = str(props.get("StateMachineType") or "STANDARD")
    if machine_type not in _TYPES:  # CloudFormation's schema: STANDARD | EXPRESS
        raise ValueError(f"StateMachineType {machine_type!r} of state machine {name}")
    return definition, machine_type


def _create(
    cls: Any,
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kwargs: Any,
) -> Any:
    props = cloudformation_json["Properties"]
    name = props.get("StateMachineName", resource_name)
    definition, machine_type = _definition(props, name)
    backend = sfn_responses.get_backend(account_id, region_name)
    tags = sfn_models.cfn_to_api_tags(props.get("Tags", []))
    return backend.create_state_machine(
        name,
        definition,
        props.get("RoleArn", ""),
        tags=tags,
        loggingConfiguration=_logging(props),
        tracingConfiguration=_camel(props.get("TracingConfiguration")),
        sm_type=machine_type,
    )


def _update(  # noqa: PLR0917 - moto's signature
    cls: Any,
    original_resource: Any,
    new_resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
) -> Any:
    """A stack update (in place, or a replacement); a named machine cannot replace itself."""
    props = cloudformation_json["Properties"]
    named = "StateMachineName" in props
    name = props["StateMachineName"] if named else original_resource.name
    definition, machine_type = _definition(props, name)
    backend = sfn_responses.get_backend(account_id, region_name)
    if name != original_resource.name or machine_type != original_resource.type:
        if named and name == original_resource.name:
            raise ValueError(
                "CloudFormation cannot update a stack when a custom-named resource requires "
                f"replacing. Rename {name} and update the stack again."
            )
        replacement = _create(cls, new_resource_name, cloudformation_json, account_id, region_name)
        backend.delete_state_machine(original_resource.arn)
        return replacement
    backend.update_state_machine(
        original_resource.arn,
        definition=definition,
        role_arn=props.get("RoleArn", ""),
        logging_configuration=_logging(props),
        tracing_configuration=_camel(props.get("TracingConfiguration")),
    )
    return backend.describe_state_machine(original_resource.arn)


def _delete(
    cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
) -> None:
    sfn_responses.get_backend(account_id, region_name).delete_state_machine(resource_name)


def _build(rt: Runtime) -> Targets:
    return {
        (sfn_models.StateMachine, "create_from_cloudformation_json"): classmethod(_create),
        (sfn_models.StateMachine, "delete_from_cloudformation_json"): classmethod(_delete),
        (sfn_models.StateMachine, "update_from_cloudformation_json"): classmethod(_update),
    }


PATCHES = [
    Patch(
        name="sfn-cloudformation-state-machine",
        kind=Kind.FIX,
        reason="A stack's state machine lands in the executing backend, with Definition and "
        "DefinitionSubstitutions applied, and a stack update changes it there or replaces it "
        "where CloudFormation does (moto: invisible to the API, substitutions ignored, updates "
        "written to the other backend).",
        test="tests/statemachine/test_stack_deploy.py"
        "::test_state_machine_definition_is_substituted",
        build=_build,
        upstream="getmoto/moto#3429 added the resource before the executing backend "
        "existed; not reported yet",
    )
]
