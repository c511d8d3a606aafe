"""UpdateStack runs a SAM template as CloudFormation does, and every function then runs the
code the update deployed (the deploy's part; the patch: features/cloudformation_sam_updates.py).

moto's UpdateStack takes the template as it is given: one with ``Transform:
AWS::Serverless-2016-10-31`` (what ``aws cloudformation update-stack`` sends) reaches moto's
parser untransformed, which skips every ``AWS::Serverless::*`` resource, and the functions
went on running the code of the first deploy. Here the update first prepares the template as
the deploy does (the SAM transform, run server-side as CloudFormation runs it; the local
cloud's refusals by name, answered as a ``ValidationError``), then moto updates the stack
with the deploy's own patches, and then:

* each function whose code the update changed runs it: its handler is loaded again from the
  deployed code, with the function's environment;
* a published version runs the code it was published with (its ``CodeSha256``): a version,
  and an alias on it, keep their code when ``$LATEST`` changes (``Runtime.code_handlers``);
* listeners (a ``LocalCloud``) are told, and refresh the stack's outputs and resources.

A template given to the API must name its code in S3 (``sam package`` output) or inline: a
local ``CodeUri`` is refused as CloudFormation's transform refuses it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from moto.cloudformation.exceptions import ValidationError

from localcloud.stack.base import StackDeployError, remember_code
from localcloud.stack.clients import DeployClients
from localcloud.stack.deploy import (
    _Artifacts,
    _physical_resources,
    _register_handlers,
    deploy_patch_set,
    prepare_source,
)
from localcloud.stack.properties import _apply_ignored_properties
from localcloud.stack.template import code_dir, parse_yaml

if TYPE_CHECKING:
    from localcloud.runtime import Runtime

__all__ = ["StackUpdates"]


_CODE_KEYS = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
    "AWS::Serverless::StateMachine": "DefinitionUri",
}


def _local_paths(template: dict[str, Any]) -> list[str]:
    """Where a template sent to CloudFormation names its code by a local path."""
    found = []
    code = ((template.get("Globals") or {}).get("Function") or {}).get("CodeUri")
    if isinstance(code, str) and not code.startswith("s3://"):
        found.append(f"Globals.Function.CodeUri {code!r}")
    for logical_id, resource in (template.get("Resources") or {}).items():
        key = _CODE_KEYS.get(resource.get("Type", ""))
        value = (resource.get("Properties") or {}).get(key or "")
        if key and isinstance(value, str) and not value.startswith("s3://"):
            found.append(f"{logical_id}.{key} {value!r}")
    return found


def _s3_code(template: dict[str, Any], clients: DeployClients) -> dict[str, Path]:
    """Each function's code from the S3 object its ``Code`` names (what ``sam package``
    uploaded), unpacked: the function runs the code that was deployed."""
    found: dict[str, Path] = {}
    s3 = clients("s3")
    for logical_id, resource in (template.get("Resources") or {}).items():
        code = (resource.get("Properties") or {}).get("Code") or {}
        if resource.get("Type") != "AWS::Lambda::Function" or "S3Key" not in code:
            continue
        where = {"Bucket": code.get("S3Bucket"), "Key": code.get("S3Key")}
        if code.get("S3ObjectVersion"):
            where["VersionId"] = code["S3ObjectVersion"]
        try:
            body = s3.get_object(**where)["Body"].read()
        except ClientError as exc:  # as CloudFormation reports the resource's failure
            raise StackDeployError(
                f"{logical_id}: Error occurred while GetObject. S3 Error Code: "
                f"{exc.response['Error']['Code']}. S3 Error Message: {exc}"
            ) from exc
        with tempfile.NamedTemporaryFile(suffix=".zip") as archive:
            archive.write(body)
            archive.flush()
            found[logical_id] = code_dir(Path(archive.name))
    return found


def _parameter_values(stack: Any, given: list[dict[str, Any]]) -> dict[str, str]:
    """The update's parameter values: those given, and the stack's own for UsePreviousValue
    (one not given takes its default, as in CloudFormation)."""
    values: dict[str, str] = {}
    for parameter in given or []:
        key = parameter["ParameterKey"]
        if parameter.get("UsePreviousValue") in (True, "true"):
            values[key] = str(stack.parameters.get(key, ""))
        else:
            values[key] = str(parameter.get("ParameterValue", ""))
    return values


def _refresh(rt: Runtime, region: str, stack_name: str, code_dirs: dict[str, Path]) -> None:
    """The functions of the updated stack run their deployed code; listeners are told."""
    clients = DeployClients(region)
    resources, types = _physical_resources(clients("cloudformation"), stack_name)
    functions = {lid: resources[lid] for lid, t in types.items() if t == "AWS::Lambda::Function"}
    lam = clients("lambda")
    configs = {lid: lam.get_function_configuration(FunctionName=n) for lid, n in functions.items()}
    fresh = {lid: n for lid, n in functions.items() if lid in code_dirs or n not in rt.handlers}
    if fresh:
        _register_handlers(fresh, code_dirs, configs, rt.handlers, region)
    remember_code(rt, functions, configs)
    for listener in list(rt.stack_listeners):
        listener(stack_name)


class StackUpdates:
    """What an update of a stack needs from the deploy (``Runtime.stack_updates``; the
    UpdateStack patch is features/cloudformation_sam_updates.py)."""

    def prepare(
        self, backend: Any, name: str, template: str, parameters: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Path]]:
        """The template as the deploy prepares it (SAM transform, checks), and the functions'
        code directories; what CloudFormation refuses is a ValidationError."""
        stack = backend.get_stack(name)
        source: Any = parse_yaml(template) if isinstance(template, str) else None
        if not isinstance(source, dict):
            return template, {}
        try:
            if _local_paths(source):
                raise StackDeployError(
                    f"{', '.join(_local_paths(source))}: a template sent to CloudFormation "
                    "names its code by an S3 URI (what sam package or sam deploy uploads) or "
                    "inline, not by a local path"
                )
            transformed, code_dirs = prepare_source(
                source,
                Path.cwd(),
                f"the template of stack {stack.name}",
                parameters=_parameter_values(stack, parameters),
                upload=_Artifacts(stack.name, DeployClients(backend.region_name)),
            )
            code_dirs.update(_s3_code(transformed, DeployClients(backend.region_name)))
        except StackDeployError as exc:  # what CloudFormation answers a template it refuses
            raise ValidationError(stack.name, message=str(exc)) from exc
        return json.dumps(transformed), code_dirs

    def run(self, rt: Runtime, region: str, update: Callable[[], Any]) -> Any:
        """``update()`` with the deploy's patches, then what moto's models ignore applied."""
        patches = deploy_patch_set()
        rt.deploy_report.clear()
        patches.install(rt)
        try:
            updated = update()
            _apply_ignored_properties(rt.deploy_report.created, DeployClients(region))
        finally:
            patches.uninstall()
        return updated

    def refresh(self, rt: Runtime, region: str, stack_name: str, code: dict[str, Path]) -> None:
        _refresh(rt, region, stack_name, code)
