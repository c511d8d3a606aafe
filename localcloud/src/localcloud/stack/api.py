"""The stack operations of CloudFormation's API (UpdateStack, change sets: what ``aws
cloudformation`` and ``sam deploy`` send) run as the local deploy runs a template; the patches
that route them here are features/cloudformation_stack_api.py (through ``Runtime.stacks``).

moto takes a template as given: one with ``Transform: AWS::Serverless-2016-10-31`` reaches
its parser untransformed, which skips every ``AWS::Serverless::*`` resource, and the functions
went on running the code of the first deploy. Here a template sent to the API is prepared as
the deploy prepares one (the SAM transform run server-side, as CloudFormation runs it), moto
creates or updates the stack with the deploy's own patches, and then, as after a deploy, each
function runs the code deployed (inline, or the zip in S3 that ``sam package`` uploaded), and
a published version, or an alias on it, the code it was published with: the code of the
function's zip (features/lambda_processes.py).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError
from moto.cloudformation.exceptions import ValidationError

from localcloud.code import unpacked
from localcloud.patching import PatchSet
from localcloud.runtime import Runtime
from localcloud.stack import custom_resources
from localcloud.stack.base import StackDeployError
from localcloud.stack.clients import DeployClients
from localcloud.stack.deploy import (
    _Artifacts,
    _check_log_delivery,
    _managed_policies,
    _physical_resources,
    _prepare,
    deploy_patch_set,
    prepare_source,
)
from localcloud.stack.properties import _apply_ignored_properties
from localcloud.stack.template import _is_local, parse_yaml

__all__ = ["StackOperations"]


_CODE_KEYS = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
    "AWS::Serverless::StateMachine": "DefinitionUri",
}


def _local_paths(template: dict[str, Any]) -> list[str]:
    """Where a template sent to CloudFormation names its code by a local path (a Globals
    CodeUri every function overrides, as sam package leaves it, is dropped)."""
    found = []
    resources = template.get("Resources") or {}
    code = ((template.get("Globals") or {}).get("Function") or {}).get("CodeUri")
    inherits = any(  # a function that takes Globals' CodeUri (sam package sets each its own)
        r.get("Type") == "AWS::Serverless::Function"
        and not {"CodeUri", "InlineCode"} & set(r.get("Properties") or {})
        for r in resources.values()
    )
    if _is_local(code):
        if inherits:
            found.append(f"Globals.Function.CodeUri {code!r}")
        else:  # overridden by every function: the transform never reads it
            del template["Globals"]["Function"]["CodeUri"]
    for logical_id, resource in resources.items():
        key = _CODE_KEYS.get(resource.get("Type", ""))
        value = (resource.get("Properties") or {}).get(key or "")
        if key and _is_local(value):
            found.append(f"{logical_id}.{key} {value!r}")
    return found


def _check_s3_code(template: dict[str, Any], clients: DeployClients) -> None:
    """Each function's code in S3 (what ``sam package`` uploaded) exists and unpacks, or the
    change fails as CloudFormation fails the resource."""
    s3 = clients("s3")
    for logical_id, resource in (template.get("Resources") or {}).items():
        code = (resource.get("Properties") or {}).get("Code") or {}
        if resource.get("Type") != "AWS::Lambda::Function" or "S3Key" not in code:
            continue
        where = {"Bucket": code.get("S3Bucket"), "Key": code.get("S3Key")}
        if code.get("S3ObjectVersion"):
            where["VersionId"] = code["S3ObjectVersion"]
        try:
            unpacked(s3.get_object(**where)["Body"].read())
        except ClientError as exc:  # as CloudFormation reports the resource's failure
            raise StackDeployError(
                f"{logical_id}: Error occurred while GetObject. S3 Error Code: "
                f"{exc.response['Error']['Code']}. S3 Error Message: {exc}"
            ) from exc
        except ValueError as exc:  # an unsafe archive
            raise StackDeployError(f"{logical_id}: {exc}") from exc


_DEFINITION_KEYS = {
    "AWS::Serverless::StateMachine": "DefinitionUri",
    "AWS::StepFunctions::StateMachine": "DefinitionS3Location",
}


def _s3_definitions(template: dict[str, Any], clients: DeployClients) -> None:
    """In place: a state machine's definition in S3 (``DefinitionUri`` as ``sam package``
    uploads it, ``DefinitionS3Location``) read, as CloudFormation reads it."""
    s3 = clients("s3")
    for logical_id, resource in (template.get("Resources") or {}).items():
        props = resource.get("Properties") or {}
        key = _DEFINITION_KEYS.get(resource.get("Type", ""))
        where = props.get(key or "")
        if isinstance(where, str) and where.startswith("s3://"):
            bucket, _, name = where[len("s3://") :].partition("/")
            where = {"Bucket": bucket, "Key": name}
        if not isinstance(where, dict):
            continue
        try:
            text = s3.get_object(Bucket=where["Bucket"], Key=where["Key"])["Body"].read().decode()
        except ClientError as exc:
            raise StackDeployError(
                f"{logical_id}.{key}: S3 error: {exc.response['Error']['Code']}"
            ) from exc
        del props[key]
        if key == "DefinitionUri":
            props["Definition"] = parse_yaml(text)
        else:
            props["DefinitionString"] = text


def parameter_values(stack: Any, given: list[dict[str, Any]]) -> dict[str, str]:
    """The update's parameter values: those given, and the stack's own for UsePreviousValue
    (one not given takes its default, as in CloudFormation)."""
    values: dict[str, str] = {}
    for parameter in given or []:
        key = parameter["ParameterKey"]
        if parameter.get("UsePreviousValue") in (True, "true"):
            values[key] = str(stack.stack_parameters.get(key, ""))
        else:
            values[key] = str(parameter.get("ParameterValue", ""))
    return values


def prepare_local(template: Path, stack_name: str, region: str, parameters: dict[str, str]) -> str:
    """``template`` prepared as the deploy prepares it, as JSON for UpdateStack (its local code
    as stand-ins that name the directories)."""
    clients = DeployClients(region)
    return json.dumps(
        _prepare(Path(template).resolve(), parameters, _Artifacts(stack_name, clients))
    )


class StackOperations:
    """What the API's stack operations need from the deploy (``Runtime.stacks``)."""

    parameter_values = staticmethod(parameter_values)

    def prepare(self, backend: Any, name: str, template: str, parameters: Any) -> str:
        """The template as the deploy prepares it (SAM transform, checks). ``parameters``:
        UpdateStack's list, or a change set's resolved values."""
        source: Any = copy.deepcopy(parse_yaml(template)) if isinstance(template, str) else None
        if not isinstance(source, dict):
            return template
        if isinstance(parameters, dict):
            values = {k: str(v) for k, v in parameters.items()}
        else:
            values = parameter_values(backend.get_stack(name), parameters)
        clients = DeployClients(backend.region_name)
        try:
            if local := _local_paths(source):
                raise StackDeployError(
                    f"{', '.join(local)}: a template sent to CloudFormation names its code by an "
                    "S3 URI (what sam package or sam deploy uploads) or inline, not by a local path"
                )
            _s3_definitions(source, clients)
            where = f"the template of stack {name}"
            upload = _Artifacts(name, clients)
            transformed = prepare_source(source, Path.cwd(), where, values, upload)
            _check_s3_code(transformed, clients)
        except StackDeployError as exc:  # what CloudFormation answers a template it refuses
            raise ValidationError(name, message=str(exc)) from exc
        return json.dumps(transformed)

    def run(self, rt: Runtime, stack: Any, body: str, change: Callable[[], Any]) -> Any:
        """``change()`` with the deploy's patches (and a custom resource's provider invoked
        meanwhile), then what moto's models ignore applied."""
        # not the stable names of a create: a replacement is named anew, as on AWS
        patches = PatchSet(
            p for p in deploy_patch_set().patches if p.name != "cloudformation-stable-names"
        )
        rt.deploy_report.clear()
        region = stack.region_name
        patches.install(rt)
        try:
            with custom_resources.managed_policies_meanwhile(
                rt, region, stack.name, lambda ids: _managed_policies(json.loads(body), ids)
            ):
                done = change()
            _apply_ignored_properties(rt.deploy_report.created, DeployClients(region))
        finally:
            patches.uninstall()
        return done

    def settle(self, rt: Runtime, stack: Any, body: str) -> None:
        """After a create or an update, as after a deploy: the roles' managed policies reach the
        IAM layer, state machines their log delivery; listeners (a ``LocalCloud``) are told, and
        refresh the stack's outputs and resources."""
        region, template = stack.region_name, json.loads(body)
        clients = DeployClients(region)
        resources, types = _physical_resources(clients("cloudformation"), stack.name)
        rt.authorizer.managed.update(_managed_policies(template, resources))
        _check_log_delivery(rt, resources, types, clients)
        for listener in list(rt.stack_listeners):
            listener(stack.name)
