"""Fix: ``Ref`` to a layer version of the template is its ARN, as in CloudFormation.

A template's ``AWS::Lambda::LayerVersion`` (SAM's ``AWS::Serverless::LayerVersion``) that a
function's ``Layers`` name (``!Ref``) resolves to its ARN, its physical id. moto's
``LayerVersion`` model has no ``physical_resource_id``: ``Ref`` returned the model object (a
function's ``Layers`` then failed on it) and DescribeStackResources gave no PhysicalResourceId.
"""

from __future__ import annotations

from moto.awslambda.models import LayerVersion

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _build(rt: Runtime) -> Targets:
    return {(LayerVersion, "physical_resource_id"): property(lambda layer: layer.arn)}


PATCHES = [
    Patch(
        name="cloudformation-layer-version-ref",
        kind=Kind.FIX,
        reason="Ref to a template's AWS::Lambda::LayerVersion is its ARN, as in CloudFormation "
        "(moto: the model object, which a function's Layers cannot take).",
        test="tests/statemachine/test_stack_deploy.py::test_functions_configuration",
        build=_build,
        upstream="not reported yet (moto 5.2.5's LayerVersion has no physical_resource_id)",
        adds=("physical_resource_id",),
    )
]
