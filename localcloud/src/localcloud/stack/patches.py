"""What the local stack deploy needs from moto's CloudFormation, installed only around
``create_stack`` by ``stack.deploy`` (``when="deploy"``)."""

from __future__ import annotations

from typing import Any

from moto.awslambda.models import LambdaBackend
from moto.cloudformation import parsing as cfn_parsing

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _build_shims(rt: Runtime) -> Targets:
    from localcloud.stack.shims import SHIMS

    resource_class_from_type = cfn_parsing.resource_class_from_type

    def class_from_type(resource_type: str) -> Any:
        return SHIMS.get(resource_type) or resource_class_from_type(resource_type)

    return {(cfn_parsing, "resource_class_from_type"): class_from_type}


def _build_report(rt: Runtime) -> Targets:
    from localcloud.stack.properties import _APPLIERS, _Created

    parse_and_create_resource = cfn_parsing.parse_and_create_resource
    report = rt.deploy_report

    def create(
        logical_id: str, resource_json: dict[str, Any], resources_map: Any, *args: Any, **kw: Any
    ) -> Any:
        try:
            resource = parse_and_create_resource(
                logical_id, resource_json, resources_map, *args, **kw
            )
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            report.failures.append((logical_id, resource_json.get("Type", "?"), reason))
            raise
        rtype = resource_json.get("Type", "")
        if resource is not None and rtype in _APPLIERS:
            props = cfn_parsing.clean_json(resource_json.get("Properties") or {}, resources_map)
            report.created.append(_Created(logical_id, rtype, props, resource))
        return resource

    return {(cfn_parsing, "parse_and_create_resource"): create}


def _build_layers(rt: Runtime) -> Targets:
    from localcloud.stack.shims import _is_public_layer, _PublicLayer

    layers_versions_by_arn = LambdaBackend.layers_versions_by_arn

    def layer(self: LambdaBackend, layer_version_arn: str) -> Any:
        found = layers_versions_by_arn(self, layer_version_arn)
        if found is None and _is_public_layer(layer_version_arn):
            return _PublicLayer(layer_version_arn)
        return found

    return {(LambdaBackend, "layers_versions_by_arn"): layer}


PATCHES = [
    Patch(
        name="cloudformation-shims",
        kind=Kind.FEATURE,
        reason="Resource types moto's CloudFormation skips (BucketPolicy, QueuePolicy, "
        "Subscription, Alarm, Schedule) are created through their APIs, not silently dropped.",
        test="tests/statemachine/test_stack_deploy.py::test_alarms_created",
        build=_build_shims,
        when="deploy",
    ),
    Patch(
        name="cloudformation-deploy-report",
        kind=Kind.FEATURE,
        reason="A failing resource is reported by logical id, type and reason, and created "
        "resources keep their resolved properties so ignored ones can be applied.",
        test="tests/statemachine/test_stack_deploy.py::test_bucket_versioning_and_settings",
        build=_build_report,
        when="deploy",
    ),
    Patch(
        name="lambda-public-layers",
        kind=Kind.FEATURE,
        reason="Layer versions of the public Powertools layer account resolve (moto only knows "
        "layers published into it); any other unknown layer still fails.",
        test="tests/statemachine/test_stack_deploy.py::test_functions_configuration",
        build=_build_layers,
        when="deploy",
    ),
]
